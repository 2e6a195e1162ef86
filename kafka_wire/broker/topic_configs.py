"""A topic's configs as Kafka describes them: shared by DescribeConfigs, CreateTopics' v5+
answer (built by the controller) and the broker's own views.

A topic's value comes from its override (source DYNAMIC_TOPIC_CONFIG), else the broker
property that sets it by Kafka's synonym table (``log.retention.hours`` …, STATIC_BROKER_CONFIG),
else Kafka's default (DEFAULT_CONFIG). The source and synonyms are reported as Kafka reports
them (see :mod:`kafka_wire.broker.topic_synonyms`), the value is the one the topic's log runs with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.log.config import CONFIG_KEYS, LogConfig
from kafka_wire.broker.topic_synonyms import DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, describe_synonyms

if TYPE_CHECKING:
    from kafka_wire.messages import (
        DescribeConfigsResponseResourceResult,
    )

#: ``ConfigResource.Type`` values.
RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4
RESOURCE_BROKER_LOGGER: Final = 8


def describe_topic_configs(
    defaults: LogConfig,
    static: Mapping[str, str],
    overrides: Mapping[str, str],
    keys: Iterable[str] | None,
    *,
    synonyms: bool,
    documentation: bool,
    version: int = 1,
) -> list[DescribeConfigsResponseResourceResult]:
    """Topic configs as DescribeConfigs lists them at ``version`` (``is_default`` exists in v0 only):
    every one when ``keys`` is None or empty, as Kafka's ``ConfigHelper`` does, else the ones
    named; ``overrides`` on ``defaults`` (the broker's topic defaults, set by the ``static`` broker
    properties, by Kafka's name)."""
    wanted = sorted(CONFIG_KEYS) if not keys else [k for k in keys if k in CONFIG_KEYS]
    effective = LogConfig.from_properties(overrides, base=defaults)
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
            messages.DescribeConfigsResponseResourceResult(
                name=name,
                value=value,
                read_only=False,
                config_source=source,
                is_default=version == 0 and source == DEFAULT_CONFIG,
                is_sensitive=False,
                synonyms=[
                    messages.DescribeConfigsResponseSynonym(name=n, value=v, source=s) for n, v, s in chain
                ]
                if synonyms
                else [],
                config_type=spec.type_id,
                documentation=spec.documentation if documentation else None,
            )
        )
    return results
