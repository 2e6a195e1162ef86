"""The proxy on asyncio: listening sockets, one upstream socket per client, timers, async filters.

:class:`ProxyServer` runs a :class:`~kafka_wire.proxy.proxy.Proxy`: one listening socket per
route of its address book (the bootstrap upstreams, then every broker address a response names,
as it appears), and per accepted client a :class:`~kafka_wire.proxy.pair.ProxyPair` with a
socket to its upstream. The loop's clock gives ``now_ms``. TLS: ``client_ssl`` (a server-side
:class:`ssl.SSLContext`) on the proxy's ports, ``upstream_ssl`` towards the brokers.

Both sockets of a client are asyncio protocols, not streams: the bytes a socket read go to the
pair in the transport's own callback, and what the pair has for either socket is written there
and then (no task switch, no stream buffer copying each read twice; both sockets have
TCP_NODELAY). Reading a client pauses while its pair holds as much of its input as it may and
while the upstream socket's write buffer is over its high-water mark (and the other way round),
so memory per connection is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Final

from kafka_wire.proxy.addresses import Route
from kafka_wire.proxy.effects import Await, LogLine
from kafka_wire.proxy.pair import ProxyPair
from kafka_wire.proxy.proxy import Proxy

#: How long a closing socket may take to write what is left before it is aborted.
_CLOSE_TIMEOUT_S: Final = 5.0
_log = logging.getLogger("kafka_wire.proxy")


class PortBinder:
    """The address book's port allocator: binds a listening socket at once and keeps it, so the
    port a new broker gets is known and taken (``first_port`` 0: the system picks each; else
    counting up from it, skipping ports in use)."""

    def __init__(self, host: str, first_port: int) -> None:
        self.host = host
        self._next = first_port
        self.sockets: dict[int, socket.socket] = {}

    def bind(self, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        bound: int = sock.getsockname()[1]
        self.sockets[bound] = sock
        return sock

    def __call__(self) -> int:
        while True:
            port = self._next
            if port:
                self._next += 1
            try:
                sock = self.bind(port)
            except OSError as exc:
                if port and exc.errno == errno.EADDRINUSE and self._next <= 65535:
                    continue
                raise
            bound: int = sock.getsockname()[1]
            return bound


class ProxyServer:
    """Runs a proxy on the running loop (see the module docstring). ``await start()``, then
    ``await close()``."""

    def __init__(
        self,
        proxy_for: Callable[[Callable[[], int]], Proxy],
        *,
        host: str = "127.0.0.1",
        first_port: int = 0,
        client_ssl: ssl.SSLContext | None = None,
        upstream_ssl: ssl.SSLContext | None = None,
    ) -> None:
        self.binder = PortBinder(host, first_port)
        #: Built with this server's port allocator.
        self.proxy = proxy_for(self.binder)
        self._client_ssl = client_ssl
        #: The TLS context towards the brokers (None: plaintext).
        self.upstream_ssl = upstream_ssl
        self._servers: dict[int, asyncio.Server] = {}
        self._links: set[_Link] = set()
        #: The server's own tasks (listening on new ports): no link's, so no link's end cancels one.
        self._tasks: set[asyncio.Future[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    def now_ms(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    @property
    def routes(self) -> list[Route]:
        return self.proxy.book.routes

    @property
    def bootstrap(self) -> str:
        """The proxy address of the first upstream, for clients' ``bootstrap.servers``."""
        route = self.proxy.book.routes[0]
        return f"{self.proxy.config.advertised_host}:{route.port}"

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self.listen_new()

    async def listen_new(self) -> None:
        """Listen on the ports of routes the address book made since the last call."""
        for route in self.proxy.book.take_new():
            sock = self.binder.sockets.pop(route.port, None) or self.binder.bind(route.port)

            def accept(port: int = route.port) -> _Side:
                link = _Link(self, port)
                self._links.add(link)
                return link.client

            assert self._loop is not None
            self._servers[route.port] = await self._loop.create_server(
                accept, sock=sock, ssl=self._client_ssl
            )
            _log.info("proxy port %d -> %s:%d", route.port, route.upstream_host, route.upstream_port)

    def listen_soon(self) -> None:
        """Listen on the ports the address book made (a response named new brokers) in a task of
        the server's: were it the link's whose response it was, that client's closing at once
        would cancel it midway, its ports bound (clients connect) and never served."""
        task = asyncio.ensure_future(self.listen_new())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for server in self._servers.values():
            server.close()
        for link in list(self._links):
            link.shut("the proxy is stopping")
        for server in self._servers.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        ends = [link.ended for link in self._links]
        if ends:
            await asyncio.wait(ends, timeout=_CLOSE_TIMEOUT_S)
        for sock in self.binder.sockets.values():
            sock.close()

    def forget(self, link: _Link) -> None:
        self._links.discard(link)


