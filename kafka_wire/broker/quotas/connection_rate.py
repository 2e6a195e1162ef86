"""Connection creation rates (KIP-612; Kafka's ``ConnectionQuotas``), decided here and carried out
by the driver's acceptor (``adapters/acceptor.py``), which owns the sockets and the clock.

Two limits, each a rate over the client quota windows (:class:`~.rate.SampledRate`,
``quota.window.num`` windows of ``quota.window.size.seconds``), a new connection counting one:

- ``max.connection.creation.rate`` (a broker setting; unlimited by default): the connections
  accepted per second on each listener and, except on the inter-broker listener of a node with
  several listeners (Kafka's protected listener), over the node's client listeners together
  (its controller listeners have a total of their own, as Kafka's controller has a socket server
  of its own). Over it,
  :meth:`ConnectionRates.accept_delay_ms` is how long the acceptor waits before it serves the
  connection and accepts the next (the connection is not refused; the backlog waits in the
  kernel).
- ``connection_creation_rate`` per IP address (client quota entity ``ip``, a named address or
  the default one, from the metadata image): over it, :meth:`ConnectionRates.ip_throttle_ms` is
  how long the acceptor holds the connection unserved before it closes it; the connection is
  taken back from every rate it was counted in.

A throttle time is ``(rate - limit) / limit * span`` of the windows, at most one window (Kafka's
``maxThrottleTimeMs``). Rates unused for an hour are dropped, as the byte-rate ones.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from kafka_wire.broker.controller.quotas_image import IP, ClientQuotasImage, Entity
from kafka_wire.broker.quotas.manager import INACTIVE_RATE_MS, PURGE_INTERVAL_MS
from kafka_wire.broker.quotas.rate import SampledRate

CONNECTION_CREATION_RATE: Final = "connection_creation_rate"
#: Kafka's "no limit" (``Int.MaxValue``) for both settings.
UNLIMITED: Final = 2_147_483_647
_BROKER: Final = ("broker", "")
_CONTROLLER: Final = ("broker", "controller")


def _normal(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


class ConnectionRates:
    """The connection creation rates of one node's listeners (pure: time is ``now_ms``)."""

    def __init__(
        self,
        *,
        window_num: int,
        window_size_seconds: int,
        max_rate: int = UNLIMITED,
        protected_listener: str | None = None,
        controller_listeners: frozenset[str] = frozenset(),
        values: ClientQuotasImage | None = None,
    ) -> None:
        self._window_num = window_num
        self._window_ms = window_size_seconds * 1000
        self._max_rate = max_rate
        self._protected = protected_listener
        self._controller_listeners = controller_listeners
        self._values = values if values is not None else ClientQuotasImage()
        self._rates: dict[tuple[str, str], SampledRate] = {}
        self._used: dict[tuple[str, str], int] = {}
        self._next_purge_ms = 0

    def _rate(self, key: tuple[str, str], now_ms: int) -> SampledRate:
        if now_ms >= self._next_purge_ms:
            self._next_purge_ms = now_ms + PURGE_INTERVAL_MS
            for old in [k for k, used in self._used.items() if now_ms - used >= INACTIVE_RATE_MS]:
                del self._used[old], self._rates[old]
        self._used[key] = now_ms
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = SampledRate(self._window_num, self._window_ms, now_ms)
        return rate

    def _record(self, key: tuple[str, str], limit: float, now_ms: int) -> int:
        """Count one connection; the throttle time it gives (0: within ``limit``)."""
        rate = self._rate(key, now_ms)
        rate.record(1.0, now_ms)
        measured = rate.measure(now_ms)
        if measured <= limit:
            return 0
        return min(self._window_ms, round((measured - limit) / limit * rate.span_ms(now_ms)))

    def accept_delay_ms(self, listener: str, now_ms: int) -> int:
        """Count a connection accepted on ``listener``: how long to wait before serving it (0:
        within ``max.connection.creation.rate``)."""
        if self._max_rate >= UNLIMITED:
            return 0
        delay = 0
        if listener != self._protected:
            delay = self._record(self._total_of(listener), self._max_rate, now_ms)
        return max(delay, self._record(("listener", listener), self._max_rate, now_ms))

    def _total_of(self, listener: str) -> tuple[str, str]:
        return _CONTROLLER if listener in self._controller_listeners else _BROKER

    def ip_limit(self, address: str) -> float | None:
        """The ``connection_creation_rate`` of ``address`` (its own, else the default IP's)."""
        quotas = self._values.quotas
        if not quotas:
            return None
        named: Entity = ((IP, _normal(address)),)
        for entity in (named, ((IP, address),), ((IP, None),)):
            values = quotas.get(entity)
            if values is not None and CONNECTION_CREATION_RATE in values:
                return values[CONNECTION_CREATION_RATE]
        return None

    def ip_throttle_ms(self, listener: str, address: str, now_ms: int) -> int:
        """Count a connection from ``address``: 0 when within its IP's rate, else how long to hold
        it before closing it (it is then taken back from every rate)."""
        limit = self.ip_limit(address)
        if limit is None:
            return 0
        key = ("ip", _normal(address))
        throttle_ms = self._record(key, limit, now_ms)
        if throttle_ms > 0:
            self._rates[key].record(-1.0, now_ms)
            if self._max_rate < UNLIMITED:
                if listener != self._protected:
                    self._rate(self._total_of(listener), now_ms).record(-1.0, now_ms)
                self._rate(("listener", listener), now_ms).record(-1.0, now_ms)
        return throttle_ms

    def attach(self, values: ClientQuotasImage) -> None:
        """Read the IP quotas from ``values`` (the node's metadata image) from now on."""
        self._values = values
