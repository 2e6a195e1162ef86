"""Random and mutated bytes into every decoder: a message or a DecodeError, nothing else.

The message each mutation starts from comes from :func:`kafka_wire.testing.generate.random_message`
seeded by Hypothesis (about 25 times cheaper than drawing it with the ``messages`` strategy, which
``tests/codec/test_roundtrip.py`` checks on its own); Hypothesis draws the mutations.
"""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kafka_wire
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, InvalidValueError, TruncatedError
from kafka_wire.messages import (
    MetadataResponse,
    ProduceRequest,
    ProduceRequestTopicProduceData,
    RequestHeader,
)
from kafka_wire.testing.generate import random_message
from tests.codec.test_roundtrip import CASES

HUGE = [
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x0f",
    b"\x7f\xff",
    b"\x80\x80\x80\x80\x80",
]


@st.composite
def mutated(draw: st.DrawFn, cls: type[Message], version: int) -> bytes:
    seed = draw(st.integers(0, 2**32 - 1))
    data = bytearray(random_message(cls, version, random.Random(seed), max_list=2).encode(version))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "huge", "random", "insert"]))
        pos = draw(st.integers(0, len(data)))
        if op == "truncate":
            del data[pos:]
        elif op == "flip" and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "huge":
            data[pos : pos + 4] = draw(st.sampled_from(HUGE))
        elif op == "random":
            data[pos : pos + 8] = draw(st.binary(min_size=1, max_size=8))
        else:
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
    return bytes(data)


@pytest.mark.parametrize(("cls", "version"), CASES)
@given(data=st.data())
def test_mutated_input_gives_message_or_decode_error(
    cls: type[Message], version: int, data: st.DataObject
) -> None:
    buf = data.draw(mutated(cls, version))
    for candidate in (buf, buf[: len(buf) // 2]):
        try:
            cls.decode(candidate, version)
        except DecodeError as exc:
            assert 0 <= exc.offset <= len(candidate)
            assert exc.version == version
            assert cls.__name__ in str(exc)


@given(st.binary(max_size=200))
def test_random_frames(data: bytes) -> None:
    frame = struct.pack(">i", len(data)) + data
    for candidate in (frame, data):
        try:
            kafka_wire.decode_request(candidate)
        except DecodeError:
            pass


def test_every_truncation_of_a_real_frame() -> None:
    # Byte-by-byte: every prefix of a body fails with a DecodeError, the whole body decodes.
    body = ProduceRequest(
        transactional_id="tx",
        acks=-1,
        timeout_ms=30000,
        topic_data=[ProduceRequestTopicProduceData(name="t1")],
    )
    for version in ProduceRequest.VERSIONS:
        encoded = body.encode(version) if version >= 3 else ProduceRequest(acks=-1).encode(version)
        for cut in range(len(encoded)):
            with pytest.raises(DecodeError):
                ProduceRequest.decode(encoded[:cut], version)
        ProduceRequest.decode(encoded, version)


@pytest.mark.parametrize("version", [1, 12])
def test_huge_counts_do_not_allocate(version: int) -> None:
    # A MetadataResponse claiming 2**31-1 brokers in a 20-byte body: rejected before any allocation.
    count = b"\x7f\xff\xff\xff" if version < 9 else b"\xff\xff\xff\xff\x07"
    prefix = b"\x00\x00\x00\x00" if version >= 3 else b""
    buf = prefix + count + b"\x00" * 16
    tracemalloc.start()
    try:
        with pytest.raises(InvalidValueError) as info:
            MetadataResponse.decode(buf, version)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert info.value.path == ("brokers",)
    assert "remain" in info.value.reason


def test_huge_string_length_is_truncation() -> None:
    buf = struct.pack(">hhih", 3, 1, 7, 0x7FFF) + b"abc"
    with pytest.raises(TruncatedError) as info:
        RequestHeader.decode(buf, 1)
    assert info.value.path == ("client_id",)
    assert info.value.offset == 10
