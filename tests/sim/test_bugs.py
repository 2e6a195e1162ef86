"""The planted bugs and BUGGIFY points on the engine's own objects: each bug changes what the
engine does (and the same scenario is right without it); each BUGGIFY point takes its rare path
and the engine stays correct."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from kafka_wire.broker import buggify
from kafka_wire.broker.cluster_view import LeaderRecoveryState
from kafka_wire.broker.controller.elections import Election, build_partition_change
from kafka_wire.broker.controller.topics_image import NO_LEADER, merge_partition_change
from kafka_wire.broker.group import GroupCoordinator
from kafka_wire.messages import ErrorCode, PartitionChangeRecord, ProduceResponse
from kafka_wire.records import read_records
from kafka_wire.sim.bugs import BUGS, POINTS, SimHooks
from tests.broker.controller.test_controller import alter_isr, only
from tests.broker.controller.test_controller import cluster as controller_cluster
from tests.broker.controller.test_elections import alive
from tests.broker.controller.test_elections import state as partition_state
from tests.broker.group.harness import DELAYED, run_group
from tests.broker.group.harness import Harness as GroupHarness
from tests.broker.replication.cluster import Network
from tests.broker.replication.test_replication import (
    client_fetch,
    produce_error,
    read_all,
    three,
    values,
)

E = ErrorCode


class Forced:
    """Hooks that plant ``bugs`` and fire exactly ``points``, every time."""

    def __init__(self, *, bugs: tuple[str, ...] = (), points: tuple[str, ...] = ()) -> None:
        assert set(bugs) <= BUGS.keys() and set(points) <= POINTS.keys()
        self.bugs, self.points = bugs, points
        self.visits: dict[str, int] = {}

    def fire(self, point: str) -> bool:
        self.visits[point] = self.visits.get(point, 0) + 1
        return point in self.points

    def planted(self, bug: str) -> bool:
        return bug in self.bugs


class Switched:
    """The hooks the engine objects of these tests are built with (``hooks=HOOKS``): the engine
    keeps that object, and a test switches what it answers for the length of a block."""

    def __init__(self) -> None:
        self.current: buggify.Hooks = buggify.OFF

    def fire(self, point: str) -> bool:
        return self.current.fire(point)

    def planted(self, bug: str) -> bool:
        return self.current.planted(bug)

    @contextmanager
    def on(self, hooks: buggify.Hooks) -> Iterator[None]:
        previous, self.current = self.current, hooks
        try:
            yield
        finally:
            self.current = previous


HOOKS = Switched()


def planted(bug: str) -> AbstractContextManager[None]:
    return HOOKS.on(SimHooks(random.Random(0), [bug], buggify=False))


def produced_at(answer: object) -> tuple[int, int]:
    assert isinstance(answer, ProduceResponse)
    result = answer.responses[0].partition_responses[0]
    return result.error_code, result.base_offset


# -- SimHooks -------------------------------------------------------------------------------------


def test_every_bug_and_point_is_described_in_one_line() -> None:
    assert len(BUGS) >= 8
    for description in [*BUGS.values(), *POINTS.values()]:
        assert description and "\n" not in description
    for name in BUGS:  # each names the invariant that catches it
        assert "#" in BUGS[name], name


def test_sim_hooks_plant_only_the_bugs_asked_for_and_refuse_unknown_names() -> None:
    hooks = SimHooks(random.Random(1), ["serve-above-hw"])
    assert hooks.planted("serve-above-hw")
    assert not hooks.planted("hw-without-isr")
    with pytest.raises(ValueError, match="no-such-bug"):
        SimHooks(random.Random(1), ["no-such-bug"])


def test_sim_hooks_are_a_pure_function_of_the_generator() -> None:
    def draws(seed: int) -> list[bool]:
        hooks = SimHooks(random.Random(seed), enable_probability=0.5, fire_probability=0.5)
        return [hooks.fire(point) for _ in range(50) for point in sorted(POINTS)]

    assert draws(7) == draws(7)
    assert any(draws(7)) and not all(draws(7))
    assert any(draws(seed) != draws(7) for seed in range(8, 12))


def test_a_point_disabled_for_the_run_never_fires_and_an_enabled_one_sometimes_does() -> None:
    hooks = SimHooks(random.Random(3), enable_probability=0.5, fire_probability=0.2)
    for _ in range(500):
        for point in POINTS:
            hooks.fire(point)
    for point, enabled in hooks.enabled.items():
        assert (hooks.fired.get(point, 0) > 0) == enabled
    assert set(hooks.enabled) == set(POINTS)


def test_without_buggify_the_generator_is_never_drawn_from() -> None:
    rng = random.Random(4)
    before = rng.getstate()
    hooks = SimHooks(rng, buggify=False)
    assert not any(hooks.fire(point) for point in POINTS for _ in range(10))
    assert rng.getstate() == before


def test_switched_hooks_are_restored_afterwards() -> None:
    assert HOOKS.current is buggify.OFF
    with planted("no-epoch-bump"):
        assert HOOKS.planted("no-epoch-bump")
    assert HOOKS.current is buggify.OFF and not HOOKS.planted("no-epoch-bump")


# -- planted bugs -----------------------------------------------------------------------------------


def _hw_after_an_unreplicated_append() -> int:
    net = three(hooks=HOOKS)
    leader = net.nodes[1]
    leader.produce([b"a", b"b", b"c"], net.now_ms, acks=1)
    return leader.replica().high_watermark


def test_hw_without_isr() -> None:
    assert _hw_after_an_unreplicated_append() == 0  # the followers have not fetched it
    with planted("hw-without-isr"):
        assert _hw_after_an_unreplicated_append() == 3


def _double_failover() -> tuple[list[bytes | None], list[bytes | None], int]:
    """KIP-101's scenario: the old leader's unreplicated ``m2`` against the new leader's ``m3``."""
    net = Network(hooks=HOOKS)
    for node_id in (1, 2):
        net.add(node_id)
    net.create((1, 2))
    net.nodes[1].produce([b"m1"], net.now_ms, acks=-1)
    net.run(1000)
    net.crash(2)
    net.nodes[1].produce([b"m2"], net.now_ms, acks=1)
    net.crash(1)
    net.restart(2)
    net.elect(2, isr=(2,))
    net.nodes[2].produce([b"m3"], net.now_ms, acks=1)
    old = net.restart(1)
    net.run(2000)
    return values(old), values(net.nodes[2]), old.replica().high_watermark


