"""A proxy on the simulated network: the same :class:`~kafka_wire.proxy.pair.ProxyPair` state
machines the asyncio adapter runs, between simulated clients and nodes, on virtual time.

:class:`ProxyHost` is a network peer named ``location`` (``proxy``): clients dial it on the
ports of its address book; per accepted connection it opens a pair and dials the pair's upstream
node, and moves bytes, EOFs and timers between them. Async filters are run to completion at once
(a coroutine that would suspend closes its connection: nothing in the simulator awaits). Log
lines are kept in :attr:`ProxyHost.log`.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from kafka_wire.proxy.effects import Await, LogLine
from kafka_wire.proxy.filters import Verdict
from kafka_wire.proxy.pair import ProxyPair
from kafka_wire.proxy.proxy import Proxy
from kafka_wire.sim.network import Connection, Network
from kafka_wire.sim.scheduler import Event, Scheduler


@dataclass(eq=False)
class _Link:
    pair: ProxyPair
    client: Connection
    upstream: Connection | None = None
    connected: bool = False
    #: Upstream bytes produced before the upstream connection was accepted.
    outbox: bytearray = field(default_factory=bytearray)
    timer: Event | None = None
    timer_at: int | None = None


class ProxyHost:
    """The proxy as a simulated network peer (see the module docstring)."""

    def __init__(self, location: str, proxy: Proxy, network: Network, scheduler: Scheduler) -> None:
        self.location = location
        self.proxy = proxy
        self.network = network
        self.scheduler = scheduler
        self._links: dict[int, _Link] = {}
        self._next_id = 0
        self.log: list[str] = []
        self.pairs_opened = 0
        network.hosts[location] = self

    def _id(self, link: _Link) -> int:
        self._next_id += 1
        self._links[self._next_id] = link
        return self._next_id

    # -- Peer ---------------------------------------------------------------------------------------

    def net_accept(self, port: int, conn: Connection) -> int | None:
        if self.proxy.book.route(port) is None:
            return None
        pair = self.proxy.open(port, conn.locs[0], self.scheduler.now_ms)
        self.pairs_opened += 1
        link = _Link(pair, conn)
        local = self._id(link)
        host, upstream_port = pair.upstream
        up_local = self._id(link)
        link.upstream = self.network.dial(self, up_local, host, upstream_port)
        link.upstream.local[0] = up_local
        self._flush(link)
        return local

    def net_connected(self, local_id: int) -> None:
        link = self._links.get(local_id)
        if link is not None and link.upstream is not None and link.upstream.local[0] == local_id:
            link.connected = True
            self._flush(link)

    def net_data(self, local_id: int, data: bytes) -> None:
        link = self._links.get(local_id)
        if link is None:
            return
        now = self.scheduler.now_ms
        if self._is_upstream(link, local_id):
            link.pair.receive_upstream(data, now_ms=now)
        else:
            link.pair.receive_client(data, now_ms=now)
        self._flush(link)

    def net_closed(self, local_id: int) -> None:
        link = self._links.get(local_id)
        if link is None:
            return
        now = self.scheduler.now_ms
        if self._is_upstream(link, local_id):
            if link.connected:
                link.pair.upstream_eof(now_ms=now)
            else:
                link.pair.close("the upstream refused the connection")
        else:
            link.pair.client_eof(now_ms=now)
        self._flush(link)

    def _is_upstream(self, link: _Link, local_id: int) -> bool:
        return link.upstream is not None and link.upstream.local[0] == local_id

    # -- moving the pair's output ------------------------------------------------------------------

    def _flush(self, link: _Link) -> None:
        pair = link.pair
        link.outbox += pair.upstream_data_to_send()
        if link.outbox and link.connected and link.upstream is not None:
            self.network.send(link.upstream, 0, bytes(link.outbox))
            link.outbox.clear()
        out = pair.client_data_to_send()
        if out:
            self.network.send(link.client, 1, out)
        for effect in pair.take_effects():
            if isinstance(effect, LogLine):
                self.log.append(effect.message)
            elif isinstance(effect, Await):
                pair.resume(effect.token, _finish(effect.awaitable), now_ms=self.scheduler.now_ms)
                self._flush(link)
                return
        self.proxy.book.take_new()  # every port of the book is "listening" here
        if pair.must_close:
            self._close(link)
            return
        self._arm(link, pair.next_deadline_ms())

    def _close(self, link: _Link) -> None:
        if link.timer is not None:
            link.timer.cancel()
        self.network.close(link.client, 1)
        if link.upstream is not None:
            self.network.close(link.upstream, 0)
        for key in [k for k, v in self._links.items() if v is link]:
            del self._links[key]
        self.proxy.closed(link.pair)

    def _arm(self, link: _Link, deadline_ms: int | None) -> None:
        if deadline_ms == link.timer_at:
            return
        if link.timer is not None:
            link.timer.cancel()
            link.timer = None
        link.timer_at = deadline_ms
        if deadline_ms is not None:
            link.timer = self.scheduler.at(deadline_ms, f"tick {self.location}", lambda: self._on_timer(link))

    def _on_timer(self, link: _Link) -> None:
        link.timer = None
        link.timer_at = None
        link.pair.handle_timer(self.scheduler.now_ms)
        self._flush(link)


def _finish(awaitable: object) -> Verdict | BaseException:
    """Run a filter's coroutine to its end now (the simulator has no event loop)."""
    if not isinstance(awaitable, Coroutine):
        return TypeError("the simulator runs only coroutines from async filters")
    coroutine: Coroutine[Any, Any, Verdict] = awaitable
    try:
        coroutine.send(None)
    except StopIteration as stop:
        verdict: Verdict = stop.value
        return verdict
    except Exception as exc:
        return exc
    coroutine.close()
    return RuntimeError("an async filter suspended: nothing awaits in the simulator")
