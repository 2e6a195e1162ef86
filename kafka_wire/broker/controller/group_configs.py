"""Group configs (config resource type 32, KIP-848 and KIP-932): the names Kafka 4.4's
``GroupConfig`` defines and the checks of their values, for IncrementalAlterConfigs and
AlterConfigs on the controller. The broker reads them from the metadata
(``BrokerState.group_configs``): a share group's ``share.auto.offset.reset`` (``latest``,
``earliest``) places a new share-partition's start offset."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final


def _positive_int(value: str) -> bool:
    try:
        return int(value) > 0
    except ValueError:
        return False


def _non_negative_int(value: str) -> bool:
    try:
        return int(value) >= 0
    except ValueError:
        return False


def _reset(value: str) -> bool:
    return value in ("latest", "earliest") or (value.startswith("by_duration:") and len(value) > 12)


#: Each group config name Kafka 4.4 defines, and whether a value is valid for it.
GROUP_CONFIGS: Final[dict[str, Callable[[str], bool]]] = {
    "consumer.session.timeout.ms": _positive_int,
    "consumer.heartbeat.interval.ms": _positive_int,
    "share.session.timeout.ms": _positive_int,
    "share.heartbeat.interval.ms": _positive_int,
    "share.record.lock.duration.ms": _positive_int,
    "share.delivery.count.limit": _positive_int,
    "share.partition.max.record.locks": _positive_int,
    "share.auto.offset.reset": _reset,
    "share.isolation.level": lambda v: v in ("read_uncommitted", "read_committed"),
    "share.renew.acknowledge.enable": lambda v: v.lower() in ("true", "false"),
    "streams.session.timeout.ms": _positive_int,
    "streams.heartbeat.interval.ms": _positive_int,
    "streams.num.standby.replicas": _non_negative_int,
    "streams.initial.rebalance.delay.ms": _non_negative_int,
}


def group_config_problem(configs: Mapping[str, str]) -> str | None:
    """Why a group's overrides are not valid (Kafka answers INVALID_CONFIG), or None."""
    for name, value in configs.items():
        check = GROUP_CONFIGS.get(name)
        if check is None:
            return f"Unknown group config name: {name}"
        if not check(value):
            return f"Invalid value {value} for configuration {name}"
    return None