def test_skip_truncation() -> None:
    assert _double_failover() == ([b"m1", b"m3"], [b"m1", b"m3"], 2)
    with planted("skip-truncation"):
        follower, leader, follower_hw = _double_failover()
    # Offset 1 holds m2 on the follower and m3 on the leader, below both high watermarks.
    assert (follower, leader, follower_hw) == ([b"m1", b"m2"], [b"m1", b"m3"], 2)


def test_unclean_election() -> None:
    # The ISR (node 1) is offline; node 2 is alive but out of sync; unclean election is off.
    offline = partition_state(isr=(1,), leader=1)

    def elect() -> PartitionChangeRecord | None:
        return build_partition_change(
            offline, alive(2, 3), election=Election.ONLINE, target_isr=(), elr_enabled=False, hooks=HOOKS
        )

    right = elect()
    assert right is not None and right.leader == NO_LEADER
    with planted("unclean-election"):
        wrong = elect()
    assert wrong is not None and wrong.leader == 2
    assert wrong.leader_recovery_state == int(LeaderRecoveryState.RECOVERING)
    # A preferred-leader election is not affected (it never falls back).
    with planted("unclean-election"):
        preferred = build_partition_change(offline, alive(2, 3), election=Election.PREFERRED, hooks=HOOKS)
    assert preferred is not None and preferred.leader == NO_LEADER


def _acks_all_answer_before_replication() -> tuple[bool, int]:
    net = three(hooks=HOOKS)
    leader = net.nodes[1]
    request = leader.produce([b"a"], net.now_ms, acks=-1)
    assert leader.replica().high_watermark == 0
    answered = request in leader.answers
    return answered, produce_error(leader.answers[request]) if answered else -1


def test_ack_before_isr() -> None:
    assert _acks_all_answer_before_replication() == (False, -1)  # held until the HW passes it
    with planted("ack-before-isr"):
        assert _acks_all_answer_before_replication() == (True, E.NONE)


