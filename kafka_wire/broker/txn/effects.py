"""What the transaction coordinator asks its driver to do: small frozen values, applied in the order
returned.

``TxnPersist`` asks for an append to ``__transaction_state`` (acks=-1); the driver reports its
outcome with :meth:`TxnCoordinator.persisted` (the log's error code, 0 once the write is
replicated) before it gives the coordinator its next input. Nothing depending on a write (a
producer id handed out, partitions added, a transaction ended) is answered before it succeeded.

``SendMarkers`` asks for the COMMIT or ABORT marker of one transaction on each of its partitions
(WriteTxnMarkers to each partition's leader; :mod:`kafka_wire.broker.txn.markers`); the driver
reports the partitions written with :meth:`TxnCoordinator.markers_written`, or gives up on the
transaction with :meth:`TxnCoordinator.markers_abandoned`.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.group.effects import Respond
from kafka_wire.broker.txn.metadata import TopicPartition
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

__all__ = ["APPEND_ERRORS", "Respond", "SendMarkers", "TxnEffect", "TxnPersist", "client_error"]


@dataclass(frozen=True, slots=True)
class TxnPersist:
    """Append one record (``value`` None: a tombstone) to partition ``partition`` of
    ``__transaction_state``, then report with ``coordinator.persisted(append_id, error, now_ms)``."""

    transactional_id: str
    partition: int
    key: bytes
    value: bytes | None
    append_id: int


@dataclass(frozen=True, slots=True)
class SendMarkers:
    """Write the end marker of one transaction on each of ``partitions``."""

    transactional_id: str
    #: The leader epoch of the transaction's ``__transaction_state`` partition when the markers
    #: were decided: stale markers are fenced by it (TRANSACTION_COORDINATOR_FENCED).
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    #: The client's transaction version (WriteTxnMarkers v2's ``transaction_version``).
    transaction_version: int


TxnEffect = Respond | TxnPersist | SendMarkers

#: The error a client is told when the log refuses a ``__transaction_state`` write, by the log's
#: error code (Kafka's ``TransactionStateManager.appendTransactionToLog``); others pass as they are.
APPEND_ERRORS: Final[dict[int, ErrorCode]] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def client_error(append_error: int) -> int:
    return APPEND_ERRORS.get(append_error, append_error)
