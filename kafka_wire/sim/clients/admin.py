"""The admin step of a simulated workload: create the topics, retrying until every one exists."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    ErrorCode,
)
from kafka_wire.sim.clients.base import RETRY_BACKOFF_MS, Address, ClientBase

if TYPE_CHECKING:
    from kafka_wire.sim.history import History


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


#: Answers that leave the topic in place: it was made now or before.
_DONE = frozenset({ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS})


class AdminClient(ClientBase):
    """Sends CreateTopics for the topics not known to exist yet, to any node, until all do
    (``TOPIC_ALREADY_EXISTS`` counts as made)."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        specs: list[TopicSpec],
    ) -> None:
        super().__init__(name, history, rng, bootstrap, [])
        self.specs = {s.name: s for s in specs}
        self.created: set[str] = set()
        self.in_flight = False
        self.retry_at_ms = 0

    @property
    def done(self) -> bool:
        return len(self.created) == len(self.specs)

    def idle(self) -> bool:
        return self.done

    def pump(self, now_ms: int) -> None:
        if self.done or self.in_flight:
            return
        if now_ms < self.retry_at_ms:
            self.wake_at(self.retry_at_ms)
            return
        missing = [s for name, s in self.specs.items() if name not in self.created]
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name=s.name,
                    num_partitions=s.partitions,
                    replication_factor=s.replication_factor,
                    configs=[
                        CreateTopicsRequestCreatableTopicConfig(name=k, value=v)
                        for k, v in sorted(s.configs.items())
                    ],
                )
                for s in missing
            ],
            timeout_ms=5_000,
        )
        self.in_flight = True
        self.request(self.any_address(), request, self._on_created)

    def _on_created(self, body: Message | None, now_ms: int) -> None:
        self.in_flight = False
        if isinstance(body, CreateTopicsResponse):
            for result in body.topics:
                if result.error_code in _DONE:
                    self.created.add(result.name)
        if not self.done:
            self.retry_at_ms = now_ms + RETRY_BACKOFF_MS
