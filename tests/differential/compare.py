"""Field-by-field comparison of two decoded responses, after normalising what may differ.

:func:`differences` walks Kafka's answer and kafka-wire's answer to the same request side by side
and returns every :class:`Difference`: the field's path (``topics[name='t'].partitions[0].
error_code``), Kafka's value and kafka-wire's value.

- Structs compare field by field in wire order, including tagged fields a decoder did not know.
- Arrays of structs are matched by key: the first of :data:`KEY_FIELDS` the element has (a
  topic's name, a partition's index, ...), when that key is unique on both sides; an element on
  one side only is a difference named by its key. Their order is not compared (Kafka answers
  topics and partitions in the order of its own maps). Arrays of structs without such a key, and
  arrays of plain values, compare position by position.
- Records (the ``records`` fields of Produce and Fetch) compare by content: each batch's header
  fields and its records (offset, timestamp, key, value, headers), under the path
  ``...records.batches[i].<field>`` / ``...records.batches[i].records[j]``.
- A :class:`Rule` names a field path pattern and a function that maps each side's value to what
  is compared: values that legitimately differ (ids chosen at random, ports, clocks, prose) are
  replaced by a placeholder that keeps what must still agree (null or not, zero or not). A
  pattern is matched (:func:`matches`: ``*`` stands for any text, nothing else is special)
  against the path with every array index written ``[]`` (``topics[].topic_id``) and against the
  path as reported (``*configs[name='segment.ms']``). A struct or array a rule returns is compared
  field by field in turn. Rules are explicit: a field no rule names compares exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final
from uuid import UUID

from kafka_wire.codec.structs import Struct
from kafka_wire.errors import DecodeError
from kafka_wire.records import RecordBatch, read_batches


@dataclass(frozen=True)
class Side:
    """What a normaliser knows of the broker whose value it reads."""

    name: str
    port: int
    controller_port: int
    cluster_id: str | None = None


Normalise = Callable[[Any, Side], Any]


@dataclass(frozen=True)
class Rule:
    """Compare the fields whose path matches ``pattern`` after ``normalise``; ``why`` says why."""

    pattern: str
    normalise: Normalise
    why: str

    def matches(self, path: str) -> bool:
        return matches(self.pattern, path)


@dataclass(frozen=True)
class Difference:
    """One field whose values differ after normalisation."""

    path: str
    kafka: Any
    kafka_wire: Any
    #: The path with every array index written ``[]`` (what rules and deliberate patterns match).
    canon: str = ""

    def __str__(self) -> str:
        return f"{self.path}: Kafka {self.kafka!r}, kafka-wire {self.kafka_wire!r}"


class Missing:
    """The value of an array element that one side does not have."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Final = Missing()
ZERO_UUID: Final = UUID(int=0)
#: Fields that identify an element of an array of structs, in order of preference. Values each
#: broker chooses itself (member, producer and topic ids, directories) are no keys: such arrays
#: compare position by position.
KEY_FIELDS: Final = (
    "name",
    "topic",
    "topic_name",
    "partition_index",
    "partition",
    "partition_id",
    "api_key",
    "resource_type_and_name",
    "resource_name",
    "config_name",
    "broker_id",
    "node_id",
    "group_id",
)


@cache
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def matches(pattern: str, path: str) -> bool:
    """Whether ``path`` matches ``pattern`` whole, ``*`` standing for any text (brackets and
    dots are themselves)."""
    return _glob(pattern).fullmatch(path) is not None


# -- normalisers ---------------------------------------------------------------------------------


def ignored(value: Any, side: Side) -> str:
    """Not compared at all."""
    return "<ignored>"


def text(value: Any, side: Side) -> Any:
    """Prose: its wording is each broker's own, and so is whether there is any (Kafka leaves many
    refusals without a message that kafka-wire explains; clients only show it)."""
    return "<text>"


def random_uuid(value: Any, side: Side) -> Any:
    """Chosen at random by each broker: only whether it is the zero UUID is compared."""
    return value if value == ZERO_UUID else "<uuid>"


def port(value: Any, side: Side) -> Any:
    """Each broker's ports are its own: named for which listener they are."""
    names = {side.port: "<broker port>", side.controller_port: "<controller port>"}
    return names.get(value, value)


def cluster_id(value: Any, side: Side) -> Any:
    """Chosen at random per cluster: compared as "this cluster's id" or not."""
    if value is not None and value == side.cluster_id:
        return "<this cluster>"
    return value


def clock(value: Any, side: Side) -> Any:
    """A time read from each broker's clock: only "none" (-1) or not is compared."""
    return value if value is None or value < 0 else "<time>"


def positive(value: Any, side: Side) -> Any:
    """An amount that depends on each broker's own accounting: zero, negative or positive."""
    return value if value <= 0 else "<positive>"


