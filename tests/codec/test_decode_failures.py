"""Decoders turn only input-caused failures into ``DecodeError``; a bug propagates as itself.

Runs in both flavours: the table patched is the one the class uses (its compiled functions when
its module is compiled, else its pure ones).
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, EncodeError, TruncatedError
from kafka_wire.messages import CreateTopicsRequest, MetadataRequest, MetadataRequestTopic


def _tables(cls: type[Message]) -> tuple[dict[int, Any], dict[int, Any]]:
    if cls._native_decoders:
        return cls._native_decoders, cls._native_encoders
    return cls._decoders, cls._encoders


class Bug(Exception):
    """What a broken generated function raises."""


def _broken(*args: object) -> Any:
    raise Bug("a bug in generated code")


@pytest.mark.parametrize("cls", [MetadataRequest, CreateTopicsRequest])
@pytest.mark.parametrize("error", [Bug, TypeError, ValueError, AttributeError, MemoryError])
def test_a_broken_decoder_raises_its_own_exception(
    monkeypatch: pytest.MonkeyPatch, cls: type[Message], error: type[BaseException]
) -> None:
    data = cls().encode(4)

    def broken(buf: bytes, pos: int) -> Any:
        raise error("a bug in generated code")

    monkeypatch.setitem(_tables(cls)[0], 4, broken)
    for decode in (
        lambda: cls.decode(data, 4),
        lambda: cls.decode_from(data, 0, 4),
        lambda: cls.decode(bytearray(data), 4),
    ):
        with pytest.raises(error, match="a bug in generated code"):
            decode()


@pytest.mark.parametrize("cls", [MetadataRequest, CreateTopicsRequest])
def test_bad_input_is_a_decode_error(cls: type[Message]) -> None:
    data = cls().encode(4)
    with pytest.raises(TruncatedError):
        cls.decode(data[:-1], 4)


def test_a_string_that_is_not_utf8_is_a_decode_error() -> None:
    data = MetadataRequest(topics=[MetadataRequestTopic(name="ab")]).encode(4)
    bad = data.replace(b"ab", b"\xff\xfe")
    with pytest.raises(DecodeError, match=r"(?i)utf-?8"):
        MetadataRequest.decode(bad, 4)


def test_a_broken_encoder_is_reported_by_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Encoders take values of any type from the caller; when the generated one fails, the
    interpreter decides (bytes or the precise EncodeError)."""
    msg = MetadataRequest(topics=[MetadataRequestTopic(name="ab")])
    expected = msg.encode(4)
    monkeypatch.setitem(_tables(MetadataRequest)[1], 4, _broken)
    with pytest.raises(Bug):
        msg.encode(4)
    msg.topics = [MetadataRequestTopic(name=5)]  # type: ignore[arg-type]
    monkeypatch.undo()
    with pytest.raises(EncodeError):
        msg.encode(4)
    msg.topics = [MetadataRequestTopic(name="ab")]
    assert msg.encode(4) == expected
