"""Connection limits and shutdown of ``kafka-wire serve``, with real sockets and a real producer:
idle and half-sent connections are closed on time, a flood of connections (over the per-IP cap,
or up to the process's file limit) does not stop a producer, SIGTERM stops the server within
seconds whatever its clients do, and ordinary client behaviour leaves no traceback in its log.
The rules themselves are tested on the engine (tests/broker/test_engine_connections.py); these
tests check what needs the operating system."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka
import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiVersionsRequest,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    MetadataRequest,
    MetadataRequestTopic,
    RequestHeader,
)
from kafka_wire.protocol.framing import encode_request
from tests.cluster.harness import wait_until
from tests.e2e.brokers import KafkaWireBroker, kafka_wire

#: Runs the server with RLIMIT_NOFILE at argv[1] (soft and hard), then execs the rest of argv.
_WITH_FILE_LIMIT = (
    "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


@dataclass
class ConfiguredBroker(KafkaWireBroker):
    """``kafka-wire serve`` with ``--set`` properties and, optionally, a low file limit."""

    sets: list[str] = field(default_factory=list)
    file_limit: int | None = None

    def command(self) -> list[str]:
        command = [*super().command(), *(arg for s in self.sets for arg in ("--set", s))]
        if self.file_limit is not None:
            command = [sys.executable, "-c", _WITH_FILE_LIMIT, str(self.file_limit), *command]
        return command


def configured(workdir: Path, *sets: str, file_limit: int | None = None) -> ConfiguredBroker:
    plain = kafka_wire(workdir)
    return ConfiguredBroker(
        plain.name,
        plain.address,
        plain.data_dir,
        plain.log_path,
        persistent=True,
        sets=list(sets),
        file_limit=file_limit,
    )


@pytest.fixture
def started() -> Iterator[list[ConfiguredBroker]]:
    """Brokers a test starts, stopped at its end whatever happens."""
    brokers: list[ConfiguredBroker] = []
    yield brokers
    for broker in brokers:
        broker.close()


def start(brokers: list[ConfiguredBroker], broker: ConfiguredBroker) -> ConfiguredBroker:
    brokers.append(broker)
    broker.start()
    return broker


def request_frame(body: Message, version: int, correlation_id: int = 1) -> bytes:
    assert body.API_KEY is not None
    header = RequestHeader(
        request_api_key=body.API_KEY,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="kw-e2e",
    )
    return encode_request(header, body, version)


def closed_by_peer(sock: socket.socket, timeout_s: float) -> bool:
    """Whether the broker closes ``sock`` within ``timeout_s`` (whatever it sends first is read)."""
    end = time.monotonic() + timeout_s
    while (left := end - time.monotonic()) > 0:
        if select.select([sock], [], [], left)[0]:
            try:
                if not sock.recv(65536):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
    return False


def connect(address: tuple[str, int], source: str | None = None) -> socket.socket:
    sock = socket.socket()
    try:
        if source is not None:
            sock.bind((source, 0))
        sock.connect(address)
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.contextmanager
def connections(
    address: tuple[str, int], count: int, source: str | None = None, *, flood: bool = False
) -> Iterator[list[socket.socket]]:
    """``count`` connections, closed at the end whatever happens. In a ``flood`` a connection the
    broker refuses may be reset before ``connect`` returns: it is left out of the list."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            try:
                socks.append(connect(address, source))
            except ConnectionError:
                if not flood:
                    raise
        yield socks
    finally:
        for sock in socks:
            sock.close()


def no_traceback(broker: ConfiguredBroker) -> None:
    log = broker.log()
    assert "Traceback" not in log and "LocalProtocolError" not in log, log[-4000:]


def produce(
    producer: confluent_kafka.Producer, topic: str, count: int, timeout_s: float = 20.0
) -> list[str | None]:
    outcomes: list[str | None] = []
    for i in range(count):
        producer.produce(
            topic,
            f"record-{i}".encode(),
            callback=lambda err, _msg: outcomes.append(None if err is None else str(err)),
        )
    producer.flush(timeout_s)
    return outcomes


@pytest.mark.timing
def test_idle_and_half_sent_connections_are_closed_at_their_timeouts(
    tmp_path: Path, started: list[ConfiguredBroker]
) -> None:
    broker = start(
        started,
        configured(tmp_path, "connections.max.idle.ms=1500", "kafka.wire.request.receive.timeout.ms=1000"),
    )
    address = (broker.address.host, broker.address.port)
    with connections(address, 2) as (idle, half):
        closed = _watch_closing(idle, half)
    assert 0.9 <= closed.get("half", -1) <= 2.5, closed
    assert 1.4 <= closed.get("idle", -1) <= 3.5, closed
    no_traceback(broker)


def _watch_closing(idle: socket.socket, half: socket.socket) -> dict[str, float]:
    """Seconds until the broker closed each connection; ``half`` starts a frame and trickles."""
    began = time.monotonic()
    half.sendall(struct.pack(">i", 1000) + bytes(10))  # a frame of 1000 bytes, never finished
    closed: dict[str, float] = {}
    while len(closed) < 2 and time.monotonic() - began < 6:
        for name, sock in (("idle", idle), ("half", half)):
            if name not in closed and closed_by_peer(sock, 0.05):
                closed[name] = time.monotonic() - began
        if "half" not in closed:
            try:
                half.send(b"\x00")  # trickling: never idle, but the frame stays unfinished
            except OSError:
                pass
        time.sleep(0.15)
    return closed


