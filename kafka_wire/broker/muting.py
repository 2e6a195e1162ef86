"""Per-connection muting: whether the driver reads a client connection, and why not.

Kafka's socket server mutes a channel while a request of it is in flight and unmutes it once the
answer is sent (``ChannelMuteState``); the engine does the same, and mutes for a few more reasons.
Each client connection is in one :class:`MuteState`, moved only through
:data:`MUTE_TRANSITIONS`:

- ``READING``: the driver reads it (no ``PauseReading`` in force);
- ``AWAITING_ANSWER``: a request of it is held unanswered, or its answers wait for writes: read
  one request at a time, it is not read until they are out;
- ``ANSWERED``: its held request was answered: read on before the call ends;
- ``QUEUE_BLOCKED``: ``queued.max.requests`` requests are held: read on, in the order they
  stopped, when there is room;
- ``CALL_BLOCKED``: the call's :data:`REQUESTS_PER_CALL` are spent: read on at the next ``tick``
  (the broker's next deadline is then now), not in the calls other connections' input makes;
- ``CLOSING``: an acks=0 produce failed after earlier requests of the connection were answered in
  the same call: closed once those answers are out;
- ``AUTHENTICATION_DELAY``: an authentication failed: answered and closed when
  ``connection.failed.authentication.delay.ms`` is over (``connections.py`` holds the timer);
- ``THROTTLED``: an answer of it went over a client quota (``kafka_wire.broker.quotas``): once
  the answer is out, not read until the throttle time is over (KIP-219), then read on as
  ``ANSWERED``.

Leaving ``READING`` tells the driver ``PauseReading`` and stops the connection's idle and receive
timers; going back tells it ``ResumeReading``. While muted, bytes the driver had already read are
still decoded by the broker (its reading gate, :meth:`Muting.may_read`, mutes again at once when
the reason holds). :class:`Muting` owns the states, the connections waiting in each, and the count
of requests read in the current call.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from kafka_wire.broker.connections import ConnectionTimers
from kafka_wire.broker.effects import Effect, PauseReading, ResumeReading
from kafka_wire.protocol.machine import TransitionLogger, step

#: Requests decoded and handled in one engine call, over all connections. A connection with more
#: pipelined requests than that is read no further in this call and goes on at the next ``tick``
#: (due at once), whatever other calls come before it: a client that sends thousands of requests
#: without reading an answer cannot hold the driver's loop, and so the other connections, for
#: seconds (nor can it when other clients' connections open and close meanwhile, each a call).
REQUESTS_PER_CALL: Final = 64


class MuteState(enum.Enum):
    READING = "reading"
    AWAITING_ANSWER = "awaiting answer"
    ANSWERED = "answered"
    QUEUE_BLOCKED = "queue blocked"
    CALL_BLOCKED = "call blocked"
    CLOSING = "closing after answers"
    AUTHENTICATION_DELAY = "authentication delay"
    THROTTLED = "throttled"


class MuteInput(enum.Enum):
    #: Every request the connection sent so far was handled: read more.
    NEED_DATA = "need data"
    #: A request of it is held, or answers of it wait for writes.
    OWES_ANSWER = "owes an answer"
    #: ``queued.max.requests`` requests are held.
    QUEUE_FULL = "queue full"
    #: The call's :data:`REQUESTS_PER_CALL` are spent.
    CALL_SPENT = "requests of the call spent"
    #: Its held request was answered and nothing else is owed.
    ANSWERED = "answered"
    #: An acks=0 produce failed while answers of the connection are on their way.
    FAILED_WITHOUT_ANSWER = "acks=0 produce failed"
    AUTHENTICATION_FAILED = "authentication failed"
    #: Its answer went over a client quota: muted for the throttle time (KIP-219).
    THROTTLE = "over a quota"
    #: The throttle time is over.
    THROTTLE_OVER = "throttle time over"


S, In = MuteState, MuteInput

#: The states in which the broker may decode the connection's requests (and so find a reason to
#: mute it, or none).
_DECODING: Final = (S.READING, S.AWAITING_ANSWER, S.ANSWERED, S.QUEUE_BLOCKED, S.CALL_BLOCKED)


def _table() -> dict[tuple[MuteState, MuteInput], MuteState]:
    table: dict[tuple[MuteState, MuteInput], MuteState] = {}
    for state in _DECODING:
        table[state, In.NEED_DATA] = S.READING
        table[state, In.OWES_ANSWER] = S.AWAITING_ANSWER
        table[state, In.QUEUE_FULL] = S.QUEUE_BLOCKED
        table[state, In.CALL_SPENT] = S.CALL_BLOCKED
        table[state, In.FAILED_WITHOUT_ANSWER] = S.CLOSING
        table[state, In.AUTHENTICATION_FAILED] = S.AUTHENTICATION_DELAY
        table[state, In.ANSWERED] = S.READING if state is S.READING else S.ANSWERED
        table[state, In.THROTTLE] = S.THROTTLED
    # Throttled: nothing is read until the throttle time is over, whatever else holds.
    for move in (In.OWES_ANSWER, In.QUEUE_FULL, In.CALL_SPENT, In.ANSWERED, In.THROTTLE):
        table[S.THROTTLED, move] = S.THROTTLED
    table[S.THROTTLED, In.THROTTLE_OVER] = S.ANSWERED
    table[S.THROTTLED, In.FAILED_WITHOUT_ANSWER] = S.CLOSING
    table[S.CLOSING, In.THROTTLE] = S.CLOSING
    table[S.AUTHENTICATION_DELAY, In.THROTTLE] = S.AUTHENTICATION_DELAY
    # Closing: nothing more is read; its answers are still owed until they leave.
    table[S.CLOSING, In.OWES_ANSWER] = S.CLOSING
    table[S.CLOSING, In.ANSWERED] = S.CLOSING
    table[S.CLOSING, In.FAILED_WITHOUT_ANSWER] = S.CLOSING
    table[S.AUTHENTICATION_DELAY, In.ANSWERED] = S.AUTHENTICATION_DELAY
    return table


MUTE_TRANSITIONS: Final[Mapping[tuple[MuteState, MuteInput], MuteState]] = _table()

#: States whose connections wait for something outside them, in the order they entered.
_WAITING: Final = (S.ANSWERED, S.QUEUE_BLOCKED, S.CALL_BLOCKED, S.CLOSING)


class Muting:
    """The mute state of every client connection (see the module docstring)."""

    __slots__ = ("_call_requests", "_leftovers", "_logger", "_queued_max", "_states", "_timers", "_waiting")

    def __init__(
        self, timers: ConnectionTimers, *, queued_max_requests: int, logger: TransitionLogger | None = None
    ) -> None:
        self._timers = timers
        self._queued_max = queued_max_requests
        self._logger = logger
        self._states: dict[int, MuteState] = {}
        self._waiting: dict[MuteState, dict[int, None]] = {state: {} for state in _WAITING}
        #: Requests decoded in the current call, over all connections.
        self._call_requests = 0
        #: Whether the current call reads on from the connections of ``CALL_BLOCKED`` (a tick).
        self._leftovers = False

    def _move(self, conn_id: int, move: MuteInput) -> MuteState:
        """Follow the table; the state the connection was in."""
        state = self._states[conn_id]
        target = step(MUTE_TRANSITIONS, state, move, machine=f"connection {conn_id}", logger=self._logger)
        if target is not state:
            self._states[conn_id] = target
            if state in self._waiting:
                del self._waiting[state][conn_id]
            if target in self._waiting:
                self._waiting[target][conn_id] = None
        return state

    # -- connections ----------------------------------------------------------------------------

    def opened(self, conn_id: int) -> None:
        self._states[conn_id] = S.READING

    def forget(self, conn_id: int) -> None:
        state = self._states.pop(conn_id, None)
        if state in self._waiting:
            del self._waiting[state][conn_id]

    def clear(self) -> None:
        self._states.clear()
        for waiting in self._waiting.values():
            waiting.clear()

    def paused(self, conn_id: int) -> bool:
        """Whether the driver was told to stop reading the connection."""
        return self._states.get(conn_id, S.READING) is not S.READING

    def closing(self, conn_id: int) -> bool:
        """Whether the connection closes once its answers are out."""
        return self._states.get(conn_id) is S.CLOSING

    # -- moves ----------------------------------------------------------------------------------

    def mute(self, conn_id: int, move: MuteInput, out: list[Effect]) -> None:
        """Stop reading the connection, for the reason ``move``."""
        if self._move(conn_id, move) is S.READING:
            out.append(PauseReading(conn_id))
        self._timers.quiet(conn_id)

    def may_read(self, conn_id: int, *, owed: bool, held: int, out: list[Effect]) -> bool:
        """Whether the next request of the connection may be decoded now (``owed``: it has a
        request held or answers waiting; ``held``: requests held over all connections); if not,
        it is muted for the first reason that holds."""
        if self._states.get(conn_id) is S.THROTTLED:
            return False
        if owed:
            move = In.OWES_ANSWER
        elif held >= self._queued_max:
            move = In.QUEUE_FULL
        elif self._call_requests >= REQUESTS_PER_CALL:
            move = In.CALL_SPENT
        else:
            return True
        self.mute(conn_id, move, out)
        return False

    def decoded(self) -> None:
        """A request was decoded (it counts against :data:`REQUESTS_PER_CALL`)."""
        self._call_requests += 1

    def drained(self, conn_id: int, now_ms: int, out: list[Effect]) -> None:
        """Every request the connection sent so far was handled: read it again."""
        if self._move(conn_id, In.NEED_DATA) is not S.READING:
            out.append(ResumeReading(conn_id))
            self._timers.active(conn_id, now_ms)

    def throttle_over(self, conn_id: int) -> None:
        """Its quota throttle time is over: read on before the call ends (as ``ANSWERED``)."""
        if self._states.get(conn_id) is S.THROTTLED:
            self._move(conn_id, In.THROTTLE_OVER)

    def answered(self, conn_id: int, *, owed: bool) -> None:
        """A held request of the connection was answered: read on once nothing is ``owed``."""
        if not owed and conn_id in self._states:
            self._move(conn_id, In.ANSWERED)

    # -- calls ----------------------------------------------------------------------------------

    def begin_call(self, *, leftovers: bool) -> None:
        """A new engine call: :data:`REQUESTS_PER_CALL` more requests may be decoded; with
        ``leftovers`` (a tick), of the connections left over from earlier calls too."""
        self._call_requests = 0
        self._leftovers = leftovers

    @property
    def call_blocked(self) -> bool:
        """Whether connections wait for the next call (it is due at once)."""
        return bool(self._waiting[S.CALL_BLOCKED])

    def ready(self, held: int) -> list[int]:
        """Muted connections that may read on now: the answered ones, then those waiting for room
        in the request queue (``held``: requests held now), then (in a tick) those left over from
        earlier calls, each in the order they stopped."""
        ready = list(self._waiting[S.ANSWERED])
        if held < self._queued_max:
            ready += self._waiting[S.QUEUE_BLOCKED]
        if self._leftovers and self._call_requests < REQUESTS_PER_CALL:
            ready += self._waiting[S.CALL_BLOCKED]
        return ready

    def closing_after_answers(self) -> list[int]:
        """The connections to close once their answers are out, in id order."""
        return sorted(self._waiting[S.CLOSING])
