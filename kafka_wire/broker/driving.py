"""What a synchronous driver of the engine does with the effects of one call: :func:`settle`.

An engine call returns storage effects (its batch) and network effects. A synchronous driver
applies the batch at once, in order, and reports how that went: ``Broker.storage_applied`` when
every effect succeeded, ``Broker.storage_failed`` at the first that did not (the rest are not
applied). The report returns the answers that waited for those writes (or, after a failure, the
error answers, the closes and :class:`~kafka_wire.broker.effects.StopBroker`), and may hand out
another batch (the requests it let the engine read next). :func:`settle` does exactly this, batch
after batch, with a function that applies one storage effect, and hands back the network effects
to carry out, in order. It does no I/O itself: the applier does, and only ``OSError`` counts as a
failed write. (A driver that applies batches on another thread while the engine goes on is
``kafka_wire.adapters.storage_worker``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_wire.broker.effects import Effect, StorageEffect
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker


@dataclass(frozen=True, slots=True)
class StorageFailure:
    """A storage effect that could not be applied, and why (``errno`` is None when unknown)."""

    effect: StorageEffect
    errno: int | None
    reason: str

    @classmethod
    def of(cls, effect: StorageEffect, exc: OSError) -> StorageFailure:
        return cls(effect, exc.errno, exc.strerror or str(exc))

    def __str__(self) -> str:
        what = type(self.effect).__name__
        path = getattr(self.effect, "path", None) or getattr(self.effect, "source", "")
        return f"{what} {path}: {self.reason}"


def settle(
    broker: Broker, effects: list[Effect], apply: Callable[[StorageEffect], None], now_ms: int
) -> list[Effect]:
    """Apply the storage effects of one engine call with ``apply``, report the outcome to
    ``broker`` (and so on for the batches the reports hand out), and return the other effects to
    carry out, in the order they came."""
    out: list[Effect] = []
    while True:
        out += [e for e in effects if not isinstance(e, StorageEffect)]
        storage = [e for e in effects if isinstance(e, StorageEffect)]
        if not storage:
            return out
        for effect in storage:
            try:
                apply(effect)
            except OSError as exc:
                return out + broker.storage_failed(StorageFailure.of(effect, exc), now_ms)
        effects = broker.storage_applied(now_ms)
