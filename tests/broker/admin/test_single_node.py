"""The replication admin APIs on a single node: the broker is the only broker, the leader of every
partition, and its own one-voter controller quorum (reached in-process)."""

from __future__ import annotations

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.broker.node import Node
from kafka_wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    AlterPartitionReassignmentsResponse,
    ApiKey,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsRequestDescribableLogDirTopic,
    DescribeLogDirsResponse,
    DescribeProducersRequest,
    DescribeProducersRequestTopicRequest,
    DescribeProducersResponse,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeQuorumResponse,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ErrorCode,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce


def engine_with_topics(**config: object) -> tuple[Engine, Client]:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, **config))  # type: ignore[arg-type]  # keyword fields of BrokerConfig
    client = Client(engine, 1)
    create(client, "orders", 2)
    create(client, "audit", 1)
    return engine, client


def test_the_new_apis_are_served_at_kafkas_versions() -> None:
    assert SUPPORTED[ApiKey.DESCRIBE_TOPIC_PARTITIONS] == (0, 0)
    assert SUPPORTED[ApiKey.DESCRIBE_LOG_DIRS][0] == 0 and SUPPORTED[ApiKey.DESCRIBE_LOG_DIRS][1] >= 4
    assert SUPPORTED[ApiKey.DESCRIBE_PRODUCERS] == (0, 0)
    assert SUPPORTED[ApiKey.ELECT_LEADERS] == (0, 2)
    assert SUPPORTED[ApiKey.ALTER_PARTITION_REASSIGNMENTS][0] == 0
    assert SUPPORTED[ApiKey.LIST_PARTITION_REASSIGNMENTS] == (0, 0)
    assert SUPPORTED[ApiKey.DESCRIBE_QUORUM] == (0, 2)


# -- DescribeLogDirs -------------------------------------------------------------------------------