def _retry_after_a_restart() -> tuple[int, int]:
    """An idempotent batch is acknowledged, its leader restarts, and the producer retries it."""
    net = three(hooks=HOOKS)
    first = net.nodes[1].produce([b"a", b"b"], net.now_ms, acks=-1, producer_id=7, sequence=0)
    net.run(1000)
    assert produced_at(net.nodes[1].answers[first]) == (E.NONE, 0)
    net.crash(1)
    restarted = net.restart(1)
    assert restarted.replica().is_leader
    retry = restarted.produce([b"a", b"b"], net.now_ms, acks=1, producer_id=7, sequence=0)
    return produced_at(restarted.answers[retry])


def test_forget_producer_state() -> None:
    assert _retry_after_a_restart() == (E.NONE, 0)  # recognised: the original offset
    with planted("forget-producer-state"):
        assert _retry_after_a_restart() == (E.NONE, 2)  # appended a second time


def _consumer_view() -> tuple[int, int]:
    net = three(hooks=HOOKS)
    net.nodes[1].produce([b"a"], net.now_ms, acks=-1)
    net.run(1000)
    net.crash(3)
    net.nodes[1].produce([b"b", b"c"], net.now_ms, acks=1)
    net.run(1000)
    data = client_fetch(net.nodes[1], net.now_ms)
    return data.high_watermark, len(values_of(data.records))


def values_of(records: bytes | memoryview | None) -> list[bytes | None]:
    return [r.value for r in read_records(bytes(records or b""))]


def test_serve_above_hw() -> None:
    assert _consumer_view() == (1, 1)
    with planted("serve-above-hw"):
        assert _consumer_view() == (1, 3)


def _committed_after_reload() -> dict[tuple[str, int], tuple[int, str, int]]:
    h = GroupHarness(DELAYED)
    ids, generation = run_group(h, "g", 1)
    assert h.commit("g", {("t", 0): 10}, generation=generation, member_id=ids[0]) == {("t", 0): E.NONE}
    reloaded = GroupHarness(DELAYED, coordinator=GroupCoordinator(DELAYED, hooks=HOOKS))
    reloaded.coord.load(h.log)  # a restart, or a new leader of the group's partition
    return reloaded.fetch("g", {"t": [0]})[1]


def test_offsets_not_loaded() -> None:
    assert _committed_after_reload()[("t", 0)][0] == 10
    with planted("offsets-not-loaded"):
        assert _committed_after_reload()[("t", 0)][0] == -1  # members start again from the beginning


def test_no_epoch_bump() -> None:
    old = partition_state(leader=1)
    move = build_partition_change(old, alive(2, 3))  # node 1 is gone: node 2 takes over
    assert move is not None and move.leader == 2
    assert merge_partition_change(old, move, HOOKS).leader_epoch == old.leader_epoch + 1
    with planted("no-epoch-bump"):
        new = merge_partition_change(old, move, HOOKS)
    assert (new.leader, new.leader_epoch) == (2, old.leader_epoch)
    # An ISR change without a new leader is as it was.
    shrink = build_partition_change(old, alive(1, 2, 3), target_isr=(1, 2))
    assert shrink is not None
    with planted("no-epoch-bump"):
        assert merge_partition_change(old, shrink, HOOKS).leader_epoch == old.leader_epoch


def test_no_epoch_bump_in_the_controller_gives_two_leaders_one_epoch() -> None:
    def leaders() -> list[tuple[int, int]]:
        h = controller_cluster(1, 2, 3, hooks=HOOKS)
        h.create_topic("t", partitions=1)
        p = h.controller.committed.partition("t", 0)
        assert p is not None
        seen = [(p.leader, p.leader_epoch)]
        h.heartbeat(p.leader, want_fence=True)  # the leader is fenced: another is elected
        p = h.controller.committed.partition("t", 0)
        assert p is not None
        return [*seen, (p.leader, p.leader_epoch)]

    (first, epoch), (second, next_epoch) = leaders()
    assert first != second and next_epoch == epoch + 1
    with planted("no-epoch-bump"):
        (first, epoch), (second, next_epoch) = leaders()
    assert first != second and next_epoch == epoch


# -- BUGGIFY points ---------------------------------------------------------------------------------


