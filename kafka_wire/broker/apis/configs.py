"""Describing and changing topic configurations: shared by DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs and CreateTopics.

A topic's value comes from its override (source DYNAMIC_TOPIC_CONFIG), else the broker's
``log.*`` setting (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG); synonyms list
them in that order, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from kafka_wire.broker.log.config import CONFIG_KEYS
from kafka_wire.broker.state import BrokerState
from kafka_wire.messages import DescribeConfigsResponseResourceResult, DescribeConfigsResponseSynonym

RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4
RESOURCE_BROKER_LOGGER: Final = 8

DYNAMIC_TOPIC_CONFIG: Final = 1
STATIC_BROKER_CONFIG: Final = 4
DEFAULT_CONFIG: Final = 5


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
    results = []
    for name in wanted:
        spec = CONFIG_KEYS[name]
        chain: list[tuple[str, str, int]] = []
        if name in overrides:
            chain.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        if name in state.config.topic_defaults:
            chain.append((f"log.{name}", state.config.topic_defaults[name], STATIC_BROKER_CONFIG))
        chain.append((name, spec.default, DEFAULT_CONFIG))
        _, value, source = chain[0]
        results.append(
            DescribeConfigsResponseResourceResult(
                name=name,
                value=value,
                read_only=False,
                config_source=source,
                is_default=version == 0 and source == DEFAULT_CONFIG,
                is_sensitive=False,
                synonyms=[DescribeConfigsResponseSynonym(name=n, value=v, source=s) for n, v, s in chain] if synonyms else [],
                config_type=spec.type_id,
                documentation=spec.documentation if documentation else None,
            )
        )
    return results
