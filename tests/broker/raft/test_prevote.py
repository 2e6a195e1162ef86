"""KIP-996 pre-vote: a voter asks for pre-votes in its current epoch (Prospective) before it bumps
the epoch as a candidate, so a voter that cannot win never disturbs the quorum."""

from __future__ import annotations

import random

import pytest

from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.raft import KRaftReplica, QuorumRole, RaftConfig, Voter
from kafka_wire.broker.raft.quorum_state import ElectionState, read_quorum_state
from kafka_wire.messages import (
    ErrorCode,
    VoteRequest,
    VoteResponse,
    VoteResponsePartitionData,
    VoteResponseTopicData,
)
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.raft.network import Network
from tests.broker.raft.test_snapshots_and_state import granted, vote

METADATA_DIR = "__cluster_metadata-0"


def _answer(epoch: int, ok: bool, leader_id: int = -1) -> VoteResponse:
    return VoteResponse(
        topics=[
            VoteResponseTopicData(
                topic_name="__cluster_metadata",
                partitions=[
                    VoteResponsePartitionData(leader_id=leader_id, leader_epoch=epoch, vote_granted=ok)
                ],
            )
        ]
    )


def _lone_replica(storage: MemoryStorage | None = None) -> tuple[KRaftReplica, MemoryStorage, EffectSink]:
    """Voter 1 of three, driven by hand (its peers' answers are made up)."""
    storage = storage if storage is not None else MemoryStorage()
    sink = EffectSink()
    config = RaftConfig(node_id=1, voters=(Voter(1, "h", 1), Voter(2, "h", 2), Voter(3, "h", 3)))
    replica = KRaftReplica(config, storage, sink, random.Random(1))
    replica.start(0)
    storage.apply(sink.take())
    return replica, storage, sink


def _role(replica: KRaftReplica) -> QuorumRole:
    """The role now (a read mypy does not narrow across calls that change it)."""
    return replica.role


def _request(out: Outbound) -> tuple[int, bool]:
    assert isinstance(out.body, VoteRequest)
    part = out.body.topics[0].partitions[0]
    return part.replica_epoch, part.pre_vote


def test_a_timed_out_voter_asks_for_pre_votes_in_its_epoch_and_persists_nothing() -> None:
    replica, _, sink = _lone_replica()
    replica.tick(5000)
    assert replica.role is QuorumRole.PROSPECTIVE and replica.epoch == 0 and replica.voted_id == -1
    assert sink.take() == []  # a prospective writes nothing: its epoch, leader and vote stay
    outs = replica.poll_outbound(5000)
    assert [_request(o) for o in outs] == [(0, True), (0, True)]


def test_a_majority_of_pre_votes_makes_a_candidate_in_the_next_epoch() -> None:
    replica, storage, sink = _lone_replica()
    replica.tick(5000)
    outs = replica.poll_outbound(5000)
    outs[0].on_reply(_answer(0, True), 5003)  # with its own, a majority of three
    assert replica.role is QuorumRole.CANDIDATE and replica.epoch == 1 and replica.voted_id == 1
    storage.apply(sink.take())
    assert read_quorum_state(storage, METADATA_DIR) == ElectionState(1, -1, 1)
    votes = replica.poll_outbound(5004)
    assert sorted(_request(o) for o in votes) == [(1, False), (1, False)]
    assert all(o.version is None for o in votes)  # a standard vote: any version


def test_a_pre_vote_rejected_by_a_majority_goes_back_to_waiting_in_the_same_epoch() -> None:
    replica, _, _ = _lone_replica()
    replica.tick(5000)
    for out in replica.poll_outbound(5000):
        out.on_reply(_answer(0, False), 5003)
    assert replica.role is QuorumRole.UNATTACHED and replica.epoch == 0
    deadline = replica.next_deadline_ms()
    assert deadline is not None and deadline > 5003  # a new election timeout, not at once
    replica.tick(deadline)
    assert _role(replica) is QuorumRole.PROSPECTIVE and replica.epoch == 0


