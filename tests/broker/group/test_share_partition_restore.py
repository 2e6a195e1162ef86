"""A share-partition started again from its kept state (a restart, a new leader) never delivers
a record past the delivery limit: a record whose last delivery's lock ended with its leader is
kept as available with its delivery count, and is archived instead of acquired when that count
is the limit (found by ``kafka-wire simulate --seed 16 --nodes 1 --workload share``)."""

from __future__ import annotations

from kafka_wire.broker.group.share_partition import RecordState, SharePartition


def test_a_restored_record_at_the_delivery_limit_is_archived_not_delivered_again() -> None:
    partition = SharePartition(0, delivery_limit=3)
    # offsets 0-1 kept available after 3 and 1 deliveries (their locks ended with the leader)
    partition.restore([(0, 0, int(RecordState.AVAILABLE), 3), (1, 1, int(RecordState.AVAILABLE), 1)])
    got = partition.acquire("m", 5, 10, 0)
    assert [(a.first, a.last, a.delivery_count) for a in got] == [(1, 1, 2), (2, 4, 1)]
    assert partition.start_offset == 1  # 0 archived: done with
    assert partition.records[1].state is RecordState.ACQUIRED


def test_below_the_limit_a_restored_record_is_delivered_again_with_its_count() -> None:
    partition = SharePartition(0, delivery_limit=3)
    partition.restore([(0, 0, int(RecordState.AVAILABLE), 2)])
    assert [(a.first, a.delivery_count) for a in partition.acquire("m", 1, 10, 0)] == [(0, 3)]
