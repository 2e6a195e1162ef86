"""Connection limits of the engine: who may connect, and when a connection is closed for time.

- :class:`Admission` counts open connections, in all and per peer address, against
  ``max.connections`` and ``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``);
  over either a new connection is closed at once, as Kafka closes one over its per-IP limit.
- :class:`ConnectionTimers` holds the three deadlines a connection can have: idle
  (``connections.max.idle.ms``: no byte received or sent for that long), request receive
  (``kafka.wire.request.receive.timeout.ms``: a request frame begun and not finished in that time)
  and the delayed close after a failed authentication
  (``connection.failed.authentication.delay.ms``). All three are plain ``now_ms`` arithmetic.

Each timer kind keeps its connections in a dict ordered by deadline (a connection moves to the
end when its deadline is renewed, and every renewal adds the same span to a later ``now_ms``), so
the next deadline is the first entry's and expiry walks from the front.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from kafka_wire.broker.config import BrokerConfig


class Admission:
    """Open connections counted in all and per host."""

    def __init__(self, config: BrokerConfig) -> None:
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

    def __init__(self, *, idle_ms: int, receive_timeout_ms: int, failed_authentication_delay_ms: int) -> None:
        self._spans = {
            Expiry.IDLE: idle_ms,
            Expiry.RECEIVE_TIMEOUT: receive_timeout_ms,
            Expiry.AUTHENTICATION_FAILED: failed_authentication_delay_ms,
        }
        #: Per kind, connection id to the ``now_ms`` its timer started at, earliest first.
        self._started: dict[Expiry, dict[int, int]] = {kind: {} for kind in Expiry}

    def active(self, conn_id: int, now_ms: int) -> None:
        """Bytes were received or sent: the idle timer starts again."""
        if self._spans[Expiry.IDLE] < 0:  # connections.max.idle.ms < 0: no idle expiry, as in Kafka
            return
        idle = self._started[Expiry.IDLE]
        idle.pop(conn_id, None)
        idle[conn_id] = now_ms

    def receiving(self, conn_id: int, now_ms: int, *, in_progress: bool) -> None:
        """Whether the connection has an unfinished request frame; its timer runs from the first
        call that says so."""
        receiving = self._started[Expiry.RECEIVE_TIMEOUT]
        if not in_progress:
            receiving.pop(conn_id, None)
        elif conn_id not in receiving:
            receiving[conn_id] = now_ms

    def quiet(self, conn_id: int) -> None:
        """Stop the idle and receive timers: the broker is not reading the connection (it owes it
        a response, or holds its requests back), so silence is not the client's."""
        self._started[Expiry.IDLE].pop(conn_id, None)
        self._started[Expiry.RECEIVE_TIMEOUT].pop(conn_id, None)

    def failed_authentication(self, conn_id: int, now_ms: int) -> None:
        """Answer and close the connection once the failed-authentication delay is over."""
        self.quiet(conn_id)
        self._started[Expiry.AUTHENTICATION_FAILED][conn_id] = now_ms

    def closing(self, conn_id: int) -> bool:
        """Whether the connection waits for its failed-authentication close."""
        return conn_id in self._started[Expiry.AUTHENTICATION_FAILED]

    def forget(self, conn_id: int) -> None:
        for started in self._started.values():
            started.pop(conn_id, None)

    def clear(self) -> None:
        for started in self._started.values():
            started.clear()

    def next_deadline_ms(self) -> int | None:
        deadlines = [
            started_ms + self._spans[kind]
            for kind, started in self._started.items()
            if (started_ms := next(iter(started.values()), None)) is not None
        ]
        return min(deadlines) if deadlines else None

    def due(self, now_ms: int) -> list[tuple[int, Expiry]]:
        """Connections whose deadline has passed (each once; their timers are removed)."""
        expired: list[tuple[int, Expiry]] = []
        for kind in Expiry:
            started, span = self._started[kind], self._spans[kind]
            while started:
                conn_id, started_ms = next(iter(started.items()))
                if started_ms + span > now_ms:
                    break
                self.forget(conn_id)
                expired.append((conn_id, kind))
        return expired
