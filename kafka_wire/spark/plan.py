"""What a read does, independent of Spark: settings from the options, the plan (offset ranges),
and each range's rows, from logs at rest or a live cluster.

Options follow Spark's Kafka source where they overlap (``kafka.bootstrap.servers``,
``subscribe``/``subscribePattern``/``assign``, ``startingOffsets``/``endingOffsets``,
``startingTimestamp``/``startingOffsetsByTimestamp``, ``endingTimestamp``/``endingOffsetsByTimestamp``,
``includeHeaders``, ``minPartitions``, ``maxRecordsPerPartition``, ``kafka.isolation.level``,
``failOnDataLoss``, in streaming ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` and
``maxTriggerDelay``, and the SASL options of :mod:`~kafka_wire.spark.access`); ``path``
(comma-separated) reads logs at rest. Options of Spark's Kafka source that this source cannot
honour are refused (:data:`REFUSED`), never ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.client import LATEST, DataLossError, TopicPartition
from kafka_wire.records.columnar import ArrowDecoder
from kafka_wire.records.reader import Batch
from kafka_wire.spark import live, logs
from kafka_wire.spark.access import ClusterAccess
from kafka_wire.spark.ranges import (
    OffsetRange,
    OffsetSpec,
    OptionError,
    Subscription,
    checked_start,
    parse_offset_spec,
    parse_subscription,
    resolve,
    split_ranges,
)

if TYPE_CHECKING:
    import pyarrow as pa

ROWS_PER_ARROW_BATCH: Final = 65_536
"""Rows per Arrow batch handed to Spark (its own ``spark.sql.execution.arrow.maxRecordsPerBatch``
default is 10,000; larger batches amortise the Python-to-JVM hand-off)."""

REFUSED: Final = {
    "kafka.group.id": "the source reads offset ranges itself and joins no consumer group",
    "groupIdPrefix": "the source reads offset ranges itself and joins no consumer group",
    "startingOffsetsByTimestampStrategy": "a timestamp past every record always resolves to the latest offset",
    "fetchOffset.numRetries": "retries follow kafka_wire's client (timeouts, leader changes)",
    "fetchOffset.retryIntervalMs": "retries follow kafka_wire's client (timeouts, leader changes)",
    "maxOffsetsPerTrigger": "it is for streaming queries",
    "minOffsetsPerTrigger": "it is for streaming queries",
    "maxTriggerDelay": "it is for streaming queries",
}
"""Options of Spark's Kafka source that this source refuses, and why (the streaming ones only in
batch queries)."""
_STREAMING_ONLY: Final = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
_DURATION: Final = re.compile(r"(\d+)\s*(ms|s|m|min|h|d)?")
_DURATION_MS: Final = {
    None: 1,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}
DEFAULT_MAX_TRIGGER_DELAY_MS: Final = 15 * 60_000
"""Spark's Kafka source default for ``maxTriggerDelay`` (15 minutes)."""

BASE_SCHEMA: Final = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
HEADERS_FIELD: Final = "headers array<struct<key: string, value: binary>>"


def schema_for(include_headers: bool) -> str:
    """Spark's Kafka source schema, with ``headers`` when ``includeHeaders`` is true."""
    return BASE_SCHEMA + (", " + HEADERS_FIELD if include_headers else "")


def _flag(options: Mapping[str, str], name: str, default: bool = False) -> bool:
    value = options.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise OptionError(f"{name!r} must be true or false (got {value!r})")


def _positive(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    if not value.isdigit() or int(value) <= 0:
        raise OptionError(f"{name!r} must be a positive integer (got {value!r})")
    return int(value)


def _duration_ms(options: Mapping[str, str], name: str, default: int) -> int:
    value = options.get(name)
    if value is None:
        return default
    match = _DURATION.fullmatch(value.strip())
    if match is None:
        raise OptionError(f"{name!r} must be a duration such as 500ms, 30s, 15m or 1h (got {value!r})")
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


@dataclass(frozen=True, slots=True)
class Settings:
    """The parsed options of one read (picklable: Spark ships it to the tasks)."""

    paths: tuple[str, ...]
    cluster: ClusterAccess | None
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    include_headers: bool
    min_partitions: int | None
    read_committed: bool
    fail_on_data_loss: bool = True
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool = False) -> Settings:
        for name, why in REFUSED.items():
            if options.get(name) is not None and not (streaming and name in _STREAMING_ONLY):
                raise OptionError(f"option {name!r} is not supported: {why}")
        paths = tuple(p.strip() for p in options.get("path", "").split(",") if p.strip())
        cluster = ClusterAccess.from_options(options)
        if bool(paths) == (cluster is not None):
            raise OptionError("set exactly one of 'path' (logs at rest) and 'kafka.bootstrap.servers' (live)")
        isolation = options.get("kafka.isolation.level", "read_uncommitted")
        if isolation not in ("read_uncommitted", "read_committed"):
            raise OptionError(
                f"'kafka.isolation.level' must be read_uncommitted or read_committed (got {isolation!r})"
            )
        starting = parse_offset_spec(options, starting=True)
        if (
            streaming
            and not options.get("startingOffsets")
            and starting.timestamp_all is None
            and starting.timestamps is None
        ):
            starting = OffsetSpec(LATEST)  # Spark's streaming default
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if streaming and options.get(name):
                raise OptionError(f"{name!r} is for batch queries only")
        return cls(
            paths=paths,
            cluster=cluster,
            subscription=parse_subscription(options),
            starting=starting,
            ending=parse_offset_spec(options, starting=False),
            include_headers=_flag(options, "includeHeaders"),
            min_partitions=_positive(options, "minPartitions"),
            read_committed=isolation == "read_committed",
            fail_on_data_loss=_flag(options, "failOnDataLoss", default=True),
            max_records_per_partition=_positive(options, "maxRecordsPerPartition"),
            max_offsets_per_trigger=_positive(options, "maxOffsetsPerTrigger"),
            min_offsets_per_trigger=_positive(options, "minOffsetsPerTrigger"),
            max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_MS),
        )

    @property
    def schema(self) -> str:
        return schema_for(self.include_headers)


