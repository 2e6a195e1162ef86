"""Metadata, DescribeCluster, DescribeLogDirs and DescribeProducers with a ClusterView: three
brokers, one fenced, a partition offline."""

from __future__ import annotations

import pytest

from kafka_wire.broker.apis.describe_cluster import controllers_answer
from kafka_wire.broker.cluster_view import Endpoint
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeProducersRequest,
    DescribeProducersRequestTopicRequest,
    DescribeProducersResponse,
    ErrorCode,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from tests.broker.admin.cluster import FakeView, cluster_engine, deliver
from tests.broker.engine import Client


def metadata(client: Client, version: int, *names: str, auto_create: bool = False) -> MetadataResponse:
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in names] if names else None,
        allow_auto_topic_creation=auto_create or version < 4,  # v0-3 always allow it
    )
    reply = client.request(request, version).body
    assert isinstance(reply, MetadataResponse)
    return reply


def test_metadata_lists_the_unfenced_brokers_on_the_clients_listener() -> None:
    engine, _ = cluster_engine()
    reply = metadata(Client(engine, 1), 12)
    assert [(b.node_id, b.host, b.port, b.rack) for b in reply.brokers] == [
        (1, "broker1", 9092, "a"),
        (2, "broker2", 9094, "b"),
    ]
    assert reply.controller_id in (1, 2)  # a random live broker, as Kafka tells clients


def test_metadata_tells_leaders_isr_and_offline_replicas() -> None:
    engine, _ = cluster_engine()
    reply = metadata(Client(engine, 1), 12, "orders")
    p0, p1, p2 = reply.topics[0].partitions
    assert (
        p0.error_code,
        p0.leader_id,
        p0.leader_epoch,
        p0.replica_nodes,
        p0.isr_nodes,
        p0.offline_replicas,
    ) == (
        ErrorCode.NONE,
        1,
        5,
        [1, 2, 3],
        [1, 2],
        [3],
    )
    assert (p1.error_code, p1.leader_id) == (ErrorCode.NONE, 2)
    assert (p2.error_code, p2.leader_id, p2.leader_epoch, p2.offline_replicas) == (
        ErrorCode.LEADER_NOT_AVAILABLE,
        -1,
        9,
        [3],
    )


def test_metadata_v0_lists_only_reachable_replicas() -> None:
    engine, _ = cluster_engine()
    reply = metadata(Client(engine, 1), 0, "orders")
    p0 = reply.topics[0].partitions[0]
    assert (p0.error_code, p0.replica_nodes, p0.isr_nodes) == (
        ErrorCode.REPLICA_NOT_AVAILABLE,
        [1, 2],
        [1, 2],
    )


def test_a_leader_without_the_clients_listener_is_listener_not_found_from_v6() -> None:
    view = FakeView()
    info = view._brokers[2]
    view._brokers[2] = type(info)(2, 11, (Endpoint("INTERNAL", "broker2", 1),), fenced=False)
    engine, _ = cluster_engine(view)
    client = Client(engine, 1)
    assert metadata(client, 6, "orders").topics[0].partitions[1].error_code == ErrorCode.LISTENER_NOT_FOUND
    assert metadata(client, 5, "orders").topics[0].partitions[1].error_code == ErrorCode.LEADER_NOT_AVAILABLE


def test_auto_creation_asks_the_controller_once_and_answers_unknown_topic() -> None:
    engine, view = cluster_engine()
    client = Client(engine, 1)
    for _ in range(2):
        reply = metadata(client, 12, "fresh", auto_create=True)
        assert reply.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    (sent,) = view.sent
    assert (sent.destination, sent.listener) == (3000, "CONTROLLER")
    assert isinstance(sent.body, CreateTopicsRequest)
    assert [(t.name, t.num_partitions, t.replication_factor) for t in sent.body.topics] == [("fresh", 1, 1)]
    assert "fresh" not in engine.broker.state.metadata.topics  # the controller creates it
    deliver(engine, view, CreateTopicsResponse())
    metadata(client, 12, "fresh", auto_create=True)
    assert len(view.sent) == 2  # asked again once the first answer came


