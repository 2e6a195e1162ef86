"""The proxy on asyncio: listening sockets, one upstream socket per client, timers, async filters.

:class:`ProxyServer` runs a :class:`~kafka_wire.proxy.proxy.Proxy`: one listening socket per
route of its address book (the bootstrap upstreams, then every broker address a response names,
as it appears), and per accepted client a :class:`~kafka_wire.proxy.pair.ProxyPair` with a
socket to its upstream. The loop's clock gives ``now_ms``. Reading a client stops while its pair
holds as much of its input as it may and while the upstream socket's write buffer is full (and
the other way round), so memory per connection is bounded. TLS: ``client_ssl`` (a server-side
:class:`ssl.SSLContext`) on the proxy's ports, ``upstream_ssl`` towards the brokers.
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

_READ_CHUNK: Final = 256 * 1024
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

            def accept(r: asyncio.StreamReader, w: asyncio.StreamWriter, port: int = route.port) -> None:
                link = _Link(self, port, r, w)
                self._links.add(link)
                link.task = asyncio.ensure_future(link.run())

            self._servers[route.port] = await asyncio.start_server(
                accept, sock=sock, ssl=self._client_ssl, limit=_READ_CHUNK
            )
            _log.info("proxy port %d -> %s:%d", route.port, route.upstream_host, route.upstream_port)

    async def close(self) -> None:
        for server in self._servers.values():
            server.close()
        for link in list(self._links):
            link.shut("the proxy is stopping")
        for server in self._servers.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        tasks = [link.task for link in self._links if link.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        for sock in self.binder.sockets.values():
            sock.close()

    def forget(self, link: _Link) -> None:
        self._links.discard(link)


class _Link:
    """One client socket, its upstream socket and their pair."""

    def __init__(
        self, server: ProxyServer, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.port = port
        self.reader = reader
        self.writer = writer
        self.up_reader: asyncio.StreamReader | None = None
        self.up_writer: asyncio.StreamWriter | None = None
        self.pair: ProxyPair | None = None
        self.task: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.readable = asyncio.Event()
        self.done = asyncio.Event()
        self.pending: set[asyncio.Future[None]] = set()

    async def run(self) -> None:
        server = self.server
        peer = self.writer.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        try:
            pair = self.pair = server.proxy.open(self.port, client, server.now_ms())
            host, port = pair.upstream
            try:
                self.up_reader, self.up_writer = await asyncio.open_connection(
                    host, port, ssl=server.upstream_ssl, limit=_READ_CHUNK
                )
            except OSError as exc:
                _log.warning(
                    "proxy connection %d: upstream %s:%d unreachable: %s",
                    pair.info.connection_id,
                    host,
                    port,
                    exc,
                )
                return
            self.flush()
            readers = [
                asyncio.ensure_future(self._read_client()),
                asyncio.ensure_future(self._read_upstream()),
            ]
            await self.done.wait()
            for task in readers:
                task.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
        finally:
            await self._close_sockets()
            if self.pair is not None:
                server.proxy.closed(self.pair)
            server.forget(self)

    def shut(self, reason: str) -> None:
        if self.pair is not None:
            self.pair.close(reason)
        self.done.set()

    async def _read_client(self) -> None:
        pair = self.pair
        assert pair is not None and self.up_writer is not None
        while not self.done.is_set():
            if not pair.wants_client_data:
                self.readable.clear()
                await self.readable.wait()
                continue
            data = await self.reader.read(_READ_CHUNK)
            now = self.server.now_ms()
            if data:
                pair.receive_client(data, now_ms=now)
            else:
                pair.client_eof(now_ms=now)
            self.flush()
            if not data:
                return
            await self.up_writer.drain()

    async def _read_upstream(self) -> None:
        pair, reader = self.pair, self.up_reader
        assert pair is not None and reader is not None
        while not self.done.is_set():
            data = await reader.read(_READ_CHUNK)
            now = self.server.now_ms()
            if data:
                pair.receive_upstream(data, now_ms=now)
            else:
                pair.upstream_eof(now_ms=now)
            self.flush()
            if not data:
                return
            await self.writer.drain()

    def flush(self) -> None:
        """Write what the pair produced, act on its effects, re-arm its timer."""
        pair = self.pair
        assert pair is not None
        out = pair.upstream_data_to_send()
        if out and self.up_writer is not None:
            self.up_writer.write(out)
        out = pair.client_data_to_send()
        if out:
            self.writer.write(out)
        for effect in pair.take_effects():
            if isinstance(effect, LogLine):
                _log.log(effect.level, "%s", effect.message)
            elif isinstance(effect, Await):
                self._await(effect)
        if self.server.proxy.book.has_new():
            task = asyncio.ensure_future(self.server.listen_new())
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)
        if pair.must_close:
            self.done.set()
            return
        if pair.wants_client_data:
            self.readable.set()
        self._arm(pair.next_deadline_ms())

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
        if deadline_ms is not None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_at((deadline_ms + 1) / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self.timer = None
        if self.pair is not None and not self.done.is_set():
            self.pair.handle_timer(self.server.now_ms())
            self.flush()

    async def _close_sockets(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        for task in list(self.pending):
            task.cancel()
        for writer in (self.writer, self.up_writer):
            if writer is None:
                continue
            with contextlib.suppress(Exception):
                writer.close()
                await asyncio.wait_for(writer.wait_closed(), 5)
