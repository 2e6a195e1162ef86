"""Kafka's broker-to-topic config synonyms (``ServerTopicConfigSynonyms``), as data.

A topic config without an override takes its value from the broker properties in
:data:`TOPIC_CONFIG_SYNONYMS`, tried in Kafka's order of precedence: the first one set wins, the
rest are ignored (``log.retention.ms``, then ``log.retention.minutes``, then
``log.retention.hours``). Some are in other units and are converted to the topic config's
milliseconds. When none is set, the topic config has Kafka's default, which equals the default
of the last synonym that has one (``log.retention.hours`` = 168 gives ``retention.ms`` =
604800000).

The table is Kafka 4.0's, with each broker property's default as Kafka prints it in
DescribeConfigs (None: no default). It lists topic configs kafka_wire does not have
(``local.retention.*``, for tiered storage): their broker properties are known and ignored.

DescribeConfigs reports a topic config's synonyms as Kafka does (``ConfigHelper``): the topic
override (DYNAMIC_TOPIC_CONFIG), then the broker properties that are set (STATIC_BROKER_CONFIG)
and then those with a default (DEFAULT_CONFIG), each in the table's order, starting at the first
entry named after the topic config's *first* synonym: when only ``log.retention.hours`` is set,
``retention.ms`` reports no broker synonym and DEFAULT_CONFIG, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kafka_wire.broker.log.config import INT_MAX, LONG_MAX, ConfigError
from kafka_wire.quick_dataclass import dataclass

MINUTES: Final = 60_000
HOURS: Final = 3_600_000

#: DescribeConfigs ``config_source`` values (Kafka's ``ConfigSource``).
DYNAMIC_TOPIC_CONFIG: Final = 1
STATIC_BROKER_CONFIG: Final = 4
DEFAULT_CONFIG: Final = 5


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker property that sets a topic config's default."""

    name: str
    #: Its default as Kafka prints it, or None when it has none.
    default: str | None = None
    #: Milliseconds per unit of the property (``log.roll.hours``: 3600000); 1 passes the value through.
    ms_per_unit: int = 1
    #: Kafka's lower bound of a property in other units (checked before converting; the others are
    #: checked by the topic config's own rules).
    minimum: int | None = None


_MAX = str(LONG_MAX)

