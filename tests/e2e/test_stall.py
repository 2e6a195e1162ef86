"""No request stalls the broker for the others (``kafka-wire serve``, real sockets).

While one connection sends a heavy request, another keeps sending Metadata requests in a loop and
its round trips are measured: the 99th percentile must stay under :data:`MAX_P99_S` and the worst
under :data:`MAX_STALL_S` while

* a Produce of 50 partitions, each a gzip batch of 64 kB that inflates to 63 MiB (3.2 MB in all,
  a decompression bomb), is refused with MESSAGE_TOO_LARGE for every partition (its records
  inflate past ``max.message.bytes``; before the work budget and the inflation bound the other
  connection waited 11.8 s);
* a Produce of 50 partitions of 9,000 small gzip-compressed records each is appended in slices
  (before: ~0.7 s);
* a CreateTopics of 2**31 - 1 partitions is answered POLICY_VIOLATION within a second (before:
  the event loop blocked, memory grew by ~1 GB in 38 s);
* a CreateTopics of 2,000 partitions is created in slices, the directories and fsyncs on the
  storage worker's thread (the data directory on the disk of the temporary directory);
* a CreateTopics of 9,999 partitions (the data directory in /dev/shm, so that the disk does not
  make it slow: what is measured is the engine's slices, the interpreter's collections and the
  storage worker's share of the GIL), while the test polls Metadata of the new topic until every
  partition has a leader (answers of 10,000 partitions, built by the broker too).

The prober runs in a process of its own (:class:`Prober`). The goal is a p99 under 20 ms and a
worst under 50 ms (docs/benchmarks/stall.md has the figures); the bounds here are looser, as
latencies are measured on the client side and include the scheduling of a loaded 2-core machine:
on one running twice as many processes as it has cores, p99 stayed under 50 ms, and the worst
round trip, which a single preemption of the broker decides, under 150 ms once in a few runs and
up to 260 ms at eight processes per core.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import queue
import shutil
import socket
import struct
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
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
from tests.e2e.brokers import BrokerProcess, kafka_wire
from tests.interop.harness import Address

#: Wall-clock bounds: run alone, not beside another test run (tools/test_flavours.py).
pytestmark = pytest.mark.timing

#: The longest another connection may wait while a heavy request runs.
MAX_STALL_S = 0.150
#: The 99th percentile of its round trips, checked where there are at least P99_SAMPLES of them.
MAX_P99_S = 0.050
P99_SAMPLES = 100
#: Where the 9,999-partition case keeps its data (tmpfs).
SHM = Path("/dev/shm")
M = TypeVar("M", bound=Message)
_API_KEYS = {ProduceRequest: 0, MetadataRequest: 3, CreateTopicsRequest: 19, DeleteTopicsRequest: 20}


class KafkaSocket:
    """One blocking connection: send a request, read its response."""

    def __init__(self, broker: BrokerProcess | Address) -> None:
        address = broker.address if isinstance(broker, BrokerProcess) else broker
        # A slow disk may take a minute over thousands of partitions.
        self.sock = socket.create_connection((address.host, address.port), timeout=120)
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

    def __enter__(self) -> KafkaSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _probe(address: Address, samples: Queue[tuple[float, float] | str], stop: EventType) -> None:
    """The prober's process: Metadata requests in a loop, each round trip's start and length
    put on ``samples`` (a failure as its text)."""
    gc.disable()  # a collection here would be counted as the broker's stall
    try:
        with KafkaSocket(address) as conn:
            request = MetadataRequest(
                topics=[MetadataRequestTopic(name="probe")], allow_auto_topic_creation=False
            )
            while not stop.is_set():
                start = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process
                conn.request(request, 9, MetadataResponse)
                samples.put((start, time.monotonic() - start))
                time.sleep(0.002)
    except BaseException as exc:  # reported by the test
        samples.put(repr(exc))


class Prober:
    """Another client, in a process of its own: a thread here would share this process's GIL
    with the test's own decoding of 10,000-partition answers, and its waits for it would be
    counted as the broker's."""

    def __init__(self, broker: BrokerProcess) -> None:
        context = multiprocessing.get_context("spawn")
        self._queue: Queue[tuple[float, float] | str] = context.Queue()
        self._stop = context.Event()
        self._process = context.Process(
            target=_probe, args=(broker.address, self._queue, self._stop), daemon=True
        )
        self._samples: list[tuple[float, float]] = []
        self.error: str | None = None

    @property
    def samples(self) -> list[tuple[float, float]]:
        """(start, round trip) of every probe so far."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return self._samples
            if isinstance(item, str):
                self.error = item
            else:
                self._samples.append(item)

    def start(self) -> None:
        self._process.start()

    def is_alive(self) -> bool:
        return self._process.is_alive()

    def close(self) -> None:
        self._stop.set()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
        self.samples  # noqa: B018  # the last ones, and an error the process reported

    def wait_for_probes(self, start: float, count: int, timeout_s: float = 10.0) -> None:
        """Until ``count`` round trips began after ``start`` (or the prober stopped)."""
        deadline = time.monotonic() + timeout_s
        while sum(at >= start for at, _ in self.samples) < count and self.is_alive():
            assert time.monotonic() < deadline, "the prober got no answer"
            time.sleep(0.01)

    def check_since(
        self,
        start: float,
        what: str,
        least: int = 2,
    ) -> None:
        """The round trips since ``start`` (waiting until there are at least ``least``: an operation
        over quickly has the round trips that follow it counted too): p99 and worst in bounds."""
        self.wait_for_probes(start, least)
        window = sorted(took for at, took in self.samples if at + took >= start)
        assert len(window) >= least, (
            f"{len(window)} probes during {what}: the prober stopped ({self.error!r})"
        )
        p99, worst = window[min(len(window) - 1, int(len(window) * 0.99))], window[-1]
        # Below 100 round trips the 99th percentile is the worst one: only the worst's bound applies.
        within = worst < MAX_STALL_S and (p99 < MAX_P99_S or len(window) < P99_SAMPLES)
        assert within, (
            f"during {what}, another connection's round trips: p99 {p99 * 1000:.0f} ms, "
            f"worst {worst * 1000:.0f} ms ({len(window)} probes)"
        )


@contextmanager
def probing(broker: BrokerProcess) -> Iterator[Prober]:
    prober = Prober(broker)
    prober.start()
    try:
        deadline = time.monotonic() + 60  # the process imports the codec first
        while len(prober.samples) < 5 and prober.is_alive() and prober.error is None:
            assert time.monotonic() < deadline, "the prober got no answer"
            time.sleep(0.01)
        yield prober
    finally:
        prober.close()
    assert prober.error is None, prober.error


def create_topic(conn: KafkaSocket, name: str, partitions: int) -> CreateTopicsResponse:
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        ],
        timeout_ms=30_000,
    )
    return conn.request(request, 5, CreateTopicsResponse)


def wait_until_open(conn: KafkaSocket, name: str, partitions: int, timeout_s: float = 120.0) -> None:
    """Until every partition of ``name`` has a leader: the controller answers CreateTopics once its
    records are committed, and the broker publishes the topic in slices after that. Polled every
    0.1 s: each answer (10,000 partitions) is decoded in this process, beside the prober's thread,
    whose round trips it would lengthen if polled more often."""
    request = MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False)
    deadline = time.monotonic() + timeout_s
    while True:
        [topic] = conn.request(request, 9, MetadataResponse).topics
        led = [p for p in topic.partitions if p.error_code == ErrorCode.NONE and p.leader_id >= 0]
        if topic.error_code == ErrorCode.NONE and len(led) == partitions:
            return
        assert time.monotonic() < deadline, f"{name}: {len(led)} of {partitions} partitions open"
        time.sleep(0.1)


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


def small_gzip_batch() -> bytes:
    """A v2 batch of 9,000 small records, gzip-compressed (~80 kB; one step of a Produce job)."""
    return build_batch(
        [NewRecord(b"k%d" % i, b"value %d " % i * 8) for i in range(9_000)],
        compression="gzip",
        default_timestamp=int(time.time() * 1000),
    )


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
    with KafkaSocket(kafka_wire_broker) as conn:
        assert create_topic(conn, "bombs", 50).topics[0].error_code == ErrorCode.NONE
        wait_until_open(conn, "bombs", 50)
        bomb = gzip_bomb()
        assert len(bomb) < 100_000
        small_records = small_gzip_batch()
        with probing(kafka_wire_broker) as prober:
            start = time.monotonic()
            refused = produce(conn, "bombs", [bomb] * 50)
            took = time.monotonic() - start
            assert {p.error_code for p in refused.responses[0].partition_responses} == {
                ErrorCode.MESSAGE_TOO_LARGE
            }
            prober.check_since(start, f"the bomb produce ({took:.2f} s)")
            start = time.monotonic()
            appended = produce(conn, "bombs", [small_records] * 50)
            took = time.monotonic() - start
            assert {p.error_code for p in appended.responses[0].partition_responses} == {ErrorCode.NONE}
            prober.check_since(start, f"the heavy produce ({took:.2f} s)")


def test_a_huge_create_topics_is_refused_at_once_and_a_large_one_is_sliced(
    kafka_wire_broker: BrokerProcess,
) -> None:
    with KafkaSocket(kafka_wire_broker) as conn:
        with probing(kafka_wire_broker) as prober:
            start = time.monotonic()
            refused = create_topic(conn, "huge", 2**31 - 1)
            took = time.monotonic() - start
            assert refused.topics[0].error_code == ErrorCode.POLICY_VIOLATION
            assert took < 1.0, f"the refusal took {took:.2f} s"
            prober.check_since(start, "the refused create")
            start = time.monotonic()
            created = create_topic(conn, "large", 2_000)
            assert created.topics[0].error_code == ErrorCode.NONE
            wait_until_open(conn, "large", 2_000)
            took = time.monotonic() - start
            prober.check_since(start, f"the creation of 2,000 partitions ({took:.2f} s)", least=5)
    assert kafka_wire_broker.kill() != 0  # no need to flush 2,000 partitions at the end


def test_a_create_topics_of_9999_partitions_does_not_stall_other_connections() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="kafka-wire-stall-", dir=SHM))
    broker = kafka_wire(workdir)
    try:
        broker.start()
        with KafkaSocket(broker) as conn, probing(broker) as prober:
            start = time.monotonic()
            created = create_topic(conn, "huge", 9_999)
            assert created.topics[0].error_code == ErrorCode.NONE
            wait_until_open(conn, "huge", 9_999)
            took = time.monotonic() - start
            prober.check_since(start, f"the creation of 9,999 partitions ({took:.2f} s)", least=20)
        assert broker.kill() != 0  # no need to flush 10,000 partitions at the end
    finally:
        broker.close()
        shutil.rmtree(workdir, ignore_errors=True)
