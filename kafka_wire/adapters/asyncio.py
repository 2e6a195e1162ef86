"""asyncio adapters: a client and a server built on the Sans-IO connections.

This module (with the rest of ``kafka_wire.adapters``) is where sockets live. The client runs one
``ClientConnection`` over a stream: ``connect`` negotiates versions (and authenticates), then
``request`` may be called concurrently; requests are pipelined and each awaits its own response,
typed by its request (``await client.request(MetadataRequest())`` is a ``MetadataResponse``).
The server runs one ``ServerConnection`` per accepted stream and calls a handler per request;
handlers run concurrently and responses still leave in request order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from ssl import SSLContext
from types import TracebackType
from typing import Final, Self, TypeVar, cast

from kafka_wire.codec.request_for import RequestFor
from kafka_wire.codec.structs import Message
from kafka_wire.errors import KafkaWireError, LocalProtocolError, ProtocolError, RequestTimeoutError
from kafka_wire.protocol.client import ClientConfig, ClientConnection, ClientState, SaslClientSource
from kafka_wire.protocol.events import (
    NEED_DATA,
    PAUSED,
    Authenticated,
    AuthenticationFailed,
    ConnectionClosed,
    Request,
    RequestTimedOut,
    Response,
    UnsupportedRequest,
    VersionsNegotiated,
    expects_response,
)
from kafka_wire.protocol.server import ServerConfig, ServerConnection, ServerSasl

_READ_CHUNK: Final = 256 * 1024
_log = logging.getLogger("kafka_wire.adapters.asyncio")

R = TypeVar("R")


class KafkaClient:
    """One connection to a broker. Create it with :meth:`connect`.

    The connection's timers (request timeouts, KIP-368 re-authentication, the idle limit) run
    from this loop's clock: one ``call_at`` handle, re-armed at ``next_deadline_ms()`` after
    every input, calls ``handle_timer``.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: ClientConnection
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._conn = conn
        self._loop = asyncio.get_running_loop()
        self._failure: BaseException | None = None
        self._pump: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._handshake: asyncio.Future[None] = self._loop.create_future()
        self.negotiated: VersionsNegotiated | None = None
        self.authenticated: Authenticated | None = None

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        config: ClientConfig | None = None,
        sasl: SaslClientSource | None = None,
        timeout_ms: int = 30_000,
        ssl: SSLContext | None = None,
        server_hostname: str | None = None,
    ) -> KafkaClient:
        """Open a connection, run the ApiVersions exchange and SASL (when given), and return.

        ``sasl`` may be a factory of mechanisms: the connection then re-authenticates before the
        session the broker granted ends (KIP-368). With ``ssl`` (a client-side context, e.g.
        ``ssl.create_default_context(cafile=...)``, with ``load_cert_chain`` for a client
        certificate) the connection speaks TLS (an ``SSL`` or ``SASL_SSL`` listener); the broker's
        certificate is checked against ``server_hostname`` (default ``host``) when the context
        checks host names.
        """
        conn = ClientConnection(config, sasl=sasl, now_ms=_now_ms())
        opening = (
            asyncio.open_connection(host, port)
            if ssl is None
            else asyncio.open_connection(host, port, ssl=ssl, server_hostname=server_hostname or host)
        )
        reader, writer = await asyncio.wait_for(opening, timeout_ms / 1000)
        client = cls(reader, writer, conn)
        client._write(conn.data_to_send())
        client._arm_timer()
        client._pump = asyncio.create_task(client._read_loop())
        if conn.config.negotiate or sasl is not None:
            try:
                await asyncio.wait_for(asyncio.shield(client._handshake), timeout_ms / 1000)
            except BaseException:
                await client.close()
                raise
        return client

    @property
    def connection(self) -> ClientConnection:
        return self._conn

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self._conn.api_versions

    def _write(self, data: bytes) -> None:
        if data:
            self._writer.write(data)

    async def request(
        self, body: RequestFor[R], version: int | None = None, *, timeout_ms: int = 30_000
    ) -> R:
        """Send ``body`` and await its response body, of the request's response class: a
        ``MetadataRequest`` gives a ``MetadataResponse``. A Produce with acks=0 has no response:
        use :meth:`send_only`. :meth:`exchange` gives the whole :class:`Response` instead.
        """
        if not isinstance(body, Message):
            raise TypeError(f"request takes a request message, not {type(body).__name__}")
        response = await self.exchange(body, version, timeout_ms=timeout_ms)
        # The connection decodes each response with the response class of the request it answers.
        return cast(R, response.body)

    async def exchange(
        self, body: Message, version: int | None = None, *, timeout_ms: int = 30_000
    ) -> Response:
        """Send ``body`` and await the :class:`Response` event: the body (untyped) with its
        header, version and correlation id, for callers that need those or build requests
        dynamically (``REQUESTS[api_key]()``).

        No response within ``timeout_ms`` raises :class:`RequestTimeoutError` (a ``TimeoutError``)
        and closes the connection, as Kafka's client does. A version the broker lacks raises
        ``UnsupportedVersionError`` and leaves the connection usable.
        """
        if not expects_response(body):
            raise LocalProtocolError("this request gets no response; use send_only")
        self._raise_failure()
        if body.KIND != "request" or body.API_KEY is None:
            raise LocalProtocolError(f"request takes a request, not {type(body).__name__}")
        if version is None:
            version = self._conn.version_for(body.API_KEY)  # a question: the connection stays usable
        future: asyncio.Future[Response] = self._loop.create_future()
        self._write(self._conn.send(body, version, context=future, timeout_ms=timeout_ms, now_ms=_now_ms()))
        self._arm_timer()
        await self._drain()
        return await future

    async def send_only(self, body: Message, version: int | None = None) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        self._raise_failure()
        self._write(self._conn.send(body, version, now_ms=_now_ms()))
        self._arm_timer()
        await self._drain()

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except OSError as exc:
            self._conn.send_failed()
            self._fail(exc)
            raise ConnectionError(f"connection failed: {exc}") from exc

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise ConnectionError(f"connection failed: {self._failure}") from self._failure

    # -- the connection's events and timers ----------------------------------------------------

    def _arm_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self._conn.next_deadline_ms() if self._failure is None else None
        if deadline is not None:
            self._timer = self._loop.call_at((deadline + 1) / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self._conn.handle_timer(_now_ms())
            self._process_events()
        except (KafkaWireError, OSError, ConnectionError) as exc:
            self._fail(exc)
            self._writer.close()

    def _process_events(self) -> None:
        """Hand out every event the connection has, then re-arm the timer."""
        conn = self._conn
        while True:
            event = conn.next_event()
            self._write(conn.data_to_send())  # e.g. an ApiVersions retry, SASL tokens, held requests
            if event is NEED_DATA:
                break
            if isinstance(event, Response):
                future = event.context
                if isinstance(future, asyncio.Future) and not future.done():
                    future.set_result(event)
            elif isinstance(event, VersionsNegotiated):
                self.negotiated = event
                if conn.state is ClientState.READY and not self._handshake.done():
                    self._handshake.set_result(None)
            elif isinstance(event, Authenticated):
                self.authenticated = event
                if not self._handshake.done():
                    self._handshake.set_result(None)
            elif isinstance(event, RequestTimedOut):
                name = type(event.request).__name__
                error = RequestTimeoutError(
                    f"{name} (correlation id {event.correlation_id}) got no response in time"
                )
                for future in event.contexts:
                    if isinstance(future, asyncio.Future) and not future.done():
                        future.set_exception(error)
                raise error
            elif isinstance(event, ConnectionClosed):
                raise ConnectionError(
                    f"the broker closed the connection ({len(event.unanswered)} unanswered)"
                )
        self._arm_timer()

    async def _read_loop(self) -> None:
        conn = self._conn
        try:
            while True:
                self._process_events()
                data = await self._reader.read(_READ_CHUNK)
                if data:
                    conn.receive_data(data, now_ms=_now_ms())
                else:
                    conn.receive_eof(now_ms=_now_ms())
        except (KafkaWireError, OSError, ConnectionError) as exc:
            self._fail(exc)
        except asyncio.CancelledError:
            self._fail(ConnectionError("connection closed"))
            raise

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._handshake.done():
            self._handshake.set_exception(exc)
            self._handshake.exception()  # retrieved here: connect() may have stopped waiting
        for future in self._pending_futures():
            if not future.done():
                future.set_exception(ConnectionError(f"connection failed: {exc}"))

    def _pending_futures(self) -> list[asyncio.Future[Response]]:
        return [f for f in self._conn.pending_contexts() if isinstance(f, asyncio.Future)]

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await self._pump
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()
        if not self._handshake.done():
            self._handshake.cancel()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _now_ms() -> int:
    """The running loop's monotonic clock in ms: the only clock the connections hear of."""
    return int(asyncio.get_running_loop().time() * 1000)


#: A server handler: the request (and the connection's peer address) in, the response body out,
#: or None for requests that get no response.
Handler = Callable[[Request, tuple[str, int]], Awaitable[Message | None]]


class KafkaServer:
    """A TCP server on 127.0.0.1 (or ``host``) running one ServerConnection per client."""

    def __init__(
        self, handler: Handler, *, config: ServerConfig | None = None, sasl: ServerSasl | None = None
    ) -> None:
        self._handler = handler
        self._config = config
        self._sasl = sasl
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> Self:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("", 0)
        conn = ServerConnection(self._config, sasl=self._sasl, now_ms=_now_ms())
        handlers: set[asyncio.Task[None]] = set()
        try:
            await self._serve_connection(conn, reader, writer, (peer[0], peer[1]), handlers)
        except (ProtocolError, OSError) as exc:
            _log.info("closing connection from %s: %s", peer, exc)
        except asyncio.CancelledError:
            pass  # close() ends connections; finishing normally keeps asyncio's stream callback quiet
        finally:
            for handler in handlers:
                handler.cancel()
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _serve_connection(
        self,
        conn: ServerConnection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: tuple[str, int],
        handlers: set[asyncio.Task[None]],
    ) -> None:
        while True:
            event = conn.next_event()
            if event is PAUSED:  # at the in-flight limit: wait for a handler to answer
                writer.write(conn.data_to_send())
                if not handlers:  # a handler ended without answering: nothing will unpause it
                    return
                await asyncio.wait(handlers, return_when=asyncio.FIRST_COMPLETED)
                continue
            if event is NEED_DATA:
                writer.write(conn.data_to_send())
                await writer.drain()
                deadline = conn.next_deadline_ms()  # idle limit, KIP-368 session end
                try:
                    wait = None if deadline is None else max(0, deadline + 1 - _now_ms()) / 1000
                    data = await asyncio.wait_for(reader.read(_READ_CHUNK), wait)
                except TimeoutError:
                    conn.handle_timer(_now_ms())
                    continue
                if data:
                    conn.receive_data(data, now_ms=_now_ms())
                else:
                    conn.receive_eof(now_ms=_now_ms())
                continue
            if isinstance(event, Request):
                handler = asyncio.create_task(self._answer(conn, writer, event, peer))
                handlers.add(handler)
                handler.add_done_callback(handlers.discard)
            elif isinstance(event, UnsupportedRequest):
                writer.write(conn.reject(event))
            elif isinstance(event, Authenticated):
                _log.info("%s authenticated as %r with %s", peer, event.principal, event.mechanism)
            elif isinstance(event, AuthenticationFailed):
                _log.info("%s failed to authenticate: %s", peer, event.reason)
            if conn.must_close or isinstance(event, ConnectionClosed):
                writer.write(conn.data_to_send())
                await writer.drain()
                return

    async def _answer(
        self, conn: ServerConnection, writer: asyncio.StreamWriter, request: Request, peer: tuple[str, int]
    ) -> None:
        try:
            body = await self._handler(request, peer)
            if body is not None and request.expects_response:
                writer.write(conn.send(request.reply(body), now_ms=_now_ms()))
                await writer.drain()
        except (KafkaWireError, OSError) as exc:
            _log.warning("handler for %s from %s failed: %s", type(request.body).__name__, peer, exc)
            writer.close()
        except Exception:
            _log.exception(
                "handler for %s from %s raised; closing the connection", type(request.body).__name__, peer
            )
            writer.close()


async def serve(
    handler: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    config: ServerConfig | None = None,
    sasl: ServerSasl | None = None,
) -> KafkaServer:
    """Start a :class:`KafkaServer`; ``port=0`` picks a free port (read it from ``.port``)."""
    return await KafkaServer(handler, config=config, sasl=sasl).start(host, port)
