"""DescribeConfigs and IncrementalAlterConfigs: every topic config Kafka reports (values, sources,
synonyms, types, documentation), the broker's, unknown resources; setting, deleting, appending to
and subtracting from topic configs, validate-only, and every refusal Kafka names. DescribeConfigs
v1 (Kafka 4's lowest), v3 (types and documentation) and v4; IncrementalAlterConfigs v0 and v1."""

from __future__ import annotations

from functools import partial
from typing import Any, Final

import pytest

from kafka_wire.messages import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from tests.differential.compare import Rule, Side, ignored
from tests.differential.configs import LISTED_RULES, TOPIC_CONFIG_RULES, UNLISTED_TOPIC_CONFIGS
from tests.differential.pair import Pair, Peer, poll

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
#: The broker configs kafka-wire lists (Kafka lists about 350).
BROKER_CONFIGS: Final = (
    "advertised.listeners",
    "auto.create.topics.enable",
    "default.replication.factor",
    "delete.topic.enable",
    "group.initial.rebalance.delay.ms",
    "group.max.size",
    "log.retention.hours",
    "log.segment.bytes",
    "min.insync.replicas",
    "node.id",
    "num.partitions",
    "offsets.topic.compression.codec",
    "offsets.topic.num.partitions",
    "offsets.topic.segment.bytes",
    "socket.request.max.bytes",
)


def describe(
    *resources: tuple[int, str, list[str] | None], synonyms: bool = True, documentation: bool = False
) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequestResource(resource_type=t, resource_name=n, configuration_keys=keys)
            for t, n, keys in resources
        ],
        include_synonyms=synonyms,
        include_documentation=documentation,
    )


@pytest.fixture(scope="module")
def topics(pair_module: Pair) -> None:
    pair_module.create_topic("dc-defaults")
    pair_module.create_topic(
        "dc-set",
        configs={"retention.ms": "3600000", "cleanup.policy": "compact", "max.message.bytes": "2000000"},
    )


@pytest.mark.parametrize(
    ("version", "synonyms", "documentation"),
    [
        (1, False, False),
        (1, True, False),
        (3, True, True),
        (4, False, True),
        (4, True, False),
        (4, True, True),
    ],
)
def test_topic_configs(pair: Pair, topics: None, version: int, synonyms: bool, documentation: bool) -> None:
    """Every config of a topic with defaults and of one with overrides (null keys), then some
    named (an unknown name among them) and an empty list of keys (Kafka: every config)."""
    request = describe(
        (TOPIC, "dc-defaults", None),
        (TOPIC, "dc-set", ["retention.ms", "no.such.config", "segment.bytes", "cleanup.policy"]),
        (TOPIC, "dc-set", []),
        synonyms=synonyms,
        documentation=documentation,
    )
    kafka, _ = pair.check(request, version, TOPIC_CONFIG_RULES)
    assert len(kafka.results[0].configs) > 30


@pytest.mark.deliberate(
    *UNLISTED_TOPIC_CONFIGS, reason="kafka-wire does not list the topic configs it does not implement"
)
def test_every_topic_config(pair: Pair, topics: None) -> None:
    pair.check(describe((TOPIC, "dc-defaults", None)), 4, LISTED_RULES)


@pytest.mark.parametrize("version", [1, 4])
def test_unknown_and_invalid_resources(pair: Pair, version: int) -> None:
    request = describe(
        (TOPIC, "dc-unknown", None),
        (TOPIC, "bad name!", None),
        (BROKER, "2", None),
        (BROKER, "not-a-number", None),
        (99, "x", None),
    )
    pair.check(request, version)


def _only_listed(value: Any, side: Side) -> Any:
    """The broker configs kafka-wire lists, of either side's answer."""
    return [c for c in value if c.name in BROKER_CONFIGS] if isinstance(value, list) else value


