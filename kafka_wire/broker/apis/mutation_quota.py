"""CreateTopics, CreatePartitions and DeleteTopics under a ``controller_mutation_rate`` quota
(KIP-599, ``quotas/mutations.py``), applied by the broker that received the request, before it
forwards it.

Kafka's active controller applies the quota to each topic once the topic passed its other checks;
what reaches kafka_wire's controller carries no principal or client id (as for the ACL checks,
``guarded_forward.py``), so the broker applies it to the topics its metadata image says would
mutate partitions, in the request's order: a new topic's partitions (its assignment's, its
``num_partitions``, or ``num.partitions`` for -1; a name already known, named twice or with a
partition count below 1 is left to the controller's refusal and counts nothing), a known topic's
added partitions, a known topic's partitions to delete. A strict request's topics refused by the
quota are answered here with THROTTLING_QUOTA_EXCEEDED and the rest forwarded; the answer lists
every topic in the request's order and carries the throttle time in ``throttle_time_ms`` (the
connection is then muted for it, as Kafka's broker mutes for a forwarded answer's throttle time).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from kafka_wire import messages
from kafka_wire.broker.apis.forward import forward
from kafka_wire.broker.quotas.mutations import THROTTLED_MESSAGE, MutationQuota, mutation_quota
from kafka_wire.broker.state import Context, Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode


def forward_limited(ctx: Context, request: Message) -> Message | Waiting:
    """Forward ``request`` (a CreateTopics, CreatePartitions or DeleteTopics) under its mutation
    quota, if one applies."""
    quota = mutation_quota(
        ctx.state.quotas,
        ctx.principal,
        ctx.request.header.client_id or "",
        ctx.request.api_key,
        ctx.api_version,
    )
    if quota is None:
        return forward(ctx, ctx.state.cluster, request)
    if isinstance(request, messages.CreateTopicsRequest):
        split = _create_topics(ctx, request, quota)
    elif isinstance(request, messages.CreatePartitionsRequest):
        split = _create_partitions(ctx, request, quota)
    else:
        assert isinstance(request, messages.DeleteTopicsRequest)
        split = _delete_topics(ctx, request, quota)
    rest, keys, refused, empty, field = split
    answer = forward(ctx, ctx.state.cluster, rest) if rest is not None else empty
    limited = _Limited(quota, keys, refused, answer, field)
    done = limited.poll(ctx.now_ms)
    return limited if done is None else done


_Split = tuple[Message | None, list[Hashable], dict[Hashable, Any], Message, str]


def _create_topics(ctx: Context, request: messages.CreateTopicsRequest, quota: MutationQuota) -> _Split:
    names = [t.name for t in request.topics]
    twice = {n for n in names if names.count(n) > 1} if len(set(names)) < len(names) else set()
    refused: dict[Hashable, Any] = {}
    kept = []
    for t in request.topics:
        if t.assignments:
            partitions = len(t.assignments)
        else:
            partitions = ctx.state.config.num_partitions if t.num_partitions == -1 else t.num_partitions
        counted = t.name not in twice and partitions > 0 and ctx.state.topic_named(t.name) is None
        if counted and not quota.admit(partitions, ctx.now_ms):
            refused[t.name] = messages.CreateTopicsResponseCreatableTopicResult(
                name=t.name, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED, error_message=THROTTLED_MESSAGE
            )
        else:
            kept.append(t)
    rest = (
        messages.CreateTopicsRequest(
            topics=kept, timeout_ms=request.timeout_ms, validate_only=request.validate_only
        )
        if kept
        else None
    )
    return rest, list(names), refused, messages.CreateTopicsResponse(), "topics"


def _create_partitions(
    ctx: Context, request: messages.CreatePartitionsRequest, quota: MutationQuota
) -> _Split:
    refused: dict[Hashable, Any] = {}
    kept = []
    for t in request.topics:
        topic = ctx.state.topic_named(t.name)
        added = t.count - topic.partitions if topic is not None else 0
        if added > 0 and not quota.admit(added, ctx.now_ms):
            refused[t.name] = messages.CreatePartitionsResponseTopicResult(
                name=t.name, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED, error_message=THROTTLED_MESSAGE
            )
        else:
            kept.append(t)
    rest = (
        messages.CreatePartitionsRequest(
            topics=kept, timeout_ms=request.timeout_ms, validate_only=request.validate_only
        )
        if kept
        else None
    )
    keys: list[Hashable] = [t.name for t in request.topics]
    return rest, keys, refused, messages.CreatePartitionsResponse(), "results"


def _delete_topics(ctx: Context, request: messages.DeleteTopicsRequest, quota: MutationQuota) -> _Split:
    state = ctx.state
    refused: dict[Hashable, Any] = {}
    keys: list[Hashable] = []
    kept_states, kept_names = [], []
    entries: list[tuple[Hashable, Any, str | None]] = [
        (t.name if t.name is not None else t.topic_id, t, t.name) for t in request.topics
    ] + [(name, None, name) for name in request.topic_names]
    for key, entry, name in entries:
        keys.append(key)
        topic = state.topic_named(name) if name is not None else state.topic_with_id(entry.topic_id)
        if topic is not None and not quota.admit(topic.partitions, ctx.now_ms):
            refused[key] = messages.DeleteTopicsResponseDeletableTopicResult(
                name=topic.name,
                topic_id=topic.topic_id,
                error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                error_message=THROTTLED_MESSAGE,
            )
        elif entry is not None:
            kept_states.append(entry)
        elif name is not None:
            kept_names.append(name)
    rest = (
        messages.DeleteTopicsRequest(
            topics=kept_states, topic_names=kept_names, timeout_ms=request.timeout_ms
        )
        if kept_states or kept_names
        else None
    )
    return rest, keys, refused, messages.DeleteTopicsResponse(), "responses"


class _Limited:
    """The controller's answer for the forwarded topics, the refused ones put back in the
    request's order, with the quota's throttle time (a Waiting while the controller's answer is)."""

    def __init__(
        self,
        quota: MutationQuota,
        keys: list[Hashable],
        refused: dict[Hashable, Any],
        answer: Message | Waiting,
        field: str,
    ) -> None:
        self._quota = quota
        self._keys = keys
        self._refused = refused
        self._answer = answer
        self._field = field
        self.deadline_ms = 0 if isinstance(answer, Message) else answer.deadline_ms

    def poll(self, now_ms: int) -> Message | None:
        answer = self._answer
        reply = answer if isinstance(answer, Message) else answer.poll(now_ms)
        if reply is None:
            return None
        assert isinstance(reply, Message)
        if self._refused:
            by_key: dict[Hashable, list[Any]] = {}
            for result in getattr(reply, self._field):
                for key in dict.fromkeys((getattr(result, "name", None), getattr(result, "topic_id", None))):
                    by_key.setdefault(key, []).append(result)
            merged: list[Any] = []
            placed: set[int] = set()
            for key in self._keys:
                found = [self._refused[key]] if key in self._refused else by_key.get(key, [])
                for result in found:
                    if id(result) not in placed:
                        placed.add(id(result))
                        merged.append(result)
            merged += [r for r in getattr(reply, self._field) if id(r) not in placed]
            setattr(reply, self._field, merged)
        throttle_ms = self._quota.throttle_ms(now_ms)
        reply.throttle_time_ms = max(reply.throttle_time_ms, throttle_ms)  # type: ignore[attr-defined]  # the three responses have it
        return reply
