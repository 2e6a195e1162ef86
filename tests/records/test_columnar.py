"""Columnar decoding (kafka_wire.records.columnar): equal to the per-record decoder on every magic,
codec, control and aborted-transaction case, in both flavours of ``Columns``; nulls anywhere in
long batches; projection, offset ranges, corrupt and fuzzed input (a DecodeError exactly when the
per-record decoder raises one); the C export's buffer lifetimes; the error without pyarrow."""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.errors import DecodeError
from kafka_wire.records import (
    ReadConfig,
    TimestampType,
    build_abort_marker,
    build_batch,
    build_commit_marker,
    columnar,
    columnar_pure,
    read_batches,
)
from tests.records.helpers import (
    CODECS_LEGACY,
    CODECS_V2,
    EXAMPLES,
    changed_batch,
    legacy_records,
    v2_records,
)

FLAVOURS = ["pure", "compiled"] if columnar.COMPILED else ["pure"]


@pytest.fixture(params=FLAVOURS)
def flavour(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test runs on the pure ``Columns`` and, when it is built, on the C one."""
    if request.param == "pure":
        monkeypatch.setattr(columnar, "Columns", columnar_pure.Columns)
    yield request.param


def rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    """``(offset, timestamp ms, key, value, headers, timestampType)`` of each row."""
    d = batch.drop_columns(["timestamp"]).to_pydict()  # far timestamps have no datetime
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    return [
        (
            d["offset"][i],
            stamps[i] // 1000,
            d["key"][i],
            d["value"][i],
            None if d["headers"][i] is None else [(h["key"], h["value"]) for h in d["headers"][i]],
            d["timestampType"][i],
        )
        for i in range(batch.num_rows)
    ]


def per_record(
    data: bytes,
    skip: Collection[int] = (),
    include_control: bool = False,
    config: ReadConfig | None = None,
) -> list[tuple[Any, ...]]:
    """The same rows from the per-record decoder; batches at positions in ``skip`` left out."""
    out = []
    for b in read_batches(data, config):
        if b.position in skip or (b.magic == 2 and b.is_control and not include_control):
            continue
        for r in b:
            headers = [(k, None if v is None else bytes(v)) for k, v in r.headers] or None
            out.append((r.offset, r.timestamp, r.key, r.value, headers, int(b.timestamp_type)))
    return out


@st.composite
def payloads(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]], set[int]]:
    """Batches of every kind back to back: ``(payload, aborted transactions, positions of the
    batches read_committed leaves out)``. Producers 1-3 write transactions, each ended by a
    COMMIT or ABORT marker; aborted ones are listed as a Fetch response lists them."""
    out = bytearray()
    offset = 0
    aborted: list[tuple[int, int]] = []
    left_out: set[int] = set()
    open_txn: dict[int, tuple[int, list[int]]] = {}
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["v2", "legacy", "txn", "marker"]))
        position = len(out)
        if kind == "legacy":
            records = draw(legacy_records(max_size=4))
            magic = draw(st.sampled_from([0, 1]))
            codec = draw(st.sampled_from(CODECS_LEGACY))
            out += build_batch(records, magic=magic, compression=codec, base_offset=offset)
            offset += len(records)
        elif kind == "marker":
            if not open_txn:
                continue
            pid = draw(st.sampled_from(sorted(open_txn)))
            first, positions = open_txn.pop(pid)
            build = build_abort_marker if draw(st.booleans()) else build_commit_marker
            if build is build_abort_marker:
                aborted.append((pid, first))
                left_out.update(positions)
            out += build(producer_id=pid, producer_epoch=0, coordinator_epoch=0, base_offset=offset)
            offset += 1
        else:
            records = draw(v2_records(max_size=6)) or [(b"k", b"v", [], 1)]
            records = [(k, v, h, ts if ts >= 0 else 0) for k, v, h, ts in records]
            txn = kind == "txn"
            pid = draw(st.integers(1, 3)) if txn else -1
            log_append_time = draw(st.one_of(st.none(), st.integers(0, 2**45)))
            out += build_batch(
                records,
                compression=draw(st.sampled_from(CODECS_V2)),
                base_offset=offset,
                producer_id=pid,
                producer_epoch=0 if txn else -1,
                base_sequence=0 if txn else -1,
                is_transactional=txn,
                timestamp_type=TimestampType.CREATE_TIME
                if log_append_time is None
                else TimestampType.LOG_APPEND_TIME,
                log_append_time=log_append_time,
            )
            if txn:
                open_txn.setdefault(pid, (offset, []))[1].append(position)
            offset += len(records)
    for pid, (first, positions) in open_txn.items():  # close what is open, so the list is complete
        aborted.append((pid, first))
        left_out.update(positions)
        out += build_abort_marker(producer_id=pid, producer_epoch=0, coordinator_epoch=0, base_offset=offset)
        offset += 1
    return bytes(out), aborted, left_out


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=payloads(), include_control=st.booleans())
def test_equals_the_per_record_decoder(
    flavour: str, case: tuple[bytes, list[tuple[int, int]], set[int]], include_control: bool
) -> None:
    data, aborted, left_out = case
    uncommitted = columnar.decode_arrow(data, topic="t", partition=4, include_control=include_control)
    assert rows(uncommitted) == per_record(data, include_control=include_control)
    assert set(uncommitted.column("topic").to_pylist()) <= {"t"}
    assert set(uncommitted.column("partition").to_pylist()) <= {4}
    committed = columnar.decode_arrow(data, read_committed=True, aborted_transactions=aborted)
    assert rows(committed) == per_record(data, skip=left_out)

    # Fetch's objects are taken as they are; several payloads read as one
    class Aborted:
        def __init__(self, pid: int, first: int) -> None:
            self.producer_id, self.first_offset = pid, first

    objects = [Aborted(*a) for a in aborted]
    assert columnar.decode_arrow([data], read_committed=True, aborted_transactions=objects) == committed


@pytest.mark.parametrize("codec", CODECS_V2)
def test_projection_and_offset_range(flavour: str, codec: str) -> None:
    records = [(b"k%d" % i, b"v" * i, [("h", b"%d" % i)], 1_700_000_000_000 + i) for i in range(50)]
    data = build_batch(records[:30], compression=codec, base_offset=10) + build_batch(
        records[30:], compression=codec, base_offset=40
    )
    full = columnar.decode_arrow(data)
    for columns in (["value"], ["offset", "timestamp"], ["headers", "key"], list(columnar.NO_HEADERS)):
        part = columnar.decode_arrow(data, columns=columns)
        assert part.schema.names == columns
        assert part == full.select(columns)
    some = columnar.decode_arrow(data, start_offset=25, end_offset=45)
    assert some.column("offset").to_pylist() == list(range(25, 45))
    assert some == full.slice(15, 20)
    assert columnar.decode_arrow(data, start_offset=60).num_rows == 0
    with pytest.raises(ValueError, match="columns must be distinct names"):
        columnar.decode_arrow(data, columns=["offset", "nope"])


def test_decoder_takes_rows_and_starts_anew(flavour: str) -> None:
    data = build_batch([(b"k", b"v", [], 5)] * 3)
    decoder = columnar.ArrowDecoder(topic="x", partition=0)
    assert decoder.add(data) == 3
    decoder.add(build_batch([(None, None, [], 7)], base_offset=3))
    assert decoder.rows == 4
    first = decoder.take()
    assert first.num_rows == 4 and decoder.rows == 0
    assert first.column("key").null_count == 1 and first.column("headers").null_count == 4
    assert decoder.take().num_rows == 0
    assert decoder.take().schema == columnar.arrow_schema()


def test_corrupt_batches_fail_as_the_per_record_decoder_does(flavour: str) -> None:
    """Every truncation of the records and every single-byte change of a small batch (CRC checks
    off, so the record walk sees them): a DecodeError exactly when the per-record decoder raises one."""
    data = build_batch([(b"key", b"value", [("h", b"x"), ("\u00e9", None)], 9), (None, b"", [], 10)])
    config = ReadConfig(verify_crc=False)

    def outcome(fn: Any) -> str:
        try:
            fn()
        except DecodeError:
            return "error"
        return "ok"

    def per_record_rows(payload: bytes) -> object:
        return [list(b) for b in read_batches(payload, config)]

    cases = [data[:61] + data[61:n] for n in range(61, len(data))]
    cases = [c[:8] + (len(c) - 12).to_bytes(4, "big") + c[12:] for c in cases]  # sizes that fit
    cases += [
        data[:i] + bytes([data[i] ^ x]) + data[i + 1 :]
        for i in range(61, len(data))
        for x in (0x01, 0x80, 0xFF)
    ]
    for case in cases:
        expected = outcome(lambda c=case: per_record_rows(c))
        assert outcome(lambda c=case: columnar.decode_arrow(c, config=config)) == expected, case.hex()


def test_crc_errors_are_the_readers(flavour: str) -> None:
    """With CRC checks on: every single-byte change of a payload of plain, compressed, control and legacy batches raises the
    error the per-record decoder raises (type and message), or decodes the same rows."""
    data = (
        build_batch([(b"key", b"v" * 40, [("h", b"x")], 9), (None, b"", [], 10)], base_offset=0)
        + build_batch([(b"z", b"y" * 30, [], 11)] * 3, compression="gzip", base_offset=2)
        + build_commit_marker(producer_id=1, producer_epoch=0, coordinator_epoch=0, base_offset=5)
        + build_batch([(b"a", b"b")], magic=1, base_offset=6)
        + build_batch([(b"c", b"d")] * 2, magic=0, compression="gzip", base_offset=7)
    )

    def outcome(fn: Any) -> Any:
        try:
            return fn()
        except DecodeError as e:
            return (type(e).__name__, str(e))

    big = build_batch([(b"k%d" % i, b"v" * 200, [("h", b"x")], i) for i in range(400)], base_offset=20)
    cases = [(data, i) for i in range(len(data))] + [(big, i) for i in range(0, len(big), 997)]
    for payload, i in cases:  # the big batch (80 KiB): changes spread over it
        bad = payload[:i] + bytes([payload[i] ^ 0x10]) + payload[i + 1 :]
        expected = outcome(lambda b=bad: per_record(b))
        got = outcome(lambda b=bad: rows(columnar.decode_arrow(b)))
        assert got == expected, i
    assert outcome(lambda: rows(columnar.decode_arrow(big))) == per_record(big)


@st.composite
def long_batches(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """Batches of up to 40 records whose nulls (key, value, headers, header values) fall anywhere,
    past the first byte of a validity bitmap too: ``(payload, start_offset, end_offset)``."""
    n = draw(st.integers(1, 40))
    maybe = st.one_of(st.none(), st.binary(max_size=20), st.binary(min_size=120, max_size=200))
    headers = st.lists(st.tuples(st.sampled_from(["h", "trace", "é", ""]), maybe), max_size=2)
    records = [(draw(maybe), draw(maybe), draw(headers), 1_700_000_000_000 + i) for i in range(n)]
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
    out = b""
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        out += build_batch(records[a:b], compression=draw(st.sampled_from(CODECS_V2)), base_offset=a)
    start = draw(st.integers(0, n))
    return out, start, draw(st.integers(start, n + 1))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=long_batches())
def test_nulls_anywhere_in_long_batches(flavour: str, case: tuple[bytes, int, int]) -> None:
    data, start, end = case
    got = columnar.decode_arrow(data, start_offset=start, end_offset=end)
    got.validate(full=True)
    assert rows(got) == [r for r in per_record(data) if start <= r[0] < end]
    decoder = columnar.ArrowDecoder()  # row by row across several takes: the same rows
    parts = []
    for batch in read_batches(data):
        decoder.add_batch(batch)
        parts.append(decoder.take())
    assert [r for p in parts for r in rows(p)] == per_record(data)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 10**6),
)
def test_fuzzed_batches_fail_as_the_per_record_decoder_does(
    flavour: str, changes: list[tuple[int, int]], cut: int
) -> None:
    """Random bytes changed in a batch of 30 records with multi-byte varints (CRC checks off), and
    cut anywhere: a DecodeError exactly when the per-record decoder raises one, else its rows."""
    records = [
        (
            b"k%d" % i if i % 7 else None,
            b"v" * (90 + i) if i % 5 else None,
            [("h", b"x" * i)] * (i % 3),
            10_000 * i,
        )
        for i in range(30)
    ]
    payload = changed_batch(records, changes, cut)
    config = ReadConfig(verify_crc=False)
    try:
        expected: Any = per_record(payload, config=config)
    except DecodeError:
        expected = "error"
    try:
        batch = columnar.decode_arrow(payload, config=config)
    except DecodeError:
        assert expected == "error"
        return
    batch.validate(full=True)
    assert rows(batch) == expected


def test_without_pyarrow_the_call_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"kafka-wire\[arrow\]"):
        columnar.decode_arrow(build_batch([(b"k", b"v", [], 1)]))
