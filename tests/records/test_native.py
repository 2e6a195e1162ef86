"""The records loops compiled (``KAFKA_WIRE_COMPILE=1``) agree with the same source run as Python:
byte for byte and object for object, errors included.

Both flavours of ``kafka_wire._compiled.records`` are loaded side by side in this process: the
built extension and its ``.py`` source (``kafka_wire.flavour.source_module``). Skipped when the
extension is not built or ``KAFKA_WIRE_PURE`` is set; ``tools/check_mypyc_c.py`` guards its C.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.errors import DecodeError
from kafka_wire.flavour import compiled_module, source_module
from kafka_wire.records import NewRecord, Record, RecordsReader, build_batch, columnar, loops
from kafka_wire.records.batch import V2_HEADER
from kafka_wire.records.constants import RECORD_BATCH_OVERHEAD
from kafka_wire.records.crc import crc32c
from tests.records.helpers import EXAMPLES, v2_records

NAME = "kafka_wire._compiled.records"
COMPILED = compiled_module(NAME)
PURE = source_module(NAME)
WALK = compiled_module("kafka_wire._compiled.recordwalk")
"""The compiled flavour's ``Record`` and record-making loops (C): the same outcomes as ``PURE``."""
pytestmark = pytest.mark.skipif(
    COMPILED is None, reason="compiled records not built (KAFKA_WIRE_COMPILE=1) or KAFKA_WIRE_PURE set"
)

BASE_TS = 1_700_000_000_000


