"""Kafka's PartitionChangeBuilder rules: leader choice, ELR, unclean elections, epochs."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.elections import Election, build_partition_change
from kafka_wire.broker.controller.topics_image import merge_partition_change
from kafka_wire.messages import PartitionChangeRecord

TOPIC_ID = uuid.UUID(int=7)


def state(
    replicas: tuple[int, ...] = (1, 2, 3),
    isr: tuple[int, ...] = (1, 2, 3),
    leader: int = 1,
    elr: tuple[int, ...] = (),
    recovery: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
) -> PartitionState:
    return PartitionState(
        topic="t",
        partition=0,
        topic_id=TOPIC_ID,
        replicas=replicas,
        isr=isr,
        leader=leader,
        leader_epoch=5,
        partition_epoch=9,
        leader_recovery_state=recovery,
        elr=elr,
    )


def alive(*ids: int) -> Callable[[int], bool]:
    return lambda b: b in ids


def elect(p: PartitionState, acceptable: Callable[[int], bool], **kw: object) -> PartitionState:
    record = build_partition_change(p, acceptable, **kw)  # type: ignore[arg-type]
    assert record is not None
    return merge_partition_change(p, record)


# (case, start, alive brokers, kwargs) -> (leader, isr, elr, recovery, leader epoch)
CASES: list[tuple[str, PartitionState, tuple[int, ...], dict[str, object], tuple[object, ...]]] = [
    (
        "leader fenced: first valid ISR replica",
        state(),
        (2, 3),
        {"target_isr": (2, 3)},
        (2, (2, 3), (), LeaderRecoveryState.RECOVERED, 6),
    ),
    (
        "clean: replica order, not ISR order",
        state(isr=(3, 2, 1)),
        (2, 3),
        {"target_isr": (3, 2)},
        (2, (3, 2), (), LeaderRecoveryState.RECOVERED, 6),
    ),
    (
        "ISR below min ISR: leaver kept as ELR",
        state(),
        (1, 2),
        {"target_isr": (1, 2), "min_isr": 3},
        (1, (1, 2), (3,), LeaderRecoveryState.RECOVERED, 5),
    ),
    (
        "ISR empty: leader from ELR, becomes the ISR",
        state(isr=(), leader=-1, elr=(2, 3)),
        (3,),
        {"min_isr": 2},
        (3, (3,), (2,), LeaderRecoveryState.RECOVERED, 6),
    ),
    (
        "nobody eligible, clean: offline",
        state(isr=(1,), leader=1),
        (2, 3),
        {"target_isr": (), "elr_enabled": False},
        (-1, (1,), (), LeaderRecoveryState.RECOVERED, 6),
    ),
    (
        "unclean allowed: any live replica, ISR := [leader], RECOVERING",
        state(isr=(1,), leader=1),
        (3,),
        {"election": Election.UNCLEAN, "elr_enabled": False},
        (3, (3,), (), LeaderRecoveryState.RECOVERING, 6),
    ),
    (
        "preferred: first replica takes over",
        state(leader=2),
        (1, 2, 3),
        {"election": Election.PREFERRED},
        (1, (1, 2, 3), (), LeaderRecoveryState.RECOVERED, 6),
    ),
]


@pytest.mark.parametrize(("case", "start", "brokers", "kw", "expected"), CASES, ids=[c[0] for c in CASES])
def test_election_rules(
    case: str,
    start: PartitionState,
    brokers: tuple[int, ...],
    kw: dict[str, object],
    expected: tuple[object, ...],
) -> None:
    after = elect(start, alive(*brokers), **kw)
    assert (after.leader, after.isr, after.elr, after.leader_recovery_state, after.leader_epoch) == expected
    assert after.partition_epoch == start.partition_epoch + 1


def test_unclean_is_never_chosen_without_unclean_election() -> None:
    start = state(isr=(1,), leader=1)
    after = elect(start, alive(2, 3), elr_enabled=False)
    assert after.leader == -1  # offline, never led by an out-of-sync replica


def test_nothing_to_change_gives_no_record() -> None:
    assert build_partition_change(state(), alive(1, 2, 3)) is None
    assert build_partition_change(state(), alive(1, 2, 3), target_isr=(1, 2, 3)) is None
    # preferred leader already leads
    assert build_partition_change(state(), alive(1, 2, 3), election=Election.PREFERRED) is None


def test_isr_shrink_keeps_leader_and_epoch() -> None:
    record = build_partition_change(state(), alive(1, 2, 3), target_isr=(1, 2))
    assert isinstance(record, PartitionChangeRecord)
    assert (record.leader, record.isr) == (-2, [1, 2])
    after = merge_partition_change(state(), record)
    assert (after.leader_epoch, after.partition_epoch) == (5, 10)


def test_preferred_falls_back_to_current_leader_when_first_replica_not_in_isr() -> None:
    assert (
        build_partition_change(state(isr=(2, 3), leader=2), alive(1, 2, 3), election=Election.PREFERRED)
        is None
    )


def test_recovered_state_can_be_set_by_the_leader() -> None:
    start = state(isr=(3,), leader=3, recovery=LeaderRecoveryState.RECOVERING)
    after = elect(start, alive(1, 2, 3), target_leader_recovery_state=LeaderRecoveryState.RECOVERED)
    assert after.leader_recovery_state is LeaderRecoveryState.RECOVERED
    assert after.leader_epoch == 5


def test_reassignment_completes_when_targets_are_in_sync() -> None:
    # Moving 1,2,3 -> 2,3,4: 4 is adding, 1 removing; once 4 is in the ISR the move completes.
    start = PartitionState(
        topic="t",
        partition=0,
        topic_id=TOPIC_ID,
        replicas=(2, 3, 4, 1),
        isr=(1, 2, 3),
        leader=1,
        leader_epoch=5,
        partition_epoch=9,
        adding_replicas=(4,),
        removing_replicas=(1,),
    )
    after = elect(start, alive(1, 2, 3, 4), target_isr=(1, 2, 3, 4))
    assert (after.replicas, after.isr, after.adding_replicas, after.removing_replicas) == (
        (2, 3, 4),
        (2, 3, 4),
        (),
        (),
    )
    assert after.leader == 2  # the old leader left: first valid replica of the new set
    assert after.leader_epoch == 6
