"""The driver contract's states: one machine, :data:`DRIVER_TRANSITIONS`, and why the engine stopped.

A driver runs the engine by this contract (the writes in flight and what waits for them are
``kafka_wire.broker.storage_pipeline``):

- ``start`` hands out the data directory's first writes; until their outcome is reported no other
  input is taken (the driver waits for them before it accepts connections);
- while serving, every input is taken, with or without writes in flight;
- ``shutdown`` hands out the last writes; the driver reports their outcome before it exits;
- a failed write stops the engine (its only log directory is offline): nothing more is written.

:class:`DriverContract` holds the state and moves it only through the table (a move it lacks is
the driver's misuse: ``LocalProtocolError``); once the engine stopped, :attr:`~DriverContract.stopped`
says why (``"shut down"``, or the failed write).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from kafka_wire.protocol.machine import TransitionLogger, step


class DriverState(enum.Enum):
    NEW = "new"
    #: ``start``'s writes are in flight: no other input is taken.
    STARTING = "starting"
    #: No write in flight.
    SERVING = "serving"
    #: Writes in flight; every input is taken.
    WRITING = "writing"
    #: ``shutdown`` was called; the last writes are in flight.
    STOPPING = "stopping"
    #: Shut down, or a write failed: nothing more is written.
    STOPPED = "stopped"


class DriverInput(enum.Enum):
    START = "start"
    #: An input to the engine (a connection event, bytes, a tick).
    INPUT = "input"
    #: A call ended with writes in flight (its own or earlier ones).
    IN_FLIGHT = "in flight"
    #: A call ended with no write in flight.
    IDLE = "idle"
    #: The driver reported a batch applied; more are in flight.
    APPLIED = "applied"
    #: The driver reported the last batch in flight applied.
    DRAINED = "drained"
    FAILED = "failed"
    SHUTDOWN = "shutdown"


S, In = DriverState, DriverInput

DRIVER_TRANSITIONS: Final[Mapping[tuple[DriverState, DriverInput], DriverState]] = {
    (S.NEW, In.START): S.STARTING,
    (S.STARTING, In.IN_FLIGHT): S.STARTING,
    (S.STARTING, In.IDLE): S.SERVING,
    (S.STARTING, In.DRAINED): S.SERVING,
    (S.STARTING, In.FAILED): S.STOPPED,
    (S.SERVING, In.INPUT): S.SERVING,
    (S.SERVING, In.IN_FLIGHT): S.WRITING,
    (S.SERVING, In.IDLE): S.SERVING,
    (S.SERVING, In.SHUTDOWN): S.STOPPING,
    (S.WRITING, In.INPUT): S.WRITING,
    (S.WRITING, In.IN_FLIGHT): S.WRITING,
    (S.WRITING, In.APPLIED): S.WRITING,
    (S.WRITING, In.DRAINED): S.SERVING,
    (S.WRITING, In.FAILED): S.STOPPED,
    (S.WRITING, In.SHUTDOWN): S.STOPPING,
    (S.STOPPING, In.IN_FLIGHT): S.STOPPING,
    (S.STOPPING, In.IDLE): S.STOPPED,
    (S.STOPPING, In.APPLIED): S.STOPPING,
    (S.STOPPING, In.DRAINED): S.STOPPED,
    (S.STOPPING, In.FAILED): S.STOPPED,
}

#: Why the engine stopped after ``shutdown``.
SHUT_DOWN: Final = "shut down"


class DriverContract:
    """The contract's state (see the module docstring); moved by the broker (start, input,
    shutdown) and by the storage pipeline (the end of a call, the outcomes of its batches)."""

    __slots__ = ("_logger", "_stopped", "state")

    def __init__(self, logger: TransitionLogger | None = None) -> None:
        self.state = DriverState.NEW
        self._logger = logger
        self._stopped: str | None = None

    def _move(self, move: DriverInput) -> None:
        self.state = step(DRIVER_TRANSITIONS, self.state, move, machine="driver", logger=self._logger)

    @property
    def starting(self) -> bool:
        return self.state is DriverState.STARTING

    @property
    def stopped(self) -> str | None:
        """Why the engine stopped serving (``shutdown``, or a failed write), or None while it serves."""
        return self._stopped

    def start(self) -> None:
        self._move(DriverInput.START)

    def take_input(self) -> None:
        """An input arrives: refused (``LocalProtocolError``) while ``start``'s writes are in flight."""
        self._move(DriverInput.INPUT)

    def shutdown(self) -> None:
        self._move(DriverInput.SHUTDOWN)
        self._stopped = SHUT_DOWN

    def call_ended(self, in_flight: int) -> None:
        """A call handed out its batch (if any): ``in_flight`` batches wait for their outcome."""
        self._move(DriverInput.IN_FLIGHT if in_flight else DriverInput.IDLE)

    def applied(self, in_flight: int) -> None:
        """The driver reported the oldest batch applied; ``in_flight`` are left."""
        self._move(DriverInput.APPLIED if in_flight else DriverInput.DRAINED)

    def failed(self, reason: str) -> None:
        """The driver reported a failed write: the engine stops, for ``reason``."""
        self._move(DriverInput.FAILED)
        self._stopped = reason
