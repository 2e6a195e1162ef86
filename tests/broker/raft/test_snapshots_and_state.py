"""Snapshots, the quorum-state file and observers."""

from __future__ import annotations

import json

import pytest

from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.raft import QuorumRole, SnapshotId
from kafka_wire.broker.raft.quorum_state import (
    ElectionState,
    decode_quorum_state,
    encode_quorum_state,
    read_quorum_state,
)
from kafka_wire.broker.raft.snapshots import decode_snapshot, encode_snapshot, parse_snapshot_name
from kafka_wire.errors import InvalidValueError
from kafka_wire.messages import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeQuorumResponse,
    ErrorCode,
    VoteRequest,
    VoteRequestPartitionData,
    VoteRequestTopicData,
    VoteResponse,
)
from kafka_wire.records.control import ControlRecordType, decode_control_key
from kafka_wire.records.reader import read_batches
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.raft.network import CLUSTER_ID, Network


def vote(
    candidate: int, epoch: int, last_epoch: int = 0, last_offset: int = 0, *, pre_vote: bool = False
) -> VoteRequest:
    return VoteRequest(
        cluster_id=CLUSTER_ID,
        voter_id=-1,
        topics=[
            VoteRequestTopicData(
                topic_name="__cluster_metadata",
                partitions=[
                    VoteRequestPartitionData(
                        partition_index=0,
                        replica_epoch=epoch,
                        replica_id=candidate,
                        last_offset_epoch=last_epoch,
                        last_offset=last_offset,
                        pre_vote=pre_vote,
                    )
                ],
            )
        ],
    )


def granted(answer: object) -> bool:
    assert isinstance(answer, VoteResponse)
    part = answer.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    return part.vote_granted


def test_snapshot_file_names_and_contents_are_kafkas() -> None:
    snapshot = SnapshotId(1234, 7)
    assert snapshot.file_name == "00000000000000001234-0000000007.checkpoint"
    assert parse_snapshot_name(snapshot.file_name) == snapshot
    assert parse_snapshot_name("00000000000000001234-0000000007.checkpoint.part") is None
    assert parse_snapshot_name("1234-7.checkpoint") is None
    data = encode_snapshot(snapshot, [b"r1", b"r2"], 99)
    batches = list(read_batches(data))
    assert [b.partition_leader_epoch for b in batches] == [7, 7, 7]
    first = decode_control_key(batches[0].records()[0].key)
    last = decode_control_key(batches[-1].records()[0].key)
    assert first.type is ControlRecordType.SNAPSHOT_HEADER and last.type is ControlRecordType.SNAPSHOT_FOOTER
    assert [b.base_offset for b in batches] == [0, 1, 3]
    assert decode_snapshot(data) == [b"r1", b"r2"]
    with pytest.raises(InvalidValueError):
        decode_snapshot(data[: len(batches[0].buffer) + len(batches[1].buffer)])  # footer missing


def test_quorum_state_is_kafkas_json() -> None:
    data = encode_quorum_state(ElectionState(5, 2, 3), (3, 1, 2))
    assert json.loads(data) == {
        "clusterId": "",
        "leaderId": 2,
        "leaderEpoch": 5,
        "votedId": 3,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "data_version": 0,
    }
    assert decode_quorum_state(data) == ElectionState(5, 2, 3)
    kafka_38 = b'{"leaderId":1,"leaderEpoch":9,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    assert decode_quorum_state(kafka_38) == ElectionState(9, 1, -1)
    for bad in (b"{", b"[]", b'{"leaderEpoch":"x"}', b'{"leaderEpoch":-1}'):
        with pytest.raises(InvalidValueError):
            decode_quorum_state(bad)


def test_a_vote_is_persisted_before_the_answer_and_survives_a_restart() -> None:
    net = Network(3, seed=10)
    net.start(1)  # alone: it neither hears from a leader nor wins an election
    node = net.nodes[1]
    answer = net._call(node, lambda r: r.handle(52, 2, vote(2, 5), net.now_ms))
    assert granted(answer)
    assert node.r.role is QuorumRole.VOTED and node.r.epoch == 5
    # the state was fsynced with the answer: a crash right after keeps it
    net.kill(1)
    assert read_quorum_state(node.storage, "__cluster_metadata-0") == ElectionState(5, -1, 2)
    net.start(1)
    assert node.r.role is QuorumRole.VOTED and node.r.epoch == 5 and node.r.voted_id == 2
    assert not granted(
        net._call(node, lambda r: r.handle(52, 2, vote(3, 5), net.now_ms))
    )  # one vote per epoch
    assert granted(
        net._call(node, lambda r: r.handle(52, 2, vote(2, 5), net.now_ms))
    )  # the same candidate again
    assert granted(
        net._call(node, lambda r: r.handle(52, 2, vote(3, 6), net.now_ms))
    )  # a new epoch, a new vote


