"""Finalized features, for the active controller (Kafka's ``FeatureControlManager``).

It owns the controller's view of the finalized feature levels (:class:`FeaturesImage`) and
finalizes ``metadata.version`` (and ``transaction.version`` at the configured level, as Kafka's
storage tool formats a new cluster) when a leader finds none (a new cluster's first records).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.features_image import FeaturesImage
from kafka_wire.broker.controller.settings import (
    METADATA_VERSION_FEATURE,
    METADATA_VERSION_LEVEL,
    TRANSACTION_VERSION_FEATURE,
)
from kafka_wire.codec.structs import Message


class FeatureControl:
    """The finalized feature levels."""

    def __init__(self, transaction_version: int = 2) -> None:
        self.image = FeaturesImage()
        self._transaction_version = transaction_version

    @property
    def finalized(self) -> Mapping[str, int]:
        return self.image.features

    def reset(self) -> None:
        self.image = FeaturesImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    def bootstrap_records(self) -> list[Message]:
        """What a new leader writes when no ``metadata.version`` is finalized yet."""
        if METADATA_VERSION_FEATURE in self.image.features:
            return []
        records: list[Message] = [
            messages.FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=METADATA_VERSION_LEVEL)
        ]
        if self._transaction_version:
            records.append(
                messages.FeatureLevelRecord(
                    name=TRANSACTION_VERSION_FEATURE, feature_level=self._transaction_version
                )
            )
        return records
