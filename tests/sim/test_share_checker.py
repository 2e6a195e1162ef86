"""The share group checks (``sim/checker/shares.py``) on small hand-made histories, and the
planted share bugs on one ``SharePartition``: each wrong branch is taken only when planted."""

from __future__ import annotations

import random

from kafka_wire.broker.group.share_partition import AcknowledgeType, RecordState, SharePartition
from kafka_wire.sim.bugs import SimHooks
from kafka_wire.sim.checker.shares import ShareChecker
from kafka_wire.sim.history import History, Op, OpKind, OpType

LOCK_MS = 1000


def _hooks(*bugs: str) -> SimHooks:
    return SimHooks(random.Random(0), bugs, buggify=False)


def _acquire(
    time_ms: int, member: str, offsets: range, node: int = 1, count: int = 1, sent_ms: int = -1
) -> Op:
    return Op(
        time_ms,
        member,
        OpType.OK,
        OpKind.ACQUIRE,
        topic="t",
        partition=0,
        records=tuple((o, f"v{o}") for o in offsets),
        member=member,
        node=node,
        delivery_count=count,
        invoked_ms=time_ms - 2 if sent_ms < 0 else sent_ms,
    )


def _ack(
    time_ms: int, member: str, kind: str, offsets: range, outcome: OpType = OpType.OK, node: int = 1
) -> Op:
    return Op(
        time_ms,
        member,
        outcome,
        OpKind.ACK,
        topic="t",
        partition=0,
        value=kind,
        records=tuple((o, f"v{o}") for o in offsets),
        member=member,
        node=node,
    )


def _check(*ops: Op, one_node: bool = False, restarts: tuple[tuple[int, int], ...] = ()) -> list[str]:
    checker = ShareChecker(LOCK_MS, 3)
    checker.failover_loses_state = not one_node
    for node, time_ms in restarts:
        checker.restarted(node, time_ms)
    return [v.anomaly for v in checker.check(History(list(ops)))]


def test_a_record_acquired_by_two_members_within_its_lock_is_a_violation() -> None:
    assert _check(_acquire(100, "a", range(0, 2)), _acquire(500, "b", range(1, 2))) == [
        "share-double-acquire"
    ]


def test_a_second_acquisition_after_the_lock_an_ack_another_node_or_a_restart_is_not() -> None:
    first = _acquire(100, "a", range(0, 1))
    assert _check(first, _acquire(1200, "b", range(0, 1))) == []
    assert (
        _check(first, _ack(300, "a", "release", range(0, 1), OpType.INVOKE), _acquire(500, "b", range(0, 1)))
        == []
    )
    assert _check(first, _acquire(500, "b", range(0, 1), node=2)) == []
    assert _check(first, _acquire(500, "b", range(0, 1)), restarts=((1, 300),)) == []


def test_a_record_delivered_after_a_confirmed_accept_or_reject() -> None:
    sent = _ack(150, "a", "accept", range(0, 1), OpType.INVOKE)
    accepted = (_acquire(100, "a", range(0, 1)), sent, _ack(200, "a", "accept", range(0, 1)))
    assert _check(*accepted, _acquire(400, "b", range(0, 1), count=2)) == ["share-redelivered-accepted"]
    rejected = (_acquire(100, "a", range(0, 1)), sent, _ack(200, "a", "reject", range(0, 1)))
    assert _check(*rejected, _acquire(400, "b", range(0, 1), count=2)) == ["share-redelivered-rejected"]
    # an ack whose answer was lost confirms nothing
    unknown = (_acquire(100, "a", range(0, 1)), sent, _ack(200, "a", "accept", range(0, 1), OpType.INFO))
    assert _check(*unknown, _acquire(400, "b", range(0, 1), count=2)) == []


def test_in_a_cluster_another_leader_may_have_lost_the_state_but_not_on_one_node() -> None:
    history = (
        _acquire(100, "a", range(0, 1), count=2),
        _ack(200, "a", "accept", range(0, 1)),
        _acquire(400, "b", range(0, 1), node=2, count=1),
    )
    assert _check(*history) == []
    assert sorted(_check(*history, one_node=True)) == ["share-count-regressed", "share-redelivered-accepted"]


def test_a_delivery_past_the_limit() -> None:
    assert _check(_acquire(100, "a", range(0, 1), count=4)) == ["share-delivery-limit"]


def test_at_the_end_every_acknowledged_write_is_settled() -> None:
    sends = [
        Op(10, "p", OpType.OK, OpKind.SEND, topic="t", partition=0, value=f"v{o}", offset=o, acks=-1)
        for o in range(4)
    ]
    history = History(
        [
            *sends,
            _acquire(100, "a", range(0, 3)),
            _ack(200, "a", "accept", range(0, 1)),
            _ack(200, "a", "reject", range(1, 2), OpType.INFO),
            _acquire(1200, "b", range(2, 3), count=3),  # a's lock ran out
        ]
    )
    violations = ShareChecker(LOCK_MS, 3).at_end(history, frozenset({"t"}))
    assert [v.anomaly for v in violations] == ["share-unsettled"]
    assert "1 acknowledged writes" in violations[0].detail and "t-0@3" in violations[0].detail


def test_share_lock_ignored_hands_a_held_record_to_another_member() -> None:
    for bugs, taken in (((), []), (("share-lock-ignored",), [0])):
        partition = SharePartition(0, lock_duration_ms=LOCK_MS, hooks=_hooks(*bugs))
        assert partition.acquire("a", 1, 10, 0)
        got = partition.acquire("b", 1, 10, 600)
        assert [a.first for a in got] == taken


def test_share_past_delivery_limit_delivers_once_too_often() -> None:
    for bugs, third in (((), []), (("share-past-delivery-limit",), [3])):
        partition = SharePartition(0, lock_duration_ms=LOCK_MS, delivery_limit=2, hooks=_hooks(*bugs))
        for now in (0, 10):
            assert partition.acquire("a", 1, 10, now)
            assert partition.acknowledge("a", 0, 0, AcknowledgeType.RELEASE, now) == 0
        assert [a.delivery_count for a in partition.acquire("a", 1, 10, 20)] == third


def test_share_accepted_redelivered_makes_an_accepted_record_available_again() -> None:
    for bugs, state in (
        ((), RecordState.ACKNOWLEDGED),
        (("share-accepted-redelivered",), RecordState.AVAILABLE),
    ):
        partition = SharePartition(0, lock_duration_ms=LOCK_MS, hooks=_hooks(*bugs))
        partition.acquire("a", 2, 10, 0)
        assert partition.acknowledge("a", 1, 1, AcknowledgeType.ACCEPT, 100) == 0
        partition.expire(LOCK_MS + 1)  # record 0 timed out: 1 stays in the window behind it
        assert partition.records[1].state is state


def test_share_strict_relaxes_nothing_in_a_cluster() -> None:
    from kafka_wire.cli.simulate import share_checker

    assert share_checker("share-strict").strict and not share_checker("share-strict").failover_loses_state
    assert not share_checker("share").strict