#: Topic config -> its broker synonyms, in Kafka's order of precedence.
TOPIC_CONFIG_SYNONYMS: Final[Mapping[str, tuple[Synonym, ...]]] = {
    "segment.bytes": (Synonym("log.segment.bytes", "1073741824"),),
    "segment.ms": (Synonym("log.roll.ms"), Synonym("log.roll.hours", "168", HOURS, minimum=1)),
    "segment.jitter.ms": (
        Synonym("log.roll.jitter.ms"),
        Synonym("log.roll.jitter.hours", "0", HOURS, minimum=0),
    ),
    "segment.index.bytes": (Synonym("log.index.size.max.bytes", "10485760"),),
    "flush.messages": (Synonym("log.flush.interval.messages", _MAX),),
    "flush.ms": (Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms", _MAX)),
    "retention.bytes": (Synonym("log.retention.bytes", "-1"),),
    "retention.ms": (
        Synonym("log.retention.ms"),
        Synonym("log.retention.minutes", None, MINUTES),
        Synonym("log.retention.hours", "168", HOURS),
    ),
    "max.message.bytes": (Synonym("message.max.bytes", "1048588"),),
    "index.interval.bytes": (Synonym("log.index.interval.bytes", "4096"),),
    "delete.retention.ms": (Synonym("log.cleaner.delete.retention.ms", "86400000"),),
    "min.compaction.lag.ms": (Synonym("log.cleaner.min.compaction.lag.ms", "0"),),
    "max.compaction.lag.ms": (Synonym("log.cleaner.max.compaction.lag.ms", _MAX),),
    "file.delete.delay.ms": (Synonym("log.segment.delete.delay.ms", "60000"),),
    "min.cleanable.dirty.ratio": (Synonym("log.cleaner.min.cleanable.ratio", "0.5"),),
    "cleanup.policy": (Synonym("log.cleanup.policy", "delete"),),
    "unclean.leader.election.enable": (Synonym("unclean.leader.election.enable", "false"),),
    "min.insync.replicas": (Synonym("min.insync.replicas", "1"),),
    "compression.type": (Synonym("compression.type", "producer"),),
    "compression.gzip.level": (Synonym("compression.gzip.level", "-1"),),
    "compression.lz4.level": (Synonym("compression.lz4.level", "9"),),
    "compression.zstd.level": (Synonym("compression.zstd.level", "3"),),
    "preallocate": (Synonym("log.preallocate", "false"),),
    "message.timestamp.type": (Synonym("log.message.timestamp.type", "CreateTime"),),
    "message.timestamp.before.max.ms": (Synonym("log.message.timestamp.before.max.ms", _MAX),),
    "message.timestamp.after.max.ms": (Synonym("log.message.timestamp.after.max.ms", "3600000"),),
    "local.retention.ms": (Synonym("log.local.retention.ms", "-2"),),
    "local.retention.bytes": (Synonym("log.local.retention.bytes", "-2"),),
}

#: Every broker property of the table, mapped to its topic config.
TOPIC_CONFIG_OF: Final[Mapping[str, str]] = {
    synonym.name: topic for topic, synonyms in TOPIC_CONFIG_SYNONYMS.items() for synonym in synonyms
}

#: Topic configs whose negative broker values all mean "no limit" (Kafka's
#: ``KafkaConfig.logRetentionTimeMillis``: any negative ``log.retention.*`` gives -1).
_NEGATIVE_IS_UNLIMITED: Final = frozenset({"retention.ms"})


@dataclass(frozen=True, slots=True)
class TopicDefault:
    """A topic config's broker-level default: its value in the topic config's units and the
    broker property it came from."""

    value: str
    source: str


def topic_defaults(properties: Mapping[str, str], known: Mapping[str, object]) -> dict[str, TopicDefault]:
    """The topic defaults that broker ``properties`` set, for the topic configs in ``known``.

    Per topic config, the first synonym set wins, converted to milliseconds where it is in other
    units. A value that is not an integer where a unit conversion needs one raises
    :class:`ConfigError` naming the broker property; the other values are checked by the topic
    config's own rules by the caller.
    """
    out: dict[str, TopicDefault] = {}
    for topic, synonyms in TOPIC_CONFIG_SYNONYMS.items():
        if topic not in known:
            continue
        for synonym in synonyms:
            raw = properties.get(synonym.name)
            if raw is None:
                continue
            value = raw.strip()
            if synonym.ms_per_unit != 1:
                number = _int(synonym.name, value)
                if synonym.minimum is not None and number < synonym.minimum:
                    raise ConfigError(synonym.name, f"{value!r} is below the minimum {synonym.minimum}")
                value = str(number * synonym.ms_per_unit)
            if topic in _NEGATIVE_IS_UNLIMITED and value.lstrip("-").isdigit() and int(value) < 0:
                value = "-1"
            out[topic] = TopicDefault(value, synonym.name)
            break
    return out


def describe_synonyms(topic: str, static: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """The broker synonyms of ``topic`` as Kafka's DescribeConfigs lists them: ``(name, value,
    source)``, the set ones (STATIC_BROKER_CONFIG) then the defaults (DEFAULT_CONFIG), from the
    first entry named after the first synonym."""
    synonyms = TOPIC_CONFIG_SYNONYMS.get(topic, ())
    if not synonyms:
        return []
    entries = [(s.name, static[s.name], STATIC_BROKER_CONFIG) for s in synonyms if s.name in static]
    entries += [(s.name, s.default, DEFAULT_CONFIG) for s in synonyms if s.default is not None]
    first = synonyms[0].name
    while entries and entries[0][0] != first:
        entries.pop(0)
    return entries


def set_by_broker(topic: str, static: Mapping[str, str]) -> bool:
    """Whether a broker property sets ``topic``'s default (any of its synonyms, in any unit): a
    CreateTopics answer (v5+) reports such a config as STATIC_BROKER_CONFIG, as Kafka's controller
    does, even where DescribeConfigs reports DEFAULT_CONFIG (``retention.ms`` with only
    ``log.retention.hours`` set)."""
    return any(synonym.name in static for synonym in TOPIC_CONFIG_SYNONYMS.get(topic, ()))


def _int(key: str, value: str) -> int:
    try:
        number = int(value, 10)
    except ValueError:
        raise ConfigError(key, f"{value!r} is not an integer") from None
    if not -INT_MAX - 1 <= number <= INT_MAX:
        raise ConfigError(key, f"{value!r} is out of range for type INT")
    return number