def test_an_unanswered_pre_vote_asks_again_after_its_election_timeout() -> None:
    replica, _, _ = _lone_replica()
    replica.tick(5000)
    replica.poll_outbound(5000)  # never answered
    deadline = replica.next_deadline_ms()
    assert deadline is not None
    replica.tick(deadline)
    replica.tick(deadline)  # back to unattached with its timer run out, then asking again
    assert replica.role is QuorumRole.PROSPECTIVE and replica.epoch == 0
    assert [_request(o) for o in replica.poll_outbound(deadline)] == [(0, True), (0, True)]


def test_a_losing_candidate_backs_off_then_asks_for_pre_votes_again() -> None:
    replica, _, _ = _lone_replica()
    replica.tick(5000)
    replica.poll_outbound(5000)[0].on_reply(_answer(0, True), 5001)
    assert replica.role is QuorumRole.CANDIDATE and replica.epoch == 1
    for out in replica.poll_outbound(5002):
        out.on_reply(_answer(1, False), 5003)
    deadline = replica.next_deadline_ms()
    assert deadline is not None
    replica.tick(deadline)
    # through Prospective again: no second epoch bump before a majority would vote for it
    assert _role(replica) is QuorumRole.PROSPECTIVE and replica.epoch == 1


def test_a_pre_vote_answer_naming_a_leader_makes_the_prospective_follow_it() -> None:
    replica, _, _ = _lone_replica()
    replica.tick(5000)
    replica.poll_outbound(5000)[0].on_reply(_answer(0, False, leader_id=2), 5003)
    assert replica.role is QuorumRole.FOLLOWER and replica.leader_id == 2 and replica.epoch == 0


def test_pre_votes_change_neither_the_epoch_nor_the_vote_of_the_receiver() -> None:
    net = Network(3, seed=20)
    net.start(1)
    node = net.nodes[1]
    before = node.storage.read(f"{METADATA_DIR}/quorum-state", 0, 1000)
    answer = node.r.handle(52, 2, vote(2, 0, pre_vote=True), net.now_ms)
    assert granted(answer)
    assert node.sink.take() == []  # nothing persisted
    assert node.r.role is QuorumRole.UNATTACHED and node.r.epoch == 0 and node.r.voted_id == -1
    assert node.storage.read(f"{METADATA_DIR}/quorum-state", 0, 1000) == before
    # the vote of the epoch is still free, and once cast a pre-vote does not move it
    assert granted(net._call(node, lambda r: r.handle(52, 2, vote(3, 1), net.now_ms)))
    assert granted(net._call(node, lambda r: r.handle(52, 2, vote(2, 1, pre_vote=True), net.now_ms)))
    assert _role(node.r) is QuorumRole.VOTED and node.r.epoch == 1 and node.r.voted_id == 3
    assert read_quorum_state(node.storage, METADATA_DIR) == ElectionState(1, -1, 3)


def test_a_pre_vote_may_carry_its_epoch_as_the_last_epoch_a_vote_may_not() -> None:
    net = Network(3, seed=21)
    net.start(1)
    node = net.nodes[1]
    assert granted(net._call(node, lambda r: r.handle(52, 2, vote(2, 3, 3, 10, pre_vote=True), net.now_ms)))
    answer = net._call(node, lambda r: r.handle(52, 2, vote(2, 3, 3, 10), net.now_ms))
    assert isinstance(answer, VoteResponse)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.INVALID_REQUEST


