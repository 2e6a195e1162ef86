"""Which segments a start recovers (Kafka's rules): none after a clean shutdown, else the one holding
the recovery point and every later one (so always the last); the recovery point follows the fsyncs
(rolls, flush settings, close)."""

from __future__ import annotations

import pytest

from kafka_wire.broker.log import LogConfig, PartitionLog
from kafka_wire.broker.log.loader import RecoveryStart

from .helpers import DIR, MIB, Driven, batch, contents

SMALL = LogConfig(segment_bytes=MIB)


def _three_segments() -> Driven:
    d = Driven(SMALL)
    for i in range(12):
        d.append(batch(1, value_size=300_000, ts=1000 + i), now_ms=1000 + i)
    assert d.log.segment_count == 4
    return d


def _flip_in_last_batch_of(d: Driven, segment_index: int) -> None:
    """Damage the last batch of a segment under its CRC only: a header walk still passes."""
    path = d.log.segments[segment_index].log.path
    d.storage.files[path][-10] ^= 0xFF


def _open(d: Driven, start: RecoveryStart | None) -> PartitionLog:
    log = PartitionLog.open(DIR, SMALL, d.storage, 99_000, start=start)
    d.storage.apply(log.take_effects())
    return log


def test_the_recovery_point_follows_the_fsyncs() -> None:
    d = _three_segments()
    # Rolled segments were fsynced at their roll; the active one never was.
    assert d.log.recovery_point == d.log.segments[-1].base_offset
    d.log.close()
    assert d.log.recovery_point == d.log.log_end_offset
    flushing = Driven(LogConfig(segment_bytes=MIB, flush_messages=2))
    flushing.append(batch(1))
    assert flushing.log.recovery_point == 0
    flushing.append(batch(1))
    assert flushing.log.recovery_point == 2
    flushing.log.truncate_to(1)
    assert flushing.log.recovery_point == 1


@pytest.mark.parametrize(
    ("start", "cut"),
    [
        (None, True),  # the metadata log's rule: the last segment is always recovered
        (RecoveryStart(clean_shutdown=True, recovery_point=0), False),
        (RecoveryStart(clean_shutdown=False, recovery_point=0), True),
        # All of it was fsynced, but the last segment holds the point (its end): still recovered.
        (RecoveryStart(clean_shutdown=False, recovery_point=12), True),
    ],
)
def test_the_last_segment_is_recovered_unless_the_shutdown_was_clean(
    start: RecoveryStart | None, cut: bool
) -> None:
    d = _three_segments()
    before = contents(d.log)
    _flip_in_last_batch_of(d, -1)
    log = _open(d, start)
    # Recovery checks every batch's CRC and cuts the damaged last one; without it the log is
    # served as it was left (the last batch's reader finds the damage).
    assert log.log_end_offset == (11 if cut else 12)
    if cut:
        assert contents(log) == before[:11]
    expected_point = 12 if start is None or start.clean_shutdown else min(start.recovery_point, 12)
    assert log.recovery_point == min(expected_point, log.log_end_offset)


def test_an_unclean_start_recovers_every_segment_from_the_recovery_point() -> None:
    d = _three_segments()
    second = d.log.segments[1]
    third_base = d.log.segments[2].base_offset
    _flip_in_last_batch_of(d, 1)  # a closed segment's damage, under a header walk's notice
    kept = _open(d, RecoveryStart(clean_shutdown=False, recovery_point=third_base))
    assert kept.segments[1].next_offset == third_base  # below the recovery point: checked only
    recovered = _open(d, RecoveryStart(clean_shutdown=False, recovery_point=second.base_offset))
    assert recovered.segments[1].next_offset == third_base - 1  # its damaged last batch cut
    assert recovered.segment_count == 4


def test_an_unclean_start_recovers_the_segment_ending_at_the_recovery_point() -> None:
    """Seed 3686 of the transactional simulation: a bit flipped in an early batch of a fsynced
    single-segment log, the recovery point at its end. Kafka's loader recovers the segment that
    holds the point, its end included, and cuts the log at the first corrupt batch; checking
    only the tail kept the damaged batch, and the replica, back in the ISR, was elected with it."""
    d = Driven(LogConfig(flush_messages=1))
    for i in range(6):
        d.append(batch(1, ts=1000 + i), now_ms=1000 + i)
    assert d.log.recovery_point == d.log.log_end_offset == 6
    before = contents(d.log)
    path = d.log.segments[0].log.path
    third_at = len(batch(1)) * 2  # every batch here has the same size
    d.storage.files[path][third_at + 70] ^= 0x01  # inside the third batch's records, under its CRC
    clean = _open(d, RecoveryStart(clean_shutdown=True, recovery_point=6))
    assert clean.log_end_offset == 6  # a clean shutdown vouches for the log as it is
    log = _open(d, RecoveryStart(clean_shutdown=False, recovery_point=6))
    assert log.log_end_offset == 2
    assert contents(log) == before[:2]
    assert log.recovery_point == 2
