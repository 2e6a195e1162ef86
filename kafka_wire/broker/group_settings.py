"""The rules Kafka 4.4 holds the broker's group settings to (``group.consumer.*``,
``group.share.*``, ``group.streams.*``): each default within its ``min``/``max`` settings, the
heartbeat interval shorter than the session timeout (``GroupCoordinatorConfig``), the share
settings' own ranges and order (``ShareGroupConfig``), with Kafka's messages. The ``min``/``max``
settings bound the group configs too (:mod:`kafka_wire.broker.controller.group_configs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire.broker.config_properties import PROPERTY_OF

if TYPE_CHECKING:
    from kafka_wire.broker.config import BrokerConfig

#: ``ShareGroupConfig``'s ranges of its settings (field: lowest, highest).
SHARE_RANGES: Final = {
    "group_share_record_lock_duration_ms": (1_000, 3_600_000),
    "group_share_min_record_lock_duration_ms": (1_000, 30_000),
    "group_share_max_record_lock_duration_ms": (30_000, 3_600_000),
    "group_share_delivery_count_limit": (2, 10),
    "group_share_max_delivery_count_limit": (5, 25),
    "group_share_min_delivery_count_limit": (2, 5),
    "group_share_partition_max_record_locks": (100, 10_000),
    "group_share_max_partition_max_record_locks": (2_000, 10_000),
    "group_share_min_partition_max_record_locks": (100, 2_000),
}
#: ``ShareGroupConfig``'s order of its settings: (larger, smaller) pairs, in its order of checks.
SHARE_ORDER: Final = (
    ("group_share_max_delivery_count_limit", "group_share_delivery_count_limit"),
    ("group_share_delivery_count_limit", "group_share_min_delivery_count_limit"),
    ("group_share_max_partition_max_record_locks", "group_share_partition_max_record_locks"),
    ("group_share_partition_max_record_locks", "group_share_min_partition_max_record_locks"),
    ("group_share_record_lock_duration_ms", "group_share_min_record_lock_duration_ms"),
    ("group_share_max_record_lock_duration_ms", "group_share_record_lock_duration_ms"),
)
GROUP_KINDS: Final = ("consumer", "share", "streams")


def group_settings_problem(config: BrokerConfig) -> tuple[str, str] | None:
    """The property that breaks a rule and why (``BrokerConfigError``'s key and reason), or None."""
    for kind in GROUP_KINDS:
        for what in ("session_timeout_ms", "heartbeat_interval_ms"):
            value, low, high = (f"group_{kind}_{bound}{what}" for bound in ("", "min_", "max_"))
            if getattr(config, high) < getattr(config, low):
                return PROPERTY_OF[high], f"must be greater than or equal to {PROPERTY_OF[low]}"
            if getattr(config, value) < getattr(config, low):
                return PROPERTY_OF[value], f"must be greater than or equal to {PROPERTY_OF[low]}"
            if getattr(config, value) > getattr(config, high):
                return PROPERTY_OF[value], f"must be less than or equal to {PROPERTY_OF[high]}"
        heartbeat, session = f"group_{kind}_heartbeat_interval_ms", f"group_{kind}_session_timeout_ms"
        if getattr(config, heartbeat) >= getattr(config, session):
            return PROPERTY_OF[heartbeat], f"must be less than {PROPERTY_OF[session]}"
        low, high = f"group_{kind}_min_assignment_interval_ms", f"group_{kind}_max_assignment_interval_ms"
        for name in (low, high):
            if getattr(config, name) < 0:
                return PROPERTY_OF[name], "must not be negative"
        if getattr(config, high) < getattr(config, low):
            return PROPERTY_OF[high], f"must be greater than or equal to {PROPERTY_OF[low]}"
    for name, (lowest, highest) in SHARE_RANGES.items():
        if not lowest <= getattr(config, name) <= highest:
            return PROPERTY_OF[name], f"must be between {lowest} and {highest}"
    for larger, smaller in SHARE_ORDER:
        if getattr(config, larger) < getattr(config, smaller):
            return PROPERTY_OF[larger], f"must be greater than or equal to {PROPERTY_OF[smaller]}"
    for name in ("group_streams_max_standby_replicas", "group_streams_max_warmup_replicas"):
        if getattr(config, name) < 0:
            return PROPERTY_OF[name], "must not be negative"
    if config.group_streams_min_task_offset_interval_ms < 1:
        return PROPERTY_OF["group_streams_min_task_offset_interval_ms"], "must be at least 1"
    return None
