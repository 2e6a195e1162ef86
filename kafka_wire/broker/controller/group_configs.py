"""Group configs (config resource type 32, KIP-848 and KIP-932): the names Kafka 4.4's
``GroupConfig`` defines and the checks of their values, for IncrementalAlterConfigs and
AlterConfigs on the controller. The broker reads them from the metadata
(``BrokerState.group_configs``): a share group's ``share.auto.offset.reset`` (``latest``,
``earliest``, ``by_duration:<ISO-8601 duration>``) places a new share-partition's start offset,
its ``share.isolation.level`` says whether its share fetches read committed records only. Values
are checked stripped, as Kafka's ``ConfigDef`` trims a string before its validator."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from kafka_wire.broker.share.offset_reset import parse_offset_reset


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
#: (its ``ConfigDef``; Kafka also bounds some by broker settings, e.g. the record lock duration by
#: ``group.share.min/max.record.lock.duration.ms``: not checked here).
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


def group_config_problem(configs: Mapping[str, str]) -> str | None:
    """Why a group's overrides are not valid (Kafka answers INVALID_CONFIG), or None."""
    for name, value in configs.items():
        check = GROUP_CONFIGS.get(name)
        if check is None:
            return f"Unknown group config name: {name}"
        if not check(value):
            return f"Invalid value {value} for configuration {name}"
    return None
