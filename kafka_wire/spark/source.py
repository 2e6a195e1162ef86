"""The PySpark data source ``kafka_wire``: batch and streaming reads, and a batch writer.

Installed with the ``spark`` extra, Spark finds it by itself (the top-level module
``pyspark_kafka_wire`` is its discovery hook); use it as Spark's Kafka source::

    df = spark.read.format("kafka_wire").option("path", "/var/lib/kafka/data").option("subscribe", "orders").load()

Rows leave each task as Arrow record batches (Spark 4's fast path for Python data sources),
decoded straight into Arrow buffers by :mod:`kafka_wire.records.columnar`. Spark 4.3 hands a
Python source no pruned columns (``reader(schema)`` gets the whole schema); a query that wants
fewer columns decoded gives them with ``.schema("value binary, offset long")``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import Row, StructType

from kafka_wire.client import TopicPartition, partition_for_key
from kafka_wire.records import build_batch
from kafka_wire.spark import live
from kafka_wire.spark.access import ClusterAccess
from kafka_wire.spark.plan import (
    Settings,
    Source,
    offsets_from_json,
    offsets_json,
    read_arrow,
    schema_for,
)
from kafka_wire.spark.ranges import OffsetRange, OptionError

DEFAULT_RECORDS_PER_PRODUCE_BATCH: Final = 10_000
"""Records per batch the writer produces (one Produce request each)."""


class RangePartition(InputPartition):
    """One Spark task: one topic-partition offset range."""

    def __init__(self, r: OffsetRange) -> None:
        super().__init__(r)
        self.range = r


_KAFKA_TYPES: Final = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "int",
    "offset": "bigint",
    "timestamp": "timestamp",
    "timestampType": "int",
    "headers": "array<struct<key:string,value:binary>>",
}
"""Each Kafka column's Spark type (:func:`schema_for`), as ``DataType.simpleString()`` writes it."""


def columns_of(schema: StructType) -> list[str]:
    """The Kafka columns Spark asks for: the source's schema, or a subset a query gave with
    ``.schema(...)`` (only those columns are decoded). Other names or types are refused."""
    for f in schema.fields:
        if _KAFKA_TYPES.get(f.name) != f.dataType.simpleString():
            raise OptionError(
                f"column {f.name} {f.dataType.simpleString()} is not one of the Kafka source's columns"
                f" ({schema_for(True)})"
            )
    return [f.name for f in schema.fields]


