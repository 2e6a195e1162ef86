"""The state-machine core every machine in kafka_wire uses: a transition table and a move-or-ERROR step.

A machine is a table ``(state, input) -> state`` over two Enums (a constant named
``*_TRANSITIONS``), where inputs are the things that happen to it (a request was sent, the peer
closed, a session expired). :class:`StateMachine` holds one current state: :meth:`~StateMachine.move`
follows the table, and an input the table lacks moves the machine to its ERROR state and raises
a :class:`~kafka_wire.errors.ProtocolError`. The connections, the SASL mechanisms, the classic
group and a replica's role all move this way; the docs' state diagrams are drawn from the same
tables.

Each change of state is logged through an injected logger: a :class:`logging.Logger` (at DEBUG)
or any callable taking a :class:`Transition`. The default is this module's logger,
``kafka_wire.transitions``, silent unless DEBUG is enabled for it.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar

from kafka_wire.errors import LocalProtocolError, ProtocolError
from kafka_wire.quick_dataclass import dataclass

S = TypeVar("S", bound=enum.Enum)
In = TypeVar("In", bound=enum.Enum)

#: The default transition logger: DEBUG records, one per change of state.
LOGGER: Final = logging.getLogger("kafka_wire.transitions")


@dataclass(frozen=True, slots=True)
class Transition(Generic[S, In]):
    """One change of state, as handed to a transition logger."""

    #: Which machine moved ("client connection", "SCRAM-SHA-256 server", "group g1").
    machine: str
    source: S
    input: In | None
    target: S
    #: Why a machine entered ERROR: the exception, when one caused it.
    cause: BaseException | None = None

    def __str__(self) -> str:
        on = f" on {self.input.value}" if self.input is not None else ""
        why = f" ({type(self.cause).__name__}: {self.cause})" if self.cause is not None else ""
        return f"{self.machine}: {self.source.name} -> {self.target.name}{on}{why}"


#: Where transitions go: a logger (DEBUG records) or a callable.
TransitionLogger = logging.Logger | Callable[[Transition[Any, Any]], object]


def log_transition(logger: TransitionLogger | None, transition: Transition[S, In]) -> None:
    """Hand ``transition`` to ``logger`` (None: the module logger)."""
    if logger is None:
        logger = LOGGER
    if isinstance(logger, logging.Logger):
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s", transition)
    else:
        logger(transition)


def _refusal(machine: str, state: enum.Enum, move: enum.Enum) -> str:
    return f"{machine}: {move.value!r} is not allowed in state {state.name}"


def step(
    table: Mapping[tuple[S, In], S],
    state: S,
    move: In,
    *,
    machine: str,
    logger: TransitionLogger | None = None,
    blame: type[ProtocolError] = LocalProtocolError,
) -> S:
    """The state ``move`` leads to from ``state`` (logged when it differs); a pair the table lacks
    raises ``blame``. For machines whose owner keeps the state (the group, a replica's role)."""
    target = table.get((state, move))
    if target is None:
        raise blame(_refusal(machine, state, move))
    if target is not state:
        log_transition(logger, Transition(machine, state, move, target))
    return target


class StateMachine(Generic[S, In]):
    """One machine's current state, moved only through its table (see the module docstring)."""

    __slots__ = ("error", "logger", "name", "state", "table")

    def __init__(
        self,
        name: str,
        table: Mapping[tuple[S, In], S],
        initial: S,
        *,
        error: S,
        logger: TransitionLogger | None = None,
    ) -> None:
        self.name = name
        self.table = table
        self.state = initial
        #: The state every failure leads to.
        self.error = error
        self.logger = logger

    def can(self, move: In) -> bool:
        """Whether the table has ``move`` from the current state."""
        return (self.state, move) in self.table

    def target(self, move: In, blame: type[ProtocolError] = LocalProtocolError) -> S:
        """Where ``move`` would lead, without moving; a pair the table lacks moves to ERROR and
        raises ``blame``."""
        target = self.table.get((self.state, move))
        if target is None:
            state = self.state
            error = blame(_refusal(self.name, state, move))
            self.fail(error, move)
            raise error
        return target

    def move(self, move: In, blame: type[ProtocolError] = LocalProtocolError) -> S:
        """Follow the table (move-or-ERROR): a pair it lacks moves to ERROR and raises ``blame``."""
        state = self.state
        target = self.table.get((state, move))
        if target is None:
            error = blame(_refusal(self.name, state, move))
            self.fail(error, move)
            raise error
        if target is not state:
            self.state = target
            log_transition(self.logger, Transition(self.name, state, move, target))
        return target

    def fail(self, cause: BaseException | None = None, move: In | None = None) -> None:
        """Enter ERROR (every exception inside the machine's owner comes here)."""
        state = self.state
        if state is self.error:
            return
        self.state = self.error
        log_transition(self.logger, Transition(self.name, state, move, self.error, cause))

    @property
    def failed(self) -> bool:
        return self.state is self.error


class Guarded:
    """What a connection run by a :class:`StateMachine` shares (h11's discipline): the first
    failure moves the machine to its error state for good and is kept as the cause of every later
    refusal, and time given to its methods only moves forward."""

    _machine: StateMachine[Any, Any]
    _failure: BaseException | None
    _now_ms: int

    def _live(self) -> None:
        """Refuse every call after a failure: the error state is final."""
        if self._machine.state is self._machine.error:
            raise LocalProtocolError(
                "the connection failed earlier: nothing is allowed in state ERROR"
            ) from (self._failure)

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
        self._machine.fail(exc)

    def _tick(self, now_ms: int | None) -> None:
        if now_ms is not None and now_ms > self._now_ms:
            self._now_ms = now_ms

    def send_failed(self) -> None:
        """The I/O layer could not write this connection's bytes: the connection is broken (ERROR)."""
        self._fail(LocalProtocolError("a write failed"))
