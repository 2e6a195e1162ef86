"""Compaction and transactions (``broker/log/cleaner_txn``): aborted records go, committed ones
are compacted like the rest, a marker outlives its transaction's batches by
``delete.retention.ms``, open transactions are never reached, and what a live producer's state
needs stays."""

from __future__ import annotations

from kafka_wire.broker.log.cleaner_txn import ActiveProducer, ProducerLookup, no_producers
from kafka_wire.logformat.txn_index import AbortedTxn
from kafka_wire.records import RecordBatch, build_abort_marker, build_commit_marker, read_batches

from .helpers import Driven
from .test_cleaner import COMPACT, DAY, _put


def _txn(d: Driven, producer_id: int, pairs: list[tuple[bytes, bytes | None]], epoch: int = 0) -> None:
    _put(d, pairs, producer_id=producer_id, producer_epoch=epoch, base_sequence=0, is_transactional=True)


def _end(d: Driven, producer_id: int, commit: bool, epoch: int = 0) -> int:
    build = build_commit_marker if commit else build_abort_marker
    offset = d.log.log_end_offset
    marker = build(producer_id=producer_id, producer_epoch=epoch, coordinator_epoch=1)
    assert d.append(marker, origin="coordinator").error_code == 0
    return offset


def _batches(d: Driven) -> list[RecordBatch[bytes]]:
    batches = list(read_batches(d.log.read_bytes(d.log.read(0, 10**7))))
    assert all(isinstance(b, RecordBatch) for b in batches)
    return [b for b in batches if isinstance(b, RecordBatch)]


def _records(d: Driven) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in _batches(d) if not b.is_control for r in b.records()]


def _clean(
    d: Driven, now_ms: int, producers: ProducerLookup = no_producers, stable: int | None = None
) -> None:
    d.log.roll(now_ms)
    d.apply()
    for _ in range(50):
        d.maintain(now_ms, stable_offset=stable, producers=producers)
        if d.log.cleaner_job is None and d.log.next_deadline_ms() != now_ms:
            return


def _aborted(d: Driven) -> list[AbortedTxn]:
    return [t for s in d.log.segments for t in s.txn_index.entries(d.storage)]


def test_aborted_records_go_and_markers_outlive_their_batches_by_the_retention() -> None:
    d = Driven(COMPACT)
    _txn(d, 7, [(b"a", b"aborted"), (b"b", b"aborted")])
    abort = _end(d, 7, commit=False)
    d.log.segments[-1].txn_index.append(AbortedTxn(7, 0, abort, 0))
    _txn(d, 8, [(b"a", b"committed")])
    commit = _end(d, 8, commit=True)
    _put(d, [(b"b", b"plain")])
    _put(d, [(b"c", b"plain")])

    _clean(d, 5000)
    # The aborted batch is gone (its records were never mapped: b's plain value is the latest of
    # b); the committed record is the latest of a and stays, so does its marker.
    assert _records(d) == [(3, b"a", b"committed"), (5, b"b", b"plain"), (6, b"c", b"plain")]
    markers = {b.base_offset: b for b in _batches(d) if b.is_control}
    assert set(markers) == {abort, commit}
    assert markers[abort].delete_horizon_ms == 5000 + DAY  # its transaction has no batch left
    assert markers[commit].delete_horizon_ms is None
    assert _aborted(d) == [AbortedTxn(7, 0, abort, 0)]

    _put(d, [(b"a", b"newer")])
    _clean(d, 5000 + DAY)
    assert _records(d) == [(5, b"b", b"plain"), (6, b"c", b"plain"), (7, b"a", b"newer")]
    markers = {b.base_offset: b for b in _batches(d) if b.is_control}
    assert set(markers) == {commit}  # the abort marker went at its horizon, its index entry too
    assert markers[commit].delete_horizon_ms == 5000 + 2 * DAY
    assert _aborted(d) == []

    _clean(d, 5000 + 2 * DAY - 1)
    assert any(b.is_control for b in _batches(d))
    _clean(d, 5000 + 2 * DAY)
    assert not any(b.is_control for b in _batches(d))
    assert _records(d) == [(5, b"b", b"plain"), (6, b"c", b"plain"), (7, b"a", b"newer")]


def test_an_open_transaction_is_never_compacted() -> None:
    d = Driven(COMPACT)
    _put(d, [(b"a", b"1")])
    _txn(d, 9, [(b"a", b"open")])
    _put(d, [(b"a", b"2")])
    _clean(d, 5000, stable=1)  # the last stable offset: the open transaction's first offset
    assert _records(d) == [(0, b"a", b"1"), (1, b"a", b"open"), (2, b"a", b"2")]


def test_a_live_producers_last_batch_and_last_marker_stay() -> None:
    # Transaction version 1: the marker has the transaction's epoch; the producer's last data
    # batch (emptied) stays, and with it the marker that ends its transaction.
    d = Driven(COMPACT)
    _txn(d, 10, [(b"a", b"x")])
    marker = _end(d, 10, commit=True)
    _put(d, [(b"a", b"y")])
    _clean(d, 5000, producers={10: ActiveProducer(0, 0)}.get)
    assert [(b.base_offset, b.is_control, len(list(b.records()))) for b in _batches(d)] == [
        (0, False, 0),
        (marker, True, 1),
        (2, False, 1),
    ]
    # Transaction version 2: the marker carries the bumped epoch and is the producer's last
    # entry: the emptied batch goes, the marker stays (without a horizon) while the producer lives.
    d = Driven(COMPACT)
    _txn(d, 11, [(b"a", b"x")])
    marker = _end(d, 11, commit=True, epoch=1)
    _put(d, [(b"a", b"y")])
    _clean(d, 5000, producers={11: ActiveProducer(-1, 1)}.get)
    assert [(b.base_offset, b.delete_horizon_ms) for b in _batches(d)] == [(marker, None), (2, None)]
    _put(d, [(b"a", b"z")])  # a pass runs when there is something to compact
    _clean(d, 5000 + 2 * DAY)  # the producer expired: the marker's transaction has nothing left
    _clean(d, 5000 + 4 * DAY)
    assert [b.base_offset for b in _batches(d)] == [3]


def test_markers_are_rewritten_with_their_bytes_otherwise_unchanged() -> None:
    d = Driven(COMPACT)
    _txn(d, 12, [(b"k", b"v")])
    marker = _end(d, 12, commit=True)
    _put(d, [(b"k", b"w")])
    before = next(b for b in _batches(d) if b.is_control)
    _clean(d, 5000)
    after = next(b for b in _batches(d) if b.is_control)
    assert after.base_offset == marker and after.delete_horizon_ms == 5000 + DAY
    assert (after.producer_id, after.producer_epoch, after.is_transactional) == (12, 0, True)
    assert [(r.key, r.value) for r in after.records()] == [(r.key, r.value) for r in before.records()]