def no_delay(transport: asyncio.BaseTransport) -> None:
    """TCP_NODELAY on the transport's socket. asyncio sets it only on sockets whose protocol
    number is TCP's, and a socket accepted from a listener made without one has none: without
    it, an answer written while the client had not yet acknowledged the previous one waited for
    that acknowledgement (a delayed ACK, about 40 ms)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Side(asyncio.Protocol):
    """One socket of a link (the client's or the upstream's), as an asyncio protocol."""

    def __init__(self, link: _Link, upstream: bool) -> None:
        self.link = link
        self.upstream = upstream
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.eof = False
        #: The transport's write buffer is over its high-water mark.
        self.write_paused = False
        self.reading = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        no_delay(transport)
        self.link.made(self)

    def data_received(self, data: bytes) -> None:
        self.link.received(self, data)

    def eof_received(self) -> bool:
        self.link.received(self, None)
        # Keep a plain socket open for what is left to write (the pair says when to close);
        # a TLS transport closes on EOF whatever this says.
        return self.transport is not None and self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.link.lost(self)

    def pause_writing(self) -> None:
        self.write_paused = True
        self.link.update_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self.link.update_reading()

    def set_reading(self, on: bool) -> None:
        transport = self.transport
        if on == self.reading or transport is None or transport.is_closing():
            return
        self.reading = on
        if on:
            transport.resume_reading()
        else:
            transport.pause_reading()

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)


class _Link:
    """One client socket, its upstream socket and their pair."""

    def __init__(self, server: ProxyServer, port: int) -> None:
        self.server = server
        self.port = port
        self.client = _Side(self, upstream=False)
        self.up: _Side | None = None
        self.pair: ProxyPair | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.deadline_ms: int | None = None
        self.done = False
        #: Set once both sockets are closed and the proxy has forgotten the link.
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending: set[asyncio.Future[None]] = set()

    # -- the sockets' callbacks -------------------------------------------------------------------

    def made(self, side: _Side) -> None:
        if side.upstream:
            if self.done:  # the client went while the upstream socket was connecting
                assert side.transport is not None
                side.transport.close()
            self.flush()
            return
        server = self.server
        assert side.transport is not None
        peer = side.transport.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        try:
            pair = self.pair = server.proxy.open(self.port, client, server.now_ms())
        except Exception:
            _log.exception("proxy port %d: no pair for %s", self.port, client)
            self.shut_sockets()
            return
        side.set_reading(False)  # the client's bytes wait for the upstream socket
        task = asyncio.ensure_future(self._connect(*pair.upstream))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _connect(self, host: str, port: int) -> None:
        pair = self.pair
        assert pair is not None
        loop = asyncio.get_running_loop()
        up = _Side(self, upstream=True)
        self.up = up
        try:
            await loop.create_connection(lambda: up, host, port, ssl=self.server.upstream_ssl)
        except OSError as exc:
            _log.warning(
                "proxy connection %d: upstream %s:%d unreachable: %s",
                pair.info.connection_id,
                host,
                port,
                exc,
            )
            self.up = None
            self.shut_sockets()

    def received(self, side: _Side, data: bytes | None) -> None:
        pair = self.pair
        if pair is None or self.done or side.eof:
            return
        if data is None:
            side.eof = True
        now = self.server.now_ms()
        if side.upstream:
            if data is None:
                pair.upstream_eof(now_ms=now)
            else:
                pair.receive_upstream(data, now_ms=now)
        elif data is None:
            pair.client_eof(now_ms=now)
        else:
            pair.receive_client(data, now_ms=now)
        self.flush()

    def lost(self, side: _Side) -> None:
        if not self.done:
            self.received(side, None)  # a reset without EOF: the pair closes as for an EOF
        if not self.done:
            self.shut("a socket was lost")
        self._maybe_end()

    # -- the pair's outputs -----------------------------------------------------------------------

    def shut(self, reason: str) -> None:
        if self.pair is not None:
            self.pair.close(reason)
        self.shut_sockets()

    def flush(self) -> None:
        """Write what the pair produced, act on its effects, re-arm its timer."""
        pair = self.pair
        if pair is None or self.done:
            return
        up = self.up
        if up is not None and up.transport is not None:
            out = pair.upstream_data_to_send()
            if out:
                up.write(out)
        out = pair.client_data_to_send()
        if out:
            self.client.write(out)
        for effect in pair.take_effects():
            if isinstance(effect, LogLine):
                _log.log(effect.level, "%s", effect.message)
            elif isinstance(effect, Await):
                self._await(effect)
        if self.server.proxy.book.has_new():
            self.server.listen_soon()
        if pair.must_close:
            self.shut_sockets()
            return
        self.update_reading()
        deadline = pair.next_deadline_ms()
        if deadline != self.deadline_ms:
            self._arm(deadline)

    def update_reading(self) -> None:
        """Read a socket only while the pair and the other socket's write buffer can take more."""
        pair, up = self.pair, self.up
        if pair is None or self.done:
            return
        connected = up is not None and up.transport is not None
        self.client.set_reading(
            connected and pair.wants_client_data and not (up is not None and up.write_paused)
        )
        if up is not None:
            up.set_reading(not self.client.write_paused)

    def shut_sockets(self) -> None:
        """Close both sockets once what they have to write is written (aborted after a while)."""
        if self.done:
            return
        self.done = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for task in list(self.pending):
            task.cancel()
        for side in (self.client, self.up):
            if side is not None and side.transport is not None and not side.lost:
                side.transport.close()
        if not self._maybe_end():
            asyncio.get_running_loop().call_later(_CLOSE_TIMEOUT_S, self._abort)

    def _abort(self) -> None:
        for side in (self.client, self.up):
            if side is not None and side.transport is not None and not side.lost:
                side.transport.abort()

    def _maybe_end(self) -> bool:
        """Forget the link once it is shut and both sockets are gone."""
        if not self.done or self.ended.done():
            return self.ended.done()
        for side in (self.client, self.up):
            if side is not None and side.transport is not None and not side.lost:
                return False
        if self.pair is not None:
            self.server.proxy.closed(self.pair)
        self.server.forget(self)
        self.ended.set_result(None)
        return True

    # -- async filters and the timer --------------------------------------------------------------

    def _await(self, effect: Await) -> None:
        async def run() -> None:
            pair = self.pair
            assert pair is not None
            try:
                verdict = await effect.awaitable
            except Exception as exc:  # the filter's failure closes its connection, not the proxy
                pair.resume(effect.token, exc, now_ms=self.server.now_ms())
            else:
                pair.resume(effect.token, verdict, now_ms=self.server.now_ms())
            self.flush()

        task = asyncio.ensure_future(run())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def _arm(self, deadline_ms: int | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.deadline_ms = deadline_ms
        if deadline_ms is not None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_at((deadline_ms + 1) / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self.timer = None
        self.deadline_ms = None
        if self.pair is not None and not self.done:
            self.pair.handle_timer(self.server.now_ms())
            self.flush()
