"""Group configs against the broker's bounds, as Kafka 4.4's ``GroupConfig.validate`` checks them
on the controller: each bounded value within its ``group.*.min/max.*`` broker settings, a
session timeout above the heartbeat interval (a side not set is the broker's default), the
streams assignor among the broker's, no duplicate rack tags, no DLQ topic named ``__*``."""

from __future__ import annotations

import pytest

from kafka_wire.broker.config import BrokerConfig, BrokerConfigError
from kafka_wire.broker.controller.group_configs import GroupConfigBounds, group_config_problem
from kafka_wire.broker.controller.settings import ControllerConfig


def in_range(name: str, low: int, high: int) -> str:
    return f"{name} must be in the range {low} to {high} inclusive."


#: (name, value, Kafka 4.4's message or None) on the broker's default bounds.
CASES = [
    *(
        (name, str(value), None if low <= value <= high else in_range(name, low, high))
        for name, low, high in [
            ("consumer.session.timeout.ms", 45_000, 60_000),
            ("consumer.heartbeat.interval.ms", 5_000, 15_000),
            ("consumer.assignment.interval.ms", 0, 15_000),
            ("share.session.timeout.ms", 45_000, 60_000),
            ("share.heartbeat.interval.ms", 5_000, 15_000),
            ("share.record.lock.duration.ms", 15_000, 60_000),
            ("share.delivery.count.limit", 2, 10),
            ("share.partition.max.record.locks", 100, 4_000),
            ("share.assignment.interval.ms", 0, 15_000),
            ("streams.session.timeout.ms", 45_000, 60_000),
            ("streams.heartbeat.interval.ms", 5_000, 15_000),
            ("streams.assignment.interval.ms", 0, 15_000),
        ]
        for value in (low - 1, low, high, high + 1)
        # (below the ConfigDef's own minimum the type check answers first: see the next test)
        if value
        >= {"share.delivery.count.limit": 2, "share.partition.max.record.locks": 100}.get(name, min(low, 1))
    ),
    ("consumer.session.timeout.ms", " 45000 ", None),  # trimmed, as Kafka's ConfigDef parses it
    ("streams.num.standby.replicas", "2", None),
    ("streams.num.standby.replicas", "3", "streams.num.standby.replicas must be less than or equal to 2"),
    ("streams.num.warmup.replicas", "20", None),
    ("streams.num.warmup.replicas", "21", "streams.num.warmup.replicas must be less than or equal to 20"),
    ("streams.task.offset.interval.ms", "15000", None),
    (
        "streams.task.offset.interval.ms",
        "14999",
        "streams.task.offset.interval.ms must be greater than or equal to 15000",
    ),
    ("streams.assignor.name", "sticky", None),
    (
        "streams.assignor.name",
        "range",
        "streams.assignor.name 'range' is not a registered task assignor. Registered assignors are: [sticky].",
    ),
    ("streams.rack.aware.assignment.tags", "zone, rack", None),
    ("streams.rack.aware.assignment.tags", "", None),
    (
        "streams.rack.aware.assignment.tags",
        "zone,rack, zone",
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
    ),
    ("errors.deadletterqueue.topic.name", "dlq", None),
    ("errors.deadletterqueue.topic.name", "", None),
    (
        "errors.deadletterqueue.topic.name",
        "__dlq",
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
    ),
]


@pytest.mark.parametrize(("name", "value", "problem"), CASES)
def test_a_value_is_checked_against_the_brokers_bounds(name: str, value: str, problem: str | None) -> None:
    assert group_config_problem({name: value}) == problem


def test_values_below_the_config_def_minimum_keep_the_type_check_message() -> None:
    # Kafka's ConfigDef refuses these before the broker's bounds are looked at.
    assert group_config_problem({"share.delivery.count.limit": "1"}) == (
        "Invalid value 1 for configuration share.delivery.count.limit"
    )
    assert group_config_problem({"share.record.lock.duration.ms": "999"}) == (
        "Invalid value 999 for configuration share.record.lock.duration.ms"
    )


def test_the_bounds_are_the_brokers_settings() -> None:
    bounds = GroupConfigBounds(
        group_share_min_record_lock_duration_ms=1_000,
        group_share_max_delivery_count_limit=25,
        group_consumer_max_session_timeout_ms=90_000,
    )
    assert group_config_problem({"share.record.lock.duration.ms": "1000"}, bounds) is None
    assert group_config_problem({"share.delivery.count.limit": "25"}, bounds) is None
    assert group_config_problem({"consumer.session.timeout.ms": "90000"}, bounds) is None
    assert group_config_problem({"consumer.session.timeout.ms": "90001"}, bounds) == in_range(
        "consumer.session.timeout.ms", 45_000, 90_000
    )


@pytest.mark.parametrize("kind", ["consumer", "share", "streams"])
def test_the_session_timeout_must_exceed_the_heartbeat_interval(kind: str) -> None:
    bounds = GroupConfigBounds(
        **{f"group_{kind}_min_session_timeout_ms": 1_000, f"group_{kind}_max_heartbeat_interval_ms": 50_000}
    )
    session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
    message = f"{session} must be greater than {heartbeat}"
    # Either side alone is compared with the broker's default of the other (45 s and 5 s).
    assert group_config_problem({heartbeat: "45000"}, bounds) == message
    assert group_config_problem({heartbeat: "44999"}, bounds) is None
    assert group_config_problem({session: "5000"}, bounds) == message
    assert group_config_problem({session: "5001"}, bounds) is None
    assert group_config_problem({session: "20000", heartbeat: "20000"}, bounds) == message
    assert group_config_problem({session: "20001", heartbeat: "20000"}, bounds) is None


