"""A topic's configs as DescribeConfigs and CreateTopics (v5+) report them.

A topic's value comes from its override (source DYNAMIC_TOPIC_CONFIG), else the broker property
that sets it by Kafka's synonym table (``log.retention.hours`` …, STATIC_BROKER_CONFIG), else
Kafka's default (DEFAULT_CONFIG). The source and synonyms are reported as Kafka reports them (see
:mod:`kafka_wire.broker.topic_synonyms`), the value is the one the topic's log runs with. Used by
the brokers' DescribeConfigs and by the controller's CreateTopics answer; the broker properties
are the answering node's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafka_wire.broker.log.config import CONFIG_KEYS, LogConfig
from kafka_wire.broker.topic_synonyms import DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, describe_synonyms
from kafka_wire.messages import DescribeConfigsResponseResourceResult, DescribeConfigsResponseSynonym


def describe_topic_configs(
    overrides: Mapping[str, str],
    keys: Iterable[str] | None,
    *,
    defaults: LogConfig,
    static: Mapping[str, str],
    synonyms: bool,
    documentation: bool,
    version: int = 1,
) -> list[DescribeConfigsResponseResourceResult]:
    """Topic configs as DescribeConfigs lists them at ``version`` (``is_default`` exists in v0
    only): every one when ``keys`` is None or empty, as Kafka's ``ConfigHelper`` does, else the
    ones named. ``defaults`` are the node's topic defaults, ``static`` its broker properties that
    set them."""
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
