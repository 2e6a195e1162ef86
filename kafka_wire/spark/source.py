"""The PySpark data source ``kafka_wire``: batch and streaming reads, and a batch writer.

Installed with the ``spark`` extra, Spark finds it by itself (the top-level module
``pyspark_kafka_wire`` is its discovery hook); use it as Spark's Kafka source::

    df = spark.read.format("kafka_wire").option("path", "/var/lib/kafka/data").option("subscribe", "orders").load()

Rows leave each task as Arrow record batches (Spark 4's fast path for Python data sources).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
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
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows
from pyspark.sql.types import Row, StructType

from kafka_wire.client import TopicPartition, partition_for_key
from kafka_wire.records import Record, build_batch
from kafka_wire.spark import live
from kafka_wire.spark.access import ClusterAccess
from kafka_wire.spark.plan import Settings, Source, offsets_from_json, offsets_json, read, schema_for
from kafka_wire.spark.ranges import OffsetRange, OptionError

ROWS_PER_ARROW_BATCH: Final = 65_536
"""Rows per Arrow batch handed to Spark (its own ``spark.sql.execution.arrow.maxRecordsPerBatch``
default is 10,000; larger batches amortise the Python-to-JVM hand-off)."""
DEFAULT_RECORDS_PER_PRODUCE_BATCH: Final = 10_000
"""Records per batch the writer produces (one Produce request each)."""

_HEADER_TYPE: Final = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_TIMESTAMP: Final = pa.timestamp("us", tz="UTC")


class RangePartition(InputPartition):
    """One Spark task: one topic-partition offset range."""

    def __init__(self, r: OffsetRange) -> None:
        super().__init__(r)
        self.range = r


def to_arrow(
    r: OffsetRange, items: Iterable[tuple[int, list[Record[bytes]]]], include_headers: bool
) -> Iterator[pa.RecordBatch]:
    """Arrow batches in the output schema for the records of one range. ``headers`` is null for
    a record without headers (legacy records have none), as in Spark's Kafka source."""
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    offsets: list[int] = []
    stamps: list[int] = []
    types: list[int] = []
    header_ends: list[int] = [0]
    header_keys: list[str] = []
    header_values: list[bytes | None] = []
    no_headers: list[bool] = []

    def flush() -> pa.RecordBatch:
        n = len(offsets)
        columns = [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.repeat(r.topic, n).cast(pa.string()) if n else pa.array([], pa.string()),
            pa.array(itertools.repeat(r.partition, n), pa.int32(), size=n),
            pa.array(offsets, pa.int64()),
            pc.multiply(pa.array(stamps, pa.int64()), 1000).cast(_TIMESTAMP),
            pa.array(types, pa.int32()),
        ]
        names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
        if include_headers:
            pairs = pa.StructArray.from_arrays(
                [pa.array(header_keys, pa.string()), pa.array(header_values, pa.binary())],
                names=["key", "value"],
            )
            columns.append(
                pa.ListArray.from_arrays(
                    pa.array(header_ends, pa.int32()), pairs, mask=pa.array(no_headers, pa.bool_())
                )
            )
            names.append("headers")
        batch = pa.RecordBatch.from_arrays(columns, names=names)
        for column in (keys, values, offsets, stamps, types, header_keys, header_values, no_headers):
            column.clear()
        del header_ends[1:]
        return batch

    for timestamp_type, records in items:
        for record in records:
            keys.append(record.key)
            values.append(record.value)
            offsets.append(record.offset)
            stamps.append(record.timestamp)
            if include_headers:
                for k, v in record.headers:
                    header_keys.append(k)
                    header_values.append(v)
                header_ends.append(len(header_keys))
                no_headers.append(not record.headers)
        types.extend(itertools.repeat(timestamp_type, len(records)))
        if len(offsets) >= ROWS_PER_ARROW_BATCH:
            yield flush()
    if offsets:
        yield flush()


class KafkaWireReader(DataSourceReader):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def partitions(self) -> Sequence[InputPartition]:
        return [RangePartition(r) for r in Source(self.settings).plan()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        r = partition.range
        return to_arrow(r, read(self.settings, r), self.settings.include_headers)


class KafkaWireStreamReader(DataSourceStreamReader):
    """Offsets are Spark's Kafka JSON (``{"topic": {"0": 42}}``), checkpointed by Spark.
    Partitions that appear later start from their earliest offset."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._bounds: dict[TopicPartition, tuple[int, int]] | None = None
        """The bounds seen by the last ``latestOffset`` (the next micro-batch is checked against them)."""

    def initialOffset(self) -> dict[str, dict[str, int]]:
        source = Source(self.settings)  # a new one per call: topics, partitions and segments come and go
        bounds = source.bounds(source.partitions())
        return offsets_json(source.resolve(self.settings.starting, bounds))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        """The log end offsets, or fewer rows when Spark asks for at most ``ReadMaxRows`` (taken from
        the partitions in order) or at least ``ReadMinRows`` (``start`` until they are there)."""
        source = Source(self.settings)
        self._bounds = source.bounds(source.partitions())
        ends = {tp: high for tp, (_, high) in self._bounds.items()}
        begun = offsets_from_json(start)
        available = {tp: max(0, high - begun.get(tp, low)) for tp, (low, high) in self._bounds.items()}
        if isinstance(limit, ReadMinRows) and sum(available.values()) < limit.min_rows:
            return offsets_json({tp: begun.get(tp, low) for tp, (low, _) in self._bounds.items()})
        if isinstance(limit, ReadMaxRows):
            room = limit.max_rows
            for tp in sorted(ends):
                taken = min(available[tp], room)
                room -= taken
                ends[tp] = ends[tp] - available[tp] + taken
        elif not isinstance(limit, (ReadAllAvailable, ReadMinRows)):
            raise OptionError(f"kafka_wire cannot honour the read limit {limit!r}")
        return offsets_json(ends)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = Source(self.settings).stream_ranges(
            offsets_from_json(start), offsets_from_json(end), self._bounds
        )
        return [RangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        r = partition.range
        return to_arrow(r, read(self.settings, r), self.settings.include_headers)

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
        return KafkaWireReader(Settings.parse(self.options))

    def streamReader(self, schema: StructType) -> KafkaWireStreamReader:
        return KafkaWireStreamReader(Settings.parse(self.options, streaming=True))

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
