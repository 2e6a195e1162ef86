"""Elections, commits and failover of a KRaft quorum on the in-memory network."""

from __future__ import annotations

import random
from collections.abc import Callable

from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.raft import CommittedBatch, KRaftReplica, QuorumRole, RaftConfig, Voter
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.raft.network import Network


def test_one_voter_elects_itself_at_start_and_commits_on_append() -> None:
    net = Network(1)
    net.start()
    node = net.nodes[1]
    assert node.r.is_leader and node.r.epoch == 1 and node.r.leader_id == 1
    assert node.r.leader_ready  # its LeaderChangeMessage is committed at once
    offset = net.append([b"a", b"b"])
    assert offset == 2  # offset 0 is the LeaderChangeMessage
    assert node.r.high_watermark == 3
    assert node.applied == [b"a", b"b"]


def test_a_lone_voter_stays_leader_in_its_epoch() -> None:
    """No other voter ever fetches from a lone voter: its quorum is itself, so the leader's quorum
    check never expires (Kafka's ``LeaderState`` with one voter); it does not resign and re-elect
    itself every 1.5 fetch timeouts, answering NOT_CONTROLLER meanwhile."""
    net = Network(1)
    net.start()
    node = net.nodes[1]
    net.run(60_000)
    assert node.r.is_leader and node.r.epoch == 1


def test_three_voters_elect_one_leader_and_the_others_follow_it() -> None:
    net = Network(3, seed=1)
    net.start()
    leader = net.wait_for_leader()
    net.run(100)
    for node in net.nodes.values():
        assert node.r.epoch == leader.r.epoch
        assert node.r.leader_id == leader.node_id
        if node is not leader:
            assert node.r.role is QuorumRole.FOLLOWER


def test_appends_commit_once_a_majority_has_them() -> None:
    net = Network(3, seed=2)
    net.start()
    leader = net.wait_for_leader()
    followers = [n for n in net.nodes.values() if n is not leader]
    net.kill(followers[0].node_id)
    last = net.append([b"x"])
    net.run_until(lambda: leader.r.high_watermark > last)
    assert leader.applied == [b"x"]
    net.kill(followers[1].node_id)  # now the leader is alone: nothing more commits
    hw = leader.r.high_watermark
    net.append([b"y"])
    net.run(1000)
    assert leader.r.high_watermark == hw
    assert leader.applied == [b"x"]
    net.start(followers[1].node_id)
    net.run_until(lambda: b"y" in leader.applied, 5000)
    assert leader.applied == [b"x", b"y"]
    net.run_until(lambda: net.nodes[followers[1].node_id].applied == [b"x", b"y"], 5000)


def test_five_voters_commit_with_two_down() -> None:
    net = Network(5, seed=3)
    net.start()
    leader = net.wait_for_leader()
    down = [n.node_id for n in net.nodes.values() if n is not leader][:2]
    for node_id in down:
        net.kill(node_id)
    net.append([b"v"])
    net.run_until(lambda: sum(n.applied == [b"v"] for n in net.nodes.values()) == 3)


def test_a_killed_leader_is_replaced_in_a_higher_epoch_and_nothing_committed_is_lost() -> None:
    net = Network(3, seed=4)
    net.start()
    old = net.wait_for_leader()
    net.append([b"1", b"2"])
    net.run_until(lambda: all(n.applied == [b"1", b"2"] for n in net.nodes.values()))
    old_epoch = old.r.epoch
    net.kill(old.node_id)
    new = net.wait_for_leader()
    assert new is not old and new.r.epoch > old_epoch
    assert new.applied == [b"1", b"2"]
    net.append([b"3"])
    net.start(old.node_id)
    net.run_until(lambda: all(n.applied == [b"1", b"2", b"3"] for n in net.nodes.values()))
    assert old.r.role is QuorumRole.FOLLOWER and old.r.leader_id == new.node_id


def test_a_minority_leader_cannot_commit_and_its_divergent_suffix_is_truncated() -> None:
    net = Network(3, seed=5)
    net.start()
    old = net.wait_for_leader()
    net.append([b"committed"])
    net.run_until(lambda: all(n.applied == [b"committed"] for n in net.nodes.values()))
    others = [n.node_id for n in net.nodes.values() if n is not old]
    net.partition([old.node_id], others)
    stale_end = old.r.log_end_offset
    net.append([b"lost-1", b"lost-2"])  # written by the cut-off leader: never committed
    assert old.r.log_end_offset > stale_end
    hw = old.r.high_watermark
    net.run_until(lambda: any(net.nodes[i].r.is_leader and net.nodes[i].r.leader_ready for i in others))
    assert old.r.high_watermark == hw
    # hearing from no majority for 1.5 fetch timeouts, the cut-off leader resigns (check quorum)
    net.run(old.config.fetch_timeout_ms * 3 // 2 + 100)
    assert old.r.role is not QuorumRole.LEADER
    assert old.r.append([b"refused"], net.now_ms) is None
    new = next(net.nodes[i] for i in others if net.nodes[i].r.is_leader)
    net.append([b"new"])
    net.run_until(lambda: all(net.nodes[i].applied == [b"committed", b"new"] for i in others))
    net.heal()
    net.run_until(lambda: old.applied == [b"committed", b"new"])
    assert old.r.leader_id == new.node_id
    # the cut-off leader's uncommitted batch was truncated away: its log is the new leader's
    assert old.r.log_end_offset == new.r.log_end_offset
    assert old.r.log.read_bytes(old.r.log.read(0, 1 << 20)) == new.r.log.read_bytes(
        new.r.log.read(0, 1 << 20)
    )


def test_a_graceful_resignation_hands_over_to_the_preferred_successor_quickly() -> None:
    net = Network(3, seed=6)
    net.start()
    old = net.wait_for_leader()
    net.append([b"a"])
    net.run_until(lambda: all(n.applied == [b"a"] for n in net.nodes.values()))
    start = net.now_ms
    net._call(old, lambda r: r.resign(net.now_ms))
    assert old.r.role is QuorumRole.RESIGNED
    net.run_until(lambda: (leader := net.leader()) is not None and leader is not old)
    # the first preferred successor stands at once instead of waiting for its election timeout
    assert net.now_ms - start < old.config.election_timeout_ms
    ends = {type(m).__name__ for (_, _, m) in net.sent}
    assert "EndQuorumEpochRequest" in ends


def test_a_lone_voter_restarts_in_a_new_epoch_with_its_committed_records() -> None:
    net = Network(1)
    net.start()
    node = net.nodes[1]
    net.append([b"a"])
    net.append([b"b"])
    net.restart(1)
    assert node.r.is_leader and node.r.epoch == 2
    assert node.applied == [b"a", b"b"]  # handed out again from the log after the restart
    net.append([b"c"])
    assert node.applied == [b"a", b"b", b"c"]


def test_a_snapshot_past_what_was_taken_does_not_stall_take_committed() -> None:
    storage, sink = MemoryStorage(), EffectSink()
    config = RaftConfig(node_id=1, voters=(Voter(1, "h", 1),))
    replica = KRaftReplica(config, storage, sink, random.Random(0))

    def call(fn: Callable[[], object]) -> None:
        fn()
        storage.apply(sink.take())

    call(lambda: replica.start(0))
    call(lambda: replica.append([b"a"], 0))
    call(lambda: replica.append([b"b"], 0))
    end = replica.high_watermark
    call(lambda: replica.create_snapshot(end, replica.epoch_of(end - 1), [b"a", b"b"], 0))
    assert replica.take_committed() == []
    call(lambda: replica.append([b"c"], 0))
    assert [batch.records for batch in replica.take_committed() if isinstance(batch, CommittedBatch)] == [
        (b"c",)
    ]
