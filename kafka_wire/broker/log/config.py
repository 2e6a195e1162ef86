"""Topic-level log configuration: Kafka's names, types, defaults and validators.

:class:`LogConfig` holds the parsed values one partition log runs with. :data:`CONFIG_KEYS` is
the table DescribeConfigs, CreateTopics and the AlterConfigs APIs work from: per key its Kafka
type (the DescribeConfigs v3+ ``config_type`` id), its default as Kafka prints it, whether it is
a list, and one line of documentation. Keys, defaults and bounds are those of Apache Kafka 4.0's
``LogConfig``, with KIP-1030's 4.0 changes (``segment.bytes`` at least 1 MiB,
``message.timestamp.after.max.ms`` one hour).

Keys that the log does not act on (``preallocate``, ``segment.jitter.ms`` …) are still
accepted, validated and kept, so that clients which set them at topic creation are not refused.
The keys Kafka 4.0 removed (:data:`REMOVED_CONFIGS`: ``message.format.version``,
``message.downconversion.enable``, ``message.timestamp.difference.max.ms``) are unknown, as in
Kafka 4.0: setting one is INVALID_CONFIG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields, replace
from enum import IntEnum
from typing import Final, Literal

from kafka_wire.errors import KafkaWireError
from kafka_wire.quick_dataclass import dataclass

LONG_MAX: Final = (1 << 63) - 1
INT_MAX: Final = (1 << 31) - 1
#: ``segment.bytes`` (and ``log.segment.bytes``) minimum since Kafka 4.0 (KIP-1030; 14 bytes before).
MIN_SEGMENT_BYTES: Final = 1 << 20

#: Topic configs Kafka 4.0 removed (KIP-724, KIP-937, KIP-896): unknown keys since then.
REMOVED_CONFIGS: Final = frozenset(
    {"message.format.version", "message.downconversion.enable", "message.timestamp.difference.max.ms"}
)


class ConfigError(KafkaWireError):
    """A topic configuration value is invalid or unknown; ``key`` names it (INVALID_CONFIG)."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"Invalid value for configuration {key}: {reason}")


