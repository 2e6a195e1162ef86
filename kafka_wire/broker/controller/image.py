"""The cluster's metadata as the ``__cluster_metadata`` log builds it (Kafka's ``MetadataImage``).

:class:`MetadataImage` applies metadata records in log order: broker registrations (epoch,
incarnation id, endpoints, rack, fenced, controlled shutdown), topics and their partition
registrations, configs, finalized features and the next producer id block. Both the active
controller and every broker keep one. It answers the :class:`~kafka_wire.broker.cluster_view.ClusterView`
queries (``broker``, ``brokers``, ``partition``, ``partitions_of``), and each applied batch yields a
:class:`MetadataDelta` (what changed) that the broker side turns into replica role changes.
``snapshot_records`` writes the image back as records (a raft snapshot), ``load_snapshot`` reads one.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from kafka_wire.broker import buggify
from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, LeaderRecoveryState, PartitionState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

#: ``PartitionChangeRecord.Leader`` when the leader does not change (``LeaderConstants.NO_LEADER_CHANGE``).
NO_LEADER_CHANGE: Final = -2
#: A partition without a leader (``LeaderConstants.NO_LEADER``).
NO_LEADER: Final = -1
#: ``PartitionChangeRecord.LeaderRecoveryState`` when it does not change.
NO_RECOVERY_CHANGE: Final = -1


class ConfigResourceType(enum.IntEnum):
    """``ConfigRecord.ResourceType`` (Kafka's ``ConfigResource.Type``)."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


#: ``BrokerRegistrationChangeRecord.Fenced`` values (Kafka's ``BrokerRegistrationFencingChange``:
#: 1 fence, -1 unfence, 0 no change); its ``InControlledShutdown`` is 1 to enter, 0 no change.
FENCE: Final = 1
UNFENCE: Final = -1

#: A config resource: (``ConfigResourceType``, name); the broker resource named "" holds the
#: cluster-wide defaults.
ConfigKey = tuple[int, str]


def merge_partition_change(state: PartitionState, record: PartitionChangeRecord) -> PartitionState:
    """``state`` with ``record`` applied (Kafka's ``PartitionRegistration.merge``): each field the
    record carries replaces the old one; a leader change bumps the leader epoch; every change bumps
    the partition epoch."""
    leader, leader_epoch = state.leader, state.leader_epoch
    if record.leader != NO_LEADER_CHANGE:
        leader, leader_epoch = record.leader, state.leader_epoch + 1
        if buggify.hooks.planted("no-epoch-bump") and record.leader != state.leader:
            leader_epoch = state.leader_epoch  # planted bug: a new leader in the old epoch
    recovery = state.leader_recovery_state
    if record.leader_recovery_state != NO_RECOVERY_CHANGE:
        recovery = LeaderRecoveryState(record.leader_recovery_state)

    def pick(new: list[int] | None, old: tuple[int, ...]) -> tuple[int, ...]:
        return old if new is None else tuple(new)

    return replace(
        state,
        replicas=pick(record.replicas, state.replicas),
        isr=pick(record.isr, state.isr),
        elr=pick(record.eligible_leader_replicas, state.elr),
        last_known_elr=pick(record.last_known_elr, state.last_known_elr),
        removing_replicas=pick(record.removing_replicas, state.removing_replicas),
        adding_replicas=pick(record.adding_replicas, state.adding_replicas),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=state.partition_epoch + 1,
        leader_recovery_state=recovery,
    )


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A broker as registered: what :class:`BrokerInfo` shows, with what only the controller needs."""

    info: BrokerInfo
    incarnation_id: uuid.UUID
    #: Supported feature ranges: name -> (min, max).
    features: tuple[tuple[str, int, int], ...] = ()
    #: Security protocol per listener name (``SecurityProtocol.id``; 0 = PLAINTEXT).
    security_protocols: tuple[tuple[str, int], ...] = ()
    log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionState] = field(default_factory=dict)


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


class _DeltaBuilder:
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


class MetadataImage:
    """The metadata log applied in order."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._brokers: dict[int, BrokerRegistration] = {}
        self.topics: dict[str, TopicImage] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self.configs: dict[ConfigKey, dict[str, str]] = {}
        self.features: dict[str, int] = {}
        #: The first producer id not yet handed out (``ProducerIdsRecord.NextProducerId``).
        self.next_producer_id: int = 0
        self.producer_ids_broker: int = -1
        self.producer_ids_broker_epoch: int = -1
        #: The offset of the last record applied (-1: none).
        self.offset: int = -1
        #: Open metadata transaction (BeginTransactionRecord seen, EndTransactionRecord not yet).
        self.in_transaction: bool = False

    # -- ClusterView queries ---------------------------------------------------------------------

    def brokers(self) -> Sequence[BrokerInfo]:
        return [self._brokers[b].info for b in sorted(self._brokers)]

    def broker(self, node_id: int) -> BrokerInfo | None:
        registration = self._brokers.get(node_id)
        return None if registration is None else registration.info

    def registration(self, node_id: int) -> BrokerRegistration | None:
        return self._brokers.get(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        image = self.topics.get(topic)
        return None if image is None else image.partitions.get(partition)

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        image = self.topics.get(topic)
        return [] if image is None else [image.partitions[p] for p in sorted(image.partitions)]

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._topic_names.get(topic_id)

    def topic_configs(self, topic: str) -> dict[str, str]:
        return dict(self.configs.get((ConfigResourceType.TOPIC, topic), {}))

    def all_partitions(self) -> Iterable[PartitionState]:
        for name in sorted(self.topics):
            yield from self.partitions_of(name)

    # -- applying records ------------------------------------------------------------------------

    def apply_batch(self, offset: int, records: Sequence[Message]) -> MetadataDelta:
        """Apply ``records`` (the batch whose last record is at ``offset``) and say what changed."""
        delta = _DeltaBuilder()
        for record in records:
            self._apply(record, delta)
        self.offset = max(self.offset, offset)
        return delta.build(offset)

    def apply(self, record: Message) -> None:
        self._apply(record, _DeltaBuilder())

    def _apply(self, record: Message, delta: _DeltaBuilder) -> None:
        if isinstance(record, PartitionChangeRecord):
            name = self._topic_names.get(record.topic_id)
            if name is None:
                return
            image = self.topics[name]
            old = image.partitions.get(record.partition_id)
            if old is None:
                return
            new = merge_partition_change(old, record)
            image.partitions[record.partition_id] = new
            delta.partitions[(name, record.partition_id)] = new
        elif isinstance(record, PartitionRecord):
            name = self._topic_names.get(record.topic_id)
            if name is None:
                return
            state = PartitionState(
                topic=name,
                partition=record.partition_id,
                topic_id=record.topic_id,
                replicas=tuple(record.replicas),
                isr=tuple(record.isr),
                leader=record.leader,
                leader_epoch=record.leader_epoch,
                partition_epoch=record.partition_epoch,
                leader_recovery_state=LeaderRecoveryState(record.leader_recovery_state),
                elr=tuple(record.eligible_leader_replicas or ()),
                last_known_elr=tuple(record.last_known_elr or ()),
                adding_replicas=tuple(record.adding_replicas),
                removing_replicas=tuple(record.removing_replicas),
            )
            self.topics[name].partitions[record.partition_id] = state
            delta.partitions[(name, record.partition_id)] = state
        elif isinstance(record, TopicRecord):
            self.topics[record.name] = TopicImage(record.name, record.topic_id)
            self._topic_names[record.topic_id] = record.name
            delta.removed.pop(record.topic_id, None)
        elif isinstance(record, RemoveTopicRecord):
            name = self._topic_names.pop(record.topic_id, None)
            if name is None:
                return
            del self.topics[name]
            if self.configs.pop((ConfigResourceType.TOPIC, name), None) is not None:
                delta.configs[(ConfigResourceType.TOPIC, name)] = None
            delta.removed[record.topic_id] = name
        elif isinstance(record, ConfigRecord):
            key = (record.resource_type, record.resource_name)
            values = self.configs.setdefault(key, {})
            if record.value is None:
                values.pop(record.name, None)
                if not values:
                    del self.configs[key]
            else:
                values[record.name] = record.value
            delta.configs[key] = None
        elif isinstance(record, RegisterBrokerRecord):
            self._brokers[record.broker_id] = BrokerRegistration(
                info=BrokerInfo(
                    node_id=record.broker_id,
                    epoch=record.broker_epoch,
                    endpoints=tuple(Endpoint(e.name, e.host, e.port) for e in record.end_points),
                    rack=record.rack,
                    fenced=record.fenced,
                    in_controlled_shutdown=record.in_controlled_shutdown,
                ),
                incarnation_id=record.incarnation_id,
                features=tuple(
                    (f.name, f.min_supported_version, f.max_supported_version) for f in record.features
                ),
                security_protocols=tuple((e.name, e.security_protocol) for e in record.end_points),
                log_dirs=tuple(record.log_dirs),
            )
            delta.brokers[record.broker_id] = None
        elif isinstance(record, UnregisterBrokerRecord):
            current = self._brokers.get(record.broker_id)
            if current is not None and current.info.epoch == record.broker_epoch:
                del self._brokers[record.broker_id]
                delta.brokers[record.broker_id] = None
        elif isinstance(record, (FenceBrokerRecord, UnfenceBrokerRecord)):
            self._change_broker(record.id, record.epoch, delta, fenced=isinstance(record, FenceBrokerRecord))
        elif isinstance(record, BrokerRegistrationChangeRecord):
            change = {FENCE: True, UNFENCE: False}.get(record.fenced)
            shutdown = True if record.in_controlled_shutdown == 1 else None
            self._change_broker(
                record.broker_id, record.broker_epoch, delta, fenced=change, shutdown=shutdown
            )
        elif isinstance(record, FeatureLevelRecord):
            if record.feature_level == 0:
                self.features.pop(record.name, None)
            else:
                self.features[record.name] = record.feature_level
            delta.features[record.name] = None
        elif isinstance(record, ProducerIdsRecord):
            self.next_producer_id = record.next_producer_id
            self.producer_ids_broker = record.broker_id
            self.producer_ids_broker_epoch = record.broker_epoch
        elif isinstance(record, BeginTransactionRecord):
            self.in_transaction = True
        elif isinstance(record, EndTransactionRecord):
            self.in_transaction = False
        elif isinstance(record, NoOpRecord):
            pass

    def _change_broker(
        self,
        broker_id: int,
        epoch: int,
        delta: _DeltaBuilder,
        *,
        fenced: bool | None = None,
        shutdown: bool | None = None,
    ) -> None:
        current = self._brokers.get(broker_id)
        if current is None or current.info.epoch != epoch:
            return
        info = current.info
        if fenced is not None:
            # A broker that is fenced again leaves controlled shutdown (Kafka: fencing clears it).
            info = replace(
                info, fenced=fenced, in_controlled_shutdown=info.in_controlled_shutdown and not fenced
            )
        if shutdown is not None:
            info = replace(info, in_controlled_shutdown=shutdown)
        self._brokers[broker_id] = replace(current, info=info)
        delta.brokers[broker_id] = None

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot_records(self) -> list[Message]:
        """The image as records, in an order that rebuilds it (a raft snapshot's content)."""
        out: list[Message] = [
            FeatureLevelRecord(name=n, feature_level=v) for n, v in sorted(self.features.items())
        ]
        for broker_id in sorted(self._brokers):
            reg = self._brokers[broker_id]
            protocols = dict(reg.security_protocols)
            out.append(
                RegisterBrokerRecord(
                    broker_id=broker_id,
                    incarnation_id=reg.incarnation_id,
                    broker_epoch=reg.info.epoch,
                    end_points=[
                        RegisterBrokerRecordBrokerEndpoint(
                            name=e.listener,
                            host=e.host,
                            port=e.port,
                            security_protocol=protocols.get(e.listener, 0),
                        )
                        for e in reg.info.endpoints
                    ],
                    features=[
                        RegisterBrokerRecordBrokerFeature(
                            name=n, min_supported_version=lo, max_supported_version=hi
                        )
                        for n, lo, hi in reg.features
                    ],
                    rack=reg.info.rack,
                    fenced=reg.info.fenced,
                    in_controlled_shutdown=reg.info.in_controlled_shutdown,
                    log_dirs=list(reg.log_dirs),
                )
            )
        for name in sorted(self.topics):
            topic = self.topics[name]
            out.append(TopicRecord(name=name, topic_id=topic.topic_id))
            for p in self.partitions_of(name):
                out.append(partition_record(p))
        for (rtype, rname), values in sorted(self.configs.items()):
            for key in sorted(values):
                out.append(
                    ConfigRecord(resource_type=rtype, resource_name=rname, name=key, value=values[key])
                )
        if self.next_producer_id:
            out.append(
                ProducerIdsRecord(
                    broker_id=self.producer_ids_broker,
                    broker_epoch=self.producer_ids_broker_epoch,
                    next_producer_id=self.next_producer_id,
                )
            )
        return out

    def load_snapshot(self, offset: int, records: Sequence[Message]) -> MetadataDelta:
        """Replace the image by the snapshot ``records`` (taken at ``offset``); the delta names
        every partition, broker and config of the new image and every topic that disappeared."""
        before = {(name, t.topic_id) for name, t in self.topics.items()}
        old_brokers = set(self._brokers)
        old_configs = set(self.configs)
        self._reset()
        delta = _DeltaBuilder()
        for record in records:
            self._apply(record, delta)
        self.offset = offset
        for name, topic_id in before:
            if self._topic_names.get(topic_id) != name:
                delta.removed[topic_id] = name
        for b in old_brokers:
            delta.brokers[b] = None
        for c in old_configs:
            delta.configs[c] = None
        return delta.build(offset)


def partition_record(p: PartitionState) -> PartitionRecord:
    """The PartitionRecord that registers ``p`` as it is."""
    return PartitionRecord(
        partition_id=p.partition,
        topic_id=p.topic_id,
        replicas=list(p.replicas),
        isr=list(p.isr),
        removing_replicas=list(p.removing_replicas),
        adding_replicas=list(p.adding_replicas),
        leader=p.leader,
        leader_recovery_state=int(p.leader_recovery_state),
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        eligible_leader_replicas=list(p.elr) if p.elr else None,
        last_known_elr=list(p.last_known_elr) if p.last_known_elr else None,
    )
