"""What the checker reports: a :class:`Violation` is a value (never an exception), named after
Jepsen's Kafka anomalies where one exists (``lost-write``, ``duplicate``, ``poll-skip``, ...) and
after the invariant of ENGINE-NOTES §7 otherwise (``hw-above-leo``, ``two-leaders``, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kafka_wire.sim.contracts import WorldView


@dataclass(frozen=True, slots=True)
class Violation:
    anomaly: str
    time_ms: int
    detail: str

    def line(self) -> str:
        return f"{self.time_ms} {self.anomaly}: {self.detail}"


class CheckerLike(Protocol):
    """What the world calls: after every event, and once at the end (after the liveness phase)."""

    def after_event(self, world: WorldView) -> list[Violation]: ...

    def at_end(self, world: WorldView) -> list[Violation]: ...