def _outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``, or the exception it raised as ``(type, message, offset)``."""
    try:
        return fn()
    except Exception as e:
        return (type(e), str(e), getattr(e, "offset", None))


def _both(fn: Callable[[ModuleType], Any], *, walk: bool = False) -> Any:
    """``fn(flavour)`` for the compiled and the interpreted flavour: the outcomes must be equal.

    With ``walk``, ``fn`` only uses what the C walker has too (the v2 decoders, ``legacy_record``,
    ``Record``), and its outcome must be the same as well.
    """
    assert COMPILED is not None
    compiled = _outcome(lambda: fn(COMPILED))
    pure = _outcome(lambda: fn(PURE))
    assert compiled == pure
    if walk:
        assert WALK is not None
        assert _outcome(lambda: fn(WALK)) == pure
    return compiled


def _encode(records: Any, offset_deltas: Any = None) -> Callable[[ModuleType], Any]:
    def run(mod: ModuleType) -> Any:
        return mod.encode_records_v2(records, BASE_TS, BASE_TS + 7, offset_deltas)

    return run


def _records(result: Any) -> Any:
    """Records as tuples (the two flavours' ``Record`` classes differ), or an error outcome."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], list):
        return [r.astuple() for r in result[0]], result[1]
    return result


def _decode(data: bytes, *, zero_copy: bool = False, stream: bool = False) -> Callable[[ModuleType], Any]:
    """Decode the v2 batch in ``data`` (header fields read with ``struct``, CRC not checked)."""
    head = V2_HEADER.unpack_from(data, 0) if len(data) >= RECORD_BATCH_OVERHEAD else (0,) * 13
    base_offset, base_timestamp, count = head[0], head[7], head[12]

    def run(mod: ModuleType) -> Any:
        view = memoryview(data) if zero_copy else None
        args = (data, view, RECORD_BATCH_OVERHEAD, len(data), count, base_offset, base_timestamp, None)
        if stream:
            records, pos = mod.iterate_records_v2(*args)
            return _records((list(records), pos))
        return _records(mod.decode_records_v2(*args))

    return run


def _same_decodes(data: bytes) -> None:
    for zero_copy in (False, True):
        for stream in (False, True):
            _both(_decode(data, zero_copy=zero_copy, stream=stream), walk=True)


@settings(max_examples=EXAMPLES)
@given(records=v2_records(), base_offset=st.integers(0, 2**62))
def test_same_bytes_and_records(records: list[tuple[Any, ...]], base_offset: int) -> None:
    _both(_encode(records))
    _same_decodes(build_batch(records, base_offset=base_offset))


SHAPES: list[Any] = [
    [(b"k", b"v"), (None, None), (b"k", None, [("h", b"x"), ("h2", None), ("h", b"")])],
    [NewRecord(b"k", b"v", [("a", b"b")], 5), Record(0, 7, b"k", b"v", [("z", None)])],
    [(bytearray(b"ka"), memoryview(b"va"), [("h", bytearray(b"x"))], 2**40)],
    [(b"k" * 20_000, b"v" * 70_000, [("\u00e9" * 300, b"w" * 20_000)], -1)],
    [(b"k", b"v", (), 1_700_000_000_000), (b"k", b"v", (), 1)],
    [(b"k", b"v", [(b"not str", b"x")])],
    [(b"k", "text value")],
    [(b"k", b"v", (), "soon")],
    [(1, 2, 3, 4, 5)],
    [(b"k", b"v", (), 5), (b"k", b"v", (), "soon")],
    [(b"k", b"v", (), 5), (b"k", b"v", (), 5.5)],
    [(b"k", b"v", (), 5), (b"k", b"v", (), True)],
    [(b"k", b"v", (), 2**62), (b"k", b"v", (), 0)],
    [(b"k", b"v", (), 2**64), (b"k", b"v", (), -(2**63))],
    [(b"k", b"v", [["h", b"x"]]), (b"k", b"v", [("h", b"x", b"y")])],
    [(b"k", b"v", [("h", b"x", b"y")])],
    [(b"k", b"v", [("h", b"x"), ("h", b"x", b"y")])],
    [(b"k", b"v", (("h", b"x"),)), (b"k", b"v", (("h", None), ("i", b"y")))],
    [(b"k", b"v", [("h", b"x")]), (b"k", b"v", [("h", b"y")]), (b"k", b"v", [("\u00e9", None)])],
    [(b"k", b"v", iter([("h", b"x")]))],
    [(b"k", b"v", {"h": b"x"})],
    [(b"k", b"v", [(None, b"x")])],
    [(b"k", b"v", [(["h"], b"x")])],
    [(b"k", b"v", [("h", "text")])],
    [(b"k", b"v", 0), (b"k", b"v", None), (b"k", b"v", ())],
    [NewRecord(b"k", b"v", [("h", b"x"), ("h", bytearray(b"y"))], 3), (b"k",)],  # type: ignore[list-item]  # a bytearray header value on purpose
    [(b"k%d" % i, b"v", [("h", b"x")], BASE_TS + i) for i in range(20_000)],
    tuple((b"k", b"v" * (i % 300), [("h", b"x" * (i % 5))], BASE_TS + i) for i in range(700)),
]


@pytest.mark.parametrize("records", SHAPES, ids=range(len(SHAPES)))
def test_same_bytes_or_error_for_every_record_shape(records: Any) -> None:
    _both(_encode(records))


@pytest.mark.parametrize("deltas", [[0, 5, 9], (0, 2**31 - 1), [0, 1, 2, 3], [3], [], [0, 20_000, 2**21]])
def test_same_bytes_with_offset_deltas(deltas: Any) -> None:
    records = [(b"k", b"v", [("h", b"x")], 10), (None, None, (), 11), (b"k", b"v", (), 12)][: len(deltas)]
    _both(_encode(records, deltas))


def test_same_records_for_large_and_streamed_batches() -> None:
    records: list[tuple[Any, ...]] = [
        (b"k%d" % i, b"v" * (i % 300), [("h", b"x" * (i % 5))], BASE_TS + i) for i in range(700)
    ]
    records += [(None, None, [("a", None), ("b", b"")], BASE_TS), (b"", b"", [("\u00e9", b"x")], 0)]
    _same_decodes(build_batch(records, base_offset=7))


def test_same_errors_on_corrupt_batches() -> None:
    good = build_batch([(b"key", b"value", [("h", b"v")]), (None, b"x" * 300)])
    for i in range(RECORD_BATCH_OVERHEAD, len(good)):
        for byte in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            _same_decodes(good[:i] + bytes((byte,)) + good[i + 1 :])
        _same_decodes(good[:i])


def test_streaming_fails_before_the_first_record() -> None:
    good = build_batch([(b"k%d" % i, b"v", [("h", b"x")]) for i in range(300)])  # streamed: >= 64 records
    bad = good[:-4] + b"\x7f" + good[-3:]  # the last record's value length overruns
    outcome = _both(_decode(bad, stream=True), walk=True)
    assert issubclass(outcome[0], DecodeError)
    assert COMPILED is not None
    stream, _ = COMPILED.iterate_records_v2(good, None, 61, len(good), 300, 0, 0, None)
    assert type(stream).__name__ == "RecordStream"  # compiled: made as iterated


def test_same_legacy_messages() -> None:
    for magic in (0, 1):

        def run(mod: ModuleType, magic: int = magic) -> Any:
            out = bytearray()
            for i, (key, value) in enumerate([(b"k", b"v"), (None, b"x" * 300), (b"", None)]):
                mod.encode_legacy_message(out, i, magic, 0, BASE_TS, key, value)
            messages = mod.decode_legacy_message_set(bytes(out), 0, len(out), True)
            return bytes(out), [(*m[:5], bytes(m[5] or b""), bytes(m[6] or b""), m[7]) for m in messages]

        data, _ = _both(run)
        for i in range(len(data)):
            for byte in (0x00, 0x80, 0xFF):
                bad = data[:i] + bytes((byte,)) + data[i + 1 :]

                def walk(mod: ModuleType, bad: bytes = bad) -> Any:
                    return mod.decode_legacy_message_set(bad, 0, len(bad), False)

                _both(walk)


def test_same_legacy_records() -> None:
    out = bytearray()
    for i, (key, value) in enumerate([(b"k", b"v"), (None, b"x" * 300), (b"", None)]):
        PURE.encode_legacy_message(out, i, 1, 0, BASE_TS, key, value)
    data = bytes(out)
    for i in range(12, len(data)):
        for byte in (0x00, 0x80, 0xFF):
            bad = data[:i] + bytes((byte,)) + data[i + 1 :]
            for buf in (bad, memoryview(bad)):

                def one(mod: ModuleType, buf: Any = buf) -> Any:
                    return bytes(mod.legacy_record(buf, 26, 36, 7, BASE_TS).astuple()[3] or b"")

                _both(one, walk=True)


@pytest.mark.parametrize("flavour", ["compiled", "pure", "walk"])
def test_record_keeps_the_public_surface(flavour: str) -> None:
    mod = {"compiled": COMPILED, "pure": PURE, "walk": WALK}[flavour]
    assert mod is not None
    cls = mod.Record
    assert hasattr(cls, "__mypyc_attrs__") == (flavour == "compiled")
    r = cls(1, 2, b"k", None, (("h", b"v"),))
    assert r == cls(1, 2, b"k", None, (("h", b"v"),)) and r != cls(1, 3, b"k", None)
    assert list(r) == [1, 2, b"k", None, (("h", b"v"),)]
    assert repr(r) == "Record(offset=1, timestamp=2, key=b'k', value=None, headers=(('h', b'v'),))"
    match r:
        case cls(offset, timestamp, key, value, headers):
            assert (offset, timestamp, key, value, headers) == tuple(r)
    with pytest.raises(TypeError):
        hash(r)
    r.key = b"z"
    assert r.astuple() == (1, 2, b"z", None, (("h", b"v"),))
    assert cls(offset=1, timestamp=2, key=None, value=b"v").headers == ()
    if flavour == "walk":  # the class the compiled flavour uses pickles
        assert type(pickle.loads(pickle.dumps(r))) is cls and pickle.loads(pickle.dumps(r)) == r
    if flavour != "compiled":  # a __slots__ class and the C one let fields be deleted
        del r.key
        with pytest.raises(AttributeError):
            r.key  # noqa: B018


LEGACY_SHAPES: list[Any] = [
    [(b"k", b"v"), (None, None), (b"", b"x" * 300, ()), (b"k", None, [], BASE_TS), (b"k", b"v", None, None)],
    [(b"k", b"v", (), -1), (b"k", b"v", (), 0), (b"k", b"v", (), 2**63 - 1)],
    [(b"k", b"v", (), -2)],
    [(b"k", b"v", (), 2**63)],
    [(b"k", b"v", (), True)],
    [(b"k", b"v", [("h", b"x")])],
    [(bytearray(b"k"), b"v")],
    [(b"k", "text")],
    [NewRecord(b"k", b"v")],
    [(b"k",)],
    [],
]


#: The shapes the C writer takes, by magic (magic 0 writes no timestamp, so any int goes).
LEGACY_FAST = {0: {0, 1, 2, 3, 10}, 1: {0, 1, 10}}


@pytest.mark.parametrize("shape", range(len(LEGACY_SHAPES)))
@pytest.mark.parametrize(("magic", "attributes", "log_append_time"), [(0, 0, None), (1, 0, None), (1, 8, 77)])
def test_plain_legacy_message_sets_in_one_call(
    shape: int, magic: int, attributes: int, log_append_time: int | None
) -> None:
    """The C writer of plain legacy message sets writes what the per-message loop writes, or
    declines (``None``) the input it does not take (the loop then writes it or raises)."""
    assert WALK is not None
    records = LEGACY_SHAPES[shape]
    for base in (0, 5, -3, 2**63 - 2):
        built = WALK.encode_legacy_plain(records, magic, attributes, base, BASE_TS, log_append_time)
        if base != 2**63 - 2 or not records:  # base + count must stay below 2**63
            assert (built is not None) == (shape in LEGACY_FAST[magic])
        if built is None:
            continue
        out = bytearray()
        for i, (key, value, _, ts) in enumerate(PURE.record_fields(r) for r in records):
            ts = log_append_time if log_append_time is not None else BASE_TS if ts is None else ts
            PURE.encode_legacy_message(out, base + i, magic, attributes, ts, key, value)
        assert built == bytes(out)


def _views(payload: bytes, through_c: bool, verify_crc: bool) -> Any:
    """Every batch view of ``payload`` (its type, slots and records) and where the reader ends, or
    the error: through the compiled iterators (``iter(reader)``, ``iter(view)``) or the classes' own
    ``__next__`` and ``_iterate``."""
    reader = RecordsReader(payload, verify_crc=verify_crc)
    out: list[Any] = []

    def slots(view: Any) -> tuple[Any, ...]:
        names = [n for n in type(view).__slots__ if not n.startswith("_")] + ["_start", "_zero_copy"]
        # its records too: through the C __iter__, or the class's own _iterate
        records = _outcome(lambda: [r.astuple() for r in (view if through_c else view._iterate())])
        return (type(view).__name__, view._buf is payload, [getattr(view, n) for n in names], records)

    def run() -> Any:
        if through_c:
            out.extend(slots(b) for b in reader)
        else:
            while True:
                try:
                    out.append(slots(next(reader)))
                except StopIteration:
                    break
        return out, reader.position, reader.truncated_tail

    return _outcome(run)


def test_batch_views_made_in_c_are_the_readers_own() -> None:
    assert loops.batches is not None and loops.v2_iter is not None and loops.legacy_iter is not None
    payload = (
        build_batch(
            [(b"k", b"v", [("h", b"x")])] * 3, base_offset=5, producer_id=9, producer_epoch=1, base_sequence=2
        )
        + build_batch([(b"a", None, (), BASE_TS)], magic=1)
        + build_batch([(b"a", b"b")], magic=0)
        + build_batch([(b"z", b"y")], compression="gzip")
        + build_batch([(b"z", b"y")] * 2, magic=1, compression="gzip")
    )
    for i in range(len(payload)):
        for byte in (0x00, 0x02, 0x7F, 0x80, 0xFF):
            bad = payload[:i] + bytes((byte,)) + payload[i + 1 :]
            for verify_crc in (True, False):
                assert _views(bad, True, verify_crc) == _views(bad, False, verify_crc)
        assert _views(payload[:i], True, True) == _views(payload[:i], False, True)


@given(data=st.binary(max_size=64), lanes=st.integers(0, 9), tail=st.integers(0, 1600))
@settings(max_examples=EXAMPLES, deadline=None)
def test_batch_views_crc32c_is_the_packages(data: bytes, lanes: int, tail: int) -> None:
    """The views' CRC-32C (three 512-byte lanes at a time, joined by shift tables) is the crc32c
    package's at every length around the lane boundaries: a wrong one would not fail a read, only
    send every batch to the Python check."""
    assert WALK is not None
    blob = (data or b"\x5a") * ((lanes * 1536 + tail) // max(len(data), 1) + 1)
    blob = blob[: lanes * 1536 + tail]
    assert WALK.crc32c(blob) == crc32c(blob)
    assert WALK.crc32c(memoryview(blob)[1:]) == crc32c(blob[1:])


def test_columnar_exported_buffers_live_as_long_as_arrow_needs_them() -> None:
    assert columnar.COMPILED, "the columnar C extension is not built (make compile)"
    """The C export: the batch outlives its decoder and its Columns, a column outlives the batch,
    an export never imported is freed with its Columns, and a spent Columns refuses more."""
    data = build_batch([(b"k%d" % i, b"v" * i, [("h", None)], 5 + i) for i in range(20)])
    decoder = columnar.ArrowDecoder(topic="t", partition=2)
    decoder.add(data)
    batch = decoder.take()
    decoder.add(data)
    del decoder
    headers = batch.column("headers")
    del batch
    assert headers[19].as_py() == [{"key": "h", "value": None}]
    c_columns: Any = columnar.Columns  # the C type (the checker sees the pure twin's)
    spent = c_columns(True, True, True, 1000)
    spent.export("kvh", b"", 0)  # never imported: freed with the object
    with pytest.raises(RuntimeError, match="already finished"):
        spent.export("kvh", b"", 0)
    with pytest.raises(ValueError, match="not asked to collect"):
        c_columns(False, True, False, 1).export("k", b"", 0)
    del spent


def test_columnar_released_buffers_are_kept_for_the_next_batch() -> None:
    """The C pool: a released batch's buffers (those of 4 KiB or more) are kept and the next batch
    writes into them, stale bytes and all, with the rows of the per-record decoder; a batch released
    by another thread gives them back too; ``trim_pool`` frees them; the pool keeps at most 64 MiB."""
    ext = compiled_module("kafka_wire._compiled.columnar")
    assert ext is not None, "the columnar C extension is not built (make compile)"
    ext.trim_pool()
    assert ext.pooled_bytes() == 0
    full = build_batch([(b"k" * 20, b"v" * 200, [("h", b"x" * 20)], BASE_TS + i) for i in range(2000)])
    holey = build_batch(
        [
            (
                None if i % 3 == 0 else b"%d" % i,
                None if i % 7 == 0 else b"w" * (i % 300),
                [("é", None if i % 2 else b"y")] * (i % 3),
                BASE_TS + i,
            )
            for i in range(2000)
        ]
    )
    columnar.decode_arrow(full)  # released at once: its buffers go to the pool
    kept = ext.pooled_bytes()
    assert kept >= 2000 * 200
    for data in (holey, full, holey):
        batch = columnar.decode_arrow(data)
        assert ext.pooled_bytes() < kept  # the live batch holds blocks taken from the pool
        batch.validate(full=True)
        got = [
            (o, k, v, None if h is None else [(x["key"], x["value"]) for x in h])
            for o, k, v, h in zip(
                *(batch.column(c).to_pylist() for c in ("offset", "key", "value", "headers")), strict=True
            )
        ]
        expected = [
            (r.offset, r.key, r.value, [(k, v) for k, v in r.headers] or None)
            for b in RecordsReader(data)
            for r in b
        ]
        assert got == expected
        holder = [batch]
        del batch
        worker = threading.Thread(target=holder.clear)  # Arrow's release runs on that thread
        worker.start()
        worker.join()
        assert ext.pooled_bytes() >= kept
    assert ext.trim_pool() >= kept
    assert ext.pooled_bytes() == 0
    big = build_batch([(b"k", b"v" * 120_000, [("h", b"x")], BASE_TS + i) for i in range(200)])
    columnar.decode_arrow(big)  # four data buffers of 24 MB (room for the batch's bytes each)
    assert 0 < ext.pooled_bytes() <= 64 << 20  # the bound: what does not fit is freed
    ext.trim_pool()
