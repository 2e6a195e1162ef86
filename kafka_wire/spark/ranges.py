"""Topic-partitions, offset ranges, and the options of Spark's Kafka source that choose them.

Offsets in the JSON forms follow Spark's Kafka source: ``{"topic": {"0": 23, "1": -2}}`` where
``-2`` means earliest and ``-1`` latest; ``startingTimestamp`` / ``startingOffsetsByTimestamp``
give milliseconds. Nothing here does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_wire.client.types import EARLIEST, LATEST, DataLossError, TopicPartition
from kafka_wire.logformat import names as logformat_names


class OptionError(ValueError):
    """An option of the data source is missing, malformed or contradicts another one."""


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def checked_start(tp: TopicPartition, start: int, earliest: int, latest: int, fail_on_data_loss: bool) -> int:
    """``start`` when the log still spans it (``earliest <= start <= latest``); otherwise a
    :class:`DataLossError`, or with ``failOnDataLoss=false`` the earliest offset (Spark's choice:
    what was lost is skipped, a recreated topic is read from its beginning)."""
    if earliest <= start <= latest:
        return start
    if fail_on_data_loss:
        raise DataLossError(
            f"{tp}: offset {start} is outside the log's offsets {earliest}..{latest}; some data may have "
            "been lost (retention, DeleteRecords, or the topic was recreated). Set failOnDataLoss=false "
            "to continue from the earliest offset."
        )
    return earliest


def parse_partition_dir(name: str) -> TopicPartition | None:
    """``orders-3`` -> ``TopicPartition("orders", 3)``; None for names that are not a partition
    directory (see :func:`kafka_wire.logformat.parse_partition_dir`)."""
    parsed = logformat_names.parse_partition_dir(name)
    return None if parsed is None else TopicPartition(*parsed)


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which topic-partitions to read: exactly one of Spark's ``assign``, ``subscribe``, ``subscribePattern``."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def select(self, available: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The chosen topic-partitions among ``available``, sorted. Assigned partitions that do
        not exist are an error (as in Spark); internal topics match a pattern only if named."""
        have = set(available)
        if self.assigned:
            missing = [str(tp) for tp in self.assigned if tp not in have]
            if missing:
                raise OptionError(f"assigned partitions not found: {', '.join(sorted(missing))}")
            return sorted(set(self.assigned))
        if self.pattern is not None:
            regex = re.compile(self.pattern)
            return sorted(tp for tp in have if regex.fullmatch(tp.topic) and not tp.topic.startswith("__"))
        wanted = set(self.topics)
        return sorted(tp for tp in have if tp.topic in wanted)


def parse_subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("assign", "subscribe", "subscribePattern") if options.get(k)]
    if len(given) != 1:
        raise OptionError("exactly one of 'assign', 'subscribe' or 'subscribePattern' must be set")
    kind = given[0]
    value = options[kind]
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("'subscribe' names no topic")
        return Subscription(topics=topics)
    if kind == "subscribePattern":
        try:
            re.compile(value)
        except re.error as e:
            raise OptionError(f"bad 'subscribePattern': {e}") from None
        return Subscription(pattern=value)
    parsed = _json_object(value, "assign")
    assigned: list[TopicPartition] = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(type(p) is int and p >= 0 for p in partitions):
            raise OptionError(f"'assign' must map topics to lists of partition numbers (got {topic!r})")
        assigned.extend(TopicPartition(topic, p) for p in partitions)
    return Subscription(assigned=tuple(assigned))


