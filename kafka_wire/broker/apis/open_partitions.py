"""Opening the partitions of new topics (or new partitions of a topic) in slices of the work budget.

CreateTopics, CreatePartitions and Metadata's auto-creation register topics and write the metadata
at once, then open the partitions with an :class:`OpenPartitionsJob`, one per step (see
``kafka_wire.broker.work``), and answer when the last one is open. Until then Metadata reports a
partition not open yet as LEADER_NOT_AVAILABLE. A topic deleted meanwhile is skipped.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.work import PARTITION_WORK_BYTES, Job, R


class OpenPartitionsJob(Job[R]):
    """Opens partitions ``start..end-1`` of each topic, then answers with ``respond()``."""

    survives_disconnect = True  # registered topics must get their partitions

    def __init__(
        self,
        state: BrokerState,
        effects: EffectSink,
        ranges: list[tuple[TopicInfo, int, int]],
        respond: Callable[[], R],
        now_ms: int,
    ) -> None:
        super().__init__(state.budget, now_ms)
        self._state = state
        self._effects = effects
        self._ranges = ranges
        self._respond = respond
        self._range = 0
        self._index = ranges[0][1] if ranges else 0

    @property
    def done(self) -> bool:
        return self._range >= len(self._ranges)

    def step(self, now_ms: int) -> None:
        state = self._state
        topic, _, end = self._ranges[self._range]
        present = state.topic_named(topic.name) is topic
        if present and state.replica(topic.name, self._index) is None:
            state.open_partition(topic, self._index, now_ms, self._effects)
            self.budget.spend(PARTITION_WORK_BYTES)
        self._index += 1
        if self._index >= end or not present:
            self._range += 1
            if self._range < len(self._ranges):
                self._index = self._ranges[self._range][1]

    def response(self) -> R:
        return self._respond()
