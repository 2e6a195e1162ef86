"""Which groups a coordinator serves in a replicated cluster, and the answers it gives the others.

On a single node the coordinator serves every group. In a cluster it serves the groups whose
``__consumer_offsets`` partition is led on its node: a request for another group gets
NOT_COORDINATOR (the client looks the coordinator up again), and one for a group whose partition
is still being loaded gets COORDINATOR_LOAD_IN_PROGRESS (the client retries). Requests naming one
group are refused as a whole (:func:`refusal_answer`, the error responses Kafka's coordinator
gives); those naming several (DescribeGroups, DeleteGroups, OffsetFetch v8+) carry the error per
group, in their handlers.
"""

from __future__ import annotations

from kafka_wire.broker.group.model import join_error
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)

#: The requests that name one group, in ``group_id``.
SINGLE_GROUP_REQUESTS = (
    JoinGroupRequest,
    SyncGroupRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    TxnOffsetCommitRequest,
)


def single_group(request: Message, api_version: int) -> str | None:
    """The one group ``request`` is about, or None when it names none or several."""
    if isinstance(request, SINGLE_GROUP_REQUESTS):
        return request.group_id
    if isinstance(request, OffsetFetchRequest) and api_version < 8:
        return request.group_id
    return None


def refusal_answer(request: Message, api_version: int, error: int) -> Message:
    """The answer to a one-group ``request`` refused with ``error`` as a whole."""
    v = api_version
    if isinstance(request, JoinGroupRequest):
        return join_error(v, error, request.member_id)
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(error_code=error)
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(error_code=error)
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(error_code=error)
    if isinstance(request, OffsetDeleteRequest):
        return OffsetDeleteResponse(error_code=error)
    if isinstance(request, OffsetCommitRequest):
        # Every partition carries the error (OffsetCommitRequest.getErrorResponse).
        return OffsetCommitResponse(
            topics=[
                OffsetCommitResponseTopic(
                    name=t.name if v < 10 else "",
                    topic_id=t.topic_id,
                    partitions=[
                        OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )
    if isinstance(request, TxnOffsetCommitRequest):
        return txn_offset_commit_error(request, api_version, error)
    if isinstance(request, OffsetFetchRequest):
        if v >= 2:
            return OffsetFetchResponse(error_code=error)
        # v0-v1 have no group-level error: every asked-for partition carries it.
        return OffsetFetchResponse(
            topics=[
                OffsetFetchResponseTopic(
                    name=t.name,
                    partitions=[
                        OffsetFetchResponsePartition(
                            partition_index=p, committed_offset=-1, metadata="", error_code=error
                        )
                        for p in t.partition_indexes
                    ],
                )
                for t in request.topics or []
            ]
        )
    raise TypeError(f"{type(request).__name__} names no single group")


def txn_offset_commit_error(
    request: TxnOffsetCommitRequest, api_version: int, error: int
) -> TxnOffsetCommitResponse:
    """Every partition carries the error (``TxnOffsetCommitRequest.getErrorResponse``)."""
    return TxnOffsetCommitResponse(
        topics=[
            TxnOffsetCommitResponseTopic(
                name=t.name if api_version < 6 else "",
                topic_id=t.topic_id,
                partitions=[
                    TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
