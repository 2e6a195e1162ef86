"""The simulator's checker: each per-step invariant on hand-built snapshots and on the real
replication parts (tests/broker/replication/cluster.py), each end anomaly on a hand-made History."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field, replace

from kafka_wire.broker.broker import Broker
from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.driving import settle
from kafka_wire.broker.node import Node as ClusterNode
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.sim.checker import Checker
from kafka_wire.sim.checker.ends import MAX_PER_ANOMALY, check_end
from kafka_wire.sim.checker.groups import GroupChecker, parse_assignment
from kafka_wire.sim.checker.observe import (
    LogContents,
    RaftSnap,
    ReplicaSnap,
    image_of,
    is_active_controller,
    partition_replicas,
    read_log,
    snap_raft,
    snap_replica,
)
from kafka_wire.sim.checker.steps import (
    StepChecker,
    _ImagePartition,
    committed_lineage,
    committed_prefix_held,
)
from kafka_wire.sim.contracts import Violation
from kafka_wire.sim.history import History, Op, OpKind, OpType
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.replication.cluster import Network

TP = ("t", 0)


def anomalies(found: list[Violation]) -> list[str]:
    return [v.anomaly for v in found]


def snap(
    node: int = 1,
    *,
    leader: bool = False,
    epoch: int = 0,
    partition_epoch: int = 0,
    hw: int = 0,
    leo: int = 0,
    start: int = 0,
    entries: list[tuple[int, int]] | None = None,
    isr: tuple[int, ...] = (),
    maximal: tuple[int, ...] | None = None,
    min_isr: int = 0,
    followers: tuple[tuple[int, int], ...] = (),
) -> ReplicaSnap:
    return ReplicaSnap(
        node,
        TP,
        leader,
        epoch,
        partition_epoch,
        hw,
        leo,
        start,
        [(epoch, 0)] if entries is None else entries,
        isr,
        isr if maximal is None else maximal,
        min_isr,
        followers,
    )


def three(min_isr: int = 1) -> Network:
    net = Network()
    for node_id in (1, 2, 3):
        net.add(node_id, min_isr=min_isr)
    net.create((1, 2, 3))
    return net


def snaps_of(net: Network) -> list[ReplicaSnap]:
    return [
        snap_replica(node_id, replica)
        for node_id, node in sorted(net.nodes.items())
        if node_id not in net.down
        for replica in node.state.partitions.values()
    ]


# -- per-step invariants on the real replication parts ---------------------------------------------


def test_healthy_replication_and_a_clean_leader_change_raise_nothing() -> None:
    net = three(min_isr=2)
    checker = StepChecker()
    found: list[Violation] = []
    for round_ in range(3):
        net.nodes[net.registrations[TP].leader].produce([b"a", b"b"], net.now_ms)
        for _ in range(10):
            net.step()
            found += checker.check_replicas(net.now_ms, snaps_of(net))
        if round_ == 1:
            net.elect(2)
    assert found == []
    assert checker._max_hw[TP] == 6  # it did see the commits


def test_a_follower_truncating_committed_records_is_caught_unless_its_node_lost_storage() -> None:
    net = three()
    net.nodes[1].produce([b"a", b"b", b"c"], net.now_ms)
    net.run(100)
    checker = StepChecker()
    assert checker.check_replicas(net.now_ms, snaps_of(net)) == []
    net.nodes[3].replica().truncate_to(1)
    found = checker.check_replicas(net.now_ms, snaps_of(net))
    assert anomalies(found) == ["committed-truncated", "hw-above-isr"]
    assert "node 3 t-0 leo 3 -> 0 below committed 3" in found[0].detail

    lossy = StepChecker()
    net2 = three()
    net2.nodes[1].produce([b"a", b"b", b"c"], net2.now_ms)
    net2.run(100)
    assert lossy.check_replicas(net2.now_ms, snaps_of(net2)) == []
    lossy.note_losses(3, 1)
    net2.nodes[3].replica().truncate_to(1)
    assert lossy.check_replicas(net2.now_ms, snaps_of(net2)) == []


def test_a_former_leader_cutting_its_uncommitted_suffix_below_the_committed_offset_is_allowed() -> None:
    # Node 1 leads epoch 0 and appends "c" (acks=1) that no follower copies before it crashes;
    # node 2 leads epoch 1 from offset 2 and commits up to 5. Back as a follower, node 1 cuts
    # "c" (3 -> 2, below the committed 5): "c" was never committed, offset 2 holds epoch 1's "d".
    net = three()
    checker = StepChecker()
    net.nodes[1].produce([b"a", b"b"], net.now_ms)
    net.run(100)
    net.nodes[1].produce([b"c"], net.now_ms, acks=1)
    assert checker.check_replicas(net.now_ms, snaps_of(net)) == []
    net.crash(1)
    net.elect(2, isr=(2, 3))
    net.nodes[2].produce([b"d", b"e", b"f"], net.now_ms)
    found: list[Violation] = []
    leos: list[int] = []
    for _ in range(10):
        net.step()
        found += checker.check_replicas(net.now_ms, snaps_of(net))
    assert checker._max_hw[TP] == 5
    net.restart(1)
    for _ in range(30):
        net.step()
        found += checker.check_replicas(net.now_ms, snaps_of(net))
        leos.append(net.nodes[1].replica().log.log_end_offset)
    assert 2 in leos and leos[-1] == 5  # it did cut "c" below the committed offset, then caught up
    assert found == []
    # the same cut of a record written in the committed epoch is caught
    net.nodes[1].replica().truncate_to(4)
    assert "committed-truncated" in anomalies(checker.check_replicas(net.now_ms, snaps_of(net)))


def test_a_replica_that_lost_storage_is_exempt_only_until_it_has_caught_up() -> None:
    checker = StepChecker()
    leader = snap(1, leader=True, hw=5, leo=5, isr=(1, 2), min_isr=1)
    assert checker.check_replicas(0, [leader, snap(2, hw=5, leo=5)]) == []
    checker.note_losses(2, 1)
    assert checker.check_replicas(1, [leader, snap(2, hw=0, leo=0)]) == []
    assert checker.check_replicas(2, [leader, snap(2, hw=5, leo=5)]) == []
    assert anomalies(checker.check_replicas(3, [leader, snap(2, hw=3, leo=3)])) == [
        "committed-truncated",
        "hw-above-isr",
    ]


def test_the_leaders_record_of_a_node_that_lost_storage_is_exempt_until_it_has_caught_up() -> None:
    # Seed 673: node 3 lost power (HW 5), the controller removed it from the ISR when it
    # registered again, but leader 1 had not applied that yet: node 3 fetched at 0 while leader
    # 1 still named it in its ISR. Kafka writes to disk asynchronously, so a replica can lose
    # records it acknowledged; the leader's HW stays where it was.
    checker = StepChecker()

    def leader(fetched: int) -> ReplicaSnap:
        return snap(1, leader=True, hw=5, leo=8, isr=(1, 2, 3), min_isr=1, followers=((2, 8), (3, fetched)))

    assert checker.check_replicas(0, [leader(5), snap(2, hw=5, leo=8), snap(3, hw=5, leo=5)]) == []
    checker.note_losses(3, 1)
    assert checker.check_replicas(1, [leader(5)]) == []  # a record from before the loss
    assert checker.check_replicas(2, [leader(0), snap(3, hw=0, leo=0)]) == []
    # node 3's own log has caught up; the leader's record of it does at its next fetch
    assert checker.check_replicas(3, [leader(0), snap(3, hw=5, leo=8)]) == []
    assert checker.check_replicas(4, [leader(8)]) == []
    # from then on the leader's record counts again
    assert anomalies(checker.check_replicas(5, [leader(4)])) == ["hw-above-isr"]


def test_one_leaders_record_of_a_node_that_lost_storage_says_nothing_of_anothers() -> None:
    # Seed 2609: node 2 lost its unflushed records (disk fault, HW 6); back, it fetched at 0
    # from leader 1, cut off from the metadata quorum, still leading epoch 0 with node 2 in its
    # ISR. Node 2 then followed the new leader 3 and caught up there. Its old fetch, sent from 0
    # while it followed leader 1, reached leader 1 after that (a latency spike): Kafka's leader
    # records the fetch offset it is sent, and its HW stays where it was.
    checker = StepChecker()

    def stale(fetched: int) -> ReplicaSnap:
        return snap(1, leader=True, hw=6, leo=14, isr=(1, 2, 3), min_isr=1, followers=((2, fetched), (3, 14)))

    def new(fetched: int) -> ReplicaSnap:
        return snap(
            3,
            leader=True,
            epoch=1,
            entries=[(0, 0), (1, 14)],
            hw=14,
            leo=14,
            isr=(3, 2),
            min_isr=1,
            followers=((1, -1), (2, fetched)),
        )

    assert checker.check_replicas(0, [stale(6), snap(2, hw=6, leo=6), snap(3, hw=6, leo=6)]) == []
    checker.note_losses(2, 1)
    assert checker.check_replicas(1, [stale(6), snap(2, hw=0, leo=0)]) == []
    # node 2 caught up on leader 3, whose record of it did too
    assert checker.check_replicas(2, [new(0), snap(2, epoch=1, entries=[(0, 0)], hw=14, leo=14)]) == []
    assert checker.check_replicas(3, [new(14)]) == []
    # leader 1 records the fetch node 2 sent it from 0 before
    assert checker.check_replicas(4, [stale(0)]) == []
    # leader 3's record counts again
    assert anomalies(checker.check_replicas(5, [new(10)])) == ["hw-above-isr"]


def test_a_diverging_suffix_may_be_truncated_below_the_committed_offset() -> None:
    # Seed 73: node 3 led epoch 0 and appended 7 records that never committed (a member of its
    # ISR never fetched); node 2, elected in epoch 1 with an empty log, committed 3 records of
    # its own. Node 3's records at offsets 0..6 were never the committed ones: truncating them
    # to 0 is what Kafka does (DivergingEpoch), not a lost commit.
    checker = StepChecker()
    leader = snap(2, leader=True, epoch=1, hw=3, leo=3, entries=[(1, 0)], isr=(2,), min_isr=1)
    assert checker.check_replicas(0, [leader, snap(3, leo=7, entries=[(0, 0)])]) == []
    assert checker.check_replicas(1, [leader, snap(3, epoch=1, leo=0, entries=[])]) == []
    # A replica that held the committed epoch-1 records may not drop them.
    assert checker.check_replicas(2, [leader, snap(1, epoch=1, hw=3, leo=3, entries=[(1, 0)])]) == []
    found = checker.check_replicas(3, [leader, snap(1, epoch=1, hw=1, leo=1, entries=[(1, 0)])])
    assert anomalies(found) == ["committed-truncated"]
    assert "held the committed records up to 3" in found[0].detail


def test_the_committed_prefix_a_replica_held_ends_where_its_epochs_differ() -> None:
    committed = committed_lineage([], [(0, 0), (2, 4), (3, 9)], 8)
    assert committed == [(0, 0), (2, 4)]
    assert committed_prefix_held([(0, 0), (1, 5)], committed, 8) == 4  # epoch 1 never committed
    assert committed_prefix_held([(0, 0), (2, 4)], committed, 8) == 8
    assert committed_prefix_held([(0, 2), (2, 4)], committed, 8) == 8  # its log starts at 2
    assert committed_prefix_held([(1, 0)], committed, 8) == 0
    assert committed_prefix_held(None, committed, 8) == 8  # unknown: the whole prefix
    # A later leader whose log starts after retention keeps the known epochs below its start.
    assert committed_lineage(committed, [(2, 6), (5, 10)], 12) == [(0, 0), (2, 4), (2, 6), (5, 10)]


def test_the_epoch_cache_must_increase() -> None:
    net = three()
    checker = StepChecker()
    assert checker.check_replicas(net.now_ms, snaps_of(net)) == []
    replica = net.nodes[2].replica()
    replica.leadership.cache.entries = [(0, 0), (0, 0)]
    assert anomalies(checker.check_replicas(net.now_ms, snaps_of(net))) == ["epoch-cache-not-monotonic"]
    replica.leadership.cache.entries = [(0, 5)]
    assert anomalies(checker.check_replicas(net.now_ms, snaps_of(net))) == ["epoch-cache-past-leo"]


def test_a_high_watermark_above_the_log_end_is_caught_on_a_real_replica() -> None:
    net = three()
    checker = StepChecker()
    net.nodes[1].replica().high_watermark = 4
    assert "hw-above-leo" in anomalies(checker.check_replicas(net.now_ms, snaps_of(net)))


# -- per-step invariants on hand-built snapshots ---------------------------------------------------


def test_log_start_hw_and_leo_are_ordered() -> None:
    checker = StepChecker()
    assert checker.check_replicas(0, [snap(hw=3, leo=5, start=1)]) == []
    assert anomalies(checker.check_replicas(0, [snap(hw=6, leo=5)])) == ["hw-above-leo"]
    assert anomalies(checker.check_replicas(0, [snap(hw=2, leo=5, start=3)])) == ["log-start-above-hw"]


def test_truncating_above_the_committed_offset_is_allowed() -> None:
    checker = StepChecker()
    leader = snap(1, leader=True, hw=3, leo=3, isr=(1, 2), min_isr=1)
    assert checker.check_replicas(0, [leader, snap(2, hw=3, leo=7)]) == []
    assert checker.check_replicas(1, [leader, snap(2, hw=3, leo=3)]) == []  # a divergent suffix
    assert anomalies(checker.check_replicas(2, [leader, snap(2, hw=2, leo=2)])) == [
        "committed-truncated",
        "hw-above-isr",
    ]


def test_the_leader_hw_is_monotonic_within_an_epoch_only() -> None:
    checker = StepChecker()
    assert checker.check_replicas(0, [snap(leader=True, hw=5, leo=5, isr=(1,), min_isr=1)]) == []
    assert anomalies(checker.check_replicas(1, [snap(leader=True, hw=4, leo=5, isr=(1,), min_isr=1)])) == [
        "hw-regressed"
    ]
    # a restarted engine starts from the HW it checkpointed, even in the same epoch
    assert checker.check_replicas(2, [snap(leader=True, hw=5, leo=5, isr=(1,), min_isr=1)]) == []
    checker.restarted(1)
    assert checker.check_replicas(3, [snap(leader=True, hw=3, leo=5, isr=(1,), min_isr=1)]) == []
    # a new epoch: the new leadership starts from its own HW
    again = StepChecker()
    assert again.check_replicas(0, [snap(leader=True, hw=5, leo=5, isr=(1,), min_isr=1)]) == []
    assert (
        again.check_replicas(
            1, [snap(leader=True, epoch=1, entries=[(0, 0), (1, 5)], hw=4, leo=5, isr=(1,), min_isr=1)]
        )
        == []
    )


def test_the_hw_is_frozen_while_the_isr_is_below_min_isr() -> None:
    checker = StepChecker()
    assert checker.check_replicas(0, [snap(leader=True, hw=2, leo=5, isr=(1,), min_isr=2)]) == []
    found = checker.check_replicas(1, [snap(leader=True, hw=3, leo=5, isr=(1,), min_isr=2)])
    assert anomalies(found) == ["hw-advanced-under-min-isr"]
    # with the ISR full again it may move
    ok = StepChecker()
    assert ok.check_replicas(0, [snap(leader=True, hw=2, leo=5, isr=(1,), min_isr=2)]) == []
    assert ok.check_replicas(1, [snap(leader=True, hw=3, leo=5, isr=(1, 2), min_isr=2)]) == []


def test_every_maximal_isr_member_reaches_the_hw() -> None:
    checker = StepChecker()
    leader = snap(1, leader=True, hw=5, leo=6, isr=(1, 2), maximal=(1, 2, 3), min_isr=1)
    assert checker.check_replicas(0, [leader, snap(2, hw=5, leo=6), snap(3, hw=5, leo=5)]) == []
    found = checker.check_replicas(0, [leader, snap(2, hw=5, leo=6), snap(3, hw=4, leo=4)])
    assert anomalies(found) == ["committed-truncated", "hw-above-isr"]
    # the leader's view of a follower (its last fetch offset) counts too
    view = StepChecker()
    assert anomalies(
        view.check_replicas(
            0, [snap(1, leader=True, hw=5, leo=6, isr=(1, 2), min_isr=1, followers=((2, 4),))]
        )
    ) == ["hw-above-isr"]
    # an unknown follower position (a new leader epoch) and a non-member are not counted
    assert (
        StepChecker().check_replicas(
            0,
            [snap(1, leader=True, hw=5, leo=6, isr=(1, 2), min_isr=1, followers=((2, -1), (3, 0)))],
        )
        == []
    )


def test_one_leader_per_partition_and_leader_epoch() -> None:
    checker = StepChecker()
    assert checker.check_replicas(0, [snap(1, leader=True)]) == []
    assert checker.check_replicas(1, [snap(1), snap(2, leader=True, epoch=1, entries=[(1, 0)])]) == []
    found = checker.check_replicas(2, [snap(1, leader=True, epoch=1, entries=[(1, 0)])])
    assert anomalies(found) == ["two-leaders"]


def test_leader_and_partition_epochs_never_go_back_on_a_replica() -> None:
    checker = StepChecker()
    assert checker.check_replicas(0, [snap(2, epoch=3, partition_epoch=5, entries=[])]) == []
    assert checker.check_replicas(1, [snap(2, epoch=3, partition_epoch=6, entries=[])]) == []
    assert anomalies(checker.check_replicas(2, [snap(2, epoch=3, partition_epoch=4, entries=[])])) == [
        "epoch-regressed"
    ]
    assert anomalies(checker.check_replicas(3, [snap(2, epoch=2, partition_epoch=9, entries=[])])) == [
        "epoch-regressed"
    ]
    # a node that lost storage starts again
    checker.note_losses(2, 1)
    assert checker.check_replicas(4, [snap(2, epoch=1, partition_epoch=1, entries=[])]) == []


# -- the metadata image ----------------------------------------------------------------------------

TOPIC_ID = uuid.UUID(int=7)


def state(
    leader: int, isr: tuple[int, ...], epoch: int, partition_epoch: int, **more: object
) -> PartitionState:
    base = PartitionState("t", 0, TOPIC_ID, (1, 2, 3), isr, leader, epoch, partition_epoch)
    return replace(base, **more)  # type: ignore[arg-type]


def unfenced(*nodes: int) -> object:
    return lambda node_id: node_id not in nodes


def test_a_new_leader_must_come_from_the_previous_isr_unless_unclean() -> None:
    checker = StepChecker()
    ok = lambda node_id: False  # noqa: E731
    assert checker.check_image(0, 1, 10, [state(1, (1, 2), 0, 0)], ok) == []
    assert checker.check_image(1, 1, 11, [state(2, (2,), 1, 1)], ok) == []  # from the ISR
    found = checker.check_image(2, 1, 12, [state(3, (3,), 2, 2)], ok)
    assert anomalies(found) == ["unclean-election"]
    assert TP in checker.unclean
    # the same image seen on another node reports it once
    assert checker.check_image(2, 2, 5, [state(2, (2,), 1, 1)], ok) == []
    assert checker.check_image(2, 2, 6, [state(3, (3,), 2, 2)], ok) == []
    # an ELR member may lead once the ISR is empty (KIP-966)
    elr = StepChecker()
    assert elr.check_image(0, 1, 1, [state(-1, (), 1, 1, elr=(2,))], ok) == []
    assert elr.check_image(1, 1, 2, [state(2, (2,), 2, 2)], ok) == []


def test_an_unclean_election_is_recorded_not_reported_when_the_topic_allows_it() -> None:
    checker = StepChecker(unclean_allowed=True)
    ok = lambda node_id: False  # noqa: E731
    assert checker.check_image(0, 1, 1, [state(1, (1,), 0, 0)], ok) == []
    recovering = state(3, (3,), 1, 1, leader_recovery_state=LeaderRecoveryState.RECOVERING)
    assert checker.check_image(1, 1, 2, [recovering], ok) == []
    assert checker.unclean == {TP: 1}
    assert anomalies(StepChecker().check_image(1, 1, 2, [recovering], ok)) == ["unclean-election"]


def test_no_fenced_broker_joins_an_isr_and_image_epochs_never_go_back() -> None:
    checker = StepChecker()
    assert checker.check_image(0, 1, 1, [state(1, (1, 2), 0, 0)], lambda n: n == 3) == []
    found = checker.check_image(1, 1, 2, [state(1, (1, 2, 3), 0, 1)], lambda n: n == 3)
    assert anomalies(found) == ["fenced-isr-join"]
    assert anomalies(checker.check_image(2, 1, 3, [state(1, (1, 2, 3), 0, 0)], lambda n: False)) == [
        "image-epoch-regressed"
    ]
    # several changes seen at once are not judged (their order is unknown)
    jump = StepChecker()
    assert jump.check_image(0, 1, 1, [state(1, (1, 2), 0, 0)], lambda n: False) == []
    assert jump.check_image(1, 1, 9, [state(3, (3,), 1, 2)], lambda n: False) == []
    assert jump.check_image(2, 1, 10, [state(3, (1, 3), 1, 4)], lambda n: n == 1) == []
    # an unmoved image is not read again
    assert checker.check_image(3, 1, 3, [state(1, (1,), 0, -5)], lambda n: True) == []


# -- the raft quorum -------------------------------------------------------------------------------


def raft(node: int, *, leader: bool = False, epoch: int = 1, hw: int = 0, leo: int = 0) -> RaftSnap:
    return RaftSnap(node, leader, epoch, node if leader else -1, hw, leo, (1, 2, 3))


def test_raft_one_leader_per_epoch_and_monotonic_epochs_and_hw() -> None:
    checker = StepChecker()
    healthy = [raft(1, leader=True, hw=5, leo=6), raft(2, hw=5, leo=5), raft(3, hw=4, leo=4)]
    assert checker.check_raft(0, healthy) == []
    assert anomalies(checker.check_raft(1, [raft(2, leader=True, hw=5, leo=5), raft(3, hw=5, leo=5)])) == [
        "raft-two-leaders"
    ]
    assert anomalies(checker.check_raft(2, [raft(3, epoch=0, hw=5, leo=5)])) == ["raft-epoch-regressed"]
    assert anomalies(checker.check_raft(3, [raft(2, epoch=1, hw=3, leo=5)])) == ["raft-hw-regressed"]
    assert checker.check_raft(4, [raft(2, epoch=1, hw=1, leo=5)], restarted=[2]) == []


def test_raft_hw_needs_a_majority_of_voters() -> None:
    checker = StepChecker()
    found = checker.check_raft(
        0, [raft(1, leader=True, hw=5, leo=6), raft(2, hw=3, leo=4), raft(3, hw=3, leo=3)]
    )
    assert anomalies(found) == ["raft-hw-above-majority"]
    # a voter that lost storage is not held against the leader until it catches up
    lossy = StepChecker()
    lossy.note_losses(2, 1)
    assert (
        lossy.check_raft(0, [raft(1, leader=True, hw=5, leo=6), raft(2, hw=0, leo=0), raft(3, hw=5, leo=5)])
        == []
    )


# -- groups ----------------------------------------------------------------------------------------


def group_op(process: str, kind: OpKind, generation: int, value: str = "", offset: int = -1) -> Op:
    return Op(
        0, process, OpType.OK, kind, "t" if kind is OpKind.COMMIT else "", 0, value, offset,
        group="g", generation=generation,
    )  # fmt: skip


def test_assignment_values_parse() -> None:
    assert parse_assignment("t:0,a:b:2,bad,x:") == [("t", 0), ("a:b", 2)]


def test_one_owner_per_partition_and_generation_and_commits_never_go_back() -> None:
    history = History()
    checker = GroupChecker()
    history.add(group_op("c1", OpKind.ASSIGN, 1, "t:0,t:1"))
    history.add(group_op("c2", OpKind.ASSIGN, 2, "t:0"))  # a later generation may move it
    history.add(group_op("c1", OpKind.COMMIT, 1, offset=5))
    history.add(replace(group_op("c2", OpKind.COMMIT, 2, offset=3), time_ms=2, invoked_ms=0))
    assert checker.check(history) == []
    history.add(group_op("c2", OpKind.ASSIGN, 1, "t:1"))
    # In flight together with c1's commit: either may land first.
    history.add(replace(group_op("c2", OpKind.COMMIT, 2, offset=4), invoked_ms=-1))
    history.add(replace(group_op("c2", OpKind.COMMIT, 2, offset=4), time_ms=3, invoked_ms=1))
    assert anomalies(checker.check(history)) == ["double-ownership", "commit-regressed"]
    assert checker.check(history) == []  # each op is read once


# -- end checks over the History -------------------------------------------------------------------


@dataclass
class Log:
    """A hand-made History: sends and polls of partition t-0."""

    history: History = field(default_factory=History)
    time: int = 0

    def op(self, process: str, type_: OpType, kind: OpKind, **fields: object) -> None:
        self.time += 1
        self.history.add(Op(self.time, process, type_, kind, "t", 0, **fields))  # type: ignore[arg-type]

    def send(
        self, value: str, offset: int | None, *, acks: int = -1, idempotent: bool = False, fail: str = ""
    ) -> None:
        process = value.rsplit("-", 1)[0]
        self.op(process, OpType.INVOKE, OpKind.SEND, value=value, acks=acks, idempotent=idempotent)
        if fail:
            self.op(process, OpType.FAIL, OpKind.SEND, value=value, acks=acks, error=fail)
        elif offset is None:
            self.op(process, OpType.INFO, OpKind.SEND, value=value, acks=acks, error="timeout")
        else:
            self.op(
                process, OpType.OK, OpKind.SEND, value=value, offset=offset, acks=acks, idempotent=idempotent
            )

    def poll(self, *records: tuple[int, str], process: str = "consumer", generation: int = -1) -> None:
        self.op(
            process,
            OpType.OK,
            OpKind.POLL,
            records=tuple(records),
            group="g" if generation >= 0 else "",
            generation=generation,
        )


def contents(
    *values: str, hw: int | None = None, batches: tuple[tuple[int, int, int, int], ...] = ()
) -> LogContents:
    records = tuple(enumerate(values))
    return LogContents(0, len(values), len(values) if hw is None else hw, records, batches)


def end(log: Log, logs: dict[int, LogContents] | None = None, unclean: bool = False) -> list[str]:
    replicas = logs or {}
    report = check_end(
        log.history,
        {TP: replicas} if replicas else {},
        {TP: 1} if replicas else {},
        {TP: 0} if unclean else {},
        99,
    )
    return anomalies(report.violations)


def healthy() -> Log:
    log = Log()
    log.send("p-0", 0)
    log.send("p-1", 1)
    log.poll((0, "p-0"), (1, "p-1"))
    return log


def test_a_healthy_history_has_no_anomaly() -> None:
    assert end(healthy(), {1: contents("p-0", "p-1"), 2: contents("p-0", "p-1")}) == []


def test_lost_write_an_acked_send_skipped_by_every_poll() -> None:
    log = Log()
    log.send("p-0", 0)
    log.send("p-1", 1)
    log.poll((1, "p-1"))
    assert end(log) == ["lost-write"]


def test_lost_write_an_acked_send_missing_from_the_final_leader() -> None:
    log = Log()
    log.send("p-0", 0)
    assert end(log, {1: contents("x-0")}) == ["inconsistent-offsets", "lost-write"]


def test_unseen_an_acked_send_never_polled_above_the_polled_offsets() -> None:
    log = Log()
    log.send("p-0", 0)
    log.send("p-1", 1)
    log.poll((0, "p-0"))
    assert end(log, {1: contents("p-0", "p-1")}) == ["unseen"]
    # a workload without consumers polls nothing: that is counted, not reported
    alone = Log()
    alone.send("p-0", 0)
    report = check_end(alone.history, {TP: {1: contents("p-0")}}, {TP: 1}, {}, 99)
    assert report.violations == [] and report.expected["unseen-no-consumer"] == 1


def test_acks_0_and_1_losses_and_unclean_losses_are_expected_not_violations() -> None:
    log = Log()
    log.send("a-0", 0, acks=1)
    log.send("p-0", 1)
    log.poll((1, "p-0"))
    report = check_end(log.history, {}, {}, {}, 99)
    assert report.violations == []
    assert report.expected["lost-acks-1"] == 1
    lost = Log()
    lost.send("p-0", 0)
    lost.send("p-1", 1)
    lost.poll((1, "p-1"))
    assert end(lost, unclean=True) == []


def test_inconsistent_offsets_across_polls_and_logs_below_the_hw() -> None:
    log = healthy()
    log.poll((1, "other"), process="c2")
    assert end(log) == ["inconsistent-offsets"]
    # above a replica's HW a different value is an uncommitted suffix, not an anomaly
    assert end(healthy(), {1: contents("p-0", "p-1"), 2: contents("p-0", "p-1", "z", hw=2)}) == []
    assert "inconsistent-offsets" in end(healthy(), {1: contents("p-0", "p-1"), 2: contents("p-0", "z")})


def test_duplicate_an_idempotent_value_at_two_offsets() -> None:
    log = Log()
    log.send("i-0", 0, idempotent=True)
    log.poll((0, "i-0"), (1, "i-0"))
    assert end(log) == ["duplicate"]
    plain = Log()
    plain.send("p-0", 0)
    plain.poll((0, "p-0"), (1, "p-0"))  # a retried plain send may land twice
    assert end(plain) == []


def test_aborted_read_a_failed_send_was_polled() -> None:
    log = Log()
    log.send("p-0", None, fail="NOT_ENOUGH_REPLICAS")
    log.poll((0, "p-0"))
    assert end(log) == ["aborted-read"]


def test_poll_skip_and_nonmonotonic_poll() -> None:
    log = Log()
    for i in range(4):
        log.send(f"p-{i}", i)
    log.poll((0, "p-0"), (1, "p-1"), process="c2")
    log.poll((2, "p-2"), (3, "p-3"), process="c2")
    log.poll((0, "p-0"), (2, "p-2"))
    log.poll((1, "p-1"))
    assert end(log) == ["poll-skip", "nonmonotonic-poll"]
    # a consumer whose position fell outside the log reads again from the log start
    reset = Log()
    reset.send("p-0", 0)
    reset.send("p-1", 1)
    reset.poll((0, "p-0"), (1, "p-1"))
    reset.op("consumer", OpType.INFO, OpKind.POLL, offset=2, error="OFFSET_OUT_OF_RANGE")
    reset.poll((0, "p-0"))
    assert end(reset) == []
    reset.poll((0, "p-0"))
    assert end(reset) == ["nonmonotonic-poll"]
    # a gap nobody saw written is not a skip
    gap = Log()
    gap.poll((0, "a"), (5, "b"))
    assert end(gap) == []


def test_group_consumers_may_go_back_after_a_new_assignment_only() -> None:
    log = Log()
    for i in range(3):
        log.send(f"p-{i}", i)
    log.op("consumer", OpType.OK, OpKind.ASSIGN, value="t:0", group="g", generation=1)
    log.poll((0, "p-0"), (1, "p-1"), (2, "p-2"), generation=1)
    # Rejoined: assigned again (the generation may stay), resumed from the committed offset.
    log.op("consumer", OpType.OK, OpKind.ASSIGN, value="t:0", group="g", generation=1)
    log.poll((1, "p-1"), (2, "p-2"), generation=1)
    assert end(log) == []
    log.poll((1, "p-1"), generation=1)
    assert end(log) == ["nonmonotonic-poll"]


def test_nonmonotonic_send_of_an_idempotent_producer() -> None:
    log = Log()
    log.send("i-0", 1, idempotent=True)
    log.send("i-1", 0, idempotent=True)
    log.poll((0, "i-1"), (1, "i-0"))
    assert end(log) == ["nonmonotonic-send"]


def test_divergent_replicas_batch_by_batch_up_to_the_follower_end() -> None:
    leader = contents("p-0", "p-1", batches=((0, 0, 0, 11), (1, 1, 0, 12)))
    same = contents("p-0", batches=((0, 0, 0, 11),))
    other = contents("p-0", "p-1", hw=1, batches=((0, 0, 0, 11), (1, 1, 1, 99)))
    assert end(healthy(), {1: leader, 2: same}) == []
    assert end(healthy(), {1: leader, 2: other}) == ["divergent-replicas"]


def test_many_cases_of_one_anomaly_are_capped() -> None:
    log = Log()
    for i in range(MAX_PER_ANOMALY + 5):
        log.send(f"p-{i}", i)
    log.poll((MAX_PER_ANOMALY + 5, "last"))
    found = end(log)
    assert found.count("lost-write") == MAX_PER_ANOMALY + 1


# -- the checker on a world ------------------------------------------------------------------------


class NoConsumerGroups:
    """A group coordinator that holds no KIP-848 group."""

    def consumer_group_ids(self) -> list[str]:
        return []


@dataclass
class FakeBroker:
    state: object
    group_coordinator: NoConsumerGroups = field(default_factory=NoConsumerGroups)


@dataclass
class Host:
    node_id: int
    storage: MemoryStorage
    broker: Broker | None
    node: ClusterNode | None = None
    storage_losses: list[int] = field(default_factory=list)
    calls: int = 0


@dataclass
class World:
    net: Network
    history: History = field(default_factory=History)

    @property
    def now_ms(self) -> int:
        return self.net.now_ms

    def nodes(self) -> list[Host]:
        return [
            Host(n, node.storage, None if n in self.net.down else FakeBroker(node.state))  # type: ignore[arg-type]
            for n, node in sorted(self.net.nodes.items())
        ]

    def topics(self) -> list[tuple[str, int]]:
        return [("t", 1)]

    def unclean_elections(self) -> bool:
        return False


def test_the_checker_reads_a_world_after_every_event_and_at_the_end() -> None:
    net = three(min_isr=2)
    world = World(net)
    checker = Checker()
    for i in range(3):
        value = f"p-{i}"
        world.history.add(Op(net.now_ms, "p", OpType.INVOKE, OpKind.SEND, "t", 0, value, acks=-1))
        net.nodes[1].produce([value.encode()], net.now_ms)
        world.history.add(Op(net.now_ms, "p", OpType.OK, OpKind.SEND, "t", 0, value, offset=i, acks=-1))
        for _ in range(5):
            net.step()
            assert checker.after_event(world) == []  # type: ignore[arg-type]
    world.history.add(
        Op(net.now_ms, "c", OpType.OK, OpKind.POLL, "t", 0, records=((0, "p-0"), (1, "p-1"), (2, "p-2")))
    )
    assert checker.at_end(world) == []  # type: ignore[arg-type]
    contents = read_log(net.nodes[2].replica())
    assert contents.records == ((0, "p-0"), (1, "p-1"), (2, "p-2"))
    # an acknowledged write the final leader does not hold is lost
    world.history.add(Op(net.now_ms, "p", OpType.INVOKE, OpKind.SEND, "t", 0, "p-3", acks=-1))
    world.history.add(Op(net.now_ms, "p", OpType.OK, OpKind.SEND, "t", 0, "p-3", offset=3, acks=-1))
    assert anomalies(Checker().at_end(world)) == ["lost-write"]  # type: ignore[arg-type]


# -- reading a real cluster node -------------------------------------------------------------------


def lone_node() -> tuple[Broker, ClusterNode, MemoryStorage]:
    """A combined broker and controller, the only voter: it elects itself at start."""
    config = load_server_properties(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
            "controller.quorum.voters": "1@node1:9093",
            "listeners": "PLAINTEXT://node1:9092,CONTROLLER://node1:9093",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }
    ).config
    storage = MemoryStorage()
    node = ClusterNode(config, rng=random.Random(1))
    broker = Broker(config, storage, rng=random.Random(2), cluster=node)
    now = 0
    settle(broker, broker.start(now), storage.apply_one, now)
    while (due := broker.next_deadline_ms()) is not None and now < 5_000:
        now = max(now, due)
        settle(broker, broker.tick(now), storage.apply_one, now)
    return broker, node, storage


@dataclass
class LoneWorld:
    host: Host
    history: History = field(default_factory=History)
    now_ms: int = 5_000

    def nodes(self) -> list[Host]:
        return [self.host]

    def topics(self) -> list[tuple[str, int]]:
        return [("t", 1)]

    def unclean_elections(self) -> bool:
        return False


def test_the_raft_replica_and_image_of_a_real_node_are_read() -> None:
    broker, node, storage = lone_node()
    found = snap_raft(1, node)
    assert found is not None
    assert found.is_leader and found.leader_id == 1 and found.voters == (1,)
    assert 0 < found.high_watermark <= found.log_end_offset
    assert is_active_controller(node)
    image = image_of(node)
    assert image is not None and image.offset >= 0
    assert snap_raft(1, None) is None and image_of(None) is None and partition_replicas(None) == {}
    checker = Checker()
    world = LoneWorld(Host(1, storage, broker, node))
    assert checker.after_event(world) == []  # type: ignore[arg-type]
    assert checker.steps._raft[1] == (found.epoch, found.high_watermark)
    assert checker.at_end(world) == []  # type: ignore[arg-type]


def test_a_restarted_node_rebuilds_its_image_from_the_start() -> None:
    checker = StepChecker()
    assert checker.check_image(0, 1, 50, [state(2, (2, 3), 4, 9)], lambda n: False) == []
    checker.forget_image(1)
    assert checker.check_image(1, 1, 3, [state(1, (1, 2, 3), 0, 0)], lambda n: False) == []
    # the world's checker notices the new engine by itself
    first, node, storage = lone_node()
    world = LoneWorld(Host(1, storage, first, node))
    facade = Checker()
    assert facade.after_event(world) == []  # type: ignore[arg-type]
    facade.steps._images[1][("t", 0)] = facade.steps._images[1].get(("t", 0)) or _seen(99, 99)
    again, node2, storage2 = lone_node()
    world.host = Host(1, storage2, again, node2)
    assert facade.after_event(world) == []  # type: ignore[arg-type]
    assert ("t", 0) not in facade.steps._images.get(1, {})


def _seen(leader_epoch: int, partition_epoch: int) -> _ImagePartition:
    return _ImagePartition(1, leader_epoch, partition_epoch, (1,), (1,))


def test_a_commit_of_an_old_generation_sent_after_a_newer_one_formed_is_a_stale_commit() -> None:
    history = History()
    checker = GroupChecker()
    history.add(replace(group_op("c1", OpKind.ASSIGN, 1, "t:0"), time_ms=10))
    # Sent before generation 2 formed, answered after: Kafka accepted it while 1 was current.
    history.add(replace(group_op("c1", OpKind.COMMIT, 1, offset=3), time_ms=30, invoked_ms=15))
    history.add(replace(group_op("c2", OpKind.ASSIGN, 2, "t:0"), time_ms=20))
    history.add(replace(group_op("c2", OpKind.COMMIT, 2, offset=6), time_ms=40, invoked_ms=35))
    assert checker.check(history) == []
    # Sent after a member held generation 2: the coordinator must have refused it.
    history.add(replace(group_op("c1", OpKind.COMMIT, 1, offset=7), time_ms=60, invoked_ms=50))
    assert anomalies(checker.check(history)) == ["stale-commit"]


def test_a_member_resuming_below_a_commit_answered_before_its_assignment_lost_the_committed_offset() -> None:
    history = History()
    checker = GroupChecker()
    history.add(replace(group_op("c1", OpKind.ASSIGN, 1, "t:0"), time_ms=1))
    history.add(replace(group_op("c1", OpKind.COMMIT, 1, offset=5), time_ms=3, invoked_ms=2))
    history.add(replace(group_op("c2", OpKind.ASSIGN, 2, "t:0"), time_ms=4))
    history.add(Op(5, "c2", OpType.OK, OpKind.POLL, "t", 0, records=((5, "v5"),), group="g", generation=2))
    assert checker.check(history) == []  # resumed at the committed offset
    history.add(replace(group_op("c1", OpKind.ASSIGN, 3, "t:0"), time_ms=6))
    history.add(Op(7, "c1", OpType.OK, OpKind.POLL, "t", 0, records=((0, "v0"),), group="g", generation=3))
    assert anomalies(checker.check(history)) == ["committed-offset-lost"]


def _lost_answer_history(lost_sent_ms: int) -> History:
    """Seed 815: c1 commits 6, its connection is reset before the answer (an ``info`` commit:
    the request still sat in the coordinator's buffer, behind a long Fetch); c1 commits 6 and
    7 again on a new connection, both answered; the buffered commit of 6 is then read and
    stored (last writer wins); the next assignment resumes at 6."""
    history = History()
    history.add(replace(group_op("c1", OpKind.ASSIGN, 1, "t:0"), time_ms=1))
    history.add(
        Op(20, "c1", OpType.INFO, OpKind.COMMIT, "t", 0, offset=6, group="g", generation=1,
           invoked_ms=lost_sent_ms)
    )  # fmt: skip
    history.add(replace(group_op("c1", OpKind.COMMIT, 1, offset=6), time_ms=30, invoked_ms=25))
    history.add(replace(group_op("c1", OpKind.COMMIT, 1, offset=7), time_ms=40, invoked_ms=35))
    history.add(replace(group_op("c1", OpKind.ASSIGN, 2, "t:0"), time_ms=90))
    history.add(Op(95, "c1", OpType.OK, OpKind.POLL, "t", 0, records=((6, "v6"),), group="g", generation=2))
    return history


def test_a_member_may_resume_at_a_commit_whose_answer_was_lost() -> None:
    assert GroupChecker().check(_lost_answer_history(lost_sent_ms=10)) == []
    # Sent only after the poll, it cannot explain where the member resumed.
    found = GroupChecker().check(_lost_answer_history(lost_sent_ms=96))
    assert anomalies(found) == ["committed-offset-lost"]
