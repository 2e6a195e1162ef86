"""Group configs (config resource type 32, KIP-848 and KIP-932): the names Kafka 4.4's
``GroupConfig`` defines and the checks of their values, for IncrementalAlterConfigs and
AlterConfigs on the controller. The broker reads them from the metadata
(``BrokerState.group_configs``): a share group's ``share.auto.offset.reset`` (``latest``,
``earliest``, ``by_duration:<ISO-8601 duration>``) places a new share-partition's start offset,
its ``share.isolation.level`` says whether its share fetches read committed records only. Values
are checked stripped, as Kafka's ``ConfigDef`` trims a string before its validator.

Then, as Kafka 4.4's ``GroupConfig.validate`` on the controller, against the broker's settings
(:class:`GroupConfigBounds`, the controller node's ``group.*`` properties): each bounded value
within its ``group.<type>.min/max.*`` settings, a session timeout greater than the heartbeat
interval of the same group type (the one not set taken at the broker's default), a streams
assignor the broker has, no duplicate rack tag and no DLQ topic name starting with ``__``, in
Kafka's order and with its messages. The whole of a group's configs is checked (what is set
already with the change), as Kafka's controller hands its validator."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.share.offset_reset import parse_offset_reset
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.config import BrokerConfig


def _int_at_least(low: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return int(value.strip()) >= low
        except ValueError:
            return False

    return check


def _boolean(value: str) -> bool:
    return value.strip().lower() in ("true", "false")


def _any(value: str) -> bool:
    return True


def _reset(value: str) -> bool:
    """``latest``, ``earliest`` or ``by_duration:<ISO-8601 duration>`` not negative, as Kafka
    4.4's ``ShareGroupAutoOffsetResetStrategy`` reads them (``share.offset_reset``)."""
    return parse_offset_reset(value.strip()) is not None


def _isolation(value: str) -> bool:
    return value.strip() in ("read_uncommitted", "read_committed")


#: Each group config name Kafka 4.4's ``GroupConfig`` defines, and the check of its type and range
#: (its ``ConfigDef``; the broker's bounds follow, :func:`bounds_problem`).
GROUP_CONFIGS: Final[dict[str, Callable[[str], bool]]] = {
    "consumer.assignment.interval.ms": _int_at_least(0),
    "consumer.assignor.offload.enable": _boolean,
    "consumer.heartbeat.interval.ms": _int_at_least(1),
    "consumer.session.timeout.ms": _int_at_least(1),
    "errors.deadletterqueue.copy.record.enable": _boolean,
    "errors.deadletterqueue.topic.name": _any,
    "share.assignment.interval.ms": _int_at_least(0),
    "share.assignor.offload.enable": _boolean,
    "share.auto.offset.reset": _reset,
    "share.delivery.count.limit": _int_at_least(2),
    "share.heartbeat.interval.ms": _int_at_least(1),
    "share.isolation.level": _isolation,
    "share.partition.max.record.locks": _int_at_least(100),
    "share.record.lock.duration.ms": _int_at_least(1000),
    "share.renew.acknowledge.enable": _boolean,
    "share.session.timeout.ms": _int_at_least(1),
    "streams.acceptable.recovery.lag": _int_at_least(0),
    "streams.assignment.interval.ms": _int_at_least(0),
    "streams.assignor.name": _any,
    "streams.assignor.offload.enable": _boolean,
    "streams.heartbeat.interval.ms": _int_at_least(1),
    "streams.initial.rebalance.delay.ms": _int_at_least(0),
    "streams.num.standby.replicas": _int_at_least(0),
    "streams.num.warmup.replicas": _int_at_least(0),
    "streams.rack.aware.assignment.tags": _any,
    "streams.session.timeout.ms": _int_at_least(1),
    "streams.task.offset.interval.ms": _int_at_least(1),
}


