"""DeleteTopics.

Behaviour: topics are named (v0-v5 ``topic_names``; v6 ``topics`` by name or id). Unknown names
get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; with ``delete.topic.enable=false``
every topic gets TOPIC_DELETION_DISABLED; internal topics get INVALID_TOPIC_EXCEPTION (Kafka's
tools refuse it with that exception; its controller would delete them). Each deletion is one
metadata record: the topics past ``max_records_per_user_op`` (Kafka's 10,000) get
UNKNOWN_SERVER_ERROR, as Kafka answers. The topics leave the metadata at once (one metadata
write); their partition directories are deleted in slices of the work budget (see
``kafka_wire.broker.work``), and the answer comes when the last one is gone. Until then the names
cannot be created again (TOPIC_ALREADY_EXISTS, "marked for deletion").
In a cluster the request goes to the active controller, and its answer is relayed
(``forward``).
"""

from __future__ import annotations

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.broker.work import PARTITION_WORK_BYTES, Job
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
    ErrorCode,
)


def handle(
    ctx: Context, request: DeleteTopicsRequest
) -> DeleteTopicsResponse | Job[DeleteTopicsResponse] | Message | Forwarded:
    if ctx.state.cluster is not None:  # the controller owns the metadata
        return forward(ctx, ctx.state.cluster, request)
    state = ctx.state
    wanted = (
        [(t.name, t.topic_id) for t in request.topics]
        if ctx.api_version >= 6
        else [(n, ZERO_UUID) for n in request.topic_names]
    )
    results = []
    removed: list[tuple[str, list[tuple[int, PartitionReplica | None]]]] = []
    for name, topic_id in wanted:
        result = DeleteTopicsResponseDeletableTopicResult(name=name, topic_id=topic_id)
        topic: TopicInfo | None = (
            state.topic_named(name) if name is not None else state.topic_with_id(topic_id)
        )
        if topic is None:
            result.error_code = (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
            )
        elif not state.config.delete_topic_enable:
            result.error_code = ErrorCode.TOPIC_DELETION_DISABLED
        elif is_internal(topic.name):
            result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
            result.error_message = f"Cannot delete internal topic {topic.name}"
        elif len(removed) >= state.config.max_records_per_user_op:
            result.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
        else:
            result.name, result.topic_id = topic.name, topic.topic_id
            removed.append((topic.name, state.remove_topic(topic)))
        results.append(result)
    response = DeleteTopicsResponse(responses=results)
    if not removed:
        return response
    state.persist_metadata(ctx.effects)
    return DeleteTopicsJob(state, ctx.effects, response, removed, ctx.now_ms).start(ctx.now_ms)


class DeleteTopicsJob(Job[DeleteTopicsResponse]):
    """Deletes the removed topics' partition directories, one per step."""

    survives_disconnect = True

    def __init__(
        self,
        state: BrokerState,
        effects: EffectSink,
        response: DeleteTopicsResponse,
        removed: list[tuple[str, list[tuple[int, PartitionReplica | None]]]],
        now_ms: int,
    ) -> None:
        super().__init__(state.budget, now_ms)
        self._state = state
        self._effects = effects
        self._response = response
        self._removed = removed
        self._topic = 0
        self._partition = 0

    @property
    def done(self) -> bool:
        return self._topic >= len(self._removed)

    def step(self, now_ms: int) -> None:
        name, partitions = self._removed[self._topic]
        if self._partition < len(partitions):
            index, replica = partitions[self._partition]
            self._state.delete_partition(name, index, replica, self._effects)
            self.budget.spend(PARTITION_WORK_BYTES)
            self._partition += 1
        if self._partition >= len(partitions):
            self._state.deleting.discard(name)
            self._topic += 1
            self._partition = 0

    def response(self) -> DeleteTopicsResponse:
        return self._response
