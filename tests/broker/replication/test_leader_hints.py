"""What a broker answers a client that asked it about a partition it does not lead, as Kafka's
broker does (docs/internals/response-defaults.md): empty records, NOT_LEADER_OR_FOLLOWER also
where it holds no replica, and from Fetch v16 / Produce v10 the leader it knows of with its
endpoint (KIP-951). Each answer is read back as the client decodes it."""

from __future__ import annotations

import pytest

from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    ErrorCode,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestOffsetForLeaderPartition,
    OffsetForLeaderEpochRequestOffsetForLeaderTopic,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import on_the_wire
from tests.broker.replication.cluster import TOPIC_ID, Network, Node
from tests.broker.replication.test_replication import client_fetch_response, three


def fetch_answer(node: Node, now_ms: int, version: int, current_epoch: int = -1) -> FetchResponse:
    answer = client_fetch_response(node, now_ms, version=version, current_epoch=current_epoch)
    return on_the_wire(answer, FetchResponse, version)


def latest_offset(node: Node, now_ms: int, *, replica_id: int = -1, partition: int = 0) -> tuple[int, int]:
    """ListOffsets v7 of t-``partition``'s latest offset: (error code, offset)."""
    request = ListOffsetsRequest(
        replica_id=replica_id,
        topics=[
            ListOffsetsRequestTopic(
                name="t", partitions=[ListOffsetsRequestPartition(partition_index=partition, timestamp=-1)]
            )
        ],
    )
    result = on_the_wire(node.call(request, now_ms, 7), ListOffsetsResponse, 7).topics[0].partitions[0]
    return result.error_code, result.offset


def four_with_a_stranger() -> Network:
    """Nodes 1-3 hold the partition (1 leads); node 4 holds no replica but knows the topic, as
    every broker's metadata image lists every topic."""
    net = Network()
    for node_id in (1, 2, 3, 4):
        net.add(node_id)
    net.create((1, 2, 3))
    net.nodes[4].state.metadata.topics["t"] = TopicInfo("t", TOPIC_ID, 1)
    return net


@pytest.mark.parametrize("version", [16, 17])
def test_a_follower_names_the_leader_and_its_endpoint_from_fetch_v16(version: int) -> None:
    net = three()
    net.run(100)
    answer = fetch_answer(net.nodes[2], net.now_ms, version)
    data = answer.responses[0].partitions[0]
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert data.records is not None and len(data.records) == 0
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (1, 0)
    assert [(e.node_id, e.host, e.port, e.rack) for e in answer.node_endpoints] == [
        (1, "127.0.0.1", 9001, None)
    ]
    # Kafka's ReplicaManager error result: offsets -1 and no list of aborted transactions.
    assert (data.high_watermark, data.log_start_offset, data.aborted_transactions) == (-1, -1, None)


@pytest.mark.parametrize("version", [12, 15])
def test_before_fetch_v16_the_leader_is_not_named(version: int) -> None:
    net = three()
    net.run(100)
    data = fetch_answer(net.nodes[2], net.now_ms, version).responses[0].partitions[0]
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert data.records is not None and len(data.records) == 0
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (-1, -1)


def test_a_fenced_epoch_names_the_leader_too() -> None:
    net = three()
    net.run(100)
    net.elect(1)  # epoch 1
    answer = fetch_answer(net.nodes[2], net.now_ms, 16, current_epoch=0)
    data = answer.responses[0].partitions[0]
    assert data.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (1, 1)
    assert [e.node_id for e in answer.node_endpoints] == [1]


def produce_request() -> ProduceRequest:
    batch = build_batch([NewRecord(None, b"v")], default_timestamp=1)
    return ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="t", partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)]
            )
        ],
    )


def test_a_produce_to_a_follower_names_the_leader_from_v10() -> None:
    net = three()
    net.run(100)
    new = on_the_wire(net.nodes[3].call(produce_request(), net.now_ms, 10), ProduceResponse, 10)
    result = new.responses[0].partition_responses[0]
    assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (result.current_leader.leader_id, result.current_leader.leader_epoch) == (1, 0)
    assert [(e.node_id, e.port) for e in new.node_endpoints] == [(1, 9001)]
    assert result.error_message is None
    old = on_the_wire(net.nodes[3].call(produce_request(), net.now_ms, 9), ProduceResponse, 9)
    assert old.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_node_without_a_replica_answers_not_leader_and_names_the_leader() -> None:
    net = four_with_a_stranger()
    net.run(100)
    stranger = net.nodes[4]
    fetched = fetch_answer(stranger, net.now_ms, 17)
    data = fetched.responses[0].partitions[0]
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (1, 0)
    produced = on_the_wire(stranger.call(produce_request(), net.now_ms, 11), ProduceResponse, 11)
    assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert [e.node_id for e in produced.node_endpoints] == [1]
    assert latest_offset(stranger, net.now_ms) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    epochs = stranger.call(
        OffsetForLeaderEpochRequest(
            topics=[
                OffsetForLeaderEpochRequestOffsetForLeaderTopic(
                    topic="t",
                    partitions=[OffsetForLeaderEpochRequestOffsetForLeaderPartition(leader_epoch=0)],
                )
            ]
        ),
        net.now_ms,
        4,
    )
    assert on_the_wire(epochs, OffsetForLeaderEpochResponse, 4).topics[0].partitions[0].error_code == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    deleted = stranger.call(
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequestTopic(name="t", partitions=[DeleteRecordsRequestPartition(offset=0)])
            ],
            timeout_ms=1000,
        ),
        net.now_ms,
        2,
    )
    result = on_the_wire(deleted, DeleteRecordsResponse, 2).topics[0].partitions[0]
    assert (result.error_code, result.low_watermark) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    # A partition the topic does not have stays unknown.
    assert latest_offset(stranger, net.now_ms, partition=5)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_only_the_leader_answers_list_offsets_but_for_the_debugging_replica() -> None:
    net = three()
    net.nodes[1].produce([b"a", b"b"], net.now_ms, acks=1)
    net.run(1000)

    assert latest_offset(net.nodes[1], net.now_ms) == (ErrorCode.NONE, 2)
    assert latest_offset(net.nodes[2], net.now_ms) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    assert latest_offset(net.nodes[2], net.now_ms, replica_id=-2)[0] == ErrorCode.NONE
