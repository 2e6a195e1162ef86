"""The cluster's metadata as the ``__cluster_metadata`` log builds it (Kafka's ``MetadataImage``).

:class:`MetadataImage` applies metadata records in log order, each to the section that owns its
type (:data:`SECTION_OF`): the registered brokers (:class:`.cluster_image.ClusterImage`), topics
and partitions (:class:`.topics_image.TopicsImage`), dynamic configs
(:class:`.configs_image.ConfigsImage`), finalized features (:class:`.features_image.FeaturesImage`),
the next producer id block (:class:`.producer_ids_image.ProducerIdsImage`), the ACLs
(:class:`.acls_image.AclsImage`), client quotas (:class:`.quotas_image.ClientQuotasImage`) and the
users' SCRAM credentials (:class:`.scram_image.ScramImage`) and the delegation tokens
(:class:`.tokens_image.DelegationTokenImage`). Every node keeps
one (the controller's committed image is its node's). It answers the
:class:`~kafka_wire.broker.cluster_view.ClusterView` queries (``broker``, ``brokers``,
``partition``, ``partitions_of``), and each applied batch yields a
:class:`~kafka_wire.broker.controller.delta.MetadataDelta` (what changed) that the broker side
turns into replica role changes. ``snapshot_records`` writes the image back as records (a raft
snapshot), ``load_snapshot`` reads one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import BrokerInfo, PartitionState
from kafka_wire.broker.controller.acls_image import ACL_RECORDS, AclsImage
from kafka_wire.broker.controller.cluster_image import CLUSTER_RECORDS, BrokerRegistration, ClusterImage
from kafka_wire.broker.controller.configs_image import CONFIG_RECORDS, ConfigsImage
from kafka_wire.broker.controller.delta import ConfigKey, DeltaBuilder, MetadataDelta
from kafka_wire.broker.controller.features_image import FEATURE_RECORDS, FeaturesImage
from kafka_wire.broker.controller.producer_ids_image import PRODUCER_ID_RECORDS, ProducerIdsImage
from kafka_wire.broker.controller.quotas_image import QUOTA_RECORDS, ClientQuotasImage
from kafka_wire.broker.controller.scram_image import SCRAM_RECORDS, ScramImage
from kafka_wire.broker.controller.tokens_image import TOKEN_RECORDS, DelegationTokenImage
from kafka_wire.broker.controller.topics_image import TOPIC_RECORDS, TopicImage, TopicsImage, partition_state
from kafka_wire.broker.work import Steps, chunks, run_steps
from kafka_wire.codec.structs import Message

#: Which section applies each record type, by class name (records of other types, NoOpRecord,
#: change nothing): the record classes load with the first record of each, not at start.
SECTION_OF: Final[dict[str, str]] = {
    **dict.fromkeys(CLUSTER_RECORDS, "cluster"),
    **dict.fromkeys(TOPIC_RECORDS, "topics"),
    **dict.fromkeys(CONFIG_RECORDS, "configs"),
    **dict.fromkeys(FEATURE_RECORDS, "features"),
    **dict.fromkeys(PRODUCER_ID_RECORDS, "producer_ids"),
    **dict.fromkeys(ACL_RECORDS, "acls"),
    **dict.fromkeys(QUOTA_RECORDS, "quotas"),
    **dict.fromkeys(SCRAM_RECORDS, "scram"),
    **dict.fromkeys(TOKEN_RECORDS, "tokens"),
}


class Section(Protocol):
    """One owner of a part of the metadata: an image section, or the controller part holding one."""

    def replay(self, record: Message, delta: DeltaBuilder) -> object: ...

    def snapshot_records(self) -> list[Message]: ...


class TopicsSection(Section, Protocol):
    def replay(self, record: Message, delta: DeltaBuilder) -> str | None:
        """Apply one topic record; the name of the topic it removed, else None."""
        ...


class ConfigsSection(Section, Protocol):
    def topic_removed(self, topic: str, delta: DeltaBuilder) -> None: ...


def route(
    record: Message,
    delta: DeltaBuilder,
    *,
    cluster: Section,
    topics: TopicsSection,
    configs: ConfigsSection,
    features: Section,
    producer_ids: Section,
    acls: Section,
    scram: Section,
    quotas: Section | None = None,
    tokens: Section | None = None,
) -> None:
    """Apply ``record`` to the section owning its type (a removed topic's configs go too)."""
    section = SECTION_OF.get(type(record).__name__)
    if section == "topics":
        removed = topics.replay(record, delta)
        if removed is not None:
            configs.topic_removed(removed, delta)
    elif section == "cluster":
        cluster.replay(record, delta)
    elif section == "configs":
        configs.replay(record, delta)
    elif section == "features":
        features.replay(record, delta)
    elif section == "producer_ids":
        producer_ids.replay(record, delta)
    elif section == "acls":
        acls.replay(record, delta)
    elif section == "quotas" and quotas is not None:
        quotas.replay(record, delta)
    elif section == "scram":
        scram.replay(record, delta)
    elif section == "tokens" and tokens is not None:
        tokens.replay(record, delta)


class MetadataImage:
    """The metadata log applied in order."""

    def __init__(self, hooks: Hooks = OFF) -> None:
        #: The simulator's planted bugs (``buggify.OFF`` outside it).
        self.hooks = hooks
        #: One object for the image's life (a snapshot refills it): the quota manager reads it.
        self.client_quotas = ClientQuotasImage()
        self._reset()

    def _reset(self) -> None:
        self.cluster = ClusterImage()
        self.topics_image = TopicsImage(self.hooks)
        self.configs_image = ConfigsImage()
        self.features_image = FeaturesImage()
        self.producer_ids = ProducerIdsImage()
        self.acls_image = AclsImage()
        self.client_quotas.quotas.clear()
        self.scram = ScramImage()
        self.tokens = DelegationTokenImage()
        #: The offset of the last record applied (-1: none).
        self.offset: int = -1
        #: Open metadata transaction (BeginTransactionRecord seen, EndTransactionRecord not yet).
        self.in_transaction: bool = False

    # -- ClusterView queries ---------------------------------------------------------------------

    def brokers(self) -> Sequence[BrokerInfo]:
        return self.cluster.brokers()

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.cluster.broker(node_id)

    def registration(self, node_id: int) -> BrokerRegistration | None:
        return self.cluster.registration(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self.topics_image.partition(topic, partition)

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        return self.topics_image.partitions_of(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topics_image.topic_name(topic_id)

    def topic_configs(self, topic: str) -> dict[str, str]:
        return self.configs_image.topic_configs(topic)

    def configs_of(self, resource_type: int, name: str) -> dict[str, str]:
        return self.configs_image.configs_of(resource_type, name)

    def all_partitions(self) -> Iterable[PartitionState]:
        return self.topics_image.all_partitions()

    @property
    def topics(self) -> dict[str, TopicImage]:
        return self.topics_image.topics

    @property
    def configs(self) -> dict[ConfigKey, dict[str, str]]:
        return self.configs_image.configs

    @property
    def features(self) -> dict[str, int]:
        return self.features_image.features

    @property
    def next_producer_id(self) -> int:
        return self.producer_ids.next_producer_id

    # -- applying records ------------------------------------------------------------------------

    def apply_batch(self, offset: int, records: Sequence[Message]) -> MetadataDelta:
        """Apply ``records`` (the batch whose last record is at ``offset``) and say what changed."""
        return run_steps(self.apply_steps(offset, records))

    def apply_steps(self, offset: int, records: Sequence[Message]) -> Steps[MetadataDelta]:
        """:meth:`apply_batch` in steps. The registrations of the batch's PartitionRecords are
        built in steps, then the whole batch is applied in the last: a reader of the image (a
        FindCoordinator counting the partitions of ``__consumer_offsets``) never sees part of it."""
        names: dict[uuid.UUID, str] = {}
        prepared: dict[int, PartitionState] = {}
        index = 0
        for chunk in chunks(records):
            for record in chunk:
                # The name first: the other record classes are not loaded for the check.
                kind = type(record).__name__
                if kind == "TopicRecord" and isinstance(record, messages.TopicRecord):
                    names[record.topic_id] = record.name
                elif kind == "PartitionRecord" and isinstance(record, messages.PartitionRecord):
                    name = names.get(record.topic_id) or self.topic_name(record.topic_id)
                    if name is not None:
                        prepared[index] = partition_state(record, name)
                index += 1
            yield len(chunk)
        delta = DeltaBuilder()
        for index, record in enumerate(records):
            state = prepared.get(index)
            if state is None:
                self._apply(record, delta)
            else:
                self.topics_image.replay(record, delta, state)
        self.offset = max(self.offset, offset)
        return delta.build(offset)

    def apply(self, record: Message) -> None:
        self._apply(record, DeltaBuilder())

    def _apply(self, record: Message, delta: DeltaBuilder) -> None:
        route(
            record,
            delta,
            cluster=self.cluster,
            topics=self.topics_image,
            configs=self.configs_image,
            features=self.features_image,
            producer_ids=self.producer_ids,
            acls=self.acls_image,
            quotas=self.client_quotas,
            scram=self.scram,
            tokens=self.tokens,
        )
        kind = type(record).__name__
        if kind == "BeginTransactionRecord":
            self.in_transaction = True
        elif kind == "EndTransactionRecord":
            self.in_transaction = False

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot_records(self) -> list[Message]:
        """The image as records, in an order that rebuilds it (a raft snapshot's content)."""
        return (
            self.features_image.snapshot_records()
            + self.cluster.snapshot_records()
            + self.topics_image.snapshot_records()
            + self.configs_image.snapshot_records()
            + self.producer_ids.snapshot_records()
            + self.acls_image.snapshot_records()
            + self.client_quotas.snapshot_records()
            + self.scram.snapshot_records()
            + self.tokens.snapshot_records()
        )

    def load_snapshot(self, offset: int, records: Sequence[Message]) -> MetadataDelta:
        """Replace the image by the snapshot ``records`` (taken at ``offset``); the delta names
        every partition, broker and config of the new image and every topic that disappeared."""
        before = {(name, t.topic_id) for name, t in self.topics.items()}
        old_brokers = [b.node_id for b in self.brokers()]
        old_configs = set(self.configs)
        self._reset()
        delta = DeltaBuilder()
        for record in records:
            self._apply(record, delta)
        self.offset = offset
        for name, topic_id in before:
            if self.topic_name(topic_id) != name:
                delta.removed[topic_id] = name
        for b in old_brokers:
            delta.brokers[b] = None
        for c in old_configs:
            delta.configs[c] = None
        return delta.build(offset)
