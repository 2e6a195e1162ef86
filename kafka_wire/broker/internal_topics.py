"""Internal topics: the topics the broker owns (``__consumer_offsets`` and, as Kafka, the ones of
coordinators this broker does not run yet).

Clients cannot create, delete, produce to, trim, re-partition or reconfigure an internal topic;
each API refuses with the error code listed in ``docs/guide/broker.md``. The broker creates the ones
it uses itself (:func:`internal_topic_specs`: Metadata auto-creation, FindCoordinator, the first
group write), with its own partition count and configs, and at start-up takes over one a client
made under an older kafka_wire (:func:`adopt`: marked internal, configs replaced).

Facts from Kafka: the internal names are ``Topic.INTERNAL_TOPICS``; ``__consumer_offsets`` is
created with ``offsets.topic.num.partitions`` partitions and ``cleanup.policy=compact``,
``compression.type=producer`` and ``segment.bytes=offsets.topic.segment.bytes`` (the group
coordinator's ``groupMetadataTopicConfigs``). ``__cluster_metadata`` is not a topic clients see;
Kafka refuses to create it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.metadata import OFFSETS_TOPIC, ClusterMetadata

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
SHARE_GROUP_STATE_TOPIC: Final = "__share_group_state"
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"

#: Kafka's internal topics (``Topic.INTERNAL_TOPICS``): refused to clients whether or not this
#: broker runs their coordinator yet.
INTERNAL_TOPICS: Final = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
#: Names no client may create: the internal topics and KRaft's metadata log.
RESERVED_TOPICS: Final = INTERNAL_TOPICS | {CLUSTER_METADATA_TOPIC}


@dataclass(frozen=True, slots=True)
class InternalTopicSpec:
    """How the broker creates one internal topic."""

    name: str
    partitions: int
    #: Topic config overrides, by Kafka property name.
    configs: Mapping[str, str]


def is_internal(name: str | None) -> bool:
    return name in INTERNAL_TOPICS


def internal_topic_specs(config: BrokerConfig) -> dict[str, InternalTopicSpec]:
    """The internal topics this broker creates itself, as it creates them.

    ``__transaction_state`` and ``__share_group_state`` join this table with their coordinators
    (Kafka: ``transaction.state.log.*`` and ``share.coordinator.state.topic.*``).
    """
    return {
        OFFSETS_TOPIC: InternalTopicSpec(
            OFFSETS_TOPIC,
            config.offsets_topic_num_partitions,
            {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config.offsets_topic_segment_bytes),
            },
        ),
    }


@dataclass(frozen=True, slots=True)
class Adopted:
    """An internal topic whose metadata :func:`adopt` corrected at start-up."""

    name: str
    #: It was an ordinary topic (made by a client under an older kafka_wire).
    was_ordinary: bool
    old_configs: Mapping[str, str]
    new_configs: Mapping[str, str]


def adopt(metadata: ClusterMetadata, config: BrokerConfig, log: logging.Logger) -> list[Adopted]:
    """Take over the internal topics found in ``metadata``: give them the broker's configs (the partition count stays: groups are placed by the actual count).

    Logs what changed (WARNING for a topic a client made) and returns it; the caller persists the
    metadata.
    """
    specs = internal_topic_specs(config)
    changed = []
    for name in sorted(INTERNAL_TOPICS):
        topic = metadata.topics.get(name)
        if topic is None:
            continue
        spec = specs.get(name)
        configs = dict(spec.configs) if spec is not None else topic.configs
        was_ordinary = name in metadata.marked_ordinary
        metadata.marked_ordinary.discard(name)
        if not was_ordinary and topic.configs == configs:
            continue
        adopted = Adopted(name, was_ordinary, dict(topic.configs), dict(configs))
        changed.append(adopted)
        topic.configs = dict(configs)
        if adopted.was_ordinary:
            log.warning(
                "%s was an ordinary topic (made by a client): the broker takes it over as an internal topic; "
                "configs %s replaced by %s",
                name,
                adopted.old_configs,
                adopted.new_configs,
            )
        else:
            log.info("internal topic %s: configs set to %s", name, adopted.new_configs)
    return changed