#: What differs between any two brokers, whatever the API.
COMMON_RULES: Final = (
    Rule("throttle_time_ms", ignored, "no quotas are configured: a throttle is each broker's scheduling"),
    Rule("*error_message", text, "prose: the wording, and whether there is any, is each broker's own"),
    Rule("cluster_id", cluster_id, "chosen at random when the node is formatted"),
    Rule("*topic_id", random_uuid, "chosen at random when a topic is created"),
    Rule("*port", port, "each node's ports are free ones chosen per run"),
)


# -- the walk ------------------------------------------------------------------------------------


def differences(
    kafka: Any,
    kafka_wire: Any,
    sides: tuple[Side, Side],
    rules: Iterable[Rule] = (),
) -> list[Difference]:
    """Every difference between the two values; ``rules`` come before :data:`COMMON_RULES`."""
    walk = _Walk(sides, (*rules, *COMMON_RULES))
    walk.value(kafka, kafka_wire, "", "")
    return walk.found


class _Walk:
    def __init__(self, sides: tuple[Side, Side], rules: tuple[Rule, ...]) -> None:
        self.sides = sides
        self.rules = rules
        self.found: list[Difference] = []

    def differ(self, shown: str, canon: str, a: Any, b: Any) -> None:
        self.found.append(Difference(shown or "<response>", a, b, canon))

    def value(self, a: Any, b: Any, shown: str, canon: str) -> None:
        for rule in self.rules:
            if rule.matches(canon) or rule.matches(shown):
                a, b = rule.normalise(a, self.sides[0]), rule.normalise(b, self.sides[1])
                break
        if isinstance(a, Struct) and type(a) is type(b):
            self.struct(a, b, shown, canon)
        elif isinstance(a, list) and isinstance(b, list):
            self.array(a, b, shown, canon)
        elif isinstance(a, dict) and isinstance(b, dict):
            for name in dict.fromkeys([*a, *b]):
                self.value(a.get(name, ABSENT), b.get(name, ABSENT), _field(shown, name), _field(canon, name))
        elif (
            canon.endswith("records")
            and isinstance(a, bytes | memoryview)
            and isinstance(b, bytes | memoryview)
        ):
            if bytes(a) != bytes(b):
                self.value(_batches(a), _batches(b), f"{shown}.batches", f"{canon}.batches")
        elif a != b:
            self.differ(shown, canon, a, b)

    def struct(self, a: Struct, b: Struct, shown: str, canon: str) -> None:
        for spec in type(a).FIELDS:
            name = spec.name
            self.value(getattr(a, name), getattr(b, name), _field(shown, name), _field(canon, name))
        if a.unknown_tagged_fields != b.unknown_tagged_fields:
            name = "unknown_tagged_fields"
            self.differ(
                _field(shown, name), _field(canon, name), a.unknown_tagged_fields, b.unknown_tagged_fields
            )

    def array(self, a: list[Any], b: list[Any], shown: str, canon: str) -> None:
        key = _key(a, b)
        element = f"{canon}[]"
        if key is None:
            for i in range(max(len(a), len(b))):
                x = a[i] if i < len(a) else ABSENT
                y = b[i] if i < len(b) else ABSENT
                self.value(x, y, f"{shown}[{i}]", element)
            return
        by_key_a = {getattr(x, key): x for x in a}
        by_key_b = {getattr(y, key): y for y in b}
        for k in dict.fromkeys([*by_key_a, *by_key_b]):
            self.value(by_key_a.get(k, ABSENT), by_key_b.get(k, ABSENT), f"{shown}[{key}={k!r}]", element)


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _key(a: list[Any], b: list[Any]) -> str | None:
    """The key field of an array of structs, if its values are unique on both sides."""
    elements = [*a, *b]
    if not elements or not all(isinstance(x, Struct) for x in elements):
        return None
    cls = type(elements[0])
    if any(type(x) is not cls for x in elements):
        return None
    names = {spec.name for spec in cls.FIELDS}
    for key in KEY_FIELDS:
        if key in names:
            if all(len({_hashable(getattr(x, key)) for x in side}) == len(side) for side in (a, b)):
                return key
            return None
    return None


def _hashable(value: Any) -> Any:
    return repr(value) if isinstance(value, Struct | list) else value


def _batches(records: bytes | memoryview) -> list[Any]:
    """A records field as plain values: per batch its header fields and its records."""
    out: list[Any] = []
    try:
        for batch in read_batches(bytes(records)):
            if not isinstance(batch, RecordBatch):
                out.append(repr(batch))
                continue
            fields = {name: getattr(batch, name) for name in _BATCH_FIELDS}
            fields["records"] = [repr(tuple(record)) for record in batch]
            out.append(fields)
    except DecodeError as exc:
        out.append(f"<undecodable: {exc}>")
    return out


_BATCH_FIELDS: Final = (
    "base_offset",
    "batch_length",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "record_count",
)


def report(found: Sequence[Difference], title: str) -> str:
    """The differences as lines under ``title``."""
    return "\n".join([f"{title}: {len(found)} difference(s)", *(f"  {d}" for d in found)])
