"""Produce.

Behaviour: ``acks`` must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS everywhere). Each partition's
records must be one v2 batch (or a legacy message set); the log validates it (CRC, size against
``max.message.bytes``, timestamps) and assigns offsets; idempotent batches are de-duplicated by
producer id, epoch and sequence (the last five per producer). Internal topics refuse client
writes (INVALID_TOPIC_EXCEPTION, as Kafka). A batch refused for some of its records (a record
without a key on a compacted topic, a timestamp out of range) names them in ``record_errors``. With one broker the ISR is this node, so acks=all completes as soon as the batch is
appended, unless the topic's ``min.insync.replicas`` exceeds the ISR (NOT_ENOUGH_REPLICAS, before
anything is appended). An acks=0 request gets no response (the connection drops the answer).
Version notes: v13 names topics by id; ``log_start_offset`` from v5, ``record_errors`` and
``error_message`` from v8.
"""

from __future__ import annotations

from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.state import Context
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import (
    ErrorCode,
    ProduceRequest,
    ProduceResponse,
    ProduceResponseBatchIndexAndErrorMessage,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)

VALID_ACKS = (-1, 0, 1)


def handle(ctx: Context, request: ProduceRequest) -> ProduceResponse:
    state = ctx.state
    by_id = ctx.api_version >= 13
    topics = []
    for entry in request.topic_data:
        topic = state.topic_with_id(entry.topic_id) if by_id else state.topic_named(entry.name)
        partitions = []
        for data in entry.partition_data:
            result = ProduceResponsePartitionProduceResponse(index=data.index)
            replica = state.replica(topic.name, data.index) if topic is not None else None
            if request.acks not in VALID_ACKS:
                result.error_code = ErrorCode.INVALID_REQUIRED_ACKS
            elif replica is None or topic is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif topic.internal or is_internal(topic.name):
                result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
                result.error_message = f"Cannot append to internal topic {topic.name}"
            elif request.acks == -1 and len(replica.isr) < state.log_config(topic).min_insync_replicas:
                result.error_code = ErrorCode.NOT_ENOUGH_REPLICAS
                result.error_message = (
                    f"The size of the current ISR {len(replica.isr)} is insufficient to satisfy the min.isr "
                    f"requirement of {state.log_config(topic).min_insync_replicas} for partition {topic.name}-{data.index}"
                )
            elif not data.records:
                result.error_code = ErrorCode.INVALID_RECORD
                result.error_message = "no records"
            else:
                outcome = replica.append_as_leader(bytes(data.records), ctx.now_ms)
                state.touch(replica)
                result.error_code = outcome.error_code
                result.base_offset = outcome.base_offset
                result.log_append_time_ms = outcome.log_append_time_ms
                result.log_start_offset = outcome.log_start_offset
                result.error_message = outcome.error_message
                result.record_errors = [
                    ProduceResponseBatchIndexAndErrorMessage(batch_index=e.batch_index, batch_index_error_message=e.message)
                    for e in outcome.record_errors
                ]
            partitions.append(result)
        topics.append(
            ProduceResponseTopicProduceResponse(
                name="" if by_id else entry.name,
                topic_id=entry.topic_id if by_id else ZERO_UUID,
                partition_responses=partitions,
            )
        )
    return ProduceResponse(responses=topics)