def test_auto_creation_of_the_offsets_topic_goes_to_the_controller() -> None:
    engine, view = cluster_engine()
    reply = metadata(Client(engine, 1), 12, "__consumer_offsets", auto_create=True)
    assert reply.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    (sent,) = view.sent
    assert isinstance(sent.body, CreateTopicsRequest)
    assert sent.body.topics[0].num_partitions == 50
    assert "__consumer_offsets" not in engine.broker.state.metadata.topics


def describe_cluster(client: Client, **fields: object) -> DescribeClusterResponse:
    reply = client.request(DescribeClusterRequest(**fields), 2).body  # type: ignore[arg-type]  # keyword fields
    assert isinstance(reply, DescribeClusterResponse)
    return reply


def test_describe_cluster_lists_the_live_brokers_and_fenced_ones_when_asked() -> None:
    engine, _ = cluster_engine()
    client = Client(engine, 1)
    reply = describe_cluster(client)
    assert [(b.broker_id, b.host, b.port, b.is_fenced) for b in reply.brokers] == [
        (1, "broker1", 9092, False),
        (2, "broker2", 9094, False),
    ]
    assert reply.controller_id in (1, 2)
    with_fenced = describe_cluster(client, include_fenced_brokers=True)
    assert [(b.broker_id, b.is_fenced) for b in with_fenced.brokers] == [(1, False), (2, False), (3, True)]


def test_no_live_broker_no_controller() -> None:
    view = FakeView()
    for node_id, info in list(view._brokers.items()):
        view._brokers[node_id] = type(info)(node_id, info.epoch, info.endpoints, fenced=True)
    engine, _ = cluster_engine(view)
    client = Client(engine, 1)
    assert describe_cluster(client).controller_id == -1
    assert metadata(client, 12).controller_id == -1


def test_the_controllers_answer_lists_the_voters() -> None:
    voters = [(3001, Endpoint("CONTROLLER", "c1", 9001)), (3000, Endpoint("CONTROLLER", "c0", 9000))]
    reply = controllers_answer(DescribeClusterRequest(endpoint_type=2), 2, "cid", 3000, voters)
    assert (reply.error_code, reply.endpoint_type, reply.controller_id, reply.cluster_id) == (
        0,
        2,
        3000,
        "cid",
    )
    assert [(b.broker_id, b.host, b.port) for b in reply.brokers] == [(3000, "c0", 9000), (3001, "c1", 9001)]
    wrong = controllers_answer(DescribeClusterRequest(endpoint_type=1), 1, "cid", 3000, voters)
    assert wrong.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE


@pytest.mark.parametrize("version", [0])
def test_describe_producers_on_a_broker_without_the_replica(version: int) -> None:
    engine, _ = cluster_engine()
    request = DescribeProducersRequest(
        topics=[DescribeProducersRequestTopicRequest(name="orders", partition_indexes=[1, 3])]
    )
    reply = Client(engine, 1).request(request, version).body
    assert isinstance(reply, DescribeProducersResponse)
    assert [p.error_code for p in reply.topics[0].partitions] == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]


def test_authorized_operations_are_kafkas_for_a_broker_without_acls() -> None:
    """Every topic named in the answer gets the topic operations (READ..ALTER_CONFIGS without
    CLUSTER_ACTION: 3576), an unknown one too; the cluster gets its own set (8096)."""
    engine, _ = cluster_engine()
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="orders"), MetadataRequestTopic(name="missing")],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True,
    )
    reply = Client(engine, 1).request(request, 8).body
    assert isinstance(reply, MetadataResponse)
    assert [(t.error_code, t.topic_authorized_operations) for t in reply.topics] == [
        (ErrorCode.NONE, 3576),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 3576),
    ]
    assert reply.cluster_authorized_operations == 8096
