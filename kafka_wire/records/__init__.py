"""Record data: RecordBatch v2, legacy MessageSet v0/v1, every compression codec, CRCs.

Hand-written (nothing here is generated). Reading::

    for batch in read_batches(payload):          # lazy; a partial trailing batch is skipped
        for record in batch:                      # offset, timestamp, key, value, headers
            ...

Writing: :func:`build_batch` (v2 or legacy), :class:`BatchBuilder`, the control-batch builders.
Columns: :func:`~kafka_wire.records.columnar.decode_arrow` reads payloads into a
``pyarrow.RecordBatch`` with Spark's Kafka schema (the ``arrow`` extra).
Broker side: :func:`validate_batch` (header only) and :func:`reoffset_batch`. The per-record
loops and ``Record`` come from :mod:`kafka_wire.records.loops`, which chooses their flavour.
"""

from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.builder import BatchBuilder, build_batch
from kafka_wire.records.compression import compress, decompress
from kafka_wire.records.config import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_READ_CONFIG,
    ReadConfig,
)
from kafka_wire.records.constants import COMPRESSION_IDS, CompressionName, TimestampType
from kafka_wire.records.control import (
    ControlRecordKey,
    ControlRecordType,
    EndTransactionMarker,
    build_abort_marker,
    build_commit_marker,
    build_control_batch,
    build_end_txn_marker,
    control_key,
    decode_control_key,
    decode_end_txn_marker,
    end_txn_marker_value,
)
from kafka_wire.records.integrity import reoffset_batch, reoffset_batch_in_place, validate_batch
from kafka_wire.records.legacy import LegacyBatch
from kafka_wire.records.reader import Batch, RecordsReader, read_batches, read_records
from kafka_wire.records.record import BufferLike, Header, NewRecord, Record

__all__ = [
    "COMPRESSION_IDS",
    "DEFAULT_MAX_BATCH_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_READ_CONFIG",
    "Batch",
    "BatchBuilder",
    "BufferLike",
    "CompressionName",
    "ControlRecordKey",
    "ControlRecordType",
    "EndTransactionMarker",
    "Header",
    "LegacyBatch",
    "NewRecord",
    "ReadConfig",
    "Record",
    "RecordBatch",
    "RecordsReader",
    "TimestampType",
    "build_abort_marker",
    "build_batch",
    "build_commit_marker",
    "build_control_batch",
    "build_end_txn_marker",
    "compress",
    "control_key",
    "decode_control_key",
    "decode_end_txn_marker",
    "decompress",
    "end_txn_marker_value",
    "read_batches",
    "read_records",
    "reoffset_batch",
    "reoffset_batch_in_place",
    "validate_batch",
]