def test_a_pre_vote_goes_only_to_a_log_at_least_as_up_to_date() -> None:
    net = Network(3, seed=22)
    net.start()
    leader = net.wait_for_leader()
    net.append([b"a"])
    net.run_until(lambda: all(n.applied == [b"a"] for n in net.nodes.values()))
    net.kill(leader.node_id)
    voter = next(n for n in net.nodes.values() if n.alive)
    net.restart(voter.node_id)  # a follower that has not fetched yet: it may grant pre-votes
    other = next(i for i in net.nodes if i not in (leader.node_id, voter.node_id))
    epoch, last_epoch, end = voter.r.epoch, voter.r.last_epoch(), voter.r.log_end_offset
    voted = voter.r.voted_id
    behind = net._call(
        voter, lambda r: r.handle(52, 2, vote(other, epoch, last_epoch, end - 1, pre_vote=True), 0)
    )
    assert not granted(behind)
    even = net._call(voter, lambda r: r.handle(52, 2, vote(other, epoch, last_epoch, end, pre_vote=True), 0))
    assert granted(even)
    assert voter.r.role is QuorumRole.FOLLOWER and voter.r.voted_id == voted


def test_a_follower_hearing_from_its_leader_and_the_leader_reject_pre_votes() -> None:
    net = Network(3, seed=23)
    net.start()
    leader = net.wait_for_leader()
    net.run(200)
    follower, other = (n for n in net.nodes.values() if n is not leader)
    epoch, last_epoch, end = leader.r.epoch, leader.r.last_epoch(), leader.r.log_end_offset
    for receiver in (follower, leader):
        answer = net._call(
            receiver, lambda r: r.handle(52, 2, vote(other.node_id, epoch, last_epoch, end, pre_vote=True), 0)
        )
        assert not granted(answer)
    assert follower.r.role is QuorumRole.FOLLOWER and leader.r.is_leader and leader.r.epoch == epoch


@pytest.mark.parametrize("seed", range(4))
def test_a_cut_off_voter_behind_never_bumps_the_epoch_and_the_leader_stays_after_the_heal(seed: int) -> None:
    net = Network(3, seed=seed)
    net.start()
    leader = net.wait_for_leader()
    epoch = leader.r.epoch
    cut = next(n for n in net.nodes.values() if n is not leader)
    net.partition([cut.node_id], [n for n in net.nodes if n != cut.node_id])
    for i in range(20):
        net.append([b"v%d" % i])  # the cut-off voter's log falls behind
        net.run(1000)
    assert cut.r.epoch == epoch  # it asked for pre-votes that never came: no new epoch
    assert leader.r.is_leader and leader.r.epoch == epoch
    net.heal()
    net.run_until(
        lambda: cut.r.role is QuorumRole.FOLLOWER and cut.r.high_watermark == leader.r.high_watermark
    )
    assert leader.r.is_leader and all(n.r.epoch == epoch for n in net.nodes.values())


@pytest.mark.parametrize("seed", range(4))
def test_a_voter_cut_from_the_leader_only_does_not_unseat_it(seed: int) -> None:
    """The other follower still hears from the leader: it rejects the pre-votes, and the cut-off
    voter goes back to following (without pre-vote its Vote requests would push that follower to a
    new epoch and the leader out)."""
    net = Network(3, seed=seed)
    net.start()
    leader = net.wait_for_leader()
    epoch = leader.r.epoch
    cut, other = (n for n in net.nodes.values() if n is not leader)
    net.cut = {frozenset((cut.node_id, leader.node_id))}
    for i in range(10):
        net.append([b"v%d" % i])
        net.run(1000)
    assert leader.r.is_leader and leader.r.epoch == epoch
    assert other.r.role is QuorumRole.FOLLOWER and other.r.epoch == epoch and cut.r.epoch == epoch


@pytest.mark.parametrize("seed", range(6))
def test_a_crashed_leader_is_replaced_within_the_usual_timeouts(seed: int) -> None:
    net = Network(3, seed=seed)
    net.start()
    old = net.wait_for_leader()
    net.run(300)
    killed_at, old_epoch = net.now_ms, old.r.epoch
    net.kill(old.node_id)
    config = old.config
    # a follower's fetch timeout, a pre-vote and a vote round, with one election timeout's slack
    net.run_until(lambda: net.leader() is not None, config.fetch_timeout_ms + 2 * config.election_timeout_ms)
    new = net.leader()
    assert new is not None and new.r.epoch > old_epoch
    assert net.now_ms - killed_at <= config.fetch_timeout_ms + 2 * config.election_timeout_ms
