"""The forwarded admin APIs with an authorizer: what the connection may not do is answered here,
the rest forwarded (``forward``).

Kafka's controller checks these requests' principal itself; kafka_wire's broker checks before
forwarding (what reaches the controller carries no principal), with Kafka's answers:
DeleteTopics needs DELETE on the cluster or on each topic (TOPIC_AUTHORIZATION_FAILED; a topic named by an unknown
id is left to the controller, UNKNOWN_TOPIC_ID); CreatePartitions ALTER on each topic
(TOPIC_AUTHORIZATION_FAILED); ElectLeaders and AlterPartitionReassignments ALTER on the cluster,
ListPartitionReassignments and DescribeQuorum DESCRIBE on the cluster, AlterClientQuotas
ALTER_CONFIGS and AlterUserScramCredentials ALTER on the cluster (the whole request
CLUSTER_AUTHORIZATION_FAILED); the config APIs need ALTER_CONFIGS on each
topic (TOPIC_AUTHORIZATION_FAILED) or, for a broker or broker-logger resource, on the cluster
(CLUSTER_AUTHORIZATION_FAILED; client metrics too), and for a group on the group
(GROUP_AUTHORIZATION_FAILED). The answer lists the refused items and the controller's results
in the request's order. Without an authorizer, or with nothing refused, the request is forwarded
as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from kafka_wire import messages
from kafka_wire.broker.apis.forward import forward
from kafka_wire.broker.apis.mutation_quota import forward_limited
from kafka_wire.broker.error_answers import ERROR_ANSWERS
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed
from kafka_wire.broker.state import Context, Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

#: ``ConfigResource.Type`` codes of the config APIs.
_TOPIC_CONFIGS, _BROKER_CONFIGS, _BROKER_LOGGER_CONFIGS, _CLIENT_METRICS_CONFIGS, _GROUP_CONFIGS = (
    2,
    4,
    8,
    16,
    32,
)


class Reassembled:
    """The controller's results for the forwarded items with the refused ones put back, in the
    request's order (a Waiting while the controller's answer is)."""

    def __init__(
        self,
        keys: list[Hashable],
        refused: dict[Hashable, Any],
        answer: Message | Waiting | None,
        empty: Message,
        key_of: Callable[[Any], Hashable],
        field: str = "responses",
    ) -> None:
        self._field = field
        self._keys = keys
        self._refused = refused
        self._answer = answer
        self._empty = empty
        self._key_of = key_of
        self.deadline_ms = answer.deadline_ms if answer is not None and not isinstance(answer, Message) else 0

    def poll(self, now_ms: int) -> Message | None:
        answer = self._answer
        reply = answer.poll(now_ms) if answer is not None and not isinstance(answer, Message) else answer
        if reply is None and answer is not None:
            return None
        reply = reply if reply is not None else self._empty
        assert isinstance(reply, Message)
        results: list[Any] = getattr(reply, self._field)
        forwarded: dict[Hashable, list[Any]] = {}
        for result in results:
            forwarded.setdefault(self._key_of(result), []).append(result)
        merged: list[Any] = []
        for key in dict.fromkeys(self._keys):
            refused = self._refused.get(key)
            merged += [refused] if refused is not None else forwarded.pop(key, [])
        for rest in forwarded.values():
            merged += rest
        setattr(reply, self._field, merged)
        return reply


#: The forwarded APIs that need one operation on the cluster, or fail whole.
_CLUSTER_OPERATIONS: dict[int, AclOperation] = {
    ApiKey.ELECT_LEADERS: AclOperation.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: AclOperation.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
    ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
    ApiKey.ALTER_CLIENT_QUOTAS: AclOperation.ALTER_CONFIGS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: AclOperation.ALTER,
}
#: The forwarded APIs under a ``controller_mutation_rate`` quota (``mutation_quota.py``).
_MUTATIONS = frozenset({ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS})
#: Those whose refusal carries the error's message (Kafka's ``getErrorResponse`` sets it).
_WITH_MESSAGE = frozenset({ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS})


def handle(ctx: Context, request: Message) -> Message | Waiting:
    key = ctx.request.api_key
    if ctx.state.authorizer is None:
        return (
            forward_limited(ctx, request) if key in _MUTATIONS else forward(ctx, ctx.state.cluster, request)
        )
    if key in _CLUSTER_OPERATIONS:
        if not allowed(ctx, _CLUSTER_OPERATIONS[key], ResourceType.CLUSTER, CLUSTER_NAME):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return ERROR_ANSWERS[key](request, code, code.description if key in _WITH_MESSAGE else None)
        return forward(ctx, ctx.state.cluster, request)
    if isinstance(request, messages.DeleteTopicsRequest):
        if allowed(ctx, AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME):
            return forward_limited(ctx, request)  # DELETE on the cluster: every topic
        return _delete_topics(ctx, request)
    if isinstance(request, messages.CreatePartitionsRequest):
        return _create_partitions(ctx, request)
    assert isinstance(request, messages.AlterConfigsRequest | messages.IncrementalAlterConfigsRequest)
    return _alter_configs(ctx, request)


def _delete_topics(ctx: Context, request: messages.DeleteTopicsRequest) -> Message | Waiting:
    state = ctx.state
    keys: list[Hashable] = []
    refused: dict[Hashable, Any] = {}
    kept_states, kept_names = [], []
    for t in request.topics:
        name = t.name if t.name is not None else getattr(state.topic_with_id(t.topic_id), "name", None)
        key = t.name if t.name is not None else t.topic_id
        keys.append(key)
        if name is not None and not allowed(ctx, AclOperation.DELETE, ResourceType.TOPIC, name):
            refused[key] = messages.DeleteTopicsResponseDeletableTopicResult(
                name=t.name, topic_id=t.topic_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
            )
        else:
            kept_states.append(t)
    for name in request.topic_names:
        keys.append(name)
        if not allowed(ctx, AclOperation.DELETE, ResourceType.TOPIC, name):
            refused[name] = messages.DeleteTopicsResponseDeletableTopicResult(
                name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
            )
        else:
            kept_names.append(name)
    if not refused:
        return forward_limited(ctx, request)
    rest = messages.DeleteTopicsRequest(
        topics=kept_states, topic_names=kept_names, timeout_ms=request.timeout_ms
    )
    answer = forward_limited(ctx, rest) if kept_states or kept_names else None
    by_id = ctx.api_version >= 6
    empty = messages.DeleteTopicsResponse()
    merged = Reassembled(
        keys, refused, answer, empty, lambda r: r.name if r.name is not None or not by_id else r.topic_id
    )
    done = merged.poll(ctx.now_ms)
    return merged if done is None else done


def _create_partitions(ctx: Context, request: messages.CreatePartitionsRequest) -> Message | Waiting:
    refused: dict[Hashable, Any] = {}
    for t in request.topics:
        if not allowed(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):
            refused[t.name] = messages.CreatePartitionsResponseTopicResult(
                name=t.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None
            )
    if not refused:
        return forward_limited(ctx, request)
    kept = [t for t in request.topics if t.name not in refused]
    rest = messages.CreatePartitionsRequest(
        topics=kept, timeout_ms=request.timeout_ms, validate_only=request.validate_only
    )
    answer = forward_limited(ctx, rest) if kept else None
    keys: list[Hashable] = [t.name for t in request.topics]
    merged = Reassembled(
        keys, refused, answer, messages.CreatePartitionsResponse(), lambda r: r.name, field="results"
    )
    done = merged.poll(ctx.now_ms)
    return merged if done is None else done


def _alter_configs(
    ctx: Context, request: messages.AlterConfigsRequest | messages.IncrementalAlterConfigsRequest
) -> Message | Waiting:
    incremental = isinstance(request, messages.IncrementalAlterConfigsRequest)
    result_class: Any = (
        messages.IncrementalAlterConfigsResponseAlterConfigsResourceResponse
        if incremental
        else messages.AlterConfigsResponseResourceResponse
    )
    keys: list[Hashable] = []
    refused: dict[Hashable, Any] = {}
    kept: list[Any] = []
    for r in request.resources:
        key = (r.resource_type, r.resource_name)
        keys.append(key)
        code = _config_refusal(ctx, r.resource_type, r.resource_name)
        if code:
            refused[key] = result_class(
                error_code=code,
                error_message=None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
        else:
            kept.append(r)
    if not refused:
        return forward(ctx, ctx.state.cluster, request)
    rest: Message
    if isinstance(request, messages.IncrementalAlterConfigsRequest):
        rest = messages.IncrementalAlterConfigsRequest(resources=kept, validate_only=request.validate_only)
        empty: Message = messages.IncrementalAlterConfigsResponse()
    else:
        rest = messages.AlterConfigsRequest(resources=kept, validate_only=request.validate_only)
        empty = messages.AlterConfigsResponse()
    answer = forward(ctx, ctx.state.cluster, rest) if kept else None
    merged = Reassembled(keys, refused, answer, empty, lambda r: (r.resource_type, r.resource_name))
    done = merged.poll(ctx.now_ms)
    return merged if done is None else done


def _config_refusal(ctx: Context, resource_type: int, name: str) -> int:
    if resource_type == _TOPIC_CONFIGS:
        ok = allowed(ctx, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, name)
        return 0 if ok else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type in (_BROKER_CONFIGS, _BROKER_LOGGER_CONFIGS, _CLIENT_METRICS_CONFIGS):
        ok = allowed(ctx, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
        return 0 if ok else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if resource_type == _GROUP_CONFIGS:
        ok = allowed(ctx, AclOperation.ALTER_CONFIGS, ResourceType.GROUP, name)
        return 0 if ok else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return 0
