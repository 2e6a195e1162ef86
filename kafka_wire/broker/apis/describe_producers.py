"""DescribeProducers.

Behaviour: for each partition asked for, the idempotent producers its replica on this broker
knows (Kafka answers from any replica it holds, leader or follower): producer id and epoch, the
last sequence of the last batch retained (-1 when none is), the timestamp of its last batch or
marker, the coordinator epoch of its last marker (-1: none) and the first offset of its
transaction open in the partition (-1: none; what ``kafka-transactions.sh find-hanging`` looks
for). An
illegal topic name is INVALID_TOPIC_EXCEPTION and an unknown topic UNKNOWN_TOPIC_OR_PARTITION for
each partition named; a partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION, and one
this broker holds no replica of (or not open yet) NOT_LEADER_OR_FOLLOWER, so that the client looks for the leader again.
Authorization (with an authorizer): READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
"""

from __future__ import annotations

from kafka_wire.broker.metadata import topic_name_problem
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import topic_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersResponsePartitionResponse,
    DescribeProducersResponseProducerState,
    DescribeProducersResponseTopicResponse,
    ErrorCode,
)


def handle(ctx: Context, request: DescribeProducersRequest) -> DescribeProducersResponse:
    response = DescribeProducersResponse()
    for entry in request.topics:
        problem = topic_name_problem(entry.name)
        topic = ctx.state.topic_named(entry.name)
        topic_error: tuple[int, str | None] | None = None
        if not topic_allowed(ctx, AclOperation.READ, entry.name):
            topic_error = (
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                ErrorCode.TOPIC_AUTHORIZATION_FAILED.description,
            )
        elif problem is not None:
            topic_error = (ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        elif topic is None:
            topic_error = (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.description,
            )
        partitions = []
        for index in entry.partition_indexes:
            if topic_error is not None:
                code, message = topic_error
                partitions.append(
                    DescribeProducersResponsePartitionResponse(
                        partition_index=index, error_code=code, error_message=message
                    )
                )
                continue
            assert topic is not None
            replica = ctx.state.replica(entry.name, index)
            if replica is not None:
                partitions.append(_producers(index, replica))
            else:
                partitions.append(
                    DescribeProducersResponsePartitionResponse(
                        partition_index=index,
                        error_code=(
                            ErrorCode.NOT_LEADER_OR_FOLLOWER
                            if 0 <= index < topic.partitions
                            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        ),
                    )
                )
        response.topics.append(DescribeProducersResponseTopicResponse(name=entry.name, partitions=partitions))
    return response


def _producers(index: int, replica: PartitionReplica) -> DescribeProducersResponsePartitionResponse:
    states = []
    for producer_id, producer in replica.producers.entries():
        last = producer.batches[-1] if producer.batches else None
        states.append(
            DescribeProducersResponseProducerState(
                producer_id=producer_id,
                producer_epoch=producer.epoch,
                last_sequence=last.last_sequence if last is not None else -1,
                last_timestamp=producer.last_timestamp,
                coordinator_epoch=producer.coordinator_epoch,
                current_txn_start_offset=producer.txn_first_offset,
            )
        )
    return DescribeProducersResponsePartitionResponse(partition_index=index, active_producers=states)
