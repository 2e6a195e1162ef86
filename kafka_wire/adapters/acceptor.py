"""The broker server's acceptors: one task per listening socket accepts connections one at a time
and hands each to the server, as Kafka's ``Acceptor`` with its ``ConnectionQuotas``.

- **File descriptors.** A connection that would leave fewer than :data:`FD_RESERVE` descriptors
  is closed as soon as it is accepted, so that clients can never make a storage write fail for
  want of one (logged once, at WARNING); an accept that fails for want of descriptors waits a
  moment instead of logging a traceback.
- **Connection creation rate** (KIP-612; the rates and their throttle times are
  :class:`~kafka_wire.broker.quotas.connection_rate.ConnectionRates`, pure): over
  ``max.connection.creation.rate`` the acceptor waits the throttle time before it serves the
  connection it accepted and accepts the next one (the rest wait in the kernel's backlog); a
  connection over its IP's ``connection_creation_rate`` is held unserved for its throttle time,
  then closed (Kafka's delayed close of a throttled connection).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.adapters.sockets import RESET
from kafka_wire.broker.quotas.connection_rate import ConnectionRates

if TYPE_CHECKING:
    from kafka_wire.adapters.tls import TlsListener

#: File descriptors never given to connections: what storage (one file at a time), zero-copy
#: fetch (regions waiting to be sent) and the accept of a refused connection open at once.
FD_RESERVE: Final = 64
#: Accept errors that mean "no resources now": wait this long and accept again.
_ACCEPT_RESOURCE_ERRORS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_ACCEPT_RETRY_S: Final = 0.1
_log = logging.getLogger("kafka_wire.adapters.broker_server")

#: An accepted connection and its peer's address.
Accepted = tuple[socket.socket, Any]
#: What the server does with an accepted connection: (socket, listener name, TLS or None).
Serve = Callable[[socket.socket, str, "TlsListener | None"], None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _next_connection(loop: asyncio.AbstractEventLoop, listener: socket.socket) -> asyncio.Future[Accepted]:
    """The next connection on ``listener`` (non-blocking), in a future the accept loop holds.

    Not ``loop.sock_accept``: when the loop's task is cancelled after the socket was accepted
    but before the task resumed (a server stopping while a client connects), that coroutine drops
    the accepted socket unclosed; this future still holds it for the accept loop to close."""
    accepting: asyncio.Future[Accepted] = loop.create_future()
    fd = listener.fileno()

    def ready() -> None:
        if accepting.done():
            return
        try:
            conn, address = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            accepting.set_exception(exc)
            return
        if accepting.done():  # cancelled by what accept() ran (a signal handler, say)
            conn.close()
            return
        conn.setblocking(False)
        accepting.set_result((conn, address))

    def done(_: asyncio.Future[Accepted]) -> None:
        if listener.fileno() == fd:  # closed listeners' readers are removed as they close
            loop.remove_reader(fd)

    loop.add_reader(fd, ready)
    accepting.add_done_callback(done)
    return accepting


class Acceptors:
    """The accept loops of one server, their descriptor limit and connection rates."""

    def __init__(self, rates: ConnectionRates, serve: Serve) -> None:
        self.rates = rates
        self._serve = serve
        self.fd_limit: int | None = None
        self._fd_warned = False
        #: Connections over their IP's rate, held until their close (closed at once on stop).
        self._held: dict[socket.socket, asyncio.TimerHandle] = {}

    async def accept(self, listener: socket.socket, name: str, tls: TlsListener | None) -> None:
        """Accept connections on ``listener`` one at a time, forever (cancel to stop)."""
        loop = asyncio.get_running_loop()
        while True:
            accepting = _next_connection(loop, listener)
            try:
                conn, address = await accepting
            except asyncio.CancelledError:
                if accepting.done() and not accepting.cancelled() and accepting.exception() is None:
                    accepting.result()[0].close()  # taken just before the cancel: never served
                raise
            except OSError as exc:
                if exc.errno in _ACCEPT_RESOURCE_ERRORS:
                    self._warn_descriptors()
                    await asyncio.sleep(_ACCEPT_RETRY_S)
                else:  # the client gave up before it was accepted (ECONNABORTED, ...)
                    _log.debug("accept: %s", exc)
                continue
            # Descriptors are allocated lowest first, so every one below the new socket's is in use.
            if self.fd_limit is not None and conn.fileno() >= self.fd_limit - FD_RESERVE:
                self._warn_descriptors()
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
                conn.close()
                continue
            delay_ms = self.rates.accept_delay_ms(name, _now_ms())
            if delay_ms > 0:
                _log.debug("connection rate over max.connection.creation.rate: accepting in %d ms", delay_ms)
                try:
                    await asyncio.sleep(delay_ms / 1000)
                except asyncio.CancelledError:
                    conn.close()
                    raise
            host = str(address[0]) if isinstance(address, tuple) else ""
            throttle_ms = self.rates.ip_throttle_ms(name, host, _now_ms()) if host else 0
            if throttle_ms > 0:
                _log.debug(
                    "connection from %s over its connection_creation_rate: closed in %d ms", host, throttle_ms
                )
                self._held[conn] = loop.call_later(throttle_ms / 1000, self._close_held, conn)
                continue
            self._serve(conn, name, tls)

    def _close_held(self, conn: socket.socket) -> None:
        self._held.pop(conn, None)
        conn.close()

    def close_held(self) -> None:
        """The server stops: the connections held for their IP's rate are closed now."""
        for conn, handle in list(self._held.items()):
            handle.cancel()
            conn.close()
        self._held.clear()

    def _warn_descriptors(self) -> None:
        if not self._fd_warned:
            self._fd_warned = True
            _log.warning(
                "refusing connections: the process's file limit is %s and %d descriptors are kept for storage "
                "(raise the limit with ulimit -n to serve more connections); logged once",
                self.fd_limit,
                FD_RESERVE,
            )