def test_a_connection_flood_over_the_per_ip_cap_does_not_stop_a_producer(
    tmp_path: Path, started: list[ConfiguredBroker]
) -> None:
    broker = start(started, configured(tmp_path, "max.connections.per.ip=50"))
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    assert produce(producer, "flooded", 1) == [None]
    address = (broker.address.host, broker.address.port)
    with connections(address, 300, source="127.0.0.2", flood=True) as flood:
        refused = 300 - len(flood) + sum(closed_by_peer(sock, 0.02) for sock in flood)
        assert refused == 250
        assert produce(producer, "flooded", 100) == [None] * 100
    assert "max.connections.per.ip (50)" in broker.log()
    no_traceback(broker)


def test_a_connection_flood_cannot_take_the_file_descriptors_storage_needs(
    tmp_path: Path, started: list[ConfiguredBroker]
) -> None:
    broker = start(started, configured(tmp_path, file_limit=256))
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    assert produce(producer, "fds", 1) == [None]
    address = (broker.address.host, broker.address.port)
    with connections(address, 400, flood=True):  # more than the broker has descriptors
        wait_until(
            "the broker to refuse connections", lambda: "refusing connections" in broker.log() or None, 10
        )
        # Each record is a storage write that needs a descriptor; none may fail.
        assert produce(producer, "fds", 200) == [None] * 200
    log = broker.log()
    assert log.count("refusing connections: the process's file limit is 256") == 1, log[-4000:]
    no_traceback(broker)


def _churn(address: tuple[str, int], stop: threading.Event, made: list[None]) -> None:
    """Connect, send a request, reset the connection; again and again (``made`` counts them)."""
    hello = request_frame(ApiVersionsRequest(), 0)
    while not stop.is_set():
        try:
            with socket.create_connection(address, timeout=1) as sock:
                sock.sendall(hello)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            made.append(None)
        except OSError:
            time.sleep(0.001)


def _stuck_reader(address: tuple[str, int], seconds: float) -> socket.socket:
    """A client that sends requests for ``seconds`` and never reads a response."""
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(address)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    many = request_frame(ApiVersionsRequest(), 0) * 200
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sock.send(many)
        except BlockingIOError:
            time.sleep(0.01)
    return sock


@pytest.mark.timing
@pytest.mark.parametrize("attempt", range(3))
def test_sigterm_stops_within_seconds_while_clients_come_and_go(
    tmp_path: Path, started: list[ConfiguredBroker], attempt: int
) -> None:
    broker = start(started, configured(tmp_path))
    address = (broker.address.host, broker.address.port)
    stuck = _stuck_reader(address, 1.0)
    stop = threading.Event()
    made: list[None] = []
    churners = [threading.Thread(target=_churn, args=(address, stop, made)) for _ in range(4)]
    for thread in churners:
        thread.start()
    try:
        wait_until("clients coming and going", lambda: len(made) >= 40 or None, 10, 0.01)
        process = broker.process
        assert process is not None
        began = time.monotonic()
        os.killpg(process.pid, signal.SIGTERM)
        try:
            status = process.wait(5.0)
        except subprocess.TimeoutExpired:
            status = None
        took = time.monotonic() - began
    finally:
        stop.set()
        for thread in churners:
            thread.join()
        stuck.close()
    assert status == 0, f"exit status {status} after {took:.1f} s"
    broker.stop()  # collects its output
    assert "kafka-wire serve: stopped" in broker.log()
    no_traceback(broker)


def test_ordinary_client_behaviour_leaves_no_traceback(
    tmp_path: Path, started: list[ConfiguredBroker]
) -> None:
    broker = start(started, configured(tmp_path, "max.connections.per.ip=3"))
    address = (broker.address.host, broker.address.port)
    with connections(address, 3) as held, connections(address, 3) as refused:
        assert all(closed_by_peer(sock, 2.0) for sock in refused)
        _behave_as_clients_do(*held)
    time.sleep(0.5)
    assert broker.stop() == 0
    no_traceback(broker)


def _behave_as_clients_do(garbage: socket.socket, reset: socket.socket, waiting: socket.socket) -> None:
    garbage.sendall(struct.pack(">i", 12) + bytes(12))  # not Kafka: the broker closes it
    assert closed_by_peer(garbage, 2.0)
    garbage.close()
    reset.sendall(request_frame(ApiVersionsRequest(), 0) * 50)  # then gone before the answers
    reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    reset.close()
    waiting.sendall(request_frame(MetadataRequest(topics=[MetadataRequestTopic(name="nothing-yet")]), 4))
    size = struct.unpack(">i", waiting.recv(4, socket.MSG_WAITALL))[0]  # the topic is created
    waiting.recv(size, socket.MSG_WAITALL)
    long_poll = FetchRequest(
        replica_id=-1,
        max_wait_ms=2000,
        min_bytes=1,
        max_bytes=1 << 20,
        session_epoch=-1,
        topics=[
            FetchRequestTopic(
                topic="nothing-yet", partitions=[FetchRequestPartition(partition=0, partition_max_bytes=1024)]
            )
        ],
    )
    waiting.sendall(request_frame(long_poll, 12) + request_frame(ApiVersionsRequest(), 0, correlation_id=2))
    waiting.close()  # gone while its fetch is held and a request waits behind it
