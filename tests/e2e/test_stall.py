"""No request stalls the broker for the others (``kafka-wire serve``, real sockets).

While one connection sends a heavy request, another keeps sending Metadata requests in a loop and
the worst of its round trips is measured:

* a Produce of 50 partitions, each a gzip batch of 64 kB that inflates to 63 MiB (3.2 MB in all,
  a decompression bomb): every partition is refused with MESSAGE_TOO_LARGE (its records inflate
  past ``max.message.bytes``), and the other connection never waits more than 100 ms (before the
  work budget and the inflation bound: 11.8 s);
* a Produce of 50 partitions of ~1 MiB of small gzip-compressed records each: appended in slices,
  the other connection never waits more than 100 ms (before: ~0.7 s);
* a CreateTopics of 2**31 - 1 partitions: answered POLICY_VIOLATION within a second (before: the
  event loop blocked, memory grew by ~1 GB in 38 s), the other connection served meanwhile;
* a CreateTopics of 2,000 partitions: created in slices, the other connection never waits more
  than 100 ms.

Latencies are measured on the client side, so they include the scheduling of a loaded machine;
the worst seen on a 2-core machine under load is about 30 ms (see docs/benchmarks/stall.md).
"""

from __future__ import annotations

import functools
import gc
import socket
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    ErrorCode,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.records.crc import crc32c
from kafka_wire.records.loops import varint_bytes
from tests.e2e.brokers import BrokerProcess

#: Wall-clock bounds: run alone, not beside another test run (tools/test_flavours.py).
pytestmark = pytest.mark.timing

#: The longest another connection may wait while a heavy request runs.
MAX_STALL_S = 0.100
M = TypeVar("M", bound=Message)
_API_KEYS = {ProduceRequest: 0, MetadataRequest: 3, CreateTopicsRequest: 19, DeleteTopicsRequest: 20}


