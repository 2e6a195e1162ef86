"""CreateTopics.

Behaviour: the request goes to the active controller (``forward``), which checks and creates the
topics (``controller/topic_requests.py``: names, existence, partitions and replication factor,
manual assignments, configs, Kafka's limit of 10,000 metadata records per request) and answers
once its records are committed. Kafka's internal topics (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``) are refused here first, with INVALID_REQUEST as
Kafka answers for ``__cluster_metadata``: the broker creates the ones it uses itself
(``internal_topics.TopicCreation``), with its own partition count and configs (kafka_wire's
policy; Kafka's controller would create them). The other topics are forwarded, and the answer
lists every topic in the request's order. The partitions are opened by the replica manager as the
metadata reaches it (in slices of the work budget, for a large topic).
Authorization (with an authorizer): CREATE on the cluster, or else on each topic
(TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", as Kafka's controller answers); the configs
v5+ returns only for a topic it may DESCRIBE_CONFIGS (else ``topic_config_error_code``
TOPIC_AUTHORIZATION_FAILED).
Version notes: v5+ returns the topic id, partition count, replication factor and effective configs.
"""

from __future__ import annotations

from kafka_wire.broker.apis.mutation_quota import forward_limited
from kafka_wire.broker.internal_topics import INTERNAL_TOPICS
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed, denied_topics
from kafka_wire.broker.state import Context, Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    ErrorCode,
)


def handle(ctx: Context, request: CreateTopicsRequest) -> Message | Waiting:
    refused = {
        t.name: CreateTopicsResponseCreatableTopicResult(
            name=t.name,
            error_code=ErrorCode.INVALID_REQUEST,
            error_message=f"Creation of internal topic {t.name} is prohibited.",
        )
        for t in request.topics
        if t.name in INTERNAL_TOPICS
    }
    if ctx.state.authorizer is not None and not cluster_allowed(ctx, AclOperation.CREATE):
        for name in denied_topics(ctx, AclOperation.CREATE, (t.name for t in request.topics)):
            refused.setdefault(
                name,
                CreateTopicsResponseCreatableTopicResult(
                    name=name,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message="Authorization failed.",
                ),
            )
    # Kafka's controller leaves out the configs of a topic the principal may not DESCRIBE_CONFIGS.
    hidden = denied_topics(ctx, AclOperation.DESCRIBE_CONFIGS, (t.name for t in request.topics))
    if not refused and not hidden:
        return forward_limited(ctx, request)
    rest = [t for t in request.topics if t.name not in refused]
    if not rest:
        return CreateTopicsResponse(topics=[refused[t.name] for t in request.topics])
    others = CreateTopicsRequest(
        topics=rest, timeout_ms=request.timeout_ms, validate_only=request.validate_only
    )
    answer = forward_limited(ctx, others)
    return _Reassembled(request, refused, answer, hidden)


class _Reassembled:
    """The controller's answer for the forwarded topics, with the refused ones put back in the
    request's order, each name answered once, as the controller answers a duplicate (a Waiting
    while the controller's answer is)."""

    def __init__(
        self,
        request: CreateTopicsRequest,
        refused: dict[str, CreateTopicsResponseCreatableTopicResult],
        answer: Message | Waiting,
        hidden: set[str] | None = None,
    ) -> None:
        self._hidden = hidden or set()
        self._request = request
        self._refused = refused
        self._answer = answer
        self.deadline_ms = 0 if isinstance(answer, Message) else answer.deadline_ms

    def poll(self, now_ms: int) -> Message | None:
        reply = self._answer if isinstance(self._answer, Message) else self._answer.poll(now_ms)
        if reply is None:
            return None
        assert isinstance(reply, CreateTopicsResponse)
        forwarded: dict[str, list[CreateTopicsResponseCreatableTopicResult]] = {}
        for result in reply.topics:
            if result.name in self._hidden and result.error_code == ErrorCode.NONE:
                result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                result.configs = []
            forwarded.setdefault(result.name, []).append(result)
        topics: list[CreateTopicsResponseCreatableTopicResult] = []
        for name in dict.fromkeys(t.name for t in self._request.topics):  # a name answered once
            refused = self._refused.get(name)
            topics += [refused] if refused is not None else forwarded.get(name, [])
        reply.topics = topics
        return reply