def test_a_vote_goes_only_to_a_log_at_least_as_up_to_date() -> None:
    net = Network(3, seed=11)
    net.start()
    leader = net.wait_for_leader()
    net.append([b"a", b"b"])
    net.run_until(lambda: all(n.applied == [b"a", b"b"] for n in net.nodes.values()))
    voter = next(n for n in net.nodes.values() if n is not leader)
    candidate = next(i for i in net.nodes if i not in (leader.node_id, voter.node_id))
    for node_id in (leader.node_id, candidate):
        net.kill(node_id)
    last_epoch, end = voter.r.last_epoch(), voter.r.log_end_offset
    epoch = voter.r.epoch
    # an older last epoch, or the same epoch with a shorter log: refused (even in a new epoch)
    assert not granted(
        net._call(voter, lambda r: r.handle(52, 2, vote(candidate, epoch + 1, last_epoch - 1, end + 5), 0))
    )
    assert voter.r.epoch == epoch + 1 and voter.r.role is QuorumRole.UNATTACHED
    assert not granted(
        net._call(voter, lambda r: r.handle(52, 2, vote(candidate, epoch + 2, last_epoch, end - 1), 0))
    )
    assert granted(
        net._call(voter, lambda r: r.handle(52, 2, vote(candidate, epoch + 3, last_epoch, end), 0))
    )


def test_a_far_behind_follower_gets_the_snapshot_and_catches_up() -> None:
    net = Network(3, seed=12)
    net.start()
    leader = net.wait_for_leader()
    behind = next(n for n in net.nodes.values() if n is not leader)
    net.kill(behind.node_id)
    for i in range(20):
        net.append([b"v%d" % i])
    net.run_until(lambda: len(leader.applied) == 20)
    hw = leader.r.high_watermark
    snapshot = net._call(
        leader, lambda r: r.create_snapshot(hw, r.epoch_of(hw - 1), list(leader.applied), net.now_ms)
    )
    assert isinstance(snapshot, SnapshotId)
    assert leader.r.log_start_offset == hw
    assert snapshot.epoch == leader.r.epoch  # the last record before hw is of the leader's epoch
    assert snapshot.file_name in leader.storage.list_dir("__cluster_metadata-0")
    net.append([b"after"])
    net.start(behind.node_id)
    expected = [b"v%d" % i for i in range(20)] + [b"after"]
    net.run_until(lambda: behind.applied == expected)
    assert behind.snapshots_loaded == 1
    assert behind.r.latest_snapshot == snapshot
    assert behind.r.log_start_offset == hw
    # restarting loads the snapshot from its file, then the log after it
    net.restart(behind.node_id)
    assert behind.snapshots_loaded == 2
    net.run_until(lambda: behind.applied == expected)


def test_an_observer_follows_without_voting() -> None:
    net = Network(3, observers=1, seed=13)
    net.start()
    leader = net.wait_for_leader()
    observer = net.nodes[4]
    net.append([b"m"])
    net.run_until(lambda: observer.applied == [b"m"])
    assert not observer.r.is_voter and observer.r.role is QuorumRole.FOLLOWER
    assert observer.r.leader_id == leader.node_id
    # nobody asked the observer for a vote, and it refuses one
    assert all(dest != 4 for (_, dest, body) in net.sent if isinstance(body, VoteRequest))
    answer = net._call(observer, lambda r: r.handle(52, 2, vote(2, 99), net.now_ms))
    assert isinstance(answer, VoteResponse)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.INCONSISTENT_VOTER_SET
    # when the leader dies, the observer finds the next one
    net.kill(leader.node_id)
    new = net.wait_for_leader()
    net.append([b"n"])
    net.run_until(lambda: observer.applied == [b"m", b"n"])
    assert observer.r.leader_id == new.node_id


def describe() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(
        topics=[
            DescribeQuorumRequestTopicData(
                topic_name="__cluster_metadata",
                partitions=[DescribeQuorumRequestPartitionData(partition_index=0)],
            )
        ]
    )


