"""Topics and their partition registrations as the metadata log builds them (Kafka's
``TopicsImage``).

:class:`TopicsImage` applies TopicRecord, PartitionRecord, PartitionChangeRecord and
RemoveTopicRecord: per topic its id and per partition its :class:`PartitionState` (replicas, ISR,
ELR, leader and epochs, reassignment, recovery state). :func:`merge_partition_change` is Kafka's
``PartitionRegistration.merge``; :func:`partition_record` writes a registration back as a record.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import field, replace
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass

#: ``PartitionChangeRecord.Leader`` when the leader does not change (``LeaderConstants.NO_LEADER_CHANGE``).
NO_LEADER_CHANGE: Final = -2
#: A partition without a leader (``LeaderConstants.NO_LEADER``).
NO_LEADER: Final = -1
#: ``PartitionChangeRecord.LeaderRecoveryState`` when it does not change.
NO_RECOVERY_CHANGE: Final = -1

#: The records this section applies, by class name (a class loads with its first record).
TOPIC_RECORDS: Final = ("TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RemoveTopicRecord")
#: ``LeaderRecoveryState`` by value (an enum call per record costs more than the rest of its replay).
_RECOVERY: Final = {int(state): state for state in LeaderRecoveryState}


def _recovery(value: int) -> LeaderRecoveryState:
    found = _RECOVERY.get(value)
    return found if found is not None else LeaderRecoveryState(value)


def merge_partition_change(
    state: PartitionState, record: messages.PartitionChangeRecord, hooks: Hooks = OFF
) -> PartitionState:
    """``state`` with ``record`` applied (Kafka's ``PartitionRegistration.merge``): each field the
    record carries replaces the old one; a leader change bumps the leader epoch; every change bumps
    the partition epoch."""
    leader, leader_epoch = state.leader, state.leader_epoch
    if record.leader != NO_LEADER_CHANGE:
        leader, leader_epoch = record.leader, state.leader_epoch + 1
        if hooks.planted("no-epoch-bump") and record.leader != state.leader:
            leader_epoch = state.leader_epoch  # planted bug: a new leader in the old epoch
    recovery = state.leader_recovery_state
    if record.leader_recovery_state != NO_RECOVERY_CHANGE:
        recovery = _RECOVERY.get(record.leader_recovery_state) or LeaderRecoveryState(
            record.leader_recovery_state
        )

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


def partition_record(p: PartitionState) -> messages.PartitionRecord:
    """The PartitionRecord that registers ``p`` as it is."""
    return messages.PartitionRecord(
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


def partition_state(record: messages.PartitionRecord, name: str) -> PartitionState:
    """The registration a PartitionRecord of topic ``name`` makes."""
    return PartitionState(
        topic=name,
        partition=record.partition_id,
        topic_id=record.topic_id,
        replicas=tuple(record.replicas),
        isr=tuple(record.isr),
        leader=record.leader,
        leader_epoch=record.leader_epoch,
        partition_epoch=record.partition_epoch,
        leader_recovery_state=_recovery(record.leader_recovery_state),
        elr=tuple(record.eligible_leader_replicas or ()),
        last_known_elr=tuple(record.last_known_elr or ()),
        adding_replicas=tuple(record.adding_replicas),
        removing_replicas=tuple(record.removing_replicas),
    )


@dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionState] = field(default_factory=dict)


class TopicsImage:
    """Topics by name, with their partitions."""

    def __init__(self, hooks: Hooks = OFF) -> None:
        #: The simulator's planted bugs (``buggify.OFF`` outside it).
        self.hooks = hooks
        self.topics: dict[str, TopicImage] = {}
        self._topic_names: dict[uuid.UUID, str] = {}

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        image = self.topics.get(topic)
        return None if image is None else image.partitions.get(partition)

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        image = self.topics.get(topic)
        return [] if image is None else [image.partitions[p] for p in sorted(image.partitions)]

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._topic_names.get(topic_id)

    def all_partitions(self) -> Iterable[PartitionState]:
        for name in sorted(self.topics):
            yield from self.partitions_of(name)

    def replay(
        self, record: Message, delta: DeltaBuilder, prepared: PartitionState | None = None
    ) -> str | None:
        """Apply one topic record; the name of the topic it removed (a RemoveTopicRecord), else None.
        ``prepared``: a PartitionRecord's state, built beforehand (:func:`partition_state`)."""
        if isinstance(record, messages.PartitionChangeRecord):
            name = self._topic_names.get(record.topic_id)
            old = None if name is None else self.topics[name].partitions.get(record.partition_id)
            if name is not None and old is not None:
                new = merge_partition_change(old, record, self.hooks)
                self.topics[name].partitions[record.partition_id] = new
                delta.partitions[(name, record.partition_id)] = new
        elif isinstance(record, messages.PartitionRecord):
            name = self._topic_names.get(record.topic_id)
            if name is not None:
                state = prepared if prepared is not None and prepared.topic == name else None
                state = state or partition_state(record, name)
                self.topics[name].partitions[record.partition_id] = state
                delta.partitions[(name, record.partition_id)] = state
        elif isinstance(record, messages.TopicRecord):
            self.topics[record.name] = TopicImage(record.name, record.topic_id)
            self._topic_names[record.topic_id] = record.name
            delta.removed.pop(record.topic_id, None)
        elif isinstance(record, messages.RemoveTopicRecord):
            name = self._topic_names.pop(record.topic_id, None)
            if name is not None:
                del self.topics[name]
                delta.removed[record.topic_id] = name
            return name
        return None

    def snapshot_records(self) -> list[Message]:
        out: list[Message] = []
        for name in sorted(self.topics):
            out.append(messages.TopicRecord(name=name, topic_id=self.topics[name].topic_id))
            out += [partition_record(p) for p in self.partitions_of(name)]
        return out