#: Broker configs: those kafka-wire lists compared by value.
BROKER_RULES: Final = (
    Rule("results[].configs", _only_listed, "kafka-wire lists a few broker configs"),
    Rule("*.config_source", ignored, "kafka-wire reports every broker config as static"),
    Rule("*.config_type", ignored, "kafka-wire reports every broker config as a string"),
    Rule("*.read_only", ignored, "kafka-wire's broker configs are all read-only"),
    Rule("*.synonyms", ignored, "kafka-wire reports no synonyms of broker configs"),
    Rule("*.documentation", ignored, "kafka-wire has no documentation of broker configs"),
    Rule("*configs[name='advertised.listeners'].value", ignored, "each node's own ports"),
)


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize(
    "name",
    [
        "1",
        pytest.param(
            "",
            marks=pytest.mark.deliberate(
                "*configs[name='min.insync.replicas']",
                reason="Kafka 4 with eligible leader replicas writes min.insync.replicas as a cluster "
                "default when it is formatted; kafka-wire has no dynamic broker configs to list",
            ),
        ),
    ],
)
def test_broker_config_values(pair: Pair, version: int, name: str) -> None:
    """This broker ("1") and the cluster default (""): the values of the configs kafka-wire lists."""
    kafka, _ = pair.check(describe((BROKER, name, None)), version, BROKER_RULES)
    assert kafka.results[0].error_code == ErrorCode.NONE
    if name:
        assert {c.name for c in kafka.results[0].configs} >= set(BROKER_CONFIGS)


@pytest.mark.deliberate(
    "results[].configs[]",
    "*.config_source",
    "*.config_type",
    "*.read_only",
    "*.synonyms",
    "*.synonyms[]",
    "*.documentation",
    "*.value",
    reason="kafka-wire lists a few broker configs, all static strings without synonyms",
)
def test_every_broker_config(pair: Pair) -> None:
    pair.check(describe((BROKER, "1", None)), 4)


@pytest.mark.deliberate(
    "results[].error_code",
    "results[].error_message",
    "results[].configs[]",
    reason="kafka-wire has no broker loggers",
)
def test_broker_loggers(pair: Pair) -> None:
    pair.check(describe((BROKER_LOGGER, "1", None)), 4)


# -- IncrementalAlterConfigs ----------------------------------------------------------------------

Op = IncrementalAlterConfigsRequestAlterableConfig


def alter(
    *resources: tuple[int, str, list[Op]], validate_only: bool = False
) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequestAlterConfigsResource(resource_type=t, resource_name=n, configs=ops)
            for t, n, ops in resources
        ],
        validate_only=validate_only,
    )


def op(name: str, operation: int = SET, value: str | None = None) -> Op:
    return Op(name=name, config_operation=operation, value=value)


#: Changes of one topic (``ac-refused``) with what Kafka answers: its refusals, and two it takes.
ALTER_CASES: Final = {
    "not a number": ([op("retention.ms", SET, "abc")], ErrorCode.INVALID_CONFIG),
    "under the minimum": ([op("min.insync.replicas", SET, "0")], ErrorCode.INVALID_CONFIG),
    "not in the set": ([op("cleanup.policy", SET, "nope")], ErrorCode.INVALID_CONFIG),
    "unknown config": ([op("no.such.config", SET, "1")], ErrorCode.INVALID_CONFIG),
    "null value": ([op("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST),
    "append to a scalar": ([op("retention.ms", APPEND, "5")], ErrorCode.INVALID_CONFIG),
    "subtract from a scalar": ([op("retention.ms", SUBTRACT, "5")], ErrorCode.INVALID_CONFIG),
    "unknown operation": ([op("retention.ms", 7, "5")], ErrorCode.UNKNOWN_SERVER_ERROR),
    "the same config twice": (
        [op("retention.ms", SET, "5"), op("retention.ms", SET, "6")],
        ErrorCode.INVALID_REQUEST,
    ),
    "delete an unknown config": ([op("no.such.config", DELETE)], ErrorCode.NONE),
    "a config kafka-wire lacks": ([op("remote.storage.enable", SET, "false")], ErrorCode.NONE),
}
#: Cases kafka-wire answers deliberately otherwise.
ALTER_DELIBERATE: Final = {"a config kafka-wire lacks"}


@pytest.fixture(scope="module")
def refused_topic(pair_module: Pair) -> None:
    pair_module.create_topic("ac-refused")


@pytest.mark.parametrize(
    ("version", "validate_only"),
    [(0, True), (1, True), (1, False)],
    ids=["v0-validate-only", "validate-only", "for-real"],
)
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            marks=pytest.mark.deliberate(
                "responses[].error_code",
                "responses[].error_message",
                reason="kafka-wire refuses the topic configs it does not implement",
            ),
        )
        if case in ALTER_DELIBERATE
        else case
        for case in ALTER_CASES
    ],
)
def test_alter_refused(pair: Pair, refused_topic: None, case: str, version: int, validate_only: bool) -> None:
    ops, error = ALTER_CASES[case]
    kafka, _ = pair.check(alter((TOPIC, "ac-refused", ops), validate_only=validate_only), version)
    assert kafka.responses[0].error_code == error
    if error == ErrorCode.NONE and not validate_only:
        settle(pair, "ac-refused", ops)
    pair.check(describe((TOPIC, "ac-refused", None)), 4, TOPIC_CONFIG_RULES)


