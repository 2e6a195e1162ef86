"""Control records: the key every control record has, transaction markers, and their batches.

A control batch (attribute bit 5) holds a single control record. Its key is ``version int16``
(0) + ``type int16``; ABORT/COMMIT values are an EndTransactionMarker (``version int16`` +
``coordinator_epoch int32``); the KRaft types carry a message serialized at version 0, which
callers pass as bytes here.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Final, NamedTuple

from kafka_wire.errors import EncodeError, InvalidValueError
from kafka_wire.records.builder import build_batch
from kafka_wire.records.constants import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
)
from kafka_wire.records.record import BufferLike

_KEY: Final = struct.Struct(">hh")
_MARKER: Final = struct.Struct(">hi")
CONTROL_KEY_VERSION: Final = 0
END_TXN_MARKER_VERSION: Final = 0


class ControlRecordType(IntEnum):
    """Control record types; ids this library does not know read as UNKNOWN."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


_KNOWN_TYPES: Final = {t.value: t for t in ControlRecordType if t is not ControlRecordType.UNKNOWN}


class ControlRecordKey(NamedTuple):
    """A decoded control record key; ``type_id`` keeps the raw id when ``type`` is UNKNOWN."""

    version: int
    type: ControlRecordType
    type_id: int


class EndTransactionMarker(NamedTuple):
    """The value of an ABORT or COMMIT control record."""

    version: int
    coordinator_epoch: int


def decode_control_key(key: BufferLike | None) -> ControlRecordKey:
    """Decode a control record key; versions above 0 are read as version 0."""
    if key is None or len(key) < 4:
        raise InvalidValueError(
            "control record key needs 4 bytes (version, type)", message="ControlRecordKey"
        )
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidValueError(f"negative control record key version {version}", message="ControlRecordKey")
    return ControlRecordKey(version, _KNOWN_TYPES.get(type_id, ControlRecordType.UNKNOWN), type_id)


def decode_end_txn_marker(value: BufferLike | None) -> EndTransactionMarker:
    """Decode the value of an ABORT / COMMIT control record."""
    if value is None or len(value) < 6:
        raise InvalidValueError("end transaction marker needs 6 bytes", message="EndTransactionMarker")
    version, coordinator_epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise InvalidValueError(
            f"negative end transaction marker version {version}", message="EndTransactionMarker"
        )
    return EndTransactionMarker(version, coordinator_epoch)


def control_key(control_type: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    """The 4-byte key of a control record of ``control_type``."""
    try:
        return _KEY.pack(version, control_type)
    except struct.error:
        raise EncodeError(
            f"control record version/type out of int16 range ({version}, {control_type})"
        ) from None


def end_txn_marker_value(coordinator_epoch: int, version: int = END_TXN_MARKER_VERSION) -> bytes:
    """The 6-byte value of an ABORT / COMMIT control record."""
    try:
        return _MARKER.pack(version, coordinator_epoch)
    except struct.error:
        raise EncodeError(f"coordinator epoch {coordinator_epoch} out of int32 range") from None


def build_control_batch(
    control_type: int,
    value: bytes | None,
    *,
    base_offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    is_transactional: bool = False,
) -> bytes:
    """A v2 control batch holding one control record of ``control_type`` with ``value``.

    For the KRaft types (LEADER_CHANGE .. KRAFT_VOTERS) ``value`` is the version-0 serialized
    message; ABORT / COMMIT markers are easier made with :func:`build_end_txn_marker`.
    """
    return build_batch(
        [(control_key(control_type), value, (), timestamp)],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=is_transactional,
        is_control=True,
        default_timestamp=timestamp,
    )


def build_end_txn_marker(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transactional control batch with one COMMIT (``commit=True``) or ABORT marker."""
    return build_control_batch(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
        end_txn_marker_value(coordinator_epoch),
        base_offset=base_offset,
        timestamp=timestamp,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
    )


def build_commit_marker(
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transactional control batch with one COMMIT marker."""
    return build_end_txn_marker(
        True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch,
        base_offset=base_offset,
        timestamp=timestamp,
        partition_leader_epoch=partition_leader_epoch,
    )


def build_abort_marker(
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transactional control batch with one ABORT marker."""
    return build_end_txn_marker(
        False,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch,
        base_offset=base_offset,
        timestamp=timestamp,
        partition_leader_epoch=partition_leader_epoch,
    )
