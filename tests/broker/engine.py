"""Drive a Broker without sockets: in-memory storage, scripted clients and a virtual clock."""

from __future__ import annotations

import logging
import random
from collections import deque
from pathlib import Path
from typing import Final, TypeVar

from kafka_wire.broker import Broker, BrokerConfig
from kafka_wire.broker.driving import StorageFailure, settle
from kafka_wire.broker.effects import (
    CloseConnection,
    Effect,
    FileRegion,
    PauseReading,
    ResumeReading,
    Send,
    StorageEffect,
)
from kafka_wire.broker.versioning import fit
from kafka_wire.codec.structs import Message
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, Response
from kafka_wire.testing.memory_storage import MemoryStorage

#: The data directory of a single node of the release before the one-voter node
#: (``tests/data/legacy-single-node.toml`` says how it was made).
LEGACY_DATA_DIR: Final = Path(__file__).parent.parent / "data" / "legacy-single-node"


def legacy_storage() -> MemoryStorage:
    """A MemoryStorage holding a copy of :data:`LEGACY_DATA_DIR`, as a disk would (durable)."""
    storage = MemoryStorage()
    for path in sorted(LEGACY_DATA_DIR.rglob("*")):
        name = path.relative_to(LEGACY_DATA_DIR).as_posix()
        if path.is_dir():
            storage.dirs.add(name)
        else:
            storage.files[name] = bytearray(path.read_bytes())
            storage._durable[name] = path.read_bytes()
    return storage


M = TypeVar("M", bound=Message)


def on_the_wire(answer: object, cls: type[M], version: int) -> M:
    """An answer a handler built, fitted to ``version`` and encoded as the broker sends it, then
    decoded as a client reads it."""
    assert isinstance(answer, cls)
    decoded = cls.decode(fit(answer, version).encode(version), version)
    assert isinstance(decoded, cls)
    return decoded


