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

from typing import Final

from kafka_wire import messages
from kafka_wire.broker.group.model import join_error
from kafka_wire.broker.group.txn_errors import txn_offset_commit_error
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey

#: The APIs whose requests name one group, in ``group_id`` (OffsetFetch does before v8).
SINGLE_GROUP_APIS: Final = frozenset(
    {
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_DELETE,
        ApiKey.TXN_OFFSET_COMMIT,
    }
)


def single_group(request: Message, api_version: int) -> str | None:
    """The one group ``request`` is about, or None when it names none or several."""
    key = request.API_KEY
    if key in SINGLE_GROUP_APIS or (key == ApiKey.OFFSET_FETCH and api_version < 8):
        group_id: str = getattr(request, "group_id")  # noqa: B009  # every request of these APIs has one
        return group_id
    return None


def refusal_answer(request: Message, api_version: int, error: int) -> Message:
    """The answer to a one-group ``request`` refused with ``error`` as a whole."""
    v = api_version
    if isinstance(request, messages.JoinGroupRequest):
        return join_error(v, error, request.member_id)
    if isinstance(request, messages.SyncGroupRequest):
        return messages.SyncGroupResponse(error_code=error)
    if isinstance(request, messages.HeartbeatRequest):
        return messages.HeartbeatResponse(error_code=error)
    if isinstance(request, messages.LeaveGroupRequest):
        return messages.LeaveGroupResponse(error_code=error)
    if isinstance(request, messages.OffsetDeleteRequest):
        return messages.OffsetDeleteResponse(error_code=error)
    if isinstance(request, messages.OffsetCommitRequest):
        # Every partition carries the error (OffsetCommitRequest.getErrorResponse).
        return messages.OffsetCommitResponse(
            topics=[
                messages.OffsetCommitResponseTopic(
                    name=t.name if v < 10 else "",
                    topic_id=t.topic_id,
                    partitions=[
                        messages.OffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=error
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )
    if isinstance(request, messages.TxnOffsetCommitRequest):
        return txn_offset_commit_error(request, api_version, error)
    if isinstance(request, messages.OffsetFetchRequest):
        if v >= 2:
            return messages.OffsetFetchResponse(error_code=error)
        # v0-v1 have no group-level error: every asked-for partition carries it.
        return messages.OffsetFetchResponse(
            topics=[
                messages.OffsetFetchResponseTopic(
                    name=t.name,
                    partitions=[
                        messages.OffsetFetchResponsePartition(
                            partition_index=p, committed_offset=-1, metadata="", error_code=error
                        )
                        for p in t.partition_indexes
                    ],
                )
                for t in request.topics or []
            ]
        )
    raise TypeError(f"{type(request).__name__} names no single group")
