"""A transaction coordinator driven in memory: writes succeed (or fail as told), markers are written
at once (or held), and every effect is kept for the test to look at."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.txn.config import TxnConfig
from kafka_wire.broker.txn.coordinator import TxnCoordinator
from kafka_wire.broker.txn.effects import Respond, SendMarkers, TxnEffect, TxnPersist
from kafka_wire.broker.txn.metadata import TxnVersion
from kafka_wire.codec.structs import Message

COORDINATOR_EPOCH = 3


@dataclass
class Harness:
    version: TxnVersion = TxnVersion.TV_2
    config: TxnConfig = field(default_factory=lambda: TxnConfig(num_partitions=1))
    now: int = 1_000
    #: Markers are held (not written) while this is set.
    hold_markers: bool = False
    #: The log's error code for the next writes (0: they succeed).
    write_error: int = 0
    answers: dict[object, Message] = field(default_factory=dict)
    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    held: list[SendMarkers] = field(default_factory=list)
    markers: list[SendMarkers] = field(default_factory=list)

    def __post_init__(self) -> None:
        ids = itertools.count(1000)
        self.timers = TimerQueue()
        self.coordinator = TxnCoordinator(
            self.config,
            self.timers,
            finalized_version=lambda: self.version,
            new_producer_id=lambda now: next(ids),
            partition_exists=lambda topic, partition: topic != "missing",
            offsets_partition_of=lambda group: 0,
        )
        self.tokens = itertools.count()
        self.coordinator.partition_loading(0, COORDINATOR_EPOCH)
        self.apply(self.coordinator.partition_loaded(0, self.now))

    def send(self, request: Message, version: int) -> Message | None:
        token = next(self.tokens)
        self.apply(self.coordinator.handle(token, request, version, self.now))
        return self.answers.pop(token, None)

    def apply(self, effects: list[TxnEffect]) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                self.answers[effect.token] = effect.body
            elif isinstance(effect, TxnPersist):
                if not self.write_error:
                    self.records.append((effect.key, effect.value))
                self.apply(self.coordinator.persisted(effect.append_id, self.write_error, self.now))
            else:
                self.markers.append(effect)
                if self.hold_markers:
                    self.held.append(effect)
                else:
                    self.write(effect)

    def write(self, markers: SendMarkers) -> None:
        self.apply(
            self.coordinator.markers_written(
                markers.transactional_id, markers.coordinator_epoch, markers.partitions, self.now
            )
        )

    def release(self) -> None:
        held, self.held = self.held, []
        for markers in held:
            self.write(markers)

    def tick(self, now: int) -> None:
        self.now = now
        self.apply(self.coordinator.tick(now))