class Source:
    """Partitions, offsets and records of the chosen topic-partitions: at rest or live."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._logs = logs.discover(settings.paths) if settings.paths else None

    def partitions(self) -> list[TopicPartition]:
        available = list(self._logs) if self._logs is not None else live.partitions_of(self._cluster)
        return self.settings.subscription.select(available)

    @property
    def _cluster(self) -> ClusterAccess:
        assert self.settings.cluster is not None
        return self.settings.cluster

    def bounds(self, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """``(earliest, latest)`` per partition; under read_committed, latest is the last stable
        offset (the first offset of the oldest open transaction), as Kafka's consumer sees it."""
        if self._logs is not None:
            last = logs.last_stable_offset if self.settings.read_committed else logs.latest_offset
            return {tp: (logs.earliest_offset(self._logs[tp]), last(self._logs[tp])) for tp in tps}
        return (
            live.offset_bounds(self._cluster, tps, read_committed=self.settings.read_committed) if tps else {}
        )

    def offset_for_time(self, tp: TopicPartition, timestamp_ms: int) -> int | None:
        if self._logs is not None:
            return logs.offset_for_timestamp(self._logs[tp], timestamp_ms)
        return live.list_offsets(self._cluster, {tp: timestamp_ms})[tp]

    def resolve(
        self, spec: OffsetSpec, bounds: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, int]:
        return {tp: resolve(spec, tp, low, high, self.offset_for_time) for tp, (low, high) in bounds.items()}

    def plan(self) -> list[OffsetRange]:
        """The batch read: one range per partition from the starting to the ending offsets,
        split to honour ``minPartitions``."""
        tps = self.partitions()
        bounds = self.bounds(tps)
        starts = self.resolve(self.settings.starting, bounds)
        ends = self.resolve(self.settings.ending, bounds)
        ranges = []
        for tp in tps:
            low, high = bounds[tp]
            end = ends[tp]
            if end > high:
                raise OptionError(f"{tp}: ending offset {end} is past the end of the log ({high})")
            start = checked_start(tp, starts[tp], low, high, self.settings.fail_on_data_loss)
            if start > end:
                raise OptionError(f"{tp}: starting offset {start} is after ending offset {end}")
            ranges.append(OffsetRange(tp.topic, tp.partition, start, end))
        return split_ranges(ranges, self.settings.min_partitions, self.settings.max_records_per_partition)

    def stream_ranges(
        self,
        start: Mapping[TopicPartition, int],
        end: Mapping[TopicPartition, int],
        bounds: Mapping[TopicPartition, tuple[int, int]] | None = None,
    ) -> list[OffsetRange]:
        """One micro-batch: from the checkpointed offsets (partitions new since then from their
        earliest offset) to ``end``, checked against the log's current ``bounds``."""
        if bounds is None or not set(end) <= set(bounds):
            bounds = self.bounds(sorted(end))
        ranges = []
        for tp in sorted(end):
            low, high = bounds[tp]
            begin = checked_start(tp, start.get(tp, low), low, high, self.settings.fail_on_data_loss)
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, end[tp]))
        return split_ranges(ranges, self.settings.min_partitions, self.settings.max_records_per_partition)


def read_arrow(settings: Settings, r: OffsetRange, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The records of one range as Arrow batches of at most about :data:`ROWS_PER_ARROW_BATCH`
    rows with ``columns`` of Spark's Kafka schema (:mod:`kafka_wire.records.columnar`: columns not
    asked for are not decoded)."""
    decoder = ArrowDecoder(
        topic=r.topic, partition=r.partition, columns=columns, start_offset=r.start, end_offset=r.end
    )
    for batch in _batches(settings, r):
        decoder.add_batch(batch)
        if decoder.rows >= ROWS_PER_ARROW_BATCH:
            yield decoder.take()
    if decoder.rows:
        yield decoder.take()


def _batches(settings: Settings, r: OffsetRange) -> Iterator[Batch[bytes]]:
    """The batches holding the records of one range, at rest or live."""
    tp = TopicPartition(r.topic, r.partition)
    if settings.paths:
        log = logs.discover(settings.paths).get(tp)
        if log is None:
            raise OptionError(f"{tp} is not under {', '.join(settings.paths)}")
        earliest = logs.earliest_offset(log)
        if r.start < earliest and settings.fail_on_data_loss:
            raise DataLossError(f"{tp}: offsets {r.start}..{earliest - 1} are no longer in the log")
        return logs.read_batches(log, r.start, r.end, read_committed=settings.read_committed)
    assert settings.cluster is not None
    return live.fetch_batches(
        settings.cluster,
        tp,
        r.start,
        r.end,
        read_committed=settings.read_committed,
        fail_on_data_loss=settings.fail_on_data_loss,
    )


def offsets_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's Kafka offsets form: ``{"topic": {"0": 42}}``."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}