class ConfigType(IntEnum):
    """``config_type`` in DescribeConfigs v3+ (Kafka's ``ConfigEntry.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


Value = int | float | str | bool | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One topic config key: how it parses, its default and what it means."""

    name: str
    type: ConfigType
    default: str
    """The default as Kafka prints it in DescribeConfigs."""
    documentation: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    sensitive: bool = False
    #: Values accepted outside ``minimum``..``maximum`` (gzip's -1, "the codec's default").
    also_allowed: tuple[int, ...] = ()

    @property
    def type_id(self) -> int:
        return int(self.type)

    @property
    def is_list(self) -> bool:
        return self.type is ConfigType.LIST

    @property
    def attribute(self) -> str:
        """The :class:`LogConfig` field holding this key."""
        return self.name.replace(".", "_")

    def parse(self, raw: str) -> Value:
        """The typed value of ``raw``; raises :class:`ConfigError`."""
        text = raw.strip()
        value: Value
        if self.type in (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT):
            try:
                value = int(text, 10)
            except ValueError:
                raise ConfigError(self.name, f"{raw!r} is not an integer") from None
            limit = {ConfigType.INT: INT_MAX, ConfigType.LONG: LONG_MAX, ConfigType.SHORT: 32767}[self.type]
            if not -limit - 1 <= value <= limit:
                raise ConfigError(self.name, f"{raw!r} is out of range for type {self.type.name}")
        elif self.type is ConfigType.DOUBLE:
            try:
                value = float(text)
            except ValueError:
                raise ConfigError(self.name, f"{raw!r} is not a number") from None
            if not math.isfinite(value):
                raise ConfigError(self.name, f"{raw!r} is not a finite number")
        elif self.type is ConfigType.BOOLEAN:
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ConfigError(self.name, f"{raw!r} is not true or false")
            value = lowered == "true"
        elif self.type is ConfigType.LIST:
            items = tuple(item.strip() for item in text.split(",") if item.strip())
            if self.choices is not None:
                for item in items:
                    if item not in self.choices:
                        raise ConfigError(self.name, f"{item!r} is not one of {', '.join(self.choices)}")
            if not items and self.choices is not None:
                raise ConfigError(self.name, "the list must not be empty")
            return items
        else:
            value = text
            if self.choices is not None and value not in self.choices:
                raise ConfigError(self.name, f"{raw!r} is not one of {', '.join(self.choices)}")
            return value
        if isinstance(value, int | float) and not isinstance(value, bool) and value not in self.also_allowed:
            if self.minimum is not None and value < self.minimum:
                raise ConfigError(self.name, f"{raw!r} is below the minimum {_number(self.minimum)}")
            if self.maximum is not None and value > self.maximum:
                raise ConfigError(self.name, f"{raw!r} is above the maximum {_number(self.maximum)}")
        return value

    def render(self, value: Value) -> str:
        """``value`` as Kafka prints it (lists comma-separated, booleans lower case)."""
        if isinstance(value, tuple):
            return ",".join(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


_L = ConfigType.LONG
_I = ConfigType.INT
_S = ConfigType.STRING
_B = ConfigType.BOOLEAN
_D = ConfigType.DOUBLE
_LIST = ConfigType.LIST

_KEYS: Final[tuple[ConfigKey, ...]] = (
    ConfigKey(
        "cleanup.policy",
        _LIST,
        "delete",
        "delete: drop old segments by retention; compact: keep the latest record per key; or both.",
        choices=("compact", "delete"),
    ),
    ConfigKey(
        "compression.gzip.level",
        _I,
        "-1",
        "Gzip level when compression.type is gzip: 1 to 9, or -1 for the codec's default.",
        minimum=1,
        maximum=9,
        also_allowed=(-1,),
    ),
    ConfigKey(
        "compression.lz4.level",
        _I,
        "9",
        "LZ4 level when compression.type is lz4.",
        minimum=1,
        maximum=17,
    ),
    ConfigKey(
        "compression.type",
        _S,
        "producer",
        "Codec for stored batches; 'producer' keeps the producer's codec, any other value recompresses.",
        choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    ConfigKey(
        "compression.zstd.level",
        _I,
        "3",
        "Zstandard level when compression.type is zstd.",
        minimum=-131072,
        maximum=22,
    ),
    ConfigKey(
        "delete.retention.ms",
        _L,
        "86400000",
        "How long a tombstone stays readable after its segment was first compacted.",
        minimum=0,
    ),
    ConfigKey(
        "file.delete.delay.ms",
        _L,
        "60000",
        "Delay between renaming a deleted segment to .deleted and removing its files.",
        minimum=0,
    ),
    ConfigKey(
        "flush.messages",
        _L,
        str(LONG_MAX),
        "Fsync the active segment after this many appended messages (batches).",
        minimum=1,
    ),
    ConfigKey(
        "flush.ms", _L, str(LONG_MAX), "Fsync the active segment when unflushed data is this old.", minimum=0
    ),
    ConfigKey("index.interval.bytes", _I, "4096", "Log bytes between two offset-index entries.", minimum=0),
    ConfigKey(
        "max.compaction.lag.ms", _L, str(LONG_MAX), "Longest time a record may stay uncompacted.", minimum=1
    ),
    ConfigKey(
        "max.message.bytes",
        _I,
        "1048588",
        "Largest record batch the log accepts (MESSAGE_TOO_LARGE above it).",
        minimum=0,
    ),
    ConfigKey(
        "message.timestamp.after.max.ms",
        _L,
        "3600000",
        "How far a CreateTime timestamp may lie after the broker's clock.",
        minimum=0,
    ),
    ConfigKey(
        "message.timestamp.before.max.ms",
        _L,
        str(LONG_MAX),
        "How far a CreateTime timestamp may lie before the broker's clock.",
        minimum=0,
    ),
    ConfigKey(
        "message.timestamp.type",
        _S,
        "CreateTime",
        "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the append time.",
        choices=("CreateTime", "LogAppendTime"),
    ),
    ConfigKey(
        "min.cleanable.dirty.ratio",
        _D,
        "0.5",
        "Smallest share of uncompacted bytes that makes the log eligible for compaction.",
        minimum=0,
        maximum=1,
    ),
    ConfigKey("min.compaction.lag.ms", _L, "0", "Shortest time a record stays uncompacted.", minimum=0),
    ConfigKey("min.insync.replicas", _I, "1", "Replicas that must acknowledge an acks=all write.", minimum=1),
    ConfigKey("preallocate", _B, "false", "Accepted for compatibility; segments are never preallocated."),
    ConfigKey(
        "retention.bytes", _L, "-1", "Delete old segments while the log exceeds this size; -1 is no limit."
    ),
    ConfigKey(
        "retention.ms",
        _L,
        "604800000",
        "Delete segments whose newest record is older than this; -1 keeps them forever.",
        minimum=-1,
    ),
    ConfigKey(
        "segment.bytes", _I, "1073741824", "Largest size of one segment file.", minimum=MIN_SEGMENT_BYTES
    ),
    ConfigKey(
        "segment.index.bytes",
        _I,
        "10485760",
        "Largest size of a segment's offset index (and its time index).",
        minimum=4,
    ),
    ConfigKey("segment.jitter.ms", _L, "0", "Accepted for compatibility; rolls are not jittered.", minimum=0),
    ConfigKey("segment.ms", _L, "604800000", "Roll the active segment when it is this old.", minimum=1),
    ConfigKey(
        "unclean.leader.election.enable", _B, "false", "Whether a replica outside the ISR may become leader."
    ),
)

CONFIG_KEYS: Final[Mapping[str, ConfigKey]] = {key.name: key for key in _KEYS}
"""Every topic config key, by Kafka name (sorted)."""

CleanupPolicy = Literal["delete", "compact", "compact,delete"]
TimestampTypeName = Literal["CreateTime", "LogAppendTime"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """Parsed topic configuration. Field names are the Kafka keys with dots as underscores.

    Build with :meth:`from_properties`; the constructor validates too (``ConfigError``).
    """

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_type: str = "producer"
    compression_zstd_level: int = 3
    delete_retention_ms: int = 86_400_000
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588
    message_timestamp_after_max_ms: int = 3_600_000
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 * 1024 * 1024
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False

    def __post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key.attribute)
            key.parse(key.render(value))  # the same rules as a property value
        if not self.cleanup_policy:
            raise ConfigError("cleanup.policy", "the list must not be empty")

    # -- derived ---------------------------------------------------------------------------------
    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def max_index_entries(self) -> int:
        """Offset-index entries a segment may hold before it must roll (time index: //12)."""
        return self.segment_index_bytes // 8

    # -- properties ------------------------------------------------------------------------------
    @classmethod
    def from_properties(cls, properties: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """``base`` (Kafka's defaults when None) with Kafka-named ``properties`` applied.

        Unknown keys and invalid values raise :class:`ConfigError` naming the key.
        """
        changes: dict[str, Value] = {}
        for name in sorted(properties):
            key = CONFIG_KEYS.get(name)
            if key is None:
                raise ConfigError(name, "unknown topic config")
            raw = properties[name]
            if not isinstance(raw, str):
                raise ConfigError(name, f"{raw!r} is not a string")
            changes[key.attribute] = key.parse(raw)
        config = base if base is not None else cls()
        return replace(config, **changes) if changes else config  # type: ignore[arg-type]  # fields typed per key

    def to_properties(self) -> dict[str, str]:
        """Every key with its value as Kafka prints it."""
        return {key.name: key.render(getattr(self, key.attribute)) for key in _KEYS}

    def overrides(self) -> dict[str, str]:
        """Only the keys whose value differs from Kafka's default."""
        return {
            name: value for name, value in self.to_properties().items() if value != CONFIG_KEYS[name].default
        }


DEFAULT_LOG_CONFIG: Final = LogConfig()

_FIELD_NAMES: Final = frozenset(f.name for f in fields(LogConfig))
assert _FIELD_NAMES == {key.attribute for key in _KEYS}, "LogConfig fields and CONFIG_KEYS disagree"
