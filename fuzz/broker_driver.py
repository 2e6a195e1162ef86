"""A Broker on MemoryStorage, driven as ``kafka-wire serve`` drives it but without sockets: the
fuzz harness's engine. Every broker starts from the same prepared data directory (a topic ``t``
with two partitions and a few records), so an input's outcome depends on the input alone.
"""

from __future__ import annotations

import copy
import random
from typing import Final

from kafka_wire.broker import Broker, BrokerConfig
from kafka_wire.broker.driving import settle
from kafka_wire.broker.effects import CloseConnection, Effect, FileRegion, Send
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    RequestHeader,
)
from kafka_wire.protocol.framing import encode_request
from kafka_wire.records import build_batch
from kafka_wire.testing.memory_storage import MemoryStorage

START_MS: Final = 1_700_000_000_000
TOPIC: Final = "t"
PARTITIONS: Final = 2
CONFIG: Final = BrokerConfig(group_initial_rebalance_delay_ms=0)


class Engine:
    """One broker; ``outbox`` holds what each connection was sent, ``closed`` the connections the
    broker closed."""

    def __init__(self, storage: MemoryStorage | None = None, *, now_ms: int = START_MS) -> None:
        self.storage = storage if storage is not None else MemoryStorage()
        self.broker = Broker(
            CONFIG,
            self.storage,
            rng=random.Random(7),
            member_id_factory=lambda client_id: f"{client_id}-member",
            nonce_factory=lambda: "fixed-nonce",
        )
        self.now_ms = now_ms
        self.outbox: dict[int, bytearray] = {}
        self.closed: set[int] = set()
        self.apply(self.broker.start(now_ms))

    def apply(self, effects: list[Effect]) -> None:
        for effect in settle(self.broker, effects, self.storage.apply_one, self.now_ms):
            if isinstance(effect, Send):
                out = self.outbox.setdefault(effect.conn_id, bytearray())
                for part in effect.parts:
                    if isinstance(part, FileRegion):  # what sendfile would send
                        out += self.storage.read(part.path, part.position, part.size)
                    else:
                        out += part
            elif isinstance(effect, CloseConnection):
                self.closed.add(effect.conn_id)

    def open(self, conn_id: int) -> None:
        self.apply(self.broker.connection_opened(conn_id, self.now_ms, host="127.0.0.1"))

    def feed(self, conn_id: int, data: bytes) -> None:
        if conn_id not in self.closed:
            self.apply(self.broker.receive_data(conn_id, data, self.now_ms))

    def close(self, conn_id: int) -> None:
        if conn_id not in self.closed:
            self.apply(self.broker.connection_closed(conn_id, self.now_ms))

    def advance(self, ms: int) -> None:
        """Move the clock, ticking at every deadline on the way."""
        target = self.now_ms + ms
        while (deadline := self.broker.next_deadline_ms()) is not None and deadline <= target:
            self.now_ms = max(self.now_ms, deadline)
            self.apply(self.broker.tick(self.now_ms))
        self.now_ms = target

    def take(self, conn_id: int) -> bytes:
        data = bytes(self.outbox.pop(conn_id, b""))
        return data


def request_frame(body: Message, version: int, correlation_id: int) -> bytes:
    return encode_request(RequestHeader(correlation_id=correlation_id, client_id="fuzz"), body, version)


def _prepared() -> MemoryStorage:
    engine = Engine()
    engine.open(1)
    topic = CreateTopicsRequestCreatableTopic(name=TOPIC, num_partitions=PARTITIONS, replication_factor=1)
    engine.feed(1, request_frame(CreateTopicsRequest(topics=[topic], timeout_ms=1000), 7, 1))
    batch = build_batch([(b"k%d" % i, b"v%d" % i, [("h", b"x")], START_MS + i) for i in range(3)])
    produce = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=TOPIC,
                partition_data=[
                    ProduceRequestPartitionProduceData(index=p, records=batch) for p in range(PARTITIONS)
                ],
            )
        ],
    )
    engine.feed(1, request_frame(produce, 9, 2))
    engine.close(1)
    return engine.storage


_PREPARED: MemoryStorage | None = None


def prepared_engine() -> Engine:
    """A fresh broker on a copy of the prepared data directory."""
    global _PREPARED
    if _PREPARED is None:
        _PREPARED = _prepared()
    return Engine(copy.deepcopy(_PREPARED))