class Engine:
    """A broker on MemoryStorage (a node of its own one-voter cluster); effects are applied as a
    driver would apply them.

    With ``lag``, up to that many batches of storage effects stay in flight (as with a driver
    that writes on another thread while the engine goes on): the oldest is applied and reported
    when another arrives, and all of them before the clock moves (:meth:`advance`) or on
    :meth:`drain`."""

    def __init__(
        self,
        config: BrokerConfig | None = None,
        *,
        seed: int = 7,
        storage: MemoryStorage | None = None,
        logger: logging.Logger | None = None,
        lag: int = 0,
    ) -> None:
        self.storage = storage or MemoryStorage()
        self.config = config or BrokerConfig(group_initial_rebalance_delay_ms=0)
        self.broker = Broker(
            self.config,
            self.storage,
            rng=random.Random(seed),
            member_id_factory=lambda client_id: f"{client_id}-member",
            nonce_factory=lambda: "fixed-nonce",
            logger=logger,
        )
        #: The broker's own configuration: a node of its own one-voter cluster.
        self.config = self.broker.config
        self.now_ms = 1_700_000_000_000
        self.log: list[Effect] = []
        self.outbox: dict[int, bytearray] = {}
        self.closed: set[int] = set()
        #: Connections the broker asked not to read (PauseReading without ResumeReading yet).
        self.paused: set[int] = set()
        self.lag = lag
        #: Batches handed out and not yet applied (with ``lag``), oldest first.
        self.in_flight: deque[list[StorageEffect]] = deque()
        self._apply(self.broker.start(self.now_ms))
        self.drain()  # no other input before start's writes are applied

    def _apply(self, effects: list[Effect]) -> None:
        batch = [e for e in effects if isinstance(e, StorageEffect)]
        self.log += batch
        if not self.lag:
            self._carry_out(settle(self.broker, effects, self.storage.apply_one, self.now_ms))
            return
        rest: list[Effect] = [e for e in effects if not isinstance(e, StorageEffect)]
        if batch:
            self.in_flight.append(batch)
        self._carry_out(rest)
        while len(self.in_flight) > self.lag:
            self.apply_oldest()

    def apply_oldest(self) -> None:
        """Apply the oldest batch in flight and report its outcome."""
        batch = self.in_flight.popleft()
        for effect in batch:
            try:
                self.storage.apply_one(effect)
            except OSError as exc:
                self.in_flight.clear()  # nothing more is applied
                self._apply(self.broker.storage_failed(StorageFailure.of(effect, exc), self.now_ms))
                return
        self._apply(self.broker.storage_applied(self.now_ms))

    def drain(self) -> None:
        while self.in_flight:
            self.apply_oldest()

    def _carry_out(self, effects: list[Effect]) -> None:
        self.log += effects
        for effect in effects:
            if isinstance(effect, Send):
                for part in effect.parts:
                    if isinstance(part, FileRegion):  # what sendfile would send
                        assert self.storage.size(part.path) is not None and part.size > 0
                        part = self.storage.read(part.path, part.position, part.size)
                    self.outbox.setdefault(effect.conn_id, bytearray()).extend(part)
            elif isinstance(effect, CloseConnection):
                self.closed.add(effect.conn_id)
            elif isinstance(effect, PauseReading):
                self.paused.add(effect.conn_id)
            elif isinstance(effect, ResumeReading):
                self.paused.discard(effect.conn_id)

    def open(self, conn_id: int) -> None:
        self._apply(self.broker.connection_opened(conn_id, self.now_ms, host="127.0.0.1"))

    def feed(self, conn_id: int, data: bytes) -> None:
        self._apply(self.broker.receive_data(conn_id, data, self.now_ms))

    def close(self, conn_id: int) -> None:
        """The client closed the connection."""
        self._apply(self.broker.connection_closed(conn_id, self.now_ms))

    def tick(self) -> None:
        """One tick at the current time."""
        self._apply(self.broker.tick(self.now_ms))

    def advance(self, ms: int) -> None:
        """Move the clock, ticking at every deadline on the way (the writes in flight are applied
        first)."""
        self.drain()
        target = self.now_ms + ms
        while (deadline := self.broker.next_deadline_ms()) is not None and deadline <= target:
            self.now_ms = max(self.now_ms, deadline)
            self._apply(self.broker.tick(self.now_ms))
        self.now_ms = target

    def take(self, conn_id: int) -> bytes:
        data = bytes(self.outbox.get(conn_id, b""))
        self.outbox[conn_id] = bytearray()
        return data


class Client:
    """A ClientConnection wired to an Engine connection."""

    def __init__(self, engine: Engine, conn_id: int, *, negotiate: bool = True) -> None:
        self.engine = engine
        self.conn_id = conn_id
        self.conn = ClientConnection(ClientConfig(client_id=f"client-{conn_id}", negotiate=negotiate))
        engine.open(conn_id)
        if negotiate:
            self._pump()

    def _pump(self) -> list[object]:
        events: list[object] = []
        for _ in range(10):
            data = self.conn.data_to_send()
            if data:
                self.engine.feed(self.conn_id, data)
            reply = self.engine.take(self.conn_id)
            if reply:
                self.conn.receive_data(reply)
            while (event := self.conn.next_event()) is not NEED_DATA:
                events.append(event)
            if not data and not reply:
                break
        return events

    def request(self, body: Message, version: int | None = None) -> Response:
        """Send and return the response (ticking the clock if the broker holds the request)."""
        self.engine.feed(self.conn_id, self.conn.send(body, version))
        for _ in range(100):
            for event in self._pump():
                if isinstance(event, Response):
                    return event
            if self.engine.in_flight:  # the answer may wait for writes: the disk catches up first
                self.engine.drain()
            else:
                self.engine.advance(100)
        raise AssertionError(f"no response to {type(body).__name__}")

    def send(self, body: Message, version: int | None = None) -> None:
        self.engine.feed(self.conn_id, self.conn.send(body, version))

    def responses(self) -> list[Response]:
        return [e for e in self._pump() if isinstance(e, Response)]