def test_describe_log_dirs_lists_each_replica_with_its_size() -> None:
    engine, client = engine_with_topics(log_dir="/var/lib/kafka-wire")
    batch = build_batch([NewRecord(b"k", b"v" * 100)], default_timestamp=engine.now_ms)
    produce(client, "orders", batch, partition=1)
    reply = client.request(DescribeLogDirsRequest(topics=None), 4).body
    assert isinstance(reply, DescribeLogDirsResponse)
    (result,) = reply.results
    assert (result.error_code, result.log_dir) == (ErrorCode.NONE, "/var/lib/kafka-wire")
    assert (result.total_bytes, result.usable_bytes) == (-1, -1)
    sizes = {
        (t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
        for t in result.topics
        for p in t.partitions
    }
    assert sizes == {
        ("audit", 0): (0, 0, False),
        ("orders", 0): (0, 0, False),
        ("orders", 1): (len(batch), 0, False),
    }
    assert [t.name for t in result.topics] == ["audit", "orders"]


def test_describe_log_dirs_keeps_to_the_partitions_named() -> None:
    _, client = engine_with_topics()
    request = DescribeLogDirsRequest(
        topics=[
            DescribeLogDirsRequestDescribableLogDirTopic(topic="orders", partitions=[1, 7]),
            DescribeLogDirsRequestDescribableLogDirTopic(topic="nothing", partitions=[0]),
        ]
    )
    reply = client.request(request, 1).body
    assert isinstance(reply, DescribeLogDirsResponse)
    (result,) = reply.results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [("orders", [1])]


# -- DescribeProducers -----------------------------------------------------------------------------


def test_describe_producers_reports_the_idempotent_producers_of_a_partition() -> None:
    engine, client = engine_with_topics()
    for sequence in (0, 3):
        batch = build_batch(
            [NewRecord(b"k", b"v")] * 3,
            default_timestamp=engine.now_ms + sequence,
            producer_id=42,
            producer_epoch=2,
            base_sequence=sequence,
        )
        response = produce(client, "orders", batch, partition=0)
        assert response is not None and response.responses[0].partition_responses[0].error_code == 0
    request = DescribeProducersRequest(
        topics=[
            DescribeProducersRequestTopicRequest(name="orders", partition_indexes=[0, 1, 9]),
            DescribeProducersRequestTopicRequest(name="missing", partition_indexes=[0]),
            DescribeProducersRequestTopicRequest(name="bad/name", partition_indexes=[0]),
        ]
    )
    reply = client.request(request, 0).body
    assert isinstance(reply, DescribeProducersResponse)
    orders, missing, bad = reply.topics
    p0, p1, p9 = orders.partitions
    assert p0.error_code == ErrorCode.NONE
    ((state),) = p0.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (42, 2, 5)
    assert state.last_timestamp == engine.now_ms + 3
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)
    assert (p1.error_code, p1.active_producers) == (ErrorCode.NONE, [])
    assert p9.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert missing.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert bad.partitions[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


# -- ElectLeaders ----------------------------------------------------------------------------------


@pytest.mark.parametrize("election_type", [0, 1])
def test_elect_leaders_is_never_needed_on_one_node(election_type: int) -> None:
    _, client = engine_with_topics()
    request = ElectLeadersRequest(
        election_type=election_type,
        topic_partitions=[
            ElectLeadersRequestTopicPartitions(topic="orders", partitions=[0, 1, 2]),
            ElectLeadersRequestTopicPartitions(topic="missing", partitions=[0]),
        ],
    )
    reply = client.request(request, 2).body
    assert isinstance(reply, ElectLeadersResponse)
    assert reply.error_code == ErrorCode.NONE
    orders, missing = reply.replica_election_results
    assert [(r.partition_id, r.error_code) for r in orders.partition_result] == [
        (0, ErrorCode.ELECTION_NOT_NEEDED),
        (1, ErrorCode.ELECTION_NOT_NEEDED),
        (2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert missing.partition_result[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_elect_leaders_for_every_partition_leaves_out_those_not_needing_one() -> None:
    _, client = engine_with_topics()
    reply = client.request(ElectLeadersRequest(election_type=0, topic_partitions=None), 1).body
    assert isinstance(reply, ElectLeadersResponse)
    assert [(r.topic, r.partition_result) for r in reply.replica_election_results] == [
        ("audit", []),
        ("orders", []),
    ]


def test_an_unknown_election_type_is_an_invalid_request() -> None:
    _, client = engine_with_topics()
    request = ElectLeadersRequest(
        election_type=5, topic_partitions=[ElectLeadersRequestTopicPartitions(topic="orders", partitions=[0])]
    )
    reply = client.request(request, 2).body
    assert isinstance(reply, ElectLeadersResponse)
    assert reply.error_code == ErrorCode.INVALID_REQUEST
    assert reply.replica_election_results[0].partition_result[0].error_code == ErrorCode.INVALID_REQUEST


# -- Partition reassignments -----------------------------------------------------------------------


def test_reassignment_on_one_node() -> None:
    _, client = engine_with_topics()

    def target(
        index: int, replicas: list[int] | None
    ) -> AlterPartitionReassignmentsRequestReassignablePartition:
        return AlterPartitionReassignmentsRequestReassignablePartition(
            partition_index=index, replicas=replicas
        )

    request = AlterPartitionReassignmentsRequest(
        topics=[
            AlterPartitionReassignmentsRequestReassignableTopic(
                name="orders",
                partitions=[
                    target(0, [1]),
                    target(1, None),
                    target(0, [1, 2]),
                    target(0, []),
                    target(0, [1, 1]),
                    target(5, [1]),
                ],
            ),
            AlterPartitionReassignmentsRequestReassignableTopic(name="missing", partitions=[target(0, [1])]),
        ]
    )
    reply = client.request(request, 0).body
    assert isinstance(reply, AlterPartitionReassignmentsResponse)
    assert reply.error_code == ErrorCode.NONE
    orders, missing = reply.responses
    assert [p.error_code for p in orders.partitions] == [
        ErrorCode.NONE,
        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert orders.partitions[0].error_message is None
    assert missing.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("named", [False, True])
def test_no_reassignment_is_listed_on_one_node(named: bool) -> None:
    _, client = engine_with_topics()
    topics = (
        [ListPartitionReassignmentsRequestTopics(name="orders", partition_indexes=[0, 1])] if named else None
    )
    reply = client.request(ListPartitionReassignmentsRequest(topics=topics), 0).body
    assert isinstance(reply, ListPartitionReassignmentsResponse)
    assert (reply.error_code, reply.topics) == (ErrorCode.NONE, [])


# -- DescribeQuorum --------------------------------------------------------------------------------


def quorum_request(topic: str = "__cluster_metadata", partition: int = 0) -> DescribeQuorumRequest:
    return DescribeQuorumRequest(
        topics=[
            DescribeQuorumRequestTopicData(
                topic_name=topic, partitions=[DescribeQuorumRequestPartitionData(partition_index=partition)]
            )
        ]
    )


def test_a_single_node_is_its_own_one_voter_quorum() -> None:
    engine, client = engine_with_topics()
    reply = client.request(quorum_request(), 2).body
    assert isinstance(reply, DescribeQuorumResponse)
    assert reply.error_code == ErrorCode.NONE
    (partition,) = reply.topics[0].partitions
    assert (partition.error_code, partition.leader_id, partition.leader_epoch) == (ErrorCode.NONE, 1, 1)
    # Its raft replica's figures: the metadata log holds the topics' records, all committed.
    node = engine.broker.node
    assert isinstance(node, Node)
    raft = node.parts.raft
    assert partition.high_watermark == raft.high_watermark > 0
    (voter,) = partition.current_voters
    assert (voter.replica_id, voter.log_end_offset) == (1, raft.high_watermark)
    assert voter.last_caught_up_timestamp == engine.now_ms
    assert partition.observers == []
    (described,) = reply.nodes
    assert (described.node_id, described.listeners) == (1, []), "its controller has no listener"
    assert "__cluster_metadata-0" in engine.storage.list_dir("")


@pytest.mark.parametrize(("topic", "partition"), [("orders", 0), ("__cluster_metadata", 1)])
def test_describe_quorum_of_anything_else_is_unknown(topic: str, partition: int) -> None:
    _, client = engine_with_topics()
    reply = client.request(quorum_request(topic, partition), 1).body
    assert isinstance(reply, DescribeQuorumResponse)
    assert reply.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- Metadata / DescribeCluster --------------------------------------------------------------------


def test_a_single_node_reports_itself_as_controller_and_only_broker() -> None:
    _, client = engine_with_topics()
    metadata = client.request(MetadataRequest(topics=None), 12).body
    assert isinstance(metadata, MetadataResponse)
    assert metadata.controller_id == 1 and [b.node_id for b in metadata.brokers] == [1]
    cluster = client.request(DescribeClusterRequest(), 2).body
    assert isinstance(cluster, DescribeClusterResponse)
    assert (cluster.controller_id, [b.broker_id for b in cluster.brokers]) == (1, [1])


@pytest.mark.parametrize(
    ("endpoint_type", "error"),
    [(2, ErrorCode.MISMATCHED_ENDPOINT_TYPE), (9, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)],
)
def test_describe_cluster_on_a_broker_listener_serves_brokers_only(endpoint_type: int, error: int) -> None:
    _, client = engine_with_topics()
    reply = client.request(DescribeClusterRequest(endpoint_type=endpoint_type), 1).body
    assert isinstance(reply, DescribeClusterResponse)
    assert reply.error_code == error


def test_a_single_node_keeps_its_quorum_and_its_broker_through_a_long_silence() -> None:
    """A lone voter is its own majority (its check-quorum timer never runs out), and its
    controller does not fence the broker of its own process when the process stalled past the
    session timeout."""
    engine, client = engine_with_topics()
    node = engine.broker.node
    assert isinstance(node, Node)
    epoch = node.parts.raft.epoch
    engine.advance(60_000)  # no input at all
    engine.now_ms += 30_000  # then a stall: the next tick comes 30 s late
    engine.advance(0)
    assert (node.parts.raft.leader_id, node.parts.raft.epoch) == (1, epoch)
    reply = client.request(MetadataRequest(topics=None), 12).body
    assert isinstance(reply, MetadataResponse)
    assert (reply.controller_id, [b.node_id for b in reply.brokers]) == (1, [1])
