"""Finalized feature levels as the metadata log builds them (Kafka's ``FeaturesImage``), from
FeatureLevelRecord (level 0 removes a feature)."""

from __future__ import annotations

from typing import Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message

#: The records this section applies, by class name (a class loads with its first record).
FEATURE_RECORDS: Final = ("FeatureLevelRecord",)


class FeaturesImage:
    """Feature name -> finalized level."""

    def __init__(self) -> None:
        self.features: dict[str, int] = {}

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.FeatureLevelRecord):
            if record.feature_level == 0:
                self.features.pop(record.name, None)
            else:
                self.features[record.name] = record.feature_level
            delta.features[record.name] = None

    def snapshot_records(self) -> list[Message]:
        return [
            messages.FeatureLevelRecord(name=n, feature_level=v) for n, v in sorted(self.features.items())
        ]
