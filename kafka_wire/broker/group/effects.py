"""What the group coordinator asks its driver to do: small frozen values, applied in the order returned.

``Persist`` asks for an append to ``__consumer_offsets``; the driver reports its outcome with
:meth:`~kafka_wire.broker.group.service.GroupCoordinator.persisted` (its ``append_id`` and
the log's error code, 0 when the records were appended) before it gives the coordinator its next
input. Requests that depend on a write (an OffsetCommit, a SyncGroup leader's assignment, a
DeleteGroups, a group heartbeat) are answered only once it succeeded. A refused write leaves the
coordinator as it was before the write (what was applied when it was handed out is taken back,
as Kafka's coordinator reverts a failed append) and its requests get the error Kafka's
coordinator maps the log's error to (:data:`APPEND_ERRORS`); a write appended but not stored in
time (:data:`APPENDED_ERRORS`) fails its requests the same way but keeps what it changed, as
those records may yet be stored.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: One record of ``__consumer_offsets``: key bytes and value bytes, ``None`` being a tombstone.
KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer the request that was handed to :meth:`GroupCoordinator.handle` with ``token``.

    ``body`` is the response message of the request's API; it encodes at the request's version
    (``body.encode(api_version)``), which the driver keeps beside the token.
    """

    token: object
    body: Message


@dataclass(frozen=True, slots=True)
class Persist:
    """Append ``records`` to the compacted internal log, as one batch, in order, then report the
    outcome with ``coordinator.persisted(append_id, error_code, now_ms)``. Empty ``records``
    append nothing: report the outcome once what was appended to the partition before is
    stored (a request that changed nothing is answered from what earlier writes stored).

    All records of one ``Persist`` belong to ``group_id``; ``partition`` is its
    ``__consumer_offsets`` partition (:func:`~kafka_wire.broker.coordinator_keys.partition_for_group`
    with the topic's partition count).
    """

    group_id: str
    partition: int
    records: list[KeyValue]
    #: Names this write in :meth:`GroupCoordinator.persisted`; unique per coordinator.
    append_id: int
    #: A transactional offset commit's producer (its batch is transactional: the records count
    #: only once the producer's COMMIT marker follows them); -1: an ordinary write.
    producer_id: int = -1
    producer_epoch: int = -1


GroupEffect = Respond | Persist

#: The error a client gets when the log refuses a group write, by the log's error code (Kafka 4's
#: group coordinator: ``CoordinatorOperationExceptionHelper.handleOperationException`` for offset
#: writes and ``appendGroupMetadataErrorToResponseError`` for group metadata, the same table).
#: Any other code reaches the client as it is. Kafka 3's classic coordinator answered
#: INVALID_COMMIT_OFFSET_SIZE for a commit too large to store; Kafka 4 answers UNKNOWN_SERVER_ERROR.
APPEND_ERRORS: Final[dict[int, ErrorCode]] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


#: The log's errors for records that were appended but not stored in time (the high watermark did
#: not reach them, or the ISR shrank meanwhile): they stay in the log and may yet be stored, so
#: what they changed stays in memory (Kafka's coordinator runtime reverts its state only when an
#: append itself fails; a write that times out completes with an error and reverts nothing).
APPENDED_ERRORS: Final = frozenset({ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND})


def client_error(append_error: int) -> int:
    """What a client is told when a group write failed with the log's ``append_error``."""
    return APPEND_ERRORS.get(append_error, append_error)
