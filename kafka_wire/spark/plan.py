"""What a read does, independent of Spark: settings from the options, the plan (offset ranges),
and each range's rows, from logs at rest or a live cluster.

Options follow Spark's Kafka source where they overlap (``kafka.bootstrap.servers``,
``subscribe``/``subscribePattern``/``assign``, ``startingOffsets``/``endingOffsets``,
``startingTimestamp``/``startingOffsetsByTimestamp``, ``includeHeaders``, ``minPartitions``,
``kafka.isolation.level``, ``failOnDataLoss``, and the SASL options of
:mod:`~kafka_wire.spark.access`); ``path`` (comma-separated) reads logs at rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire.client import LATEST, DataLossError, TopicPartition
from kafka_wire.records import Record
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

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool = False) -> Settings:
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
        if streaming and options.get("endingOffsets"):
            raise OptionError("'endingOffsets' is for batch queries only")
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
        return split_ranges(ranges, self.settings.min_partitions)

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
        return split_ranges(ranges, self.settings.min_partitions)


def read(settings: Settings, r: OffsetRange) -> Iterator[tuple[int, list[Record[bytes]]]]:
    """The records of one range, ``(timestamp type, records)`` per batch."""
    tp = TopicPartition(r.topic, r.partition)
    if settings.paths:
        log = logs.discover(settings.paths).get(tp)
        if log is None:
            raise OptionError(f"{tp} is not under {', '.join(settings.paths)}")
        earliest = logs.earliest_offset(log)
        if r.start < earliest and settings.fail_on_data_loss:
            raise DataLossError(f"{tp}: offsets {r.start}..{earliest - 1} are no longer in the log")
        return logs.read_range(log, r.start, r.end, read_committed=settings.read_committed)
    assert settings.cluster is not None
    return live.fetch_range(
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
