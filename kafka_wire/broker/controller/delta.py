"""What one applied batch of metadata records changed (Kafka's ``MetadataDelta``, reduced to what
the node acts on), and the builder every image section reports its changes to."""

from __future__ import annotations

import uuid

from kafka_wire.broker.cluster_view import PartitionState
from kafka_wire.quick_dataclass import dataclass

#: A config resource: (``ConfigResourceType``, name); the broker resource named "" holds the
#: cluster-wide defaults.
ConfigKey = tuple[int, str]


@dataclass(frozen=True, slots=True)
class MetadataDelta:
    """What one applied batch changed."""

    #: The offset of the batch's last record.
    offset: int
    #: New or changed partition registrations, in the order they changed (last state per partition).
    partitions: tuple[PartitionState, ...] = ()
    #: Topics removed: (name, topic id).
    removed_topics: tuple[tuple[str, uuid.UUID], ...] = ()
    #: Brokers registered, unregistered, fenced, unfenced or in controlled shutdown.
    brokers: tuple[int, ...] = ()
    #: Config resources whose configs changed.
    configs: tuple[ConfigKey, ...] = ()
    #: Features whose finalized level changed.
    features: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.partitions or self.removed_topics or self.brokers or self.configs or self.features)


class DeltaBuilder:
    """Collects the changes of one batch as the image sections apply its records."""

    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.removed: dict[uuid.UUID, str] = {}
        self.brokers: dict[int, None] = {}
        self.configs: dict[ConfigKey, None] = {}
        self.features: dict[str, None] = {}

    def build(self, offset: int) -> MetadataDelta:
        removed_ids = set(self.removed)
        return MetadataDelta(
            offset=offset,
            partitions=tuple(p for p in self.partitions.values() if p.topic_id not in removed_ids),
            removed_topics=tuple((name, topic_id) for topic_id, name in self.removed.items()),
            brokers=tuple(self.brokers),
            configs=tuple(self.configs),
            features=tuple(self.features),
        )
