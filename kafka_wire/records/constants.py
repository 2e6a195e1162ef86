"""Wire constants of record data: magic values, attribute bits, overheads, codec ids and names.

Facts from PROTOCOL-NOTES §6 (``Records``, ``DefaultRecordBatch``, ``LegacyRecord``,
``CompressionType``); nothing here is computed.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final, Literal

# -- framing shared by every magic ---------------------------------------------------------------
LOG_OVERHEAD: Final = 12
"""``offset int64`` + ``size int32`` in front of every batch (``Records.LOG_OVERHEAD``)."""
SIZE_OFFSET: Final = 8
MAGIC_OFFSET: Final = 16
HEADER_SIZE_UP_TO_MAGIC: Final = 17

MAGIC_V0: Final = 0
MAGIC_V1: Final = 1
MAGIC_V2: Final = 2

# -- RecordBatch v2 ------------------------------------------------------------------------------
RECORD_BATCH_OVERHEAD: Final = 61
"""Bytes of a v2 batch header, offset and size included; records start here."""
PARTITION_LEADER_EPOCH_OFFSET: Final = 12
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21
"""The v2 CRC-32C covers ``[ATTRIBUTES_OFFSET, end of batch)``."""
LAST_OFFSET_DELTA_OFFSET: Final = 23
BASE_TIMESTAMP_OFFSET: Final = 27
MAX_TIMESTAMP_OFFSET: Final = 35
RECORDS_COUNT_OFFSET: Final = 57
MIN_RECORD_SIZE_V2: Final = 7
"""Smallest possible v2 record: a one-byte length and six one-byte fields."""

COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_MASK: Final = 0x08
TRANSACTIONAL_MASK: Final = 0x10
CONTROL_MASK: Final = 0x20
DELETE_HORIZON_MASK: Final = 0x40

NO_PARTITION_LEADER_EPOCH: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_TIMESTAMP: Final = -1

# -- legacy MessageSet v0 / v1 -------------------------------------------------------------------
RECORD_OVERHEAD_V0: Final = 14
"""crc + magic + attributes + key length + value length (size field excluded)."""
RECORD_OVERHEAD_V1: Final = 22
"""As v0, plus the int64 timestamp."""
LEGACY_CRC_START: Final = 16
"""Legacy CRC-32 covers from the magic byte (12 + 4) to the end of the message."""


class TimestampType(IntEnum):
    """Batch timestamp type; legacy v0 has none."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


# -- compression ---------------------------------------------------------------------------------
CompressionName = Literal["none", "gzip", "snappy", "lz4", "zstd"]

CODEC_NONE: Final = 0
CODEC_GZIP: Final = 1
CODEC_SNAPPY: Final = 2
CODEC_LZ4: Final = 3
CODEC_ZSTD: Final = 4

COMPRESSION_IDS: Final[dict[str, int]] = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
COMPRESSION_NAMES: Final[tuple[str, ...]] = (
    "none",
    "gzip",
    "snappy",
    "lz4",
    "zstd",
    "unknown(5)",
    "unknown(6)",
    "unknown(7)",
)
"""Name per codec id (the low three attribute bits); ids 5-7 are not codecs."""