def test_minimal_isr_shrinks_a_caught_up_isr_to_min_insync_and_it_grows_back() -> None:
    net = three(min_isr=2, hooks=HOOKS)
    net.nodes[1].produce([b"a"], net.now_ms, acks=-1)
    net.run(1000)
    assert net.registrations["t", 0].isr == (1, 2, 3)
    hooks = Forced(points=("replica.minimal_isr",))
    with HOOKS.on(hooks):
        net.run(net.config.replica_lag_time_max_ms // 2 + 100)
        assert hooks.visits["replica.minimal_isr"] >= 1
        proposed = [
            [b.broker_id for b in r.topics[0].partitions[0].new_isr_with_epochs] for r in net.alter_requests
        ]
        assert [1, 2] in proposed  # the leader and one more: min.insync.replicas = 2
        # acks=all still needs the (smaller) ISR and is answered; nothing shrinks below min.insync.
        request = net.nodes[1].produce([b"b"], net.now_ms, acks=-1)
        net.run(1000)
        assert produce_error(net.nodes[1].answers[request]) == E.NONE
        assert len(net.registrations["t", 0].isr) >= 2
    net.run(1000)  # node 3 fetches on: it is taken back
    assert sorted(net.registrations["t", 0].isr) == [1, 2, 3]
    assert read_all(net.nodes[3]) == read_all(net.nodes[1])


def test_a_delayed_alter_partition_is_sent_after_the_backoff_and_dropped_by_a_leader_change() -> None:
    net = three(hooks=HOOKS)
    net.crash(3)
    net.nodes[1].produce([b"x"] * 3, net.now_ms, acks=1)
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert net.registrations["t", 0].isr == (1, 2)
    restarted = net.restart(3)
    with HOOKS.on(Forced(points=("replica.delay_alter_partition",))):
        net.run(500)
    assert restarted.replica().log_end_offset == 3
    leader = net.nodes[1].replica()
    assert leader.pending_isr == (1, 2, 3)  # pending, counted in the maximal ISR, not sent yet
    assert net.registrations["t", 0].isr == (1, 2)
    sent = len(net.alter_requests)
    # The leader changes before it is sent: the proposal is forgotten, the new leader decides.
    net.elect(2, isr=(1, 2))
    assert leader.pending_isr is None
    net.run(5000)
    assert all(r.broker_id == 2 for r in net.alter_requests[sent:])
    assert sorted(net.registrations["t", 0].isr) == [1, 2, 3]


def test_a_delayed_alter_partition_goes_out_after_the_backoff() -> None:
    net = three(hooks=HOOKS)
    net.crash(3)
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert net.registrations["t", 0].isr == (1, 2)
    net.restart(3)
    with HOOKS.on(Forced(points=("replica.delay_alter_partition",))):
        net.run(500)
        assert net.nodes[1].replica().pending_isr == (1, 2, 3)
        net.run(net.config.alter_partition_retry_backoff_ms * 30 + 500)
    assert sorted(net.registrations["t", 0].isr) == [1, 2, 3]
    assert net.nodes[1].replica().pending_isr is None


def test_delayed_fetch_rounds_hold_replication_back_but_never_break_it() -> None:
    net = three(hooks=HOOKS)
    with HOOKS.on(Forced(points=("replica.delay_fetch",))):
        net.run(1000)  # the rounds in flight end; every next one waits
        net.nodes[1].produce([b"a"], net.now_ms, acks=1)
        net.run(3000)
        assert net.nodes[2].replica().log_end_offset == 0
        assert net.nodes[1].replica().high_watermark == 0
    net.run(2000)
    assert net.nodes[2].replica().log_end_offset == 1
    assert net.nodes[1].replica().high_watermark == 1


def test_an_early_rebalance_moves_leaders_back_before_the_interval() -> None:
    def imbalanced_then_tick(hooks: buggify.Hooks) -> bool:
        h = controller_cluster(1, 2, 3, hooks=HOOKS, leader_imbalance_check_interval_ms=600_000)
        h.create_topic("t", partitions=3)
        preferred = {p.partition: p.replicas[0] for p in h.controller.committed.partitions_of("t")}
        h.heartbeat(1, want_fence=True)
        h.heartbeat(1)
        for p in h.controller.committed.partitions_of("t"):
            if 1 not in p.isr:
                only(alter_isr(h, p, [*p.isr, 1]))
        assert any(p.leader != preferred[p.partition] for p in h.controller.committed.partitions_of("t"))
        with HOOKS.on(hooks):
            h.tick(1)
        return all(p.leader == preferred[p.partition] for p in h.controller.committed.partitions_of("t"))

    assert not imbalanced_then_tick(buggify.OFF)
    assert imbalanced_then_tick(Forced(points=("controller.early_rebalance",)))