class KafkaSocket:
    """One blocking connection: send a request, read its response."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.sock = socket.create_connection((broker.address.host, broker.address.port), timeout=30)
        self.correlation_id = 0

    def request(self, body: Message, version: int, response_type: type[M]) -> M:
        self.correlation_id += 1
        header = RequestHeader(correlation_id=self.correlation_id, client_id="stall-test")
        self.sock.sendall(encode_request(header, body, version))
        size = struct.unpack(">i", self._read(4))[0]
        frame = struct.pack(">i", size) + self._read(size)
        reply_header, reply = decode_response(frame, _API_KEYS[type(body)], version)
        assert reply_header.correlation_id == self.correlation_id and isinstance(reply, response_type)
        return reply

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


class Prober(threading.Thread):
    """Another client: Metadata requests in a loop, each round trip timed."""

    def __init__(self, broker: BrokerProcess) -> None:
        super().__init__(daemon=True)
        self.conn = KafkaSocket(broker)
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        request = MetadataRequest(
            topics=[MetadataRequestTopic(name="probe")], allow_auto_topic_creation=False
        )
        try:
            while not self.stop.is_set():
                start = time.monotonic()
                self.conn.request(request, 9, MetadataResponse)
                self.samples.append((start, time.monotonic() - start))
                time.sleep(0.002)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def worst_since(self, start: float) -> tuple[float, int]:
        window = [took for at, took in self.samples if at + took >= start]
        return max(window, default=0.0), len(window)


@contextmanager
def probing(broker: BrokerProcess) -> Iterator[Prober]:
    prober = Prober(broker)
    gc.disable()  # a collection in this process would be counted as the broker's stall
    prober.start()
    try:
        while len(prober.samples) < 5 and prober.is_alive():
            time.sleep(0.01)
        yield prober
    finally:
        prober.stop.set()
        prober.join(10)
        gc.enable()
        prober.conn.close()
    assert prober.error is None, prober.error


def create_topic(conn: KafkaSocket, name: str, partitions: int) -> CreateTopicsResponse:
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        ],
        timeout_ms=30_000,
    )
    return conn.request(request, 5, CreateTopicsResponse)


def produce(conn: KafkaSocket, topic: str, batches: list[bytes]) -> ProduceResponse:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequestPartitionProduceData(index=i, records=b) for i, b in enumerate(batches)
                ],
            )
        ],
    )
    return conn.request(request, 8, ProduceResponse)


@functools.cache
def gzip_bomb(value_size: int = 63 << 20) -> bytes:
    """A v2 batch of one record whose value is ``value_size`` zeros, gzip-compressed (~64 kB)."""
    body = 1 + 1 + 1 + 1 + len(varint_bytes(value_size)) + value_size + 1  # attributes .. headers count
    head = (
        varint_bytes(body)
        + b"\x00"
        + varint_bytes(0)
        + varint_bytes(0)
        + varint_bytes(-1)
        + varint_bytes(value_size)
    )
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(head)]
    zeros = bytes(1 << 20)
    for start in range(0, value_size, len(zeros)):
        parts.append(compressor.compress(zeros[: min(len(zeros), value_size - start)]))
    payload = b"".join([*parts, compressor.compress(varint_bytes(0)), compressor.flush()])
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 1, 0, now, now, -1, -1, -1, 1) + payload
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(after_crc), -1, 2, crc32c(after_crc)) + after_crc


def test_a_gzip_bomb_produce_does_not_stall_other_connections(kafka_wire_broker: BrokerProcess) -> None:
    conn = KafkaSocket(kafka_wire_broker)
    assert create_topic(conn, "bombs", 50).topics[0].error_code == ErrorCode.NONE
    bomb = gzip_bomb()
    assert len(bomb) < 100_000
    small_records = build_batch(
        [NewRecord(b"k%d" % i, b"value %d " % i * 8) for i in range(9_000)],
        compression="gzip",
        default_timestamp=int(time.time() * 1000),
    )
    with probing(kafka_wire_broker) as prober:
        start = time.monotonic()
        refused = produce(conn, "bombs", [bomb] * 50)
        took = time.monotonic() - start
        worst, probes = prober.worst_since(start)
        assert {p.error_code for p in refused.responses[0].partition_responses} == {
            ErrorCode.MESSAGE_TOO_LARGE
        }
        assert probes >= 2 and worst < MAX_STALL_S, (
            f"another connection waited {worst * 1000:.0f} ms (bomb produce: {took:.2f} s)"
        )
        start = time.monotonic()
        appended = produce(conn, "bombs", [small_records] * 50)
        took = time.monotonic() - start
        worst, probes = prober.worst_since(start)
        assert {p.error_code for p in appended.responses[0].partition_responses} == {ErrorCode.NONE}
        assert probes >= 2 and worst < MAX_STALL_S, (
            f"another connection waited {worst * 1000:.0f} ms (heavy produce: {took:.2f} s)"
        )
    conn.close()


def test_a_huge_create_topics_is_refused_at_once_and_a_large_one_is_sliced(
    kafka_wire_broker: BrokerProcess,
) -> None:
    conn = KafkaSocket(kafka_wire_broker)
    with probing(kafka_wire_broker) as prober:
        start = time.monotonic()
        refused = create_topic(conn, "huge", 2**31 - 1)
        took = time.monotonic() - start
        assert refused.topics[0].error_code == ErrorCode.POLICY_VIOLATION
        assert took < 1.0, f"the refusal took {took:.2f} s"
        time.sleep(0.05)
        worst, probes = prober.worst_since(start)
        assert probes >= 2 and worst < MAX_STALL_S
        start = time.monotonic()
        created = create_topic(conn, "large", 2_000)
        took = time.monotonic() - start
        worst, probes = prober.worst_since(start)
        assert created.topics[0].error_code == ErrorCode.NONE
        assert probes >= 5 and worst < MAX_STALL_S, (
            f"another connection waited {worst * 1000:.0f} ms (create: {took:.2f} s)"
        )
    conn.close()
    assert kafka_wire_broker.kill() != 0  # no need to flush 2,000 partitions at the end
