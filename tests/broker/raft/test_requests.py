"""Kafka's error codes for bad or misdirected quorum requests, the long-poll Fetch, versions."""

from __future__ import annotations

import random
import uuid

import pytest

from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.raft import KRaftReplica, QuorumRole, Voter
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestPartitionData,
    BeginQuorumEpochRequestTopicData,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeQuorumResponse,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotRequestPartitionSnapshot,
    FetchSnapshotRequestTopicSnapshot,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from tests.broker.raft.network import Network
from tests.broker.raft.test_snapshots_and_state import vote

META_ID = uuid.UUID("00000000-0000-0000-0000-000000000001")


def fetch(
    replica: int,
    epoch: int,
    offset: int,
    last_epoch: int,
    *,
    topic_id: uuid.UUID = META_ID,
    max_wait_ms: int = 0,
) -> FetchRequest:
    return FetchRequest(
        replica_state=FetchRequestReplicaState(replica_id=replica, replica_epoch=-1),
        max_wait_ms=max_wait_ms,
        max_bytes=1 << 20,
        topics=[
            FetchRequestTopic(
                topic_id=topic_id,
                partitions=[
                    FetchRequestPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=last_epoch,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )


def begin(leader: int, epoch: int) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(
        topics=[
            BeginQuorumEpochRequestTopicData(
                topic_name="__cluster_metadata",
                partitions=[
                    BeginQuorumEpochRequestPartitionData(
                        partition_index=0, leader_id=leader, leader_epoch=epoch
                    )
                ],
            )
        ]
    )


def vote_error(answer: object) -> int:
    assert isinstance(answer, VoteResponse)
    if answer.error_code:
        return answer.error_code
    return answer.topics[0].partitions[0].error_code


def fetch_part(answer: object) -> tuple[int, int, int]:
    assert isinstance(answer, FetchResponse), answer
    part = answer.responses[0].partitions[0]
    return part.error_code, part.current_leader.leader_id, part.current_leader.leader_epoch


@pytest.fixture
def settled() -> Network:
    net = Network(3, seed=20)
    net.start()
    net.wait_for_leader()
    net.append([b"x"])
    net.run_until(lambda: all(n.applied == [b"x"] for n in net.nodes.values()))
    return net


def test_vote_errors_are_kafkas(settled: Network) -> None:
    net = settled
    leader = net.leader()
    assert leader is not None
    epoch = leader.r.epoch
    node = next(n for n in net.nodes.values() if n is not leader)
    call = net._call
    assert (
        vote_error(call(node, lambda r: r.handle(52, 2, vote(9, epoch + 1, 0, 0), 0)))
        == ErrorCode.INCONSISTENT_VOTER_SET
    )
    wrong_cluster = vote(2, epoch + 1)
    wrong_cluster.cluster_id = "another-cluster"
    assert (
        vote_error(call(node, lambda r: r.handle(52, 2, wrong_cluster, 0)))
        == ErrorCode.INCONSISTENT_CLUSTER_ID
    )
    wrong_topic = vote(2, epoch + 1)
    wrong_topic.topics[0].topic_name = "other"
    assert vote_error(call(node, lambda r: r.handle(52, 2, wrong_topic, 0))) == ErrorCode.INVALID_REQUEST
    # the candidate's last epoch must be below its epoch
    assert (
        vote_error(call(node, lambda r: r.handle(52, 2, vote(2, epoch + 1, epoch + 1, 0), 0)))
        == ErrorCode.INVALID_REQUEST
    )
    # none of these moved the voter
    assert node.r.epoch == epoch and node.r.role is QuorumRole.FOLLOWER
    # a candidate of an older epoch than the voter's is fenced
    call(node, lambda r: r.handle(52, 2, vote(2, epoch + 5, 0, 0), 0))
    assert node.r.epoch == epoch + 5
    assert (
        vote_error(call(node, lambda r: r.handle(52, 2, vote(2, epoch + 4, 0, 0), 0)))
        == ErrorCode.FENCED_LEADER_EPOCH
    )


def test_begin_quorum_epoch_errors_and_effect(settled: Network) -> None:
    net = settled
    leader = net.leader()
    assert leader is not None
    epoch = leader.r.epoch
    node = next(n for n in net.nodes.values() if n is not leader)
    answer = net._call(node, lambda r: r.handle(53, 1, begin(9, epoch + 1), 0))
    assert isinstance(answer, BeginQuorumEpochResponse)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.INCONSISTENT_VOTER_SET
    stale = net._call(node, lambda r: r.handle(53, 1, begin(leader.node_id, epoch - 1), 0))
    assert isinstance(stale, BeginQuorumEpochResponse)
    assert stale.topics[0].partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert stale.topics[0].partitions[0].leader_epoch == epoch
    other = next(i for i in net.nodes if i not in (leader.node_id, node.node_id))
    moved = net._call(node, lambda r: r.handle(53, 1, begin(other, epoch + 3), 0))
    assert isinstance(moved, BeginQuorumEpochResponse) and moved.topics[0].partitions[0].error_code == 0
    assert node.r.role is QuorumRole.FOLLOWER and node.r.leader_id == other and node.r.epoch == epoch + 3


def test_fetch_errors_are_kafkas(settled: Network) -> None:
    net = settled
    leader = net.leader()
    assert leader is not None
    epoch = leader.r.epoch
    follower = next(n for n in net.nodes.values() if n is not leader)
    call = net._call
    # to a non-leader: NOT_LEADER_OR_FOLLOWER naming the leader
    assert fetch_part(call(follower, lambda r: r.handle(1, 17, fetch(3, epoch, 0, 0), 0))) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        leader.node_id,
        epoch,
    )
    assert (
        fetch_part(call(leader, lambda r: r.handle(1, 17, fetch(3, epoch - 1, 0, 0), 0)))[0]
        == ErrorCode.FENCED_LEADER_EPOCH
    )
    assert (
        fetch_part(call(leader, lambda r: r.handle(1, 17, fetch(3, epoch + 1, 0, 0), 0)))[0]
        == ErrorCode.UNKNOWN_LEADER_EPOCH
    )
    assert (
        fetch_part(call(leader, lambda r: r.handle(1, 17, fetch(3, epoch, -1, 0), 0)))[0]
        == ErrorCode.INVALID_REQUEST
    )
    other_topic = call(leader, lambda r: r.handle(1, 17, fetch(3, epoch, 0, 0, topic_id=uuid.uuid4()), 0))
    assert isinstance(other_topic, FetchResponse) and other_topic.error_code == ErrorCode.INVALID_REQUEST
    wrong_cluster = fetch(3, epoch, 0, 0)
    wrong_cluster.cluster_id = "another"
    answer = call(leader, lambda r: r.handle(1, 17, wrong_cluster, 0))
    assert isinstance(answer, FetchResponse) and answer.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID


def test_a_fetch_with_a_divergent_last_epoch_answers_the_diverging_epoch(settled: Network) -> None:
    net = settled
    leader = net.leader()
    assert leader is not None
    epoch, end = leader.r.epoch, leader.r.log_end_offset
    # claims epoch `epoch - 1`... which the leader's log never had: diverging at the epoch before
    answer = net._call(leader, lambda r: r.handle(1, 17, fetch(3, epoch, end + 4, epoch), 0))
    assert isinstance(answer, FetchResponse)
    part = answer.responses[0].partitions[0]
    assert (part.diverging_epoch.epoch, part.diverging_epoch.end_offset) == (epoch, end)
    assert not part.records


def test_fetch_snapshot_errors(settled: Network) -> None:
    net = settled
    leader = net.leader()
    assert leader is not None

    def request(topic: str, partition: int, end: int) -> FetchSnapshotRequest:
        req = FetchSnapshotRequest(
            replica_id=3,
            topics=[
                FetchSnapshotRequestTopicSnapshot(
                    name=topic,
                    partitions=[
                        FetchSnapshotRequestPartitionSnapshot(
                            partition=partition, current_leader_epoch=leader.r.epoch
                        )
                    ],
                )
            ],
        )
        req.topics[0].partitions[0].snapshot_id.end_offset = end
        req.topics[0].partitions[0].snapshot_id.epoch = leader.r.epoch
        return req

    def error(body: FetchSnapshotRequest) -> int:
        answer = net._call(leader, lambda r: r.handle(59, 1, body, 0))
        assert isinstance(answer, FetchSnapshotResponse)
        return answer.topics[0].partitions[0].error_code

    assert error(request("other", 0, 1)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error(request("__cluster_metadata", 1, 1)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error(request("__cluster_metadata", 0, 1)) == ErrorCode.SNAPSHOT_NOT_FOUND


def test_describe_quorum_of_an_unknown_partition() -> None:
    net = Network(1)
    net.start()
    body = DescribeQuorumRequest(
        topics=[
            DescribeQuorumRequestTopicData(topic_name="t", partitions=[DescribeQuorumRequestPartitionData()])
        ]
    )
    answer = net._call(net.nodes[1], lambda r: r.handle(55, 2, body, 0))
    assert isinstance(answer, DescribeQuorumResponse)
    refused = answer.topics[0].partitions[0]
    assert refused.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert refused.error_message  # Kafka's getPartitionLevelErrorResponse: the error's message
    assert (refused.leader_id, refused.leader_epoch, refused.high_watermark) == (0, 0, 0)
    encoded = DescribeQuorumResponse.decode(answer.encode(2), 2)
    assert encoded.topics[0].partitions[0].error_message == refused.error_message


def test_a_fetch_with_nothing_to_return_waits_until_data_arrives(settled: Network) -> None:
    net = settled
    leader = net.leader()
    assert leader is not None
    epoch, end = leader.r.epoch, leader.r.log_end_offset
    waiting = leader.r.handle(1, 17, fetch(3, epoch, end, epoch, max_wait_ms=500), net.now_ms)
    assert not isinstance(waiting, Message)
    assert waiting.deadline_ms == net.now_ms + 500
    assert waiting.poll(net.now_ms + 10) is None
    net._call(leader, lambda r: r.append([b"new"], net.now_ms))
    answer = waiting.poll(net.now_ms + 20)
    assert isinstance(answer, FetchResponse) and answer.responses[0].partitions[0].records
    # and with nothing new, it answers empty at its deadline
    end = leader.r.log_end_offset
    idle = leader.r.handle(1, 17, fetch(3, epoch, end, epoch, max_wait_ms=500), net.now_ms)
    assert not isinstance(idle, Message)
    assert idle.poll(net.now_ms + 499) is None
    empty = idle.poll(net.now_ms + 500)
    assert isinstance(empty, FetchResponse) and not empty.responses[0].partitions[0].records


def test_unknown_requests_are_caller_misuse() -> None:
    net = Network(1)
    net.start()
    from kafka_wire.errors import LocalProtocolError
    from kafka_wire.messages import MetadataRequest

    with pytest.raises(LocalProtocolError):
        net.nodes[1].r.handle(3, 12, MetadataRequest(), 0)


@pytest.mark.parametrize("seed", range(3))
def test_every_request_the_replicas_send_encodes_at_every_version_kafka_uses(seed: int) -> None:
    net = Network(3, observers=1, seed=seed)
    net.start()
    leader = net.wait_for_leader()
    net.append([b"a"])
    net.run(200)
    net._call(leader, lambda r: r.resign(net.now_ms))
    net.run(2000)
    kinds = set()
    for _, _, body in net.sent:
        kinds.add(type(body).__name__)
        versions = body.VERSIONS
        low = min(versions)
        if isinstance(body, FetchRequest):
            low = 15  # raft fetches carry ReplicaState
        elif isinstance(body, VoteRequest) and body.topics[0].partitions[0].pre_vote:
            low = 2  # PreVote
            kinds.add("pre-vote")
        for version in range(low, max(versions) + 1):
            type(body).decode(body.encode(version), version)
    assert {
        "VoteRequest",
        "pre-vote",
        "BeginQuorumEpochRequest",
        "EndQuorumEpochRequest",
        "FetchRequest",
    } <= kinds


def test_outbound_replies_come_back_through_bound_methods() -> None:
    from kafka_wire.broker.effects import EffectSink
    from kafka_wire.broker.raft import RaftConfig
    from kafka_wire.testing.memory_storage import MemoryStorage

    config = RaftConfig(node_id=1, voters=(Voter(1, "h", 1), Voter(2, "h", 2), Voter(3, "h", 3)))
    replica = KRaftReplica(config, MemoryStorage(), EffectSink(), random.Random(1))
    replica.start(0)
    replica.tick(5000)
    assert replica.role is QuorumRole.PROSPECTIVE
    outs: list[Outbound] = replica.poll_outbound(5000)
    assert sorted(o.destination for o in outs) == [2, 3]
    assert all(o.version == 2 for o in outs)  # pre-votes go out at the version carrying PreVote
    assert all(o.listener == "CONTROLLER" and hasattr(o.on_reply, "__self__") for o in outs)
    assert replica.poll_outbound(5001) == []  # in flight: not sent twice
    outs[0].on_reply(None, 5002)  # lost: sent again after the retry backoff
    assert replica.poll_outbound(5003) == []
    assert [o.destination for o in replica.poll_outbound(5002 + config.retry_backoff_ms)] == [
        outs[0].destination
    ]