def test_bounds_are_checked_in_kafkas_order() -> None:
    # Unknown names first, then duplicate tags, then types, then the bounds.
    assert group_config_problem({"consumer.session.timeout.ms": "1", "nope": "1"}) == (
        "Unknown group config name: nope"
    )
    assert group_config_problem(
        {"consumer.session.timeout.ms": "1", "streams.rack.aware.assignment.tags": "a,a"}
    ) == ("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
    assert group_config_problem({"share.session.timeout.ms": "1", "consumer.heartbeat.interval.ms": "1"}) == (
        in_range("consumer.heartbeat.interval.ms", 5_000, 15_000)
    )


def test_the_controller_takes_the_bounds_from_the_broker_config() -> None:
    assert GroupConfigBounds.of(BrokerConfig()) == GroupConfigBounds()
    config = BrokerConfig.from_properties(
        {
            "group.share.min.record.lock.duration.ms": "1000",
            "group.share.max.delivery.count.limit": "25",
            "group.streams.max.standby.replicas": "0",
            "group.consumer.max.assignment.interval.ms": "30000",
        }
    )
    bounds = ControllerConfig.of(config, "c").group_config_bounds
    assert bounds == GroupConfigBounds(
        group_share_min_record_lock_duration_ms=1_000,
        group_share_max_delivery_count_limit=25,
        group_streams_max_standby_replicas=0,
        group_consumer_max_assignment_interval_ms=30_000,
    )


@pytest.mark.parametrize(
    ("properties", "key", "reason"),
    [
        # ShareGroupConfig's ranges and rules.
        ({"group.share.min.record.lock.duration.ms": "999"}, "group.share.min.record.lock.duration.ms", None),
        (
            {"group.share.min.record.lock.duration.ms": "30001"},
            "group.share.min.record.lock.duration.ms",
            None,
        ),
        (
            {"group.share.max.record.lock.duration.ms": "29999"},
            "group.share.max.record.lock.duration.ms",
            None,
        ),
        ({"group.share.max.delivery.count.limit": "26"}, "group.share.max.delivery.count.limit", None),
        ({"group.share.min.delivery.count.limit": "1"}, "group.share.min.delivery.count.limit", None),
        (
            {"group.share.max.partition.max.record.locks": "1999"},
            "group.share.max.partition.max.record.locks",
            None,
        ),
        (
            {"group.share.min.partition.max.record.locks": "99"},
            "group.share.min.partition.max.record.locks",
            None,
        ),
        (
            {
                "group.share.min.record.lock.duration.ms": "20000",
                "group.share.record.lock.duration.ms": "19999",
            },
            "group.share.record.lock.duration.ms",
            "must be greater than or equal to group.share.min.record.lock.duration.ms",
        ),
        (
            {"group.share.max.delivery.count.limit": "5", "group.share.delivery.count.limit": "6"},
            "group.share.max.delivery.count.limit",
            "must be greater than or equal to group.share.delivery.count.limit",
        ),
        # GroupCoordinatorConfig's, as for consumer groups.
        (
            {"group.share.session.timeout.ms": "6000"},
            "group.share.session.timeout.ms",
            "must be greater than or equal to group.share.min.session.timeout.ms",
        ),
        (
            {"group.share.max.heartbeat.interval.ms": "4000"},
            "group.share.max.heartbeat.interval.ms",
            "must be greater than or equal to group.share.min.heartbeat.interval.ms",
        ),
        (
            {"group.streams.heartbeat.interval.ms": "16000"},
            "group.streams.heartbeat.interval.ms",
            "must be less than or equal to group.streams.max.heartbeat.interval.ms",
        ),
        (
            {"group.share.min.session.timeout.ms": "1000", "group.share.session.timeout.ms": "5000"},
            "group.share.heartbeat.interval.ms",
            "must be less than group.share.session.timeout.ms",
        ),
        (
            {"group.consumer.max.assignment.interval.ms": "-1"},
            "group.consumer.max.assignment.interval.ms",
            None,
        ),
    ],
)
def test_the_brokers_bounds_are_checked(properties: dict[str, str], key: str, reason: str | None) -> None:
    with pytest.raises(BrokerConfigError) as caught:
        BrokerConfig.from_properties(properties)
    assert caught.value.key == key
    if reason is not None:
        assert caught.value.reason == reason


def test_the_brokers_bounds_accept_kafkas_extremes() -> None:
    config = BrokerConfig.from_properties(
        {
            "group.share.min.record.lock.duration.ms": "1000",
            "group.share.max.record.lock.duration.ms": "3600000",
            "group.share.min.delivery.count.limit": "2",
            "group.share.max.delivery.count.limit": "25",
            "group.share.min.partition.max.record.locks": "100",
            "group.share.max.partition.max.record.locks": "10000",
            "group.share.min.session.timeout.ms": "6000",
            "group.share.session.timeout.ms": "6000",
            "group.share.min.heartbeat.interval.ms": "1000",
            "group.share.heartbeat.interval.ms": "1000",
        }
    )
    assert config.group_share_max_record_lock_duration_ms == 3_600_000
