"""``share.auto.offset.reset`` values as Kafka 4.4 reads them (``ShareGroupAutoOffsetResetStrategy``
over ``java.time.Duration.parse``; the expected outcomes were checked against JDK 17's parser),
and the group-config check that refuses the others (INVALID_CONFIG)."""

from __future__ import annotations

import pytest

from kafka_wire.broker.controller.group_configs import group_config_problem
from kafka_wire.broker.share.offset_reset import duration_nanos, parse_offset_reset, reset_timestamp_ms

S = 1_000_000_000
LONG_MAX = (1 << 63) - 1


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("PT1H", 3600 * S),
        ("pt1h", 3600 * S),  # letters in either case
        ("P1Dt", 86400 * S),  # a lower-case T with nothing after it is taken (the JDK's check is for "T")
        ("P1dT1h", 25 * 3600 * S),
        ("-PT1H", -3600 * S),
        ("PT-0S", 0),
        ("-PT0S", 0),
        ("+PT1H", 3600 * S),
        ("P+1D", 86400 * S),
        ("PT1.5S", 3 * S // 2),
        ("PT1,5S", 3 * S // 2),
        ("PT1.S", S),
        ("PT-0.5S", -S // 2),
        ("-P-1D", 86400 * S),
        ("P1DT-1H", 23 * 3600 * S),
        ("PT1M-1S", 59 * S),
        ("PT9223372036854775807S", LONG_MAX * S),
        ("PT2562047788015215H", 2562047788015215 * 3600 * S),
        ("P106751991167300D", 106751991167300 * 86400 * S),
    ],
)
def test_durations_the_jdk_reads(text: str, nanos: int) -> None:
    assert duration_nanos(text) == nanos


@pytest.mark.parametrize(
    "text",
    [
        "P1DT",  # an upper-case T with no time after it
        "PT",
        "P",
        "",
        "PT.5S",
        "P1W",
        "P1Y",
        "P1M",
        "PT0.1234567891S",  # ten fraction digits
        "P106751991167301D",  # days past a 64-bit count of seconds
        "PT9223372036854775808S",
        "PT2562047788015216H",
        " PT1H",
        "PT1H ",
        "1H",
    ],
)
def test_durations_the_jdk_refuses(text: str) -> None:
    assert duration_nanos(text) is None


def test_offset_reset_values() -> None:
    assert parse_offset_reset("latest") == "latest"
    assert parse_offset_reset("earliest") == "earliest"
    assert parse_offset_reset("by_duration:PT1H") == 3600 * S
    assert parse_offset_reset("by_duration:PT0S") == 0
    # refused as Kafka 4.4 refuses them: upper case, "none" (a consumer's), no duration, a
    # negative one, an unreadable one
    for value in ("LATEST", "Earliest", "none", "by_duration", "by_duration:", "by_duration:-PT1H"):
        assert parse_offset_reset(value) is None, value
    assert parse_offset_reset("by_duration:PT-0.001S") is None
    assert parse_offset_reset("BY_DURATION:PT1H") is None
    assert parse_offset_reset("by_duration:P1W") is None


def test_the_reset_timestamp_is_now_less_the_duration_rounded_down() -> None:
    assert reset_timestamp_ms(10_000, 3 * S) == 7_000
    assert reset_timestamp_ms(10_000, 1) == 9_999  # Instant.minus then toEpochMilli: floor
    assert reset_timestamp_ms(10_000, 0) == 10_000


def test_the_group_config_check_refuses_what_kafka_refuses() -> None:
    ok = ("latest", "earliest", "by_duration:PT1H", "by_duration:P1DT2H3M4.5S", " by_duration:PT5M ")
    for value in ok:
        assert group_config_problem({"share.auto.offset.reset": value}) is None, value
    for value in (
        "by_duration:",
        "by_duration:PT",
        "by_duration:-PT1H",
        "by_duration:1h",
        "none",
        "sometime",
    ):
        problem = group_config_problem({"share.auto.offset.reset": value})
        assert problem == f"Invalid value {value} for configuration share.auto.offset.reset"
    assert group_config_problem({"share.isolation.level": "read_committed"}) is None
    assert group_config_problem({"share.isolation.level": " read_uncommitted"}) is None
    assert group_config_problem({"share.isolation.level": "READ_COMMITTED"}) is not None
