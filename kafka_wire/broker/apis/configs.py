"""Describing and changing topic configurations: shared by DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs and CreateTopics.

A topic's value comes from its override (source DYNAMIC_TOPIC_CONFIG), else the broker
property that sets it by Kafka's synonym table (``log.retention.hours`` …, STATIC_BROKER_CONFIG),
else Kafka's default (DEFAULT_CONFIG). The source and synonyms are reported as Kafka reports
them (see :mod:`kafka_wire.broker.topic_synonyms`), the value is the one the topic's log runs with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.log.config import CONFIG_KEYS, LogConfig
from kafka_wire.broker.state import BrokerState, TopicError
from kafka_wire.broker.topic_synonyms import (
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    describe_synonyms,
)
from kafka_wire.messages import (
    DescribeConfigsResponseResourceResult,
    DescribeConfigsResponseSynonym,
    ErrorCode,
)

RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4
RESOURCE_BROKER_LOGGER: Final = 8

__all__ = [
    "DEFAULT_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
    "STATIC_BROKER_CONFIG",
    "alter_topic",
    "describe_topic_configs",
]


def describe_topic_configs(
    state: BrokerState,
    overrides: Mapping[str, str],
    keys: Iterable[str] | None,
    *,
    synonyms: bool,
    documentation: bool,
    version: int = 1,
) -> list[DescribeConfigsResponseResourceResult]:
    """Topic configs as DescribeConfigs lists them at ``version`` (``is_default`` exists in v0 only)."""
    wanted = sorted(CONFIG_KEYS) if keys is None else [k for k in keys if k in CONFIG_KEYS]
    effective = LogConfig.from_properties(overrides, base=state.defaults)
    static = state.config.topic_default_properties
    results = []
    for name in wanted:
        spec = CONFIG_KEYS[name]
        value = spec.render(getattr(effective, spec.attribute))
        chain: list[tuple[str, str, int]] = []
        if name in overrides:
            chain.append((name, value, DYNAMIC_TOPIC_CONFIG))
        chain += describe_synonyms(name, static)
        source = chain[0][2] if chain else DEFAULT_CONFIG
        results.append(
            DescribeConfigsResponseResourceResult(
                name=name,
                value=value,
                read_only=False,
                config_source=source,
                is_default=version == 0 and source == DEFAULT_CONFIG,
                is_sensitive=False,
                synonyms=[DescribeConfigsResponseSynonym(name=n, value=v, source=s) for n, v, s in chain]
                if synonyms
                else [],
                config_type=spec.type_id,
                documentation=spec.documentation if documentation else None,
            )
        )
    return results


def alter_topic(
    state: BrokerState,
    effects: EffectSink,
    resource_type: int,
    resource_name: str,
    change: Callable[[dict[str, str]], tuple[dict[str, str], TopicError | None]],
    validate_only: bool,
) -> tuple[int, str | None]:
    """Apply ``change`` (current overrides to new overrides, or a refusal) to a topic resource;
    returns the resource's (error code, message). Broker resources and internal topics are
    refused with INVALID_REQUEST."""
    if resource_type != RESOURCE_TOPIC:
        return ErrorCode.INVALID_REQUEST, "only topic configs can be altered on this broker"
    topic = state.topic_named(resource_name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if is_internal(topic.name):
        return ErrorCode.INVALID_REQUEST, f"The configs of internal topic {topic.name} belong to the broker."
    configs, problem = change(topic.configs)
    problem = problem or state.check_configs(configs)
    if problem is not None:
        return problem.error_code, problem.message
    if not validate_only:
        state.update_topic_configs(topic, configs)
        state.persist_metadata(effects)
    return ErrorCode.NONE, None
