"""The compiled records flavour (``_hot_native``, built with ``KAFKA_WIRE_COMPILE=1``) agrees with
the pure-Python loops byte for byte and object for object, errors included.

Skipped when the extension is not built; ``tools/check_mypyc_c.py`` guards its generated C.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.records import NewRecord, Record, _hot, build_batch, read_batches
from tests.records.helpers import CODECS_V2, EXAMPLES, v2_records

NATIVE = _hot._load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason="compiled flavour not built (KAFKA_WIRE_COMPILE=1)")


def _with(monkeypatch: pytest.MonkeyPatch, flavour: ModuleType | None, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with ``_hot`` running ``flavour`` (``None``: pure Python), or the exception."""
    with monkeypatch.context() as m:
        m.setattr(_hot, "NATIVE", flavour)
        try:
            return fn(*args)
        except (DecodeError, EncodeError, ValueError, TypeError) as e:
            return (type(e), str(e))


def _contents(data: bytes) -> list[Any]:
    return [[r.astuple() for r in batch] for batch in read_batches(data)]


def _both(monkeypatch: pytest.MonkeyPatch, fn: Any, *args: Any) -> Any:
    pure = _with(monkeypatch, None, fn, *args)
    native = _with(monkeypatch, NATIVE, fn, *args)
    assert native == pure
    return native


@pytest.mark.parametrize("codec", CODECS_V2)
@settings(max_examples=EXAMPLES)
@given(records=v2_records(), base_offset=st.integers(0, 2**62))
def test_same_bytes_and_records(codec: str, records: list[tuple[Any, ...]], base_offset: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        data = _both(mp, lambda: build_batch(records, compression=codec, base_offset=base_offset))
        assert isinstance(data, bytes)
        _both(mp, _contents, data)


SHAPES: list[list[Any]] = [
    [(b"k", b"v"), (None, None), (b"k", None, [("h", b"x"), ("h2", None), ("h", b"")])],
    [NewRecord(b"k", b"v", [("a", b"b")], 5), Record(0, 7, b"k", b"v", [("z", None)])],
    [(bytearray(b"ka"), memoryview(b"va"), [("h", bytearray(b"x"))], 2**40)],
    [(b"k" * 20_000, b"v" * 70_000, [("\u00e9" * 300, b"w" * 20_000)], -1)],
    [(b"k", b"v", (), 1_700_000_000_000), (b"k", b"v", (), 1)],
    [(b"k", b"v", [(b"not str", b"x")])],
    [(b"k", "text value")],
    [(b"k", b"v", (), "soon")],
    [(1, 2, 3, 4, 5)],
    # shapes the compiled encoder hands back to the pure loop, and its header-key cache
    [(b"k", b"v", (), 5), (b"k", b"v", (), "soon")],
    [(b"k", b"v", (), 5), (b"k", b"v", (), 5.5)],
    [(b"k", b"v", (), 5), (b"k", b"v", (), True)],
    [(b"k", b"v", (), 2**62), (b"k", b"v", (), 0)],
    [(b"k", b"v", [["h", b"x"]]), (b"k", b"v", [("h", b"x", b"y")])],
    [(b"k", b"v", (("h", b"x"),)), (b"k", b"v", (("h", None), ("i", b"y")))],
    [(b"k", b"v", [("h", b"x")]), (b"k", b"v", [("h", b"y")]), (b"k", b"v", [("\u00e9", None)])],
    [(b"k", b"v", iter([("h", b"x")]))],
    [(b"k", b"v", {"h": b"x"})],
    [(b"k", b"v", [(None, b"x")])],
    [(b"k", b"v", [(["h"], b"x")])],
    [(b"k", b"v", [("h", "text")])],
    [(b"k", b"v", 0), (b"k", b"v", None), (b"k", b"v", ())],
    [NewRecord(b"k", b"v", [("h", b"x"), ("h", bytearray(b"y"))], 3), (b"k",)],  # type: ignore[list-item]  # a bytearray value on purpose
]


@pytest.mark.parametrize("records", SHAPES)
def test_same_bytes_for_every_record_shape(monkeypatch: pytest.MonkeyPatch, records: list[Any]) -> None:
    data = _both(monkeypatch, build_batch, records)
    if isinstance(data, bytes):
        _both(monkeypatch, _contents, data)


def test_same_errors_on_corrupt_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    good = build_batch([(b"key", b"value", [("h", b"v")]), (None, b"x" * 300)])
    for i in range(61, len(good)):
        for byte in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            bad = good[:i] + bytes((byte,)) + good[i + 1 :]
            _both(monkeypatch, lambda b=bad: _contents_unchecked(b))
        _both(monkeypatch, lambda n=i: _contents_unchecked(good[:n]))


def _contents_unchecked(data: bytes) -> list[Any]:
    return [[r.astuple() for r in batch] for batch in read_batches(data, verify_crc=False)]


def test_streaming_iteration_equals_the_list_and_fails_before_the_first_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = build_batch([(b"k%d" % i, b"v", [("h", b"x")]) for i in range(300)])  # streamed: >= 64 records
    (batch,) = read_batches(good)
    assert list(batch) == batch.records()
    # the last record's value length overruns: no record may be seen before the error
    bad = good[:-4] + b"\x7f" + good[-3:]

    seen: list[Any] = []

    def first_seen(data: bytes) -> Any:
        for b in read_batches(data, verify_crc=False):
            for r in b:
                seen.append(r)
        return seen

    with monkeypatch.context() as m:
        m.setattr(_hot, "NATIVE", NATIVE)
        with pytest.raises(DecodeError):
            first_seen(bad)
    assert seen == []
    _both(monkeypatch, lambda: first_seen(bad))


def test_compiled_record_keeps_the_public_surface() -> None:
    r = Record(1, 2, b"k", None, (("h", b"v"),))
    assert type(r).__module__ == "kafka_wire.records._record_native"
    assert r == Record(1, 2, b"k", None, (("h", b"v"),)) and r != Record(1, 3, b"k", None)
    assert list(r) == [1, 2, b"k", None, (("h", b"v"),)]
    assert repr(r) == "Record(offset=1, timestamp=2, key=b'k', value=None, headers=(('h', b'v'),))"
    match r:
        case Record(offset, timestamp, key, value, headers):
            assert (offset, timestamp, key, value, headers) == tuple(r)
    with pytest.raises(TypeError):
        hash(r)
    r.key = b"z"
    assert r.astuple() == (1, 2, b"z", None, (("h", b"v"),))


@pytest.mark.parametrize("deltas", [[0, 5, 9], (0, 2**31 - 1), [0, 1, 2, 3], [3], []])
def test_same_bytes_with_offset_deltas(monkeypatch: pytest.MonkeyPatch, deltas: Any) -> None:
    records = [(b"k", b"v", [("h", b"x")], 10), (None, None, (), 11), (b"k", b"v", (), 12)][
        : max(len(deltas), 1)
    ]
    data = _both(monkeypatch, lambda: build_batch(records, offset_deltas=deltas))
    if isinstance(data, bytes):
        _both(monkeypatch, _contents, data)


def test_same_bytes_for_a_tuple_of_records_and_many_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    records = tuple(
        (b"k%d" % i, b"v" * (i % 300), [("h", b"x" * (i % 5))], 1_700_000_000_000 + i) for i in range(700)
    )
    for codec in CODECS_V2:
        data = _both(monkeypatch, lambda c=codec: build_batch(records, compression=c, base_offset=7))
        _both(monkeypatch, _contents, data)
