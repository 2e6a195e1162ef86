"""ElectLeaders.

Behaviour: in a cluster the request goes to the active controller, and its answer is relayed
(``forward``). A single node is the only replica and leader of every partition, so an election
is never needed: a named partition is ELECTION_NOT_NEEDED (preferred or unclean), an unknown
topic or partition UNKNOWN_TOPIC_OR_PARTITION. A null partition list means every partition, and
as in Kafka the partitions that need no election are left out of the answer (each topic is
listed, with no results). An election type other than 0 (preferred) or 1 (unclean) is
INVALID_REQUEST for every partition named.
Version notes: ``election_type`` from v1 (v0 is preferred), top-level ``error_code`` from v1.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.error_answers import ERROR_ANSWERS
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
    ErrorCode,
)

PREFERRED: Final = 0
UNCLEAN: Final = 1


def handle(ctx: Context, request: ElectLeadersRequest) -> ElectLeadersResponse | Message | Forwarded:
    if ctx.state.cluster is not None:
        return forward(ctx, ctx.state.cluster, request)
    if request.election_type not in (PREFERRED, UNCLEAN):
        return ERROR_ANSWERS[ApiKey.ELECT_LEADERS](
            request, ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}"
        )
    if request.topic_partitions is None:
        return ElectLeadersResponse(
            replica_election_results=[
                ElectLeadersResponseReplicaElectionResult(topic=name)
                for name in sorted(ctx.state.metadata.topics)
            ]
        )
    results = []
    for entry in request.topic_partitions:
        topic = ctx.state.topic_named(entry.topic)
        partitions = []
        for index in entry.partitions:
            if topic is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"There is no topic {entry.topic}."
            elif not 0 <= index < topic.partitions:
                code, message = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"There is no partition {entry.topic}-{index}.",
                )
            else:
                code, message = ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.description
            partitions.append(
                ElectLeadersResponsePartitionResult(
                    partition_id=index, error_code=code, error_message=message
                )
            )
        results.append(
            ElectLeadersResponseReplicaElectionResult(topic=entry.topic, partition_result=partitions)
        )
    return ElectLeadersResponse(replica_election_results=results)
