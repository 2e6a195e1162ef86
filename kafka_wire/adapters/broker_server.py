"""The asyncio driver of the broker engine: sockets, the wall clock, files and timers.

It feeds ``Broker`` what arrives and when, applies the storage effects it returns to the data
directory (``FileStorage``) before sending anything, writes ``Send`` parts (file regions with
``sendfile`` where the transport allows) and closes connections on ``CloseConnection``. One
timer task calls ``tick`` at ``next_deadline_ms()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import secrets
import signal
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Final

from kafka_wire.adapters.file_storage import FileStorage
from kafka_wire.broker.broker import Broker
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.data_dir import DataDirError
from kafka_wire.broker.driving import settle
from kafka_wire.broker.effects import CloseConnection, Effect, FileRegion, Send, StopBroker

_READ_CHUNK: Final = 256 * 1024
#: Sends queued on one connection before its reader yields to the writer.
_MAX_QUEUED: Final = 64
_log = logging.getLogger("kafka_wire.adapters.broker_server")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerServer:
    """Runs one :class:`Broker` on ``host:port`` with its data in ``data_dir``."""

    def __init__(self, config: BrokerConfig, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.storage = FileStorage(data_dir)
        self.broker = Broker(
            config,
            self.storage,
            rng=random.Random(secrets.randbits(128)),
            member_id_factory=lambda client_id: f"{client_id}-{uuid.uuid4()}",
            nonce_factory=lambda: secrets.token_urlsafe(24),
            logger=logging.getLogger("kafka_wire.broker"),
        )
        self.config = config
        self._queues: dict[int, asyncio.Queue[list[object] | None]] = {}
        self._ids = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._timer: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        #: Set when the engine stops on its own (its log directory failed), with the reason.
        self.stop_requested = asyncio.Event()
        self.failure: str | None = None

    async def start(self, host: str, port: int) -> int:
        """Recover the data directory, start listening; returns the bound port (0 when the
        start failed: ``failure`` says why)."""
        self._apply(self.broker.start(wall_clock_ms()))
        if self.failure is not None:
            return 0
        self._server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        self._timer = asyncio.create_task(self._run_timer())
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def stop(self) -> None:
        """Stop accepting, close connections, make the logs durable."""
        if self._server is not None:
            self._server.close()
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        self._apply(self.broker.shutdown(wall_clock_ms()))
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _run_timer(self) -> None:
        while True:
            deadline = self.broker.next_deadline_ms()
            delay = None if deadline is None else max(0.0, (deadline - wall_clock_ms()) / 1000)
            self._wake.clear()
            # asyncio.timeout, not wait_for: wait_for can swallow a cancellation that arrives as
            # the event is set, and then stop() would wait for this task for ever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()
            now = wall_clock_ms()
            deadline = self.broker.next_deadline_ms()
            if deadline is not None and now >= deadline:
                try:
                    self._apply(self.broker.tick(now))
                except Exception:
                    _log.exception("the engine failed in tick")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn_id = next(self._ids)
        queue: asyncio.Queue[list[object] | None] = asyncio.Queue()
        self._queues[conn_id] = queue
        sender = asyncio.create_task(self._write_loop(conn_id, writer, queue))
        peer = writer.get_extra_info("peername") or ("", 0)
        try:
            self._apply(self.broker.connection_opened(conn_id, wall_clock_ms(), host=str(peer[0])))
            while not sender.done():
                data = await reader.read(_READ_CHUNK)
                if not data:
                    break
                self._apply(self.broker.receive_data(conn_id, data, wall_clock_ms()))
                while queue.qsize() > _MAX_QUEUED and not sender.done():  # back-pressure
                    await asyncio.sleep(0.001)
        except (ConnectionError, OSError) as exc:
            _log.debug("connection %d: %s", conn_id, exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            _log.exception("connection %d: the engine failed; closing the connection", conn_id)
        finally:
            self._tasks.discard(task)
            if self._queues.pop(conn_id, None) is not None:
                self._apply(self.broker.connection_closed(conn_id, wall_clock_ms()))
            queue.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()

    def _apply(self, effects: list[Effect]) -> None:
        """Apply storage effects now and report their outcome to the engine; queue sends on each
        connection's writer, in order; stop when the engine stops."""
        for effect in settle(self.broker, effects, self.storage.apply_one, wall_clock_ms()):
            if isinstance(effect, Send):
                queue = self._queues.get(effect.conn_id)
                if queue is not None:
                    queue.put_nowait([self._open(p) if isinstance(p, FileRegion) else p for p in effect.parts])
            elif isinstance(effect, CloseConnection):
                queue = self._queues.get(effect.conn_id)
                if queue is not None:
                    queue.put_nowait(None)  # close after what was queued before
            elif isinstance(effect, StopBroker):
                self.failure = effect.reason
                self.stop_requested.set()
        self._wake.set()

    def _open(self, region: FileRegion) -> tuple[BinaryIO, int, int] | bytes:
        """Open a region now, before later effects can rename or delete its file."""
        try:
            return (open(self.storage.root / region.path, "rb"), region.position, region.size)
        except OSError:
            return b""  # gone already: the client's CRC check or a short frame ends its connection

    async def _write_loop(self, conn_id: int, writer: asyncio.StreamWriter, queue: asyncio.Queue[list[object] | None]) -> None:
        loop = asyncio.get_running_loop()
        try:
            while (parts := await queue.get()) is not None:
                for part in parts:
                    if isinstance(part, bytes):
                        writer.write(part)
                    elif isinstance(part, tuple):
                        file, offset, count = part
                        with file:
                            await writer.drain()
                            await loop.sendfile(writer.transport, file, offset, count)
                await writer.drain()
        except (ConnectionError, OSError) as exc:
            _log.debug("connection %d: %s", conn_id, exc)
        finally:
            writer.close()
            while not queue.empty():  # close files of regions never sent
                for part in queue.get_nowait() or []:
                    if isinstance(part, tuple):
                        part[0].close()