@pytest.mark.parametrize("version", [0, 1])
def test_alter_resources_refused(pair: Pair, version: int) -> None:
    """An unknown topic, the same resource twice, an unknown resource type."""
    pair.check(alter((TOPIC, "ac-unknown", [op("retention.ms", SET, "5")])), version)
    twice = alter(
        (TOPIC, "ac-refused", [op("retention.ms", SET, "5")]),
        (TOPIC, "ac-refused", [op("retention.ms", SET, "6")]),
    )
    pair.check(twice, version)
    pair.check(alter((99, "x", [op("retention.ms", SET, "5")])), version)


@pytest.mark.parametrize("version", [0, 1])
def test_alter(pair: Pair, version: int) -> None:
    """Validate-only changes nothing; set, append, subtract and delete change what DescribeConfigs
    shows (synonyms, sources)."""
    name = f"ac-{version}"
    pair.create_topic(name)
    steps = [
        [op("retention.ms", SET, "7200000"), op("cleanup.policy", APPEND, "compact")],
        [op("cleanup.policy", SUBTRACT, "delete"), op("segment.ms", SET, "100000")],
        [op("cleanup.policy", APPEND, "compact"), op("max.message.bytes", SET, "100000")],
        [op("retention.ms", DELETE), op("cleanup.policy", DELETE), op("no.such.config", DELETE)],
    ]
    for ops in steps:
        pair.check(alter((TOPIC, name, ops), validate_only=True), version)
        pair.check(describe((TOPIC, name, None)), 4, TOPIC_CONFIG_RULES)
        pair.check(alter((TOPIC, name, ops)), version)
        settle(pair, name, ops)
        pair.check(describe((TOPIC, name, None)), 4, TOPIC_CONFIG_RULES)


def settle(pair: Pair, topic: str, ops: list[Op]) -> None:
    """Wait until both brokers' DescribeConfigs of ``topic`` show the changes ``ops`` made."""
    for peer in (pair.kafka, pair.kafka_wire):
        poll(f"{peer.side.name} to apply {ops}", partial(_applied, peer, topic, ops))


def _applied(peer: Peer, topic: str, ops: list[Op]) -> bool:
    """Whether ``peer``'s DescribeConfigs of ``topic`` shows every change of ``ops`` (Kafka's
    broker applies a change once the controller's record reaches it, after the answer)."""
    answer = peer.request(describe((TOPIC, topic, None)), 4)
    shown = {c.name: c for r in answer.results for c in r.configs}
    for change in ops:
        entry = shown.get(change.name)
        values = [] if entry is None or entry.value is None else entry.value.split(",")
        if change.config_operation == SET and (entry is None or entry.value != change.value):
            return False
        if change.config_operation == DELETE and entry is not None and entry.config_source == 1:
            return False  # still the topic's own value (DYNAMIC_TOPIC_CONFIG)
        if change.config_operation == APPEND and change.value not in values:
            return False
        if change.config_operation == SUBTRACT and change.value in values:
            return False
    return True
