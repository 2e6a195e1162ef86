"""Forwarding admin requests to the active controller (a broker in a cluster).

In a cluster the metadata belongs to the controller quorum: a broker sends CreateTopics,
DeleteTopics, CreatePartitions, IncrementalAlterConfigs / AlterConfigs on topics, ElectLeaders,
Alter/ListPartitionReassignments and DescribeQuorum to the active controller as the same request
(Kafka wraps them in an Envelope; what is relayed is the same) and answers with the controller's
reply. The request is held as a :class:`Forwarded` until then:

- no active controller known: NOT_CONTROLLER at once (clients retry it after a metadata refresh);
- the request failed (connection lost, node gone, ``timeout_ms`` passed, reply None):
  REQUEST_TIMED_OUT, as Kafka's ``ForwardingManager`` answers a forwarded request that timed out.

Error answers have the shape of the request (one result per topic, resource or partition asked
for, or the response's top-level error where it has one): :data:`ERROR_ANSWERS` builds them, each
from Kafka's ``getErrorResponse`` of that request.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Final

from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResponseResourceResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseReassignablePartitionResponse,
    AlterPartitionReassignmentsResponseReassignableTopicResponse,
    ApiKey,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

#: Kafka's broker-to-controller channel gives a forwarded request ``request.timeout.ms`` (30 s).
FORWARD_TIMEOUT_MS: Final = 30_000
#: ``ConfigResource.Type.TOPIC``
TOPIC_RESOURCE: Final = 2

NOT_CONTROLLER_MESSAGE: Final = "No active controller is known to this broker."
TIMED_OUT_MESSAGE: Final = "The controller did not answer the forwarded request in time."


class Forwarded:
    """A request sent to the active controller, answered with its reply (a Waiting)."""

    def __init__(
        self, request: Message, error_answer: Callable[[Message, int, str], Message], deadline_ms: int
    ) -> None:
        self.deadline_ms = deadline_ms
        self._request = request
        self._error_answer = error_answer
        self._reply: Message | None = None

    def on_reply(self, body: Message | None, now_ms: int) -> None:
        if self._reply is None:
            self._reply = (
                body
                if body is not None
                else self._error_answer(self._request, ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE)
            )

    def poll(self, now_ms: int) -> Message | None:
        if self._reply is None and now_ms >= self.deadline_ms:
            self.on_reply(None, now_ms)
        return self._reply


def forward(ctx: Context, view: ClusterView, request: Message) -> Message | Forwarded:
    """Send ``request`` to the active controller; its answer comes through the returned Waiting."""
    error_answer = ERROR_ANSWERS[ctx.request.api_key]
    controller = view.controller_id
    if controller < 0:
        return error_answer(request, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE)
    held = Forwarded(request, error_answer, ctx.now_ms + FORWARD_TIMEOUT_MS)
    view.send(Outbound(controller, view.controller_listener, request, held.on_reply, FORWARD_TIMEOUT_MS))
    return held


def names_topics(resources: list[Any]) -> bool:
    """Whether an (Incremental)AlterConfigs request touches a topic (those go to the controller)."""
    return any(r.resource_type == TOPIC_RESOURCE for r in resources)


# -- error answers in each request's shape -------------------------------------------------------


def _create_topics(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, CreateTopicsRequest)
    return CreateTopicsResponse(
        topics=[
            CreateTopicsResponseCreatableTopicResult(name=t.name, error_code=code, error_message=message)
            for t in request.topics
        ]
    )


def _delete_topics(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, DeleteTopicsRequest)
    named: list[tuple[str | None, uuid.UUID | None]] = [(t.name, t.topic_id) for t in request.topics]
    named += [(name, None) for name in request.topic_names]
    return DeleteTopicsResponse(
        responses=[
            DeleteTopicsResponseDeletableTopicResult(name=name, error_code=code, error_message=message)
            if topic_id is None
            else DeleteTopicsResponseDeletableTopicResult(
                name=name, topic_id=topic_id, error_code=code, error_message=message
            )
            for name, topic_id in named
        ]
    )


def _create_partitions(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, CreatePartitionsRequest)
    return CreatePartitionsResponse(
        results=[
            CreatePartitionsResponseTopicResult(name=t.name, error_code=code, error_message=message)
            for t in request.topics
        ]
    )


def _incremental_alter_configs(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, IncrementalAlterConfigsRequest)
    return IncrementalAlterConfigsResponse(
        responses=[
            IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        ]
    )


def _alter_configs(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, AlterConfigsRequest)
    return AlterConfigsResponse(
        responses=[
            AlterConfigsResponseResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        ]
    )


def _elect_leaders(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, ElectLeadersRequest)
    return ElectLeadersResponse(
        error_code=code,
        replica_election_results=[
            ElectLeadersResponseReplicaElectionResult(
                topic=t.topic,
                partition_result=[
                    ElectLeadersResponsePartitionResult(
                        partition_id=p, error_code=code, error_message=message
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topic_partitions or []
        ],
    )


def _alter_reassignments(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, AlterPartitionReassignmentsRequest)
    return AlterPartitionReassignmentsResponse(
        error_code=code,
        error_message=message,
        responses=[
            AlterPartitionReassignmentsResponseReassignableTopicResponse(
                name=t.name,
                partitions=[
                    AlterPartitionReassignmentsResponseReassignablePartitionResponse(
                        partition_index=p.partition_index, error_code=code, error_message=message
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _list_reassignments(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, ListPartitionReassignmentsRequest)
    return ListPartitionReassignmentsResponse(error_code=code, error_message=message)


def _describe_quorum(request: Message, code: int, message: str) -> Message:
    assert isinstance(request, DescribeQuorumRequest)
    return DescribeQuorumResponse(error_code=code, error_message=message)


#: Error answers by API key: ``(request, error code, message) -> response``.
ERROR_ANSWERS: Final[dict[int, Callable[[Message, int, str], Message]]] = {
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _incremental_alter_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_reassignments,
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
}