def serve_until_signalled(
    config: BrokerConfig,
    host: str,
    port: int,
    data_dir: Path,
    *,
    advertised_host: str | None = None,
    advertised_port: int | None = None,
) -> int:
    """Run a broker until SIGINT or SIGTERM (``kafka-wire serve``); prints one line when ready.

    Clients are told ``advertised_host:advertised_port`` (by default the bound address)."""
    return asyncio.run(_serve(config, host, port, data_dir, advertised_host, advertised_port))


async def _serve(
    config: BrokerConfig, host: str, port: int, data_dir: Path, advertised_host: str | None, advertised_port: int | None
) -> int:
    if port == 0:
        # Bind first to learn the port, then advertise it.
        probe = await asyncio.start_server(lambda r, w: None, host, 0)
        port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
    try:
        server = BrokerServer(replace(config, host=advertised_host or host, port=advertised_port or port), data_dir)
        bound = await server.start(host, port)
    except DataDirError as exc:
        return _cannot_start(f"{data_dir}: {exc}")
    except OSError as exc:
        return _cannot_start(f"{exc.strerror or exc} ({exc.filename or f'{host}:{port}'})")
    if server.failure is not None:
        await server.stop()
        return _cannot_start(f"{server.failure} (data directory {data_dir}: it must be writable, with free space)")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.stop_requested.set)
    told = server.config.host, server.config.port
    advertised = "" if told == (host, bound) else f", advertised as {told[0]}:{told[1]}"
    print(f"kafka-wire serve: listening on {host}:{bound}{advertised} (data in {data_dir})", flush=True)
    await server.stop_requested.wait()
    await server.stop()
    if server.failure is not None:
        print(f"kafka-wire serve: stopped: {server.failure} (in {data_dir})", file=sys.stderr, flush=True)
        return 1
    print("kafka-wire serve: stopped", flush=True)
    return 0


def _cannot_start(reason: str) -> int:
    print(f"kafka-wire serve: cannot start: {reason}", file=sys.stderr, flush=True)
    return 1
