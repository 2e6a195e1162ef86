"""Dynamic configs as the metadata log builds them (Kafka's ``ConfigurationsImage``): per resource
(a topic, a broker, or the cluster-wide broker defaults named "") its config overrides, from
ConfigRecord (a null value removes one)."""

from __future__ import annotations

import enum
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import ConfigKey, DeltaBuilder
from kafka_wire.codec.structs import Message


class ConfigResourceType(enum.IntEnum):
    """``ConfigRecord.ResourceType`` (Kafka's ``ConfigResource.Type``)."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    #: KIP-848 / KIP-932 group configs (``share.auto.offset.reset``, ...).
    GROUP = 32


#: The records this section applies, by class name (a class loads with its first record).
CONFIG_RECORDS: Final = ("ConfigRecord",)


class ConfigsImage:
    """Config overrides by resource."""

    def __init__(self) -> None:
        self.configs: dict[ConfigKey, dict[str, str]] = {}

    def topic_configs(self, topic: str) -> dict[str, str]:
        return dict(self.configs.get((ConfigResourceType.TOPIC, topic), {}))

    def configs_of(self, resource_type: int, name: str) -> dict[str, str]:
        return dict(self.configs.get((resource_type, name), {}))

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.ConfigRecord):
            key = (record.resource_type, record.resource_name)
            values = self.configs.setdefault(key, {})
            if record.value is None:
                values.pop(record.name, None)
                if not values:
                    del self.configs[key]
            else:
                values[record.name] = record.value
            delta.configs[key] = None

    def topic_removed(self, topic: str, delta: DeltaBuilder) -> None:
        """A removed topic's configs go with it (Kafka's ``deleteTopicConfigs``)."""
        if self.configs.pop((ConfigResourceType.TOPIC, topic), None) is not None:
            delta.configs[(ConfigResourceType.TOPIC, topic)] = None

    def snapshot_records(self) -> list[Message]:
        return [
            messages.ConfigRecord(resource_type=rtype, resource_name=rname, name=key, value=values[key])
            for (rtype, rname), values in sorted(self.configs.items())
            for key in sorted(values)
        ]
