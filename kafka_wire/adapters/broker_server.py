"""The asyncio driver of the broker engine: sockets, the wall clock, files and timers.

It feeds ``Broker`` what arrives and when, hands the storage effects it returns to a worker
thread that applies them to the data directory and reports their outcome back on the loop
(``storage_worker.StorageWorker``: the loop never waits for the disk), writes ``Send`` parts
(file regions with ``sendfile``; on TLS connections copied, read off the loop), closes connections on
``CloseConnection``, stops reading a connection between ``PauseReading`` and ``ResumeReading``
(its bytes wait in the kernel) and stops on ``StopBroker``. One timer task calls ``tick`` at
``next_deadline_ms()``. The start waits for the writes of recovery before it listens; the stop
waits for the last writes (every log made durable) before it returns.

What only the OS can decide is decided here: the process's file limit (``RLIMIT_NOFILE``) is
raised to its hard limit at start, and connections are accepted one at a time
(``acceptor.Acceptors``: a descriptor reserve for storage, and the connection creation rates of
KIP-612). The time each ``receive_data`` call takes is measured and reported to the engine
(``Broker.request_time``), for the ``request_percentage`` quotas (KIP-124).
``stop`` is bounded: it stops accepting, lets the engine close every connection and make its logs
durable, gives writers :data:`STOP_GRACE_S` to flush, then aborts what is left.

A listener started with a :class:`~kafka_wire.adapters.tls.TlsListener` speaks TLS: each
accepted connection's handshake runs in its own task (one that fails, from garbage or an untrusted
client certificate, closes that connection only), and the engine is told the connection's
principal (``ssl.principal.mapping.rules`` applied to the client certificate's subject).

A node of a replicated cluster (``BrokerConfig.cluster``) listens on every listener of
``listeners`` (each connection is reported with its listener's name), opens the outbound
connections the engine asks for (``OpenConnection``: reported ``connection_established``, or
``connection_closed`` when refused), and stops with a controlled shutdown: the engine asks the
controller to move its leaderships away and the stop waits for it, within
``kafka.wire.controlled.shutdown.timeout.ms``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final

from kafka_wire.adapters.acceptor import Acceptors
from kafka_wire.adapters.connection_writer import write_loop
from kafka_wire.adapters.file_storage import FileStorage
from kafka_wire.adapters.sockets import listen, raise_file_limit
from kafka_wire.adapters.storage_worker import Outcome, StorageWorker
from kafka_wire.broker.broker import Broker, ClusterNode
from kafka_wire.broker.cluster_view import Endpoint
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import (
    CloseConnection,
    Effect,
    FileRegion,
    OpenConnection,
    PauseReading,
    ResumeReading,
    Send,
    StopBroker,
    StorageEffect,
)
from kafka_wire.broker.quotas.connection_rate import ConnectionRates

if TYPE_CHECKING:  # TLS loads with the first TLS listener (ssl, cryptography): not on every start
    from kafka_wire.adapters.tls import TlsListener

_READ_CHUNK: Final = 256 * 1024
#: Sends queued on one connection before its reader yields to the writer.
_MAX_QUEUED: Final = 64
#: Loop iterations the timer lets other tasks run before a tick that is already due (between two
#: slices of a request in progress, see ``kafka_wire.broker.work``): a connection that became
#: readable meanwhile is read in the first, its request handled in the second and its answer
#: written in the third, so it waits for one slice, not one per step.
_YIELD_ITERATIONS: Final = 4
#: ``_sleeping_until`` while the timer task is not asleep (it looks at the deadline again anyway).
_DUE: Final = -1
#: How long ``stop`` lets connections flush what they were sent before aborting them.
STOP_GRACE_S: Final = 1.0
#: How long a closing connection may take to flush before it is aborted.
_CLOSE_TIMEOUT_S: Final = 5.0
_log = logging.getLogger("kafka_wire.adapters.broker_server")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerServer:
    """Runs one :class:`Broker` on ``host:port`` with its data in ``data_dir``."""

    def __init__(self, config: BrokerConfig, data_dir: Path, *, cluster: ClusterNode | None = None) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.storage = FileStorage(data_dir)
        #: Applies the engine's writes off the loop (started with the server), and reads for it.
        self.worker = StorageWorker(self.storage, self._storage_reported)
        #: Storage outcomes reported to the engine (the regions it releases are as of then).
        self._reported = 0
        #: Set while no write is in flight.
        self._storage_idle = asyncio.Event()
        self._storage_idle.set()
        #: When the engine was last given something (``time.monotonic()``).
        self._busy_at = time.monotonic()
        self.broker = Broker(
            config,
            self.worker,
            rng=random.Random(int.from_bytes(os.urandom(16))),  # as secrets does, without importing it
            member_id_factory=lambda client_id: f"{client_id}-{uuid.uuid4()}",
            nonce_factory=lambda: base64.urlsafe_b64encode(os.urandom(24)).rstrip(b"=").decode(),
            logger=logging.getLogger("kafka_wire.broker"),
            cluster=cluster,
        )
        self.config = self.broker.config
        self._node = self.broker.node
        #: Outbound connections being dialled, and those the engine gave up on meanwhile.
        self._dialling: dict[int, asyncio.Task[None]] = {}
        self._queues: dict[int, asyncio.Queue[list[object] | None]] = {}
        self._ids = itertools.count(1)
        self._listeners: list[socket.socket] = []
        self._acceptors: list[asyncio.Task[None]] = []
        self._timer: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        #: The deadline the timer task sleeps until (None: none, it waits for a wake-up only;
        #: ``_DUE``: it is not sleeping, it will look again anyway).
        self._sleeping_until: int | None = _DUE
        self._tasks: set[asyncio.Task[None]] = set()
        #: Per open connection: set while the engine wants it read (cleared by PauseReading).
        self._readable: dict[int, asyncio.Event] = {}
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._stopping = False
        cluster_settings = self.config.cluster
        self._acceptors_of = Acceptors(
            ConnectionRates(
                window_num=self.config.quota_window_num,
                window_size_seconds=self.config.quota_window_size_seconds,
                max_rate=self.config.max_connection_creation_rate,
                protected_listener=cluster_settings.inter_broker_listener if cluster_settings else None,
                controller_listeners=frozenset(
                    cluster_settings.controller_listener_names if cluster_settings else ()
                ),
            ),
            self._accepted,
        )
        #: Accepted connections by id, with their listener's name (outbound links are not here).
        self._inbound: dict[int, str] = {}
        #: TLS connections in their handshake (already reported opened): false once the engine
        #: closed one meanwhile.
        self._handshaking: dict[int, bool] = {}
        #: The TLS listeners (a cluster node's): the outbound links to them speak TLS.
        self._tls: Mapping[str, TlsListener] = {}
        #: Down on purpose (:meth:`set_down`): clients' connections are closed as they come.
        self.down = False
        #: Set when the engine stops on its own (its log directory failed), with the reason.
        self.stop_requested = asyncio.Event()
        self.failure: str | None = None

    async def _start_engine(self) -> None:
        """Start the storage worker and the engine, and wait for recovery's writes."""
        self._acceptors_of.fd_limit = raise_file_limit()
        self.worker.start(asyncio.get_running_loop())
        self._apply(self.broker.start(wall_clock_ms()))
        await self._storage_idle.wait()
        if self.failure is None:
            self._acceptors_of.rates.attach(self.broker.state.quotas.values)

    async def start(self, host: str, port: int, *, tls: TlsListener | None = None) -> int:
        """Recover the data directory, start listening (over TLS with ``tls``); returns the bound
        port (0 when the start failed: ``failure`` says why)."""
        await self._start_engine()
        if self.failure is not None:
            return 0
        self._listeners = listen(host, port)
        self._acceptors = [
            asyncio.create_task(self._acceptors_of.accept(listener, "PLAINTEXT", tls))
            for listener in self._listeners
        ]
        self._timer = asyncio.create_task(self._run_timer())
        bound: int = self._listeners[0].getsockname()[1]
        return bound

    async def start_listeners(
        self, endpoints: Sequence[Endpoint], *, tls: Mapping[str, TlsListener] | None = None
    ) -> dict[str, int]:
        """A cluster node's start: recover, then listen on every endpoint (by listener name; over
        TLS for those ``tls`` names); returns the bound port of each (empty when the start
        failed: ``failure`` says why)."""
        self._tls = tls or {}
        await self._start_engine()
        if self.failure is not None:
            return {}
        bound: dict[str, int] = {}
        try:
            for endpoint in endpoints:
                sockets = listen(endpoint.host, endpoint.port)
                self._listeners += sockets
                bound[endpoint.listener] = sockets[0].getsockname()[1]
                self._acceptors += [
                    asyncio.create_task(
                        self._acceptors_of.accept(sock, endpoint.listener, self._tls.get(endpoint.listener))
                    )
                    for sock in sockets
                ]
        except BaseException:
            self._close_listeners()
            raise
        self._timer = asyncio.create_task(self._run_timer())
        return bound

    def _close_listeners(self) -> None:
        """Stop accepting. A listener's pending accept callback is cancelled before its socket
        closes: on Python 3.11 one already queued for this loop iteration would otherwise call
        accept on the closed socket and fail setting its cancelled future (a logged traceback)."""
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            if listener.fileno() >= 0:
                loop.remove_reader(listener.fileno())
        for acceptor in self._acceptors:
            acceptor.cancel()
        for listener in self._listeners:
            listener.close()
        self._acceptors_of.close_held()

    async def stop(self, *, controlled: bool = True) -> None:
        """Controlled shutdown (unless ``controlled`` is false: the whole cluster is going away),
        then stop accepting, close connections, make the logs durable; bounded in time whatever
        the clients do. Until the controller lets the broker go it serves and dials as before (as
        Kafka's broker does): when the controller's leader stops at the same time, the remaining
        voters must still reach each other to elect the next one."""
        if controlled:
            await self._controlled_shutdown()
        self._stopping = True
        self._close_listeners()
        for task in self._dialling.values():
            task.cancel()
        if self._timer is not None:
            self._timer.cancel()
        # At once, not after an await: while many clients come and go, each turn of the loop can be long.
        self._apply(self.broker.shutdown(wall_clock_ms()))  # closes every connection, flushes the logs
        if self._timer is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        await self._storage_idle.wait()
        await asyncio.to_thread(self.worker.close)
        if self._tasks:  # writers flush what they were sent, readers see their connection end
            await asyncio.wait(set(self._tasks), timeout=STOP_GRACE_S)
        for writer in list(self._writers.values()):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=STOP_GRACE_S)

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to let the broker go, and wait (bounded) for the answer (a single
        node's own controller answers in-process)."""
        if self.failure is not None or self.broker.stopped is not None:
            return
        try:
            self._apply(self.broker.begin_controlled_shutdown(wall_clock_ms()))
        except Exception:
            _log.exception("the engine failed starting a controlled shutdown")
            return
        bound_s = self.config.controlled_shutdown_timeout_ms / 1000 + 1
        waited = 0.0
        while not self.broker.may_stop and waited < bound_s and self.failure is None:
            await asyncio.sleep(0.05)
            waited += 0.05

    def set_down(self, down: bool) -> None:
        """Fault injection: while down, every client connection is closed and new ones are
        closed as soon as they are accepted (the ports stay bound, so clients see their
        connections refused or reset); then serve again. Connections on a controller listener
        and the node's own links to other nodes are kept: the node still takes part in its
        cluster, as a broker cut off from its clients does. Call it on the loop's thread."""
        self.down = down
        if down:
            for conn_id, listener in list(self._inbound.items()):
                writer = self._writers.get(conn_id)
                if writer is not None and not self._controller_listener(listener):
                    writer.transport.abort()

    def _controller_listener(self, listener: str) -> bool:
        return self._node.serves(listener)

    async def _run_timer(self) -> None:
        # The wake-up at the deadline is a loop callback, not a timeout around the wait: a
        # cancellation (stop) always ends the task (asyncio.wait_for can lose one on 3.11).
        loop = asyncio.get_running_loop()
        alarm: asyncio.TimerHandle | None = None
        try:
            while True:
                self._wake.clear()
                deadline = self.broker.next_deadline_ms()
                if deadline is not None and deadline <= wall_clock_ms():
                    # Due already (a request in progress goes on in slices): let the connections
                    # that became ready be read and answered first.
                    for _ in range(_YIELD_ITERATIONS):
                        await asyncio.sleep(0)
                else:
                    if deadline is not None:
                        alarm = loop.call_later((deadline - wall_clock_ms()) / 1000, self._wake.set)
                    self._sleeping_until = deadline
                    await self._wake.wait()
                    self._sleeping_until = _DUE
                    if alarm is not None:
                        alarm.cancel()
                        alarm = None
                now = wall_clock_ms()
                deadline = self.broker.next_deadline_ms()
                if deadline is not None and now >= deadline:
                    try:
                        self._apply(self.broker.tick(now))
                    except Exception:
                        _log.exception("the engine failed in tick")
        finally:
            if alarm is not None:
                alarm.cancel()

    def _accepted(self, conn: socket.socket, listener: str, tls: TlsListener | None) -> None:
        task = asyncio.create_task(self._connected(conn, listener, tls))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # Cancelled (the server stopping) perhaps before it ran at all: the socket is closed here
        # (a no-op when its transport closed it already).
        task.add_done_callback(lambda done: conn.close() if done.cancelled() else None)

    async def _connected(self, conn: socket.socket, listener: str, tls: TlsListener | None) -> None:
        if tls is not None:
            await self._handshake(conn, listener, tls)
            return
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError as exc:
            _log.debug("accept: %s", exc)
            conn.close()
            return
        await self._serve(reader, writer, listener)

    async def _handshake(self, conn: socket.socket, listener: str, tls: TlsListener) -> None:
        """A TLS connection: reported to the engine as it is accepted (its limits count it), then
        its handshake; a failed one (logged at INFO, as Kafka does) closes this connection only.
        ``_handshaking[conn_id]`` turns false when the engine closes it meanwhile."""
        from kafka_wire.adapters.tls import accept_tls

        if self._stopping or (self.down and not self._controller_listener(listener)):
            conn.close()
            return
        try:
            host = str(conn.getpeername()[0])
        except OSError:  # gone already
            conn.close()
            return
        conn_id = next(self._ids)
        self._handshaking[conn_id] = True
        self._apply(self.broker.connection_opened(conn_id, wall_clock_ms(), host=host, listener=listener))
        failure, accepted = "", None
        if self._handshaking[conn_id]:  # not over a limit
            try:
                accepted = await accept_tls(conn, tls)
            except OSError as exc:
                failure = f"handshake failed: {exc}"
            else:
                if accepted[2] is None:
                    failure = "no ssl.principal.mapping.rules rule applies to its certificate"
        open_in_engine = self._handshaking.pop(conn_id)
        if failure:
            _log.info("TLS connection from %s on %s refused: %s", host, tls.settings.listener, failure)
        reader, writer, principal = accepted if accepted is not None else (None, None, None)
        if writer is None or reader is None or principal is None or not open_in_engine:
            if writer is not None:
                writer.transport.abort()
            conn.close()
            if open_in_engine:
                self._apply(self.broker.connection_closed(conn_id, wall_clock_ms()))
            return
        await self._serve(reader, writer, listener, opened=(conn_id, principal))

    def _dial(self, effect: OpenConnection) -> None:
        task = asyncio.create_task(self._outbound(effect))
        self._dialling[effect.conn_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _outbound(self, effect: OpenConnection) -> None:
        """Connect to another node for the engine; report the outcome, then run the connection."""
        conn_id = effect.conn_id
        tls = self._tls.get(effect.listener)
        try:
            if tls is None:
                reader, writer = await asyncio.open_connection(effect.host, effect.port)
            else:
                reader, writer = await asyncio.open_connection(effect.host, effect.port, ssl=tls.client)
        except (OSError, asyncio.CancelledError) as exc:
            _log.debug("connection %d to %s:%d: %s", conn_id, effect.host, effect.port, exc)
            if self._dialling.pop(conn_id, None) is not None and not self._stopping:
                self._apply(self.broker.connection_closed(conn_id, wall_clock_ms()))
            return
        if self._dialling.pop(conn_id, None) is None or self._stopping:  # given up meanwhile
            writer.transport.abort()
            return
        await self._serve(reader, writer, "", conn_id=conn_id)

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        listener: str = "PLAINTEXT",
        *,
        conn_id: int | None = None,
        opened: tuple[int, str] | None = None,
    ) -> None:
        """Run one connection: accepted on ``listener`` (``opened``: a TLS connection the engine
        was told of before its handshake, and its principal), or (``conn_id`` given) dialled for
        the engine."""
        if self._stopping or (self.down and conn_id is None and not self._controller_listener(listener)):
            writer.transport.abort()
            if opened is not None:
                self._apply(self.broker.connection_closed(opened[0], wall_clock_ms()))
            return
        outbound = conn_id is not None
        if conn_id is None:
            conn_id = next(self._ids) if opened is None else opened[0]
            self._inbound[conn_id] = listener
        queue: asyncio.Queue[list[object] | None] = asyncio.Queue()
        self._queues[conn_id] = queue
        readable = self._readable[conn_id] = asyncio.Event()
        readable.set()
        self._writers[conn_id] = writer
        sender = asyncio.create_task(write_loop(conn_id, writer, queue))
        peer = writer.get_extra_info("peername") or ("", 0)
        try:
            if outbound:
                self._apply(self.broker.connection_established(conn_id, wall_clock_ms()))
            elif opened is not None:
                self._apply(self.broker.connection_authenticated(conn_id, opened[1], wall_clock_ms()))
            else:
                self._apply(
                    self.broker.connection_opened(
                        conn_id, wall_clock_ms(), host=str(peer[0]), listener=listener
                    )
                )
            # The engine forgets a connection it closes (CloseConnection drops its queue): from
            # then on nothing more of it is read or reported.
            while conn_id in self._queues and not sender.done():
                await readable.wait()
                if conn_id not in self._queues:
                    break
                data = await reader.read(_READ_CHUNK)
                if not data or conn_id not in self._queues:
                    break
                began_ns = time.perf_counter_ns()
                effects = self.broker.receive_data(conn_id, data, wall_clock_ms())
                self.broker.request_time(conn_id, time.perf_counter_ns() - began_ns, wall_clock_ms())
                self._apply(effects)
                while queue.qsize() > _MAX_QUEUED and not sender.done():  # back-pressure
                    await asyncio.sleep(0.001)
        except (ConnectionError, OSError) as exc:
            _log.debug("connection %d: %s", conn_id, exc)
        except asyncio.CancelledError:
            writer.transport.abort()
        except Exception:
            _log.exception("connection %d: the engine failed; closing the connection", conn_id)
        finally:
            self._readable.pop(conn_id, None)
            self._inbound.pop(conn_id, None)
            if self._queues.pop(conn_id, None) is not None:
                try:
                    self._apply(self.broker.connection_closed(conn_id, wall_clock_ms()))
                except Exception:
                    _log.exception("connection %d: the engine failed on close", conn_id)
            queue.put_nowait(None)
            await self._finish(conn_id, writer, sender)

    async def _finish(self, conn_id: int, writer: asyncio.StreamWriter, sender: asyncio.Task[None]) -> None:
        """Let the writer flush and close the connection, within _CLOSE_TIMEOUT_S (a peer that
        reads nothing cannot keep it open); then abort it."""
        try:
            done, _ = await asyncio.wait({sender}, timeout=_CLOSE_TIMEOUT_S)
            if done:
                closed = asyncio.ensure_future(writer.wait_closed())
                done, _ = await asyncio.wait({closed}, timeout=_CLOSE_TIMEOUT_S)
                if done and not closed.cancelled():
                    closed.exception()  # retrieved: a reset peer is not an error worth a log line
                else:
                    closed.cancel()
        finally:
            self._writers.pop(conn_id, None)
            if not writer.transport.is_closing() or not sender.done():
                writer.transport.abort()
            if not sender.done():
                sender.cancel()

    def _apply(self, effects: list[Effect]) -> None:
        """Hand a call's storage effects (its batch) to the worker; queue sends on each
        connection's writer, in order; stop when the engine stops."""
        self._busy_at = time.monotonic()
        batch = [effect for effect in effects if isinstance(effect, StorageEffect)]
        if batch:
            self._storage_idle.clear()
            self.worker.submit(batch)
        for effect in effects:
            if isinstance(effect, StorageEffect):
                continue
            if isinstance(effect, Send):
                queue = self._queues.get(effect.conn_id)
                if queue is not None:
                    queue.put_nowait(
                        [self._open(p) if isinstance(p, FileRegion) else p for p in effect.parts]
                    )
            elif isinstance(effect, OpenConnection):
                if not self._stopping:
                    self._dial(effect)
            elif isinstance(effect, CloseConnection):
                if effect.conn_id in self._handshaking:  # closed before its TLS handshake is done
                    self._handshaking[effect.conn_id] = False
                dialling = self._dialling.pop(effect.conn_id, None)
                if dialling is not None:  # given up before it connected
                    dialling.cancel()
                queue = self._queues.pop(effect.conn_id, None)  # the engine has forgotten it
                if queue is not None:
                    queue.put_nowait(None)  # close after what was queued before
                self._set_readable(effect.conn_id, True)  # its reader wakes up and ends
            elif isinstance(effect, PauseReading | ResumeReading):
                self._set_readable(effect.conn_id, isinstance(effect, ResumeReading))
            elif isinstance(effect, StopBroker):
                self.failure = effect.reason
                self.stop_requested.set()
        self._nudge()

    def _nudge(self) -> None:
        """Wake the timer task when the engine's next deadline now comes before the one it sleeps
        until (a call may bring it forward; a later one is found when the alarm rings)."""
        sleeping_until = self._sleeping_until
        if sleeping_until == _DUE or self._wake.is_set():
            return
        deadline = self.broker.next_deadline_ms()
        if deadline is not None and (sleeping_until is None or deadline < sleeping_until):
            self._wake.set()

    def quiet_for(self) -> float:
        """Seconds since the engine was last given something, 0 while it has work in progress (a
        request in slices, writes in flight)."""
        deadline = self.broker.next_deadline_ms()
        if self.worker.in_flight or (deadline is not None and deadline <= wall_clock_ms()):
            return 0.0
        return time.monotonic() - self._busy_at

    def _storage_reported(self, outcomes: list[Outcome]) -> None:
        """The worker's outcomes of the oldest batches in flight (on the loop): report them to the
        engine and carry out what they release."""
        worker = self.worker
        for outcome in outcomes:
            self._reported += 1
            try:
                if outcome is None:
                    self._apply(self.broker.storage_applied(wall_clock_ms()))
                else:
                    self._apply(self.broker.storage_failed(outcome, wall_clock_ms()))
            except Exception:
                _log.exception("the engine failed on a storage outcome")
        worker.release_pins(self._reported)
        worker.prune()
        if not worker.in_flight:
            self._storage_idle.set()

    def _set_readable(self, conn_id: int, readable: bool) -> None:
        event = self._readable.get(conn_id)
        if event is not None:
            if readable:
                event.set()
            else:
                event.clear()

    def _open(self, region: FileRegion) -> tuple[BinaryIO, int, int] | bytes:
        """Open a region now, as it was when the engine released it (later batches may have
        renamed or deleted its file since: ``StorageWorker.open_region``)."""
        try:
            return (self.worker.open_region(region, self._reported), region.position, region.size)
        except OSError:
            return b""  # gone already: the client's CRC check or a short frame ends its connection