class KafkaWireReader(DataSourceReader):
    def __init__(self, settings: Settings, columns: list[str]) -> None:
        self.settings = settings
        self.columns = columns

    def partitions(self) -> Sequence[InputPartition]:
        return [RangePartition(r) for r in Source(self.settings).plan()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            # No range to read (every partition empty, or nothing between the starting and ending
            # offsets): PySpark then runs one task with its placeholder partition. Reads nothing.
            return iter(())
        return read_arrow(self.settings, partition.range, self.columns)


class KafkaWireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are Spark's Kafka JSON (``{"topic": {"0": 42}}``), checkpointed by Spark.
    Partitions that appear later start from their earliest offset.

    Read limits as Spark's Kafka source: ``maxOffsetsPerTrigger`` caps a micro-batch (the
    partitions' shares taken in order), ``minOffsetsPerTrigger`` holds a micro-batch back until
    that many offsets are there or ``maxTriggerDelay`` has passed since the last one;
    ``Trigger.AvailableNow`` reads up to the end offsets seen when the query starts."""

    def __init__(self, settings: Settings, columns: list[str]) -> None:
        self.settings = settings
        self.columns = columns
        self._bounds: dict[TopicPartition, tuple[int, int]] | None = None
        """The bounds seen by the last ``latestOffset`` (the next micro-batch is checked against them)."""
        self._target: dict[TopicPartition, int] | None = None
        """With Trigger.AvailableNow: the end offsets seen when the query started."""
        self._last_trigger = time.monotonic()
        """When the last micro-batch with data was planned (for ``maxTriggerDelay``)."""

    def initialOffset(self) -> dict[str, dict[str, int]]:
        source = Source(self.settings)  # a new one per call: topics, partitions and segments come and go
        bounds = source.bounds(source.partitions())
        return offsets_json(source.resolve(self.settings.starting, bounds))

    def getDefaultReadLimit(self) -> ReadLimit:
        s = self.settings
        if s.max_offsets_per_trigger is not None:
            return ReadMaxRows(s.max_offsets_per_trigger)
        if s.min_offsets_per_trigger is not None:
            return ReadMinRows(s.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        source = Source(self.settings)
        self._target = {tp: high for tp, (_, high) in source.bounds(source.partitions()).items()}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        """The log end offsets (or the AvailableNow target), fewer when ``limit`` caps the rows
        (taken from the partitions in order), or ``start`` while fewer than the minimum rows are
        there and ``maxTriggerDelay`` has not passed."""
        source = Source(self.settings)
        self._bounds = source.bounds(source.partitions())
        target = self._target
        ends = {
            tp: high if target is None else min(high, target.get(tp, low))
            for tp, (low, high) in self._bounds.items()
        }
        begun = offsets_from_json(start)
        available = {tp: max(0, ends[tp] - begun.get(tp, low)) for tp, (low, _) in self._bounds.items()}
        if not isinstance(limit, (ReadAllAvailable, ReadMaxRows, ReadMinRows)):
            raise OptionError(f"kafka_wire cannot honour the read limit {limit!r}")
        minimum = self.settings.min_offsets_per_trigger
        if isinstance(limit, ReadMinRows):
            minimum = limit.min_rows
        elif isinstance(limit, ReadAllAvailable) or target is not None:
            minimum = None  # Spark's Kafka source ignores the minimum under AvailableNow too
        now = time.monotonic()
        if (
            minimum is not None
            and sum(available.values()) < minimum
            and (now - self._last_trigger) * 1000 < self.settings.max_trigger_delay_ms
        ):
            return offsets_json({tp: begun.get(tp, low) for tp, (low, _) in self._bounds.items()})
        if isinstance(limit, ReadMaxRows):
            room = limit.max_rows
            for tp in sorted(ends):
                taken = min(available[tp], room)
                room -= taken
                ends[tp] = ends[tp] - available[tp] + taken
        if any(available.values()):
            self._last_trigger = now
        return offsets_json(ends)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = Source(self.settings).stream_ranges(
            offsets_from_json(start), offsets_from_json(end), self._bounds
        )
        return [RangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)  # a micro-batch without ranges has no task
        return read_arrow(self.settings, partition.range, self.columns)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark keeps the offsets in its checkpoint."""


@dataclass(frozen=True, slots=True)
class WriteSettings:
    cluster: ClusterAccess
    topic: str | None
    compression: str
    records_per_batch: int
    acks: int


@dataclass
class WriteCommit(WriterCommitMessage):
    records: int
    batches: int


class KafkaWireWriter(DataSourceWriter):
    """Produces the rows of each task in batches of up to ``records_per_batch`` per partition.
    ``topic`` comes from the row or the ``topic`` option; ``partition`` from the row, else
    Kafka's default partitioner (murmur2 of the key) or, without a key, round robin."""

    def __init__(self, settings: WriteSettings) -> None:
        self.settings = settings

    def write(self, iterator: Iterator[Row]) -> WriteCommit:
        s = self.settings
        counts: dict[str, int] = {}
        pending: dict[
            TopicPartition, list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]
        ] = {}
        total = batches = 0
        round_robin = 0
        with live.Producer(s.cluster, acks=s.acks) as producer:

            def flush(tp: TopicPartition) -> None:
                nonlocal batches
                items = pending.pop(tp, [])
                if items:
                    producer.send({tp: [build_batch(items, compression=s.compression)]})
                    batches += 1

            for row in iterator:
                fields = row.asDict()
                topic = fields.get("topic") or s.topic
                if not topic:
                    raise OptionError("a row has no topic and no 'topic' option is set")
                key = _as_bytes(fields.get("key"))
                partition = fields.get("partition")
                if partition is None:
                    if topic not in counts:
                        counts.update(producer.partition_counts([topic]))
                    n = counts.get(topic)
                    if not n:
                        raise OptionError(f"topic {topic!r} does not exist")
                    if key is None:
                        partition, round_robin = round_robin % n, round_robin + 1
                    else:
                        partition = partition_for_key(key, n)
                headers = [(h["key"], _as_bytes(h["value"])) for h in (fields.get("headers") or ())]
                tp = TopicPartition(topic, int(partition))
                pending.setdefault(tp, []).append((key, _as_bytes(fields.get("value")), headers))
                total += 1
                if len(pending[tp]) >= s.records_per_batch:
                    flush(tp)
            for tp in list(pending):
                flush(tp)
        return WriteCommit(total, batches)


def _as_bytes(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise OptionError(f"key, value and header values must be binary or string (got {type(value).__name__})")


class KafkaWireDataSource(DataSource):
    """``spark.read.format("kafka_wire")``, ``spark.readStream.format("kafka_wire")`` and
    ``df.write.format("kafka_wire")``; see :mod:`kafka_wire.spark.plan` for the options."""

    @classmethod
    def name(cls) -> str:
        return "kafka_wire"

    def schema(self) -> str:
        return schema_for(str(self.options.get("includeHeaders", "false")).lower() == "true")

    def reader(self, schema: StructType) -> KafkaWireReader:
        return KafkaWireReader(Settings.parse(self.options), columns_of(schema))

    def streamReader(self, schema: StructType) -> KafkaWireStreamReader:
        return KafkaWireStreamReader(Settings.parse(self.options, streaming=True), columns_of(schema))

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWireWriter:
        options = self.options
        cluster = ClusterAccess.from_options(options)
        if cluster is None:
            raise OptionError("writing needs 'kafka.bootstrap.servers'")
        records = options.get("kafka.batch.records", str(DEFAULT_RECORDS_PER_PRODUCE_BATCH))
        acks = options.get("kafka.acks", "all")
        return KafkaWireWriter(
            WriteSettings(
                cluster=cluster,
                topic=options.get("topic"),
                compression=options.get("kafka.compression.type", "none"),
                records_per_batch=int(records),
                acks=-1 if acks == "all" else int(acks),
            )
        )


def register(spark: SparkSession) -> None:
    """Register the source with ``spark`` unless Spark found it already (through
    ``pyspark_kafka_wire``, which an editable install hides from Spark run in other directories)."""
    try:
        spark.dataSource.register(KafkaWireDataSource)
    except AnalysisException as e:
        if e.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise
