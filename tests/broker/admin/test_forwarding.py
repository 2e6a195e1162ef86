"""Admin requests that change metadata go to the active controller when the broker has a
ClusterView; the controller's answer is relayed, failures are answered in the request's shape."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterConfigsRequest,
    AlterConfigsRequestAlterableConfig,
    AlterConfigsRequestResource,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    AlterPartitionReassignmentsResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeQuorumResponse,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka_wire.protocol import Response
from tests.broker.admin.cluster import FakeView, cluster_engine, deliver
from tests.broker.engine import Client, Engine

TOPIC, BROKER = 2, 4


def create_topics() -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreateTopicsRequestCreatableTopic(name="new", num_partitions=3, replication_factor=3)],
        timeout_ms=5000,
    )


def topic_codes(reply: Message) -> list[int]:
    """Every error code in ``reply`` (top level, then per topic/resource/partition)."""
    codes: list[int] = []
    for spec in type(reply).FIELDS:
        value = getattr(reply, spec.name)
        if spec.name == "error_code":
            codes.append(value)
        elif spec.kind == "array" and spec.struct is not None:
            for item in value:
                codes += topic_codes(item)
    return codes


#: (request, version, response type, error codes of an error answer)
CASES: list[tuple[Callable[[], Message], int, type[Message], int]] = [
    (create_topics, 7, CreateTopicsResponse, 1),
    (lambda: DeleteTopicsRequest(topic_names=["orders", "x"], timeout_ms=1000), 5, DeleteTopicsResponse, 2),
    (
        lambda: DeleteTopicsRequest(
            topics=[DeleteTopicsRequestDeleteTopicState(name=None, topic_id=uuid.UUID(int=7))]
        ),
        6,
        DeleteTopicsResponse,
        1,
    ),
    (
        lambda: CreatePartitionsRequest(
            topics=[CreatePartitionsRequestTopic(name="orders", count=6, assignments=None)]
        ),
        3,
        CreatePartitionsResponse,
        1,
    ),
    (
        lambda: IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=TOPIC,
                    resource_name="orders",
                    configs=[
                        IncrementalAlterConfigsRequestAlterableConfig(
                            name="retention.ms", config_operation=0, value="1"
                        )
                    ],
                )
            ]
        ),
        1,
        IncrementalAlterConfigsResponse,
        1,
    ),
    (
        lambda: AlterConfigsRequest(
            resources=[
                AlterConfigsRequestResource(
                    resource_type=TOPIC,
                    resource_name="orders",
                    configs=[AlterConfigsRequestAlterableConfig(name="retention.ms", value="1")],
                )
            ]
        ),
        2,
        AlterConfigsResponse,
        1,
    ),
    (
        lambda: ElectLeadersRequest(
            election_type=0,
            topic_partitions=[ElectLeadersRequestTopicPartitions(topic="orders", partitions=[0, 1])],
        ),
        2,
        ElectLeadersResponse,
        3,
    ),
    (
        lambda: AlterPartitionReassignmentsRequest(
            topics=[
                AlterPartitionReassignmentsRequestReassignableTopic(
                    name="orders",
                    partitions=[
                        AlterPartitionReassignmentsRequestReassignablePartition(
                            partition_index=0, replicas=[2, 3]
                        )
                    ],
                )
            ]
        ),
        0,
        AlterPartitionReassignmentsResponse,
        2,
    ),
    (lambda: ListPartitionReassignmentsRequest(topics=None), 0, ListPartitionReassignmentsResponse, 1),
    (
        lambda: DescribeQuorumRequest(
            topics=[
                DescribeQuorumRequestTopicData(
                    topic_name="__cluster_metadata",
                    partitions=[DescribeQuorumRequestPartitionData(partition_index=0)],
                )
            ]
        ),
        2,
        DescribeQuorumResponse,
        1,
    ),
]
IDS = [f"{t.__name__}-v{v}" for _, v, t, _ in CASES]


def send(engine: Engine, request: Message, version: int) -> Client:
    client = Client(engine, 1)
    client.send(request, version)
    return client


def answer(client: Client) -> Message:
    (response,) = client.responses()
    assert isinstance(response, Response)
    return response.body


@pytest.mark.parametrize(("make", "version", "kind", "codes"), CASES, ids=IDS)
def test_the_request_goes_to_the_active_controller(
    make: Callable[[], Message], version: int, kind: type[Message], codes: int
) -> None:
    engine, view = cluster_engine()
    request = make()
    client = send(engine, request, version)
    (sent,) = view.sent
    assert (sent.destination, sent.listener) == (3000, "CONTROLLER")
    assert sent.body == request
    assert sent.version == version  # the client's, as Kafka's Envelope keeps it
    assert client.responses() == []  # held until the controller answers
    assert engine.broker.state.metadata.topics.keys() == {"orders"}  # nothing changed here


def test_the_controllers_answer_is_relayed() -> None:
    engine, view = cluster_engine()
    client = send(engine, create_topics(), 7)
    reply = CreateTopicsResponse(
        topics=[
            CreateTopicsResponseCreatableTopicResult(
                name="new", topic_id=uuid.UUID(int=9), num_partitions=3, replication_factor=3
            )
        ]
    )
    deliver(engine, view, reply)
    body = answer(client)
    assert isinstance(body, CreateTopicsResponse)
    assert [(t.name, t.error_code, t.topic_id, t.replication_factor) for t in body.topics] == [
        ("new", 0, uuid.UUID(int=9), 3)
    ]


@pytest.mark.parametrize(("make", "version", "kind", "codes"), CASES, ids=IDS)
def test_a_failed_forward_is_request_timed_out_in_the_requests_shape(
    make: Callable[[], Message], version: int, kind: type[Message], codes: int
) -> None:
    engine, view = cluster_engine()
    client = send(engine, make(), version)
    deliver(engine, view, None)
    body = answer(client)
    assert isinstance(body, kind)
    assert topic_codes(body) == [ErrorCode.REQUEST_TIMED_OUT] * codes


@pytest.mark.parametrize(("make", "version", "kind", "codes"), CASES, ids=IDS)
def test_no_known_controller_is_not_controller_at_once(
    make: Callable[[], Message], version: int, kind: type[Message], codes: int
) -> None:
    engine, view = cluster_engine(FakeView(controller_id=-1))
    client = send(engine, make(), version)
    body = answer(client)
    assert view.sent == []
    assert isinstance(body, kind)
    assert topic_codes(body) == [ErrorCode.NOT_CONTROLLER] * codes


def test_an_unanswered_forward_times_out() -> None:
    engine, view = cluster_engine()
    client = send(engine, create_topics(), 7)
    engine.advance(29_000)
    assert client.responses() == []
    engine.advance(1_000)
    body = answer(client)
    assert isinstance(body, CreateTopicsResponse)
    assert body.topics[0].error_code == ErrorCode.REQUEST_TIMED_OUT
    view.sent[0].on_reply(CreateTopicsResponse(), engine.now_ms)  # too late: ignored
    engine.advance(1)
    assert client.responses() == []


def test_broker_configs_are_forwarded_too() -> None:
    """As Kafka's broker forwards every IncrementalAlterConfigs: the controller keeps the dynamic
    broker configs (a broker id, or "" for the cluster-wide defaults)."""
    engine, view = cluster_engine()
    request = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequestAlterConfigsResource(resource_type=BROKER, resource_name="1")
        ]
    )
    client = send(engine, request, 1)
    (sent,) = view.sent
    assert sent.body == request and sent.version == 1
    assert client.responses() == []


def test_a_single_nodes_own_controller_answers_in_process() -> None:
    engine = Engine()
    body = answer(
        send(engine, CreatePartitionsRequest(topics=[CreatePartitionsRequestTopic(name="x", count=2)]), 3)
    )
    assert isinstance(body, CreatePartitionsResponse)
    assert body.results == [
        CreatePartitionsResponseTopicResult(
            name="x", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None
        )
    ]
