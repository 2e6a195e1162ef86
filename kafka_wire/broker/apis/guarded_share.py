"""ShareFetch and ShareAcknowledge with an authorizer: what the connection may not read is answered
here, the rest goes to ``share_fetch`` / ``share_acknowledge``.

Where Kafka's ``KafkaApis`` checks them: READ on the share group, else the whole request is
GROUP_AUTHORIZATION_FAILED; READ on each topic named (by id), else its partitions are
TOPIC_AUTHORIZATION_FAILED (their acknowledgements too, and nothing of them is fetched or
acknowledged). A topic id no topic has is left to the handler (UNKNOWN_TOPIC_ID). Without an
authorizer, or with nothing refused, the request goes on as it is.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

from kafka_wire.broker.apis import share_acknowledge, share_fetch
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponsePartitionData,
    ShareAcknowledgeResponseTopicResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchResponsePartitionData,
    ShareFetchResponseShareFetchableTopicResponse,
)

TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _denied(ctx: Context, topic_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """The topics (by id) the connection may not READ; unknown ids are not among them."""
    out = set()
    for topic_id in topic_ids:
        topic = ctx.state.topic_with_id(topic_id)
        if topic is not None and not allowed(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name):
            out.add(topic_id)
    return out


def handle(ctx: Context, request: ShareFetchRequest | ShareAcknowledgeRequest) -> Any:
    if isinstance(request, ShareFetchRequest):
        return _share_fetch(ctx, request)
    return _share_acknowledge(ctx, request)


class _Patched:
    """A held answer whose refused topics are added when it is ready."""

    def __init__(self, waiting: Any, patch: Callable[[Any], Any]) -> None:
        self._waiting = waiting
        self._patch = patch
        self.deadline_ms: int = waiting.deadline_ms

    def poll(self, now_ms: int) -> Any:
        answer = self._waiting.poll(now_ms)
        return None if answer is None else self._patch(answer)


def _share_fetch(ctx: Context, request: ShareFetchRequest) -> Any:
    if ctx.state.authorizer is None:
        return share_fetch.handle(ctx, request)
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id or ""):
        return ShareFetchResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    denied = _denied(ctx, [t.topic_id for t in request.topics])
    if not denied:
        return share_fetch.handle(ctx, request)
    refused = [
        ShareFetchResponseShareFetchableTopicResponse(
            topic_id=t.topic_id,
            partitions=[
                ShareFetchResponsePartitionData(
                    partition_index=p.partition_index,
                    error_code=TAF,
                    acknowledge_error_code=TAF if p.acknowledgement_batches else ErrorCode.NONE,
                    records=b"",
                )
                for p in t.partitions
            ],
        )
        for t in request.topics
        if t.topic_id in denied
    ]
    kept = copy.copy(request)
    kept.topics = [t for t in request.topics if t.topic_id not in denied]

    def patch(answer: ShareFetchResponse) -> ShareFetchResponse:
        if not answer.error_code:
            answer.responses = [*answer.responses, *refused]
        return answer

    result = share_fetch.handle(ctx, kept)
    return patch(result) if isinstance(result, ShareFetchResponse) else _Patched(result, patch)


def _share_acknowledge(ctx: Context, request: ShareAcknowledgeRequest) -> Any:
    if ctx.state.authorizer is None:
        return share_acknowledge.handle(ctx, request)
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id or ""):
        return ShareAcknowledgeResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    denied = _denied(ctx, [t.topic_id for t in request.topics])
    if not denied:
        return share_acknowledge.handle(ctx, request)
    kept = copy.copy(request)
    kept.topics = [t for t in request.topics if t.topic_id not in denied]

    def patch(answer: ShareAcknowledgeResponse) -> ShareAcknowledgeResponse:
        if not answer.error_code:
            answer.responses = [
                *answer.responses,
                *(
                    ShareAcknowledgeResponseTopicResponse(
                        topic_id=t.topic_id,
                        partitions=[
                            ShareAcknowledgeResponsePartitionData(
                                partition_index=p.partition_index, error_code=TAF
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                    if t.topic_id in denied
                ),
            ]
        return answer

    result = share_acknowledge.handle(ctx, kept)
    return patch(result) if isinstance(result, ShareAcknowledgeResponse) else _Patched(result, patch)
