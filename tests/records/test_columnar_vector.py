"""The pure ``Columns``' two paths (kafka_wire.records.columnar_vector, a field at a time across
records, and the record loop it leaves what it does not take on to): the same Arrow output or the
same error on every batch, and the fast path taken where a batch is ordinary."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.errors import DecodeError
from kafka_wire.records import ReadConfig, build_batch, columnar, columnar_pure, columnar_vector
from tests.records.helpers import CODECS_V2, EXAMPLES, changed_batch

SUPPRESS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


def record_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pure ``Columns`` in use; each v2 batch's path recorded ("vector" or "loop")."""
    monkeypatch.setattr(columnar, "Columns", columnar_pure.Columns)
    paths: list[str] = []
    decode = columnar_vector.decode_v2

    def spy(*args: Any) -> Any:
        try:
            out = decode(*args)
        except columnar_vector.Unfit:
            paths.append("loop")
            raise
        paths.append("vector")
        return out

    monkeypatch.setattr(columnar_vector, "decode_v2", spy)
    return paths


@pytest.fixture
def vector_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """:func:`record_paths`, the fast path open to batches of any size."""
    monkeypatch.setattr(columnar_vector, "FEWEST_RECORDS", 1)
    yield record_paths(monkeypatch)


def both_paths(run: Callable[[], pa.RecordBatch], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """``run``'s outcome (its batch, or the error's text) with the fast path, then with the loop only."""

    def outcome() -> Any:
        try:
            return run()
        except DecodeError as e:
            return f"{type(e).__name__}: {e}"

    fast = outcome()
    with monkeypatch.context() as m:

        def unfit(*args: Any) -> Any:
            raise columnar_vector.Unfit

        m.setattr(columnar_vector, "decode_v2", unfit)
        loop = outcome()
    return fast, loop


def same(fast: Any, loop: Any) -> None:
    if isinstance(loop, str) or isinstance(fast, str):
        assert fast == loop
        return
    fast.validate(full=True)
    assert fast.schema == loop.schema
    assert fast.equals(loop), (fast.to_pydict(), loop.to_pydict())


def test_an_ordinary_batch_takes_the_fast_path(vector_calls: list[str]) -> None:
    records = [(b"k%d" % i, b"v" * 100, [("trace", b"t" * 16)], 1_700_000_000_000 + i) for i in range(500)]
    for codec in CODECS_V2:
        got = columnar.decode_arrow(build_batch(records, compression=codec), topic="t", partition=3)
        assert got.num_rows == 500 and got.column("headers")[7].as_py() == [
            {"key": "trace", "value": b"t" * 16}
        ]
    assert vector_calls == ["vector"] * len(CODECS_V2)


def test_small_batches_go_to_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below :data:`FEWEST_RECORDS` records the loop reads a batch (the fast path's fixed cost is
    not paid back); from there on the fast path does."""
    paths = record_paths(monkeypatch)
    fewest = columnar_vector.FEWEST_RECORDS
    for n in (1, fewest - 1, fewest):
        got = columnar.decode_arrow(build_batch([(b"k", b"v", [], i) for i in range(n)]))
        assert got.num_rows == n
    assert paths == ["loop", "loop", "vector"]


def test_what_the_fast_path_leaves_goes_to_the_loop(
    vector_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Varints past four bytes (a timestamp delta of days), more headers than it reads in a record:
    the loop decodes those batches, to the same rows."""
    no_headers: list[tuple[str, bytes]] = []
    far = [(b"k", b"v", no_headers, 1_700_000_000_000 + i * 86_400_000) for i in range(3)]
    many = [(b"k", b"v", [("h", b"%d" % j) for j in range(columnar_vector.MOST_HEADERS + 1)], 1)]
    for records in (far, many):
        data = build_batch(records)
        same(*both_paths(partial(columnar.decode_arrow, data), monkeypatch))
    assert vector_calls == ["loop", "loop"]


def test_long_batches_and_far_offset_ranges(vector_calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the kept ``0, 1, 2, ...`` array (made anew for the batch) and with an offset range
    reaching past int64's: the same columns."""
    monkeypatch.setattr(columnar_vector, "KEPT_RANGE", 8)
    monkeypatch.setattr(columnar_vector, "_RANGE", columnar_vector._Range())
    records = [(b"k%d" % i, None if i % 4 else b"v", [("h", b"x")] * (i % 3), 5 + i) for i in range(30)]
    data = build_batch(records, base_offset=10)
    for start, end in ((None, None), (12, 1 << 70), (-(1 << 70), 20)):
        run = partial(columnar.decode_arrow, data, start_offset=start, end_offset=end)
        same(*both_paths(run, monkeypatch))
    assert vector_calls == ["vector"] * 3


maybe_bytes = st.one_of(
    st.none(), st.binary(max_size=24), st.binary(min_size=8_200, max_size=8_300)
)  # values past 8 KiB: three-byte length varints


@st.composite
def batches(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """Batches whose records vary in every field the fast path reads: ``(payload, start, end)``."""
    n = draw(st.integers(1, 30))
    header = st.tuples(st.sampled_from(["h", "trace", "é", ""]), st.one_of(st.none(), st.binary(max_size=12)))
    count = st.integers(0, 3) | st.integers(0, columnar_vector.MOST_HEADERS + 1)
    base = draw(st.sampled_from([0, 1_700_000_000_000, -1]))
    step = draw(st.sampled_from([0, 1, 1_000, 70_000_000, 200_000_000]))  # deltas of 1 to 5 bytes
    records = [
        (
            draw(maybe_bytes),
            draw(maybe_bytes),
            draw(st.lists(header, min_size=0, max_size=draw(count))),
            base + i * step,
        )
        for i in range(n)
    ]
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=2))) if n > 1 else []
    first = draw(st.sampled_from([0, 5, (1 << 63) - 100]))
    out = b""
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        out += build_batch(
            records[a:b],
            compression=draw(st.sampled_from(CODECS_V2)),
            base_offset=first + a,
            log_append_time=draw(st.one_of(st.none(), st.integers(0, 2**45))),
        )
    start = first + draw(st.integers(0, n))
    return out, start, draw(st.integers(start, first + n + 1))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SUPPRESS)
@given(
    case=batches(),
    columns=st.sampled_from([columnar.KAFKA_COLUMNS, columnar.NO_HEADERS, ("value",), ("headers", "offset")]),
)
def test_both_paths_give_the_same_columns(
    vector_calls: list[str],
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[bytes, int, int],
    columns: tuple[str, ...],
) -> None:
    data, start, end = case

    def run() -> pa.RecordBatch:
        return columnar.decode_arrow(data, columns=columns, start_offset=start, end_offset=end)

    same(*both_paths(run, monkeypatch))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SUPPRESS)
@given(
    changes=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 10**6),
)
def test_both_paths_fail_alike_on_fuzzed_batches(
    vector_calls: list[str], monkeypatch: pytest.MonkeyPatch, changes: list[tuple[int, int]], cut: int
) -> None:
    """Bytes changed in a batch of records with one to three headers (CRCs not checked), cut
    anywhere: the same error, word for word, or the same rows."""
    records = [
        (
            b"k%d" % i if i % 7 else None,
            b"v" * (90 + i) if i % 5 else None,
            [("h", b"x" * i)] * (1 + i % 3),
            10_000 * i,
        )
        for i in range(30)
    ]
    payload = changed_batch(records, changes, cut)
    config = ReadConfig(verify_crc=False)
    same(*both_paths(lambda: columnar.decode_arrow(payload, config=config), monkeypatch))
