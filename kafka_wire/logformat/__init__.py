"""Kafka's on-disk format, as pure functions on names, bytes and text (no I/O).

- :mod:`~kafka_wire.logformat.names`: partition directories (``orders-3``) and segment file names
  (``00000000000000000042.log`` / ``.index`` / ``.timeindex`` and the ``.cleaned`` / ``.swap`` /
  ``.deleted`` suffixes of a segment being replaced or removed).
- :mod:`~kafka_wire.logformat.index`: entries of the offset index and the time index.
- :mod:`~kafka_wire.logformat.batch_header`: the header of a stored batch (any magic), enough to
  walk a segment without decoding records.
- :mod:`~kafka_wire.logformat.checkpoints`: Kafka's checkpoint files (a version line, a count
  line, then entries: ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``leader-epoch-checkpoint``) and kafka_wire's one-line
  per-partition offset files.
- :mod:`~kafka_wire.logformat.partition_metadata`: a partition directory's ``partition.metadata``.
- :mod:`~kafka_wire.logformat.meta_properties`: a log directory's ``meta.properties``.
- :mod:`~kafka_wire.logformat.clean_shutdown`: a log directory's ``.kafka_cleanshutdown``.
- :mod:`~kafka_wire.logformat.properties`: Java's properties text format those two files (and
  ``server.properties``) use.

Used by the broker's log (:mod:`kafka_wire.broker.log`), the Spark reader
(:mod:`kafka_wire.spark.logs`) and ``kafka-wire dump-log``. Reading and writing the files is the
caller's business.
"""

from kafka_wire.logformat.batch_header import BatchHeader, check_batch, parse_header
from kafka_wire.logformat.checkpoints import (
    CheckpointError,
    format_epoch_checkpoint,
    format_offset_file,
    format_partition_checkpoint,
    parse_epoch_checkpoint,
    parse_offset_file,
    parse_partition_checkpoint,
)
from kafka_wire.logformat.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    decode_offset_entries,
    decode_time_entries,
    encode_offset_entry,
    encode_time_entry,
)
from kafka_wire.logformat.meta_properties import MetaProperties, format_meta_properties, parse_meta_properties
from kafka_wire.logformat.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    file_prefix,
    parse_partition_dir,
    parse_segment_name,
    partition_dir,
    segment_file_name,
)
from kafka_wire.logformat.partition_metadata import format_partition_metadata, parse_partition_metadata
from kafka_wire.logformat.properties import parse_properties

__all__ = [
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "OFFSET_ENTRY_SIZE",
    "TIME_ENTRY_SIZE",
    "TIME_INDEX_SUFFIX",
    "BatchHeader",
    "CheckpointError",
    "MetaProperties",
    "check_batch",
    "decode_offset_entries",
    "decode_time_entries",
    "encode_offset_entry",
    "encode_time_entry",
    "file_prefix",
    "format_epoch_checkpoint",
    "format_meta_properties",
    "format_offset_file",
    "format_partition_checkpoint",
    "format_partition_metadata",
    "parse_epoch_checkpoint",
    "parse_header",
    "parse_meta_properties",
    "parse_offset_file",
    "parse_partition_checkpoint",
    "parse_partition_dir",
    "parse_partition_metadata",
    "parse_properties",
    "parse_segment_name",
    "partition_dir",
    "segment_file_name",
]
