"""The requests the group coordinator's share admin (``admin.py``) sends for one share-partition,
and what it reads back: ReadShareGroupStateSummary, InitializeShareGroupState and
DeleteShareGroupState to the share-partition's share coordinator, ListOffsets (latest) to the
topic-partition's leader. One :class:`Call` per share-partition, moving through its
:class:`Phase`\\ s; the driving (sending, retries, answers) is ``admin.ShareAdmin``'s.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

#: A latest offset read from the leader: ListOffsets' "latest" timestamp.
LATEST_TIMESTAMP: Final = -1
#: The errors of a ListOffsets partition answer that are asked again (the leader moved).
LEADER_RETRIABLE: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
    }
)


class Phase(enum.Enum):
    #: AlterShareGroupOffsets: the state epoch kept, then INITIALIZE one above it.
    SUMMARY = "summary"
    INITIALIZE = "initialize"
    DELETE = "delete"
    #: DescribeShareGroupOffsets: the state's summary, then LATEST when its lag can be known.
    DESCRIBE = "describe"
    LATEST = "latest"


@dataclass(slots=True)
class Call:
    """One share-partition's part of an operation."""

    key: ShareStateKey
    phase: Phase
    start_offset: int = -1
    state_epoch: int = 0
    due_ms: int | None = 0
    #: The outcome once done.
    error: int | None = None
    #: Bumped at each send: an answer to an older send is ignored.
    attempt: int = 0
    #: DESCRIBE's answer (start offset, leader epoch, delivery complete count) and LATEST's.
    described: tuple[int, int, int] | None = None
    latest_offset: int = -1


def request_for(call: Call, topic_name: str) -> Message:
    """The request of ``call``'s phase."""
    key = call.key
    if call.phase in (Phase.SUMMARY, Phase.DESCRIBE):
        return messages.ReadShareGroupStateSummaryRequest(
            group_id=key.group_id,
            topics=[
                messages.ReadShareGroupStateSummaryRequestReadStateSummaryData(
                    topic_id=key.topic_id,
                    partitions=[
                        messages.ReadShareGroupStateSummaryRequestPartitionData(
                            partition=key.partition, leader_epoch=-1
                        )
                    ],
                )
            ],
        )
    if call.phase is Phase.INITIALIZE:
        return messages.InitializeShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                messages.InitializeShareGroupStateRequestInitializeStateData(
                    topic_id=key.topic_id,
                    partitions=[
                        messages.InitializeShareGroupStateRequestPartitionData(
                            partition=key.partition,
                            state_epoch=call.state_epoch,
                            start_offset=call.start_offset,
                        )
                    ],
                )
            ],
        )
    if call.phase is Phase.DELETE:
        return messages.DeleteShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                messages.DeleteShareGroupStateRequestDeleteStateData(
                    topic_id=key.topic_id,
                    partitions=[messages.DeleteShareGroupStateRequestPartitionData(partition=key.partition)],
                )
            ],
        )
    return messages.ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            messages.ListOffsetsRequestTopic(
                name=topic_name,
                partitions=[
                    messages.ListOffsetsRequestPartition(
                        partition_index=key.partition, timestamp=LATEST_TIMESTAMP, current_leader_epoch=-1
                    )
                ],
            )
        ],
    )


if TYPE_CHECKING:  # their message modules load on the first share admin request, not at start
    StateResult = (
        messages.ReadShareGroupStateSummaryResponsePartitionResult
        | messages.InitializeShareGroupStateResponsePartitionResult
        | messages.DeleteShareGroupStateResponsePartitionResult
    )


def state_result(body: Message | None, key: ShareStateKey) -> StateResult | None:
    """The share coordinator's answer for ``key`` (None: no answer, or none for it)."""
    if not isinstance(
        body,
        messages.ReadShareGroupStateSummaryResponse
        | messages.InitializeShareGroupStateResponse
        | messages.DeleteShareGroupStateResponse,
    ):
        return None
    for topic in body.results:
        if topic.topic_id == key.topic_id:
            for p in topic.partitions:
                if p.partition == key.partition:
                    return p
    return None


def latest_result(body: Message | None, partition: int) -> tuple[int, int] | None:
    """ListOffsets' (error, offset) for ``partition`` (None: no answer)."""
    if not isinstance(body, messages.ListOffsetsResponse):
        return None
    for topic in body.topics:
        for p in topic.partitions:
            if p.partition_index == partition:
                return p.error_code, p.offset
    return None