def test_describe_quorum_gives_voters_and_observers_end_offsets_and_times() -> None:
    net = Network(3, observers=1, seed=14)
    net.start()
    leader = net.wait_for_leader()
    net.append([b"a", b"b"])
    net.run_until(lambda: all(n.applied == [b"a", b"b"] for n in net.nodes.values()))
    net.run(50)
    answer = net._call(leader, lambda r: r.handle(55, 2, describe(), net.now_ms))
    assert isinstance(answer, DescribeQuorumResponse)
    part = answer.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    assert (part.leader_id, part.leader_epoch, part.high_watermark) == (
        leader.node_id,
        leader.r.epoch,
        leader.r.high_watermark,
    )
    voters = {v.replica_id: v for v in part.current_voters}
    assert sorted(voters) == [1, 2, 3]
    end = leader.r.log_end_offset
    for state in voters.values():
        assert state.log_end_offset == end
        assert 0 < state.last_fetch_timestamp <= net.now_ms
        assert 0 < state.last_caught_up_timestamp <= state.last_fetch_timestamp
    assert voters[leader.node_id].last_fetch_timestamp == net.now_ms
    assert [o.replica_id for o in part.observers] == [4]
    assert part.observers[0].log_end_offset == end
    assert sorted(n.node_id for n in answer.nodes) == [1, 2, 3]
    # a dead voter's numbers stop moving
    dead = next(n for n in net.nodes if n != leader.node_id and n != 4)
    net.kill(dead)
    net.append([b"c"])
    net.run(500)
    again = net._call(leader, lambda r: r.handle(55, 2, describe(), net.now_ms))
    assert isinstance(again, DescribeQuorumResponse)
    states = {v.replica_id: v for v in again.topics[0].partitions[0].current_voters}
    assert states[dead].log_end_offset == end
    assert states[dead].last_fetch_timestamp == voters[dead].last_fetch_timestamp or (
        states[dead].last_fetch_timestamp < net.now_ms - 400
    )
    # a follower is not the one to ask
    follower = next(n for n in net.nodes.values() if n.alive and n is not leader)
    other = net._call(follower, lambda r: r.handle(55, 2, describe(), net.now_ms))
    assert isinstance(other, DescribeQuorumResponse)
    refused = other.topics[0].partitions[0]
    assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # As Kafka's singletonErrorResponse: the error's message, the leader fields left at 0.
    assert refused.error_message
    assert (refused.leader_id, refused.leader_epoch, refused.high_watermark) == (0, 0, 0)


def test_state_is_read_back_after_a_crash_of_the_whole_quorum() -> None:
    net = Network(3, seed=15)
    net.start()
    net.wait_for_leader()
    net.append([b"p", b"q"])
    net.run_until(lambda: all(n.applied == [b"p", b"q"] for n in net.nodes.values()))
    epochs = {i: n.r.epoch for i, n in net.nodes.items()}
    for node_id in net.nodes:
        net.kill(node_id)
    for node_id in net.nodes:
        assert read_quorum_state(net.nodes[node_id].storage, "__cluster_metadata-0") is not None
    net.start()
    for node_id, node in net.nodes.items():
        assert node.r.epoch == epochs[node_id]
    leader = net.wait_for_leader()
    assert leader.r.epoch > max(epochs.values())
    net.run_until(lambda: all(n.applied == [b"p", b"q"] for n in net.nodes.values()))


def test_a_fresh_data_directory_gets_a_quorum_state_file() -> None:
    storage = MemoryStorage()
    sink = EffectSink()
    net = Network(3)
    node = net.nodes[1]
    node.storage, node.sink = storage, sink
    net.start(1)
    assert read_quorum_state(storage, "__cluster_metadata-0") == ElectionState(0, -1, -1)


def test_a_restarted_follower_is_caught_up_only_once_the_leader_has_answered() -> None:
    net = Network(3, seed=21)
    net.start()
    leader = net.wait_for_leader()
    net.append([b"a"])
    net.run_until(lambda: all(n.applied == [b"a"] for n in net.nodes.values()))
    follower = next(n for i, n in net.nodes.items() if i != leader.node_id)
    assert follower.r.caught_up and leader.r.caught_up
    net.kill(follower.node_id)
    net.append([b"b"])
    net.run(200)
    net.restart(follower.node_id)
    assert not follower.r.caught_up  # the quorum committed more while it was down: unknown yet
    net.run_until(lambda: follower.r.caught_up)
    assert follower.r.high_watermark == leader.r.high_watermark