#: The streams assignors Kafka 4.4's broker has (``group.streams.assignors``, as Java's
#: ``List.toString`` writes it in the message).
STREAMS_ASSIGNORS: Final = ("sticky",)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfigBounds:
    """The broker settings group configs are checked against, named as ``BrokerConfig``'s fields
    (the Kafka property with dots: ``group_share_min_record_lock_duration_ms`` is
    ``group.share.min.record.lock.duration.ms``); Kafka 4.4's defaults."""

    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_min_delivery_count_limit: int = 2
    group_share_max_delivery_count_limit: int = 10
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4000
    group_share_min_assignment_interval_ms: int = 0
    group_share_max_assignment_interval_ms: int = 15_000
    group_streams_session_timeout_ms: int = 45_000
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5_000
    group_streams_min_heartbeat_interval_ms: int = 5_000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_max_standby_replicas: int = 2
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15_000
    group_streams_min_task_offset_interval_ms: int = 15_000
    group_streams_max_warmup_replicas: int = 20

    @classmethod
    def of(cls, config: BrokerConfig) -> GroupConfigBounds:
        """The bounds a broker configuration sets."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls)})


def _between(config: str) -> tuple[str, str | None, str | None]:
    """A group config bounded by the ``min`` and ``max`` settings of its name (``share.x.ms``:
    ``group.share.min.x.ms`` and ``group.share.max.x.ms``)."""
    kind, _, rest = config.partition(".")
    setting = rest.replace(".", "_")
    return config, f"group_{kind}_min_{setting}", f"group_{kind}_max_{setting}"


#: ``GroupConfig.validate``'s checks in its order: (group config, its lowest, its highest) as
#: bound settings (a field of :class:`GroupConfigBounds`, or None for no bound on that side).
BOUNDED: Final = (
    _between("consumer.heartbeat.interval.ms"),
    _between("consumer.session.timeout.ms"),
    _between("consumer.assignment.interval.ms"),
    _between("share.heartbeat.interval.ms"),
    _between("share.session.timeout.ms"),
    _between("share.record.lock.duration.ms"),
    _between("share.delivery.count.limit"),
    _between("share.partition.max.record.locks"),
    _between("share.assignment.interval.ms"),
    _between("streams.heartbeat.interval.ms"),
    _between("streams.session.timeout.ms"),
    ("streams.num.standby.replicas", None, "group_streams_max_standby_replicas"),
    _between("streams.assignment.interval.ms"),
    ("streams.task.offset.interval.ms", "group_streams_min_task_offset_interval_ms", None),
    ("streams.num.warmup.replicas", None, "group_streams_max_warmup_replicas"),
)
_DEFAULT_BOUNDS: Final = GroupConfigBounds()


def _bound_problem(name: str, value: int, low: int | None, high: int | None) -> str | None:
    if low is not None and high is not None:
        return None if low <= value <= high else f"{name} must be in the range {low} to {high} inclusive."
    if high is not None and value > high:
        return f"{name} must be less than or equal to {high}"
    if low is not None and value < low:
        return f"{name} must be greater than or equal to {low}"
    return None


def bounds_problem(configs: Mapping[str, str], bounds: GroupConfigBounds) -> str | None:
    """Why valid-typed group configs break the broker's bounds (see the module docstring), or None."""
    for name, low, high in BOUNDED:
        if name in configs:
            problem = _bound_problem(
                name,
                int(configs[name].strip()),
                None if low is None else getattr(bounds, low),
                None if high is None else getattr(bounds, high),
            )
            if problem is not None:
                return problem
    assignor = configs.get("streams.assignor.name")
    if assignor is not None and assignor.strip() not in STREAMS_ASSIGNORS:
        registered = "[" + ", ".join(STREAMS_ASSIGNORS) + "]"
        return (
            f"streams.assignor.name '{assignor.strip()}' is not a registered task assignor. "
            f"Registered assignors are: {registered}."
        )
    for kind in ("consumer", "share", "streams"):
        session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        if session in configs or heartbeat in configs:
            session_ms = (
                int(configs[session].strip())
                if session in configs
                else getattr(bounds, f"group_{kind}_session_timeout_ms")
            )
            heartbeat_ms = (
                int(configs[heartbeat].strip())
                if heartbeat in configs
                else getattr(bounds, f"group_{kind}_heartbeat_interval_ms")
            )
            if session_ms <= heartbeat_ms:
                return f"{session} must be greater than {heartbeat}"
    dlq = configs.get("errors.deadletterqueue.topic.name")
    if dlq is not None and dlq.strip().startswith("__"):
        return "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
    return None


def _duplicate_tags(configs: Mapping[str, str]) -> bool:
    """Whether ``streams.rack.aware.assignment.tags`` names a tag twice (Kafka splits the trimmed
    value at commas with the spaces around them)."""
    value = configs.get("streams.rack.aware.assignment.tags")
    if value is None or not value.strip():
        return False
    tags = [tag.strip() for tag in value.strip().split(",")]
    return len(set(tags)) != len(tags)


def group_config_problem(
    configs: Mapping[str, str], bounds: GroupConfigBounds = _DEFAULT_BOUNDS
) -> str | None:
    """Why a group's overrides are not valid (Kafka answers INVALID_CONFIG), or None: unknown
    names, then duplicate rack tags, then each value's type and range, then the broker's
    ``bounds``."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            return f"Unknown group config name: {name}"
    if _duplicate_tags(configs):
        return "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    for name, value in configs.items():
        if not GROUP_CONFIGS[name](value):
            return f"Invalid value {value} for configuration {name}"
    return bounds_problem(configs, bounds)
