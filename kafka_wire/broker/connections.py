"""Connection limits of the engine: who may connect, and when a connection is closed for time.

- :class:`Admission` counts open connections, in all and per peer address, against
  ``max.connections`` and ``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``);
  over either a new connection is closed at once, as Kafka closes one over its per-IP limit.
- :class:`ConnectionTimers` holds the three deadlines a connection can have: idle
  (``connections.max.idle.ms``: no byte received or sent for that long), request receive
  (``kafka.wire.request.receive.timeout.ms``: a request frame begun and not finished in that time)
  and the delayed close after a failed authentication
  (``connection.failed.authentication.delay.ms``). All three are plain ``now_ms`` arithmetic,
  kept in the engine's :class:`~kafka_wire.broker.timers.TimerQueue` under the owner
  ``"connection"`` (keys ``("connection", Expiry, conn_id)``). Activity only notes the time of
  a connection's idle timer; the timer moves to the last activity plus the idle time when it
  comes due, so the queue sees one entry per idle period, not one per request.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Final

from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.timers import TimerKey, TimerQueue

#: The owner of the connection timers in the engine's queue.
CONNECTION_TIMERS: Final = "connection"


#: Refused connections are logged at most this often (with how many were refused meanwhile).
REFUSAL_LOG_INTERVAL_MS: Final = 60_000


class Admission:
    """Open connections counted in all and per host; refusals logged at WARNING, the first and
    then at most one line a minute."""

    def __init__(self, config: BrokerConfig, log: logging.Logger) -> None:
        self._log = log
        self._refused = 0
        self._refusal_logged_ms: int | None = None
        self._max = config.max_connections
        self._max_per_host = config.max_connections_per_ip
        self._overrides: Mapping[str, int] = config.max_connections_per_ip_overrides
        self._open = 0
        self._per_host: dict[str, int] = {}

    def limit_for(self, host: str) -> int:
        return self._overrides.get(host, self._max_per_host)

    def refusal(self, host: str) -> str | None:
        """Why a new connection from ``host`` must be closed at once, or None to accept it."""
        if self._open >= self._max:
            return f"max.connections ({self._max}) reached"
        limit = self.limit_for(host)
        if self._per_host.get(host, 0) >= limit:
            return f"{host} already has max.connections.per.ip ({limit}) connections"
        return None

    def refuses(self, host: str, now_ms: int) -> bool:
        """Whether a new connection from ``host`` must be closed at once (logged if so)."""
        reason = self.refusal(host)
        if reason is None:
            return False
        self._refused += 1
        last = self._refusal_logged_ms
        if last is None or now_ms - last >= REFUSAL_LOG_INTERVAL_MS:
            self._log.warning(
                "refused %d connection(s), the last from %s: %s", self._refused, host or "?", reason
            )
            self._refused, self._refusal_logged_ms = 0, now_ms
        return True

    def opened(self, host: str) -> None:
        self._open += 1
        self._per_host[host] = self._per_host.get(host, 0) + 1

    def closed(self, host: str) -> None:
        self._open -= 1
        left = self._per_host[host] - 1
        if left:
            self._per_host[host] = left
        else:
            del self._per_host[host]

    def count(self, host: str | None = None) -> int:
        """Connections open, in all or from ``host``."""
        return self._open if host is None else self._per_host.get(host, 0)


class Expiry(enum.Enum):
    #: No byte received or sent for ``connections.max.idle.ms``.
    IDLE = "idle"
    #: A request frame begun and not finished within ``kafka.wire.request.receive.timeout.ms``.
    RECEIVE_TIMEOUT = "request receive timeout"
    #: The delay after a failed authentication is over: answer and close.
    AUTHENTICATION_FAILED = "failed authentication"


class ConnectionTimers:
    """Per-connection deadlines (see the module docstring); the broker decides what to do when
    one passes."""

    def __init__(
        self,
        timers: TimerQueue,
        *,
        idle_ms: int,
        receive_timeout_ms: int,
        failed_authentication_delay_ms: int,
    ) -> None:
        self._timers = timers
        self._spans = {
            Expiry.IDLE: idle_ms,
            Expiry.RECEIVE_TIMEOUT: receive_timeout_ms,
            Expiry.AUTHENTICATION_FAILED: failed_authentication_delay_ms,
        }
        #: When each connection was last active: its idle timer stays where it is when activity
        #: renews it (one dict write per request), and moves to ``last + idle`` when it comes due.
        self._last_active: dict[int, int] = {}

    def active(self, conn_id: int, now_ms: int) -> None:
        """Bytes were received or sent: the idle timer starts again."""
        span = self._spans[Expiry.IDLE]
        if span < 0:  # connections.max.idle.ms < 0: no idle expiry, as in Kafka
            return
        self._last_active[conn_id] = now_ms
        key = _key(Expiry.IDLE, conn_id)
        if key not in self._timers:
            self._timers.schedule(key, now_ms + span)

    def receiving(self, conn_id: int, now_ms: int, *, in_progress: bool) -> None:
        """Whether the connection has an unfinished request frame; its timer runs from the first
        call that says so."""
        key = _key(Expiry.RECEIVE_TIMEOUT, conn_id)
        if not in_progress:
            self._timers.cancel(key)
        elif key not in self._timers:
            self._timers.schedule(key, now_ms + self._spans[Expiry.RECEIVE_TIMEOUT])

    def quiet(self, conn_id: int) -> None:
        """Stop the idle and receive timers: the broker is not reading the connection (it owes it
        a response, or holds its requests back), so silence is not the client's."""
        self._timers.cancel(_key(Expiry.IDLE, conn_id))
        self._timers.cancel(_key(Expiry.RECEIVE_TIMEOUT, conn_id))
        self._last_active.pop(conn_id, None)

    def failed_authentication(self, conn_id: int, now_ms: int) -> None:
        """Answer and close the connection once the failed-authentication delay is over."""
        self.quiet(conn_id)
        self._timers.schedule(
            _key(Expiry.AUTHENTICATION_FAILED, conn_id), now_ms + self._spans[Expiry.AUTHENTICATION_FAILED]
        )

    def closing(self, conn_id: int) -> bool:
        """Whether the connection waits for its failed-authentication close."""
        return _key(Expiry.AUTHENTICATION_FAILED, conn_id) in self._timers

    def forget(self, conn_id: int) -> None:
        for kind in Expiry:
            self._timers.cancel(_key(kind, conn_id))
        self._last_active.pop(conn_id, None)

    def clear(self) -> None:
        self._timers.clear(CONNECTION_TIMERS)
        self._last_active.clear()

    def due(self, now_ms: int) -> list[tuple[int, Expiry]]:
        """Connections whose deadline has passed, earliest first (each once; their timers are
        removed)."""
        expired: list[tuple[int, Expiry]] = []
        while (due := self._timers.pop_due(now_ms, CONNECTION_TIMERS)) is not None:
            _, kind, conn_id = due.key
            assert isinstance(kind, Expiry) and isinstance(conn_id, int)
            if kind is Expiry.IDLE:
                span = self._spans[Expiry.IDLE]
                renewed = self._last_active.get(conn_id, due.deadline_ms - span) + span
                if renewed > now_ms:  # active since the timer was set: it moves, nothing expires
                    self._timers.schedule(due.key, renewed)
                    continue
            self.forget(conn_id)
            expired.append((conn_id, kind))
        return expired


def _key(kind: Expiry, conn_id: int) -> TimerKey:
    return (CONNECTION_TIMERS, kind, conn_id)
