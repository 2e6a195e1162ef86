"""Describing and changing topic configurations: shared by DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs and CreateTopics. How a config is reported is
:mod:`kafka_wire.broker.topic_config_view`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from kafka_wire.broker import topic_config_view
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.state import BrokerState, TopicError
from kafka_wire.broker.topic_synonyms import DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG
from kafka_wire.messages import DescribeConfigsResponseResourceResult, ErrorCode

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
    """Topic configs as DescribeConfigs lists them at ``version``, by this broker's properties
    (see :mod:`kafka_wire.broker.topic_config_view`)."""
    return topic_config_view.describe_topic_configs(
        overrides,
        keys,
        defaults=state.defaults,
        static=state.config.topic_default_properties,
        synonyms=synonyms,
        documentation=documentation,
        version=version,
    )


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
        state.update_topic_configs(topic, configs, effects)
    return ErrorCode.NONE, None