def _json_object(text: str, name: str) -> dict[str, object]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        raise OptionError(f"{name!r} is not valid JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise OptionError(f"{name!r} must be a JSON object")
    return parsed


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where a range starts or ends: ``default`` (EARLIEST or LATEST) unless a partition has its
    own offset (``-2``/``-1``/an offset) or, for starting points, a timestamp in ms."""

    default: int
    offsets: Mapping[TopicPartition, int] | None = None
    timestamps: Mapping[TopicPartition, int] | None = None
    timestamp_all: int | None = None

    def for_partition(self, tp: TopicPartition) -> tuple[str, int]:
        """``("offset", n)`` (n may be EARLIEST or LATEST) or ``("timestamp", ms)``."""
        if self.timestamp_all is not None:
            return "timestamp", self.timestamp_all
        if self.timestamps is not None and tp in self.timestamps:
            return "timestamp", self.timestamps[tp]
        if self.offsets is not None and tp in self.offsets:
            return "offset", self.offsets[tp]
        return "offset", self.default


def _per_partition(text: str, name: str, allowed_min: int) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for topic, parts in _json_object(text, name).items():
        if not isinstance(parts, dict):
            raise OptionError(f"{name!r} must map topics to {{partition: value}} objects")
        for p, value in parts.items():
            if not p.isdigit() or type(value) is not int or value < allowed_min:
                raise OptionError(f"{name!r}: bad entry {topic}/{p}: {value!r}")
            out[TopicPartition(topic, int(p))] = value
    return out


def parse_offset_spec(options: Mapping[str, str], *, starting: bool) -> OffsetSpec:
    """``startingOffsets`` (default earliest for batch) / ``endingOffsets`` (default latest), and
    ``startingTimestamp`` / ``endingTimestamp`` (every partition) and
    ``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp``, which win in that order. An
    ending timestamp ends the range before the first record at or after it."""
    side = "starting" if starting else "ending"
    key = f"{side}Offsets"
    default = EARLIEST if starting else LATEST
    if options.get(f"{side}Timestamp"):
        text = options[f"{side}Timestamp"]
        if not text.isdigit():
            raise OptionError(f"'{side}Timestamp' must be milliseconds (got {text!r})")
        return OffsetSpec(default, timestamp_all=int(text))
    by_timestamp = f"{side}OffsetsByTimestamp"
    if options.get(by_timestamp):
        return OffsetSpec(default, timestamps=_per_partition(options[by_timestamp], by_timestamp, 0))
    text = options.get(key, "").strip()
    if not text:
        return OffsetSpec(default)
    if text == "earliest":
        if not starting:
            raise OptionError("'endingOffsets' cannot be earliest")
        return OffsetSpec(EARLIEST)
    if text == "latest":
        return OffsetSpec(LATEST)
    offsets = _per_partition(text, key, EARLIEST)
    if not starting and EARLIEST in offsets.values():
        raise OptionError("'endingOffsets' cannot use -2 (earliest)")
    return OffsetSpec(default, offsets=offsets)


def resolve(
    spec: OffsetSpec,
    tp: TopicPartition,
    earliest: int,
    latest: int,
    offset_for_time: Callable[[TopicPartition, int], int | None],
) -> int:
    """The concrete offset of ``spec`` for ``tp`` whose log spans ``[earliest, latest)``.
    A timestamp past every record resolves to ``latest`` (Spark's default ``strategy``)."""
    kind, value = spec.for_partition(tp)
    if kind == "timestamp":
        found = offset_for_time(tp, value)
        return latest if found is None else found
    if value == EARLIEST:
        return earliest
    if value == LATEST:
        return latest
    return value


def split_ranges(
    ranges: Sequence[OffsetRange], min_partitions: int | None, max_records: int | None = None
) -> list[OffsetRange]:
    """Split ranges so there are at least ``min_partitions`` of them (when offsets allow) and
    none holds more than ``max_records`` offsets (``maxRecordsPerPartition``): each range gets a
    share of the parts in proportion to its size, rounded up (Spark's Kafka source rounds to
    nearest, which can fall short), and at least enough parts for the cap; empty ranges are dropped."""
    ranges = [r for r in ranges if r.size > 0]
    total = sum(r.size for r in ranges)
    wanted = min_partitions if min_partitions and min_partitions > len(ranges) else 0
    if (not wanted and not max_records) or total == 0:
        return list(ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, min(r.size, -(-r.size * wanted // total)))
        if max_records:
            parts = max(parts, -(-r.size // max_records))
        for i in range(parts):
            lo = r.start + r.size * i // parts
            hi = r.start + r.size * (i + 1) // parts
            out.append(OffsetRange(r.topic, r.partition, lo, hi))
    return out
