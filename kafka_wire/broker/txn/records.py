"""``__transaction_state`` records in Kafka's layout.

A record's key is an int16 record type (0, ``TRANSACTION_LOG``) and a ``TransactionLogKey`` v0
(the transactional id); its value an int16 version and a ``TransactionLogValue`` at that version
(v0, or v1 once ``transaction.version`` is 1 or more: flexible, with the previous and next
producer ids and the client's transaction version as tagged fields); a tombstone (no value)
removes an expired transactional id. The messages are generated from the schemas in
``schemas/stored/`` (Kafka's own definitions). Kafka does not store the last epoch: a loaded
transaction has ``last_producer_epoch`` -1, and the partitions of an Empty one are not written.

A transactional id belongs to partition ``abs(hash) % n`` of ``__transaction_state`` (Java's
``String.hashCode``, as for groups), ``n`` the topic's partition count:
:func:`kafka_wire.broker.coordinator_keys.partition_for_transactional_id`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import groupby
from typing import Final

from kafka_wire.broker.txn.metadata import NO_PRODUCER_EPOCH, TxnMetadata, TxnTransit, TxnVersion
from kafka_wire.broker.txn.states import TxnState
from kafka_wire.errors import InvalidValueError, TruncatedError
from kafka_wire.messages import (
    TransactionLogKey,
    TransactionLogValue,
    TransactionLogValuePartitionsSchema,
)

#: ``CoordinatorRecordType.TRANSACTION_LOG``: the key's record type.
TRANSACTION_LOG_KEY_TYPE: Final = 0
_I16: Final = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class UnknownTxnKey:
    """A key of another record type (skipped at load, as Kafka skips it)."""

    version: int


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(TRANSACTION_LOG_KEY_TYPE) + TransactionLogKey.encode(
        TransactionLogKey(transactional_id=transactional_id), 0
    )


def value_bytes(transit: TxnTransit, finalized: TxnVersion) -> bytes:
    """The value of a transit, at the version the finalized ``transaction.version`` gives."""
    version = finalized.log_value_version
    partitions = None
    if transit.state is not TxnState.EMPTY:
        partitions = [
            TransactionLogValuePartitionsSchema(topic=topic, partition_ids=[p for _, p in group])
            for topic, group in groupby(sorted(transit.partitions), key=lambda tp: tp[0])
        ]
    value = TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms,
        transaction_status=transit.state.value,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=transit.update_ms,
        transaction_start_timestamp_ms=transit.start_ms,
    )
    if version >= 1:
        value.previous_producer_id = transit.prev_producer_id
        value.next_producer_id = transit.next_producer_id
        value.client_transaction_version = int(transit.client_version)
    return _I16.pack(version) + TransactionLogValue.encode(value, version)


def read_key(data: bytes) -> str | UnknownTxnKey:
    """The transactional id of a key (or the record type Kafka would skip); ``DecodeError`` when
    it cannot be read."""
    if len(data) < 2:
        raise TruncatedError("needs an int16 version", offset=len(data))
    (record_type,) = _I16.unpack_from(data)
    if record_type != TRANSACTION_LOG_KEY_TYPE:
        return UnknownTxnKey(record_type)
    key, end = TransactionLogKey.decode_from(data, 2, 0)
    if end != len(data):
        raise InvalidValueError("trailing bytes after a transaction log key", offset=end)
    transactional_id: str = key.transactional_id
    return transactional_id


def read_value(transactional_id: str, data: bytes) -> TxnMetadata:
    """A stored value as the transaction's state; ``DecodeError`` when it cannot be read (an
    unknown version or state id)."""
    if len(data) < 2:
        raise TruncatedError("needs an int16 version", offset=len(data))
    (version,) = _I16.unpack_from(data)
    if version not in (0, 1):
        raise InvalidValueError(f"unknown transaction log value version {version}", offset=0)
    value, _ = TransactionLogValue.decode_from(data, 2, version)
    state = TxnState.from_id(value.transaction_status)
    if state is None:
        raise InvalidValueError(f"unknown transaction state id {value.transaction_status}", offset=2)
    partitions: set[tuple[str, int]] = set()
    if state is not TxnState.EMPTY:
        for entry in value.transaction_partitions or ():
            partitions.update((entry.topic, p) for p in entry.partition_ids)
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        prev_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id,
        producer_epoch=value.producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        timeout_ms=value.transaction_timeout_ms,
        state=state,
        partitions=partitions,
        start_ms=value.transaction_start_timestamp_ms,
        update_ms=value.transaction_last_update_timestamp_ms,
        client_version=TxnVersion.of(value.client_transaction_version),
    )
