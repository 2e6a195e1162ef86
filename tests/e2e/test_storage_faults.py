"""Real storage faults under a real idempotent acks=all producer: no acknowledged record is lost.

``kafka-wire serve`` keeps its data on a small tmpfs (mounting needs root, which CI has; without it
these tests fail, they do not skip). librdkafka produces with ``enable.idempotence`` and
``acks=all``; every delivery report is kept. Then the fault:

* the file system fills up (3 MiB);
* the file system turns read-only under the running broker;
* the process runs out of file descriptors while clients hold hundreds of idle connections.

The broker must answer errors, never acknowledgements, for what it could not write: when a write
fails its log directory goes offline and, being the only one, the broker stops (exit status 1 and
one line saying why). After the file system is repaired the broker starts again on the same data
and a consumer reads every acknowledged record at the offset its acknowledgement gave, with no gap.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from tests.e2e.brokers import KafkaWireBroker, kafka_wire

TOPIC = "faults"
VALUE_BYTES = 1000
DELIVERY_TIMEOUT_MS = 6000


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs (needs root: the test fails without it)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def remount(mount: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mount)], check=True)


def broker_on(mount: Path, tmp_path: Path, *, nofile: int | None = None) -> KafkaWireBroker:
    broker = kafka_wire(tmp_path)
    broker.data_dir = mount / "data"
    if nofile is not None:
        command = broker.command()
        broker.command = lambda: ["prlimit", f"--nofile={nofile}:{nofile}", "--", *command]  # type: ignore[method-assign]
    broker.start()
    return broker


class Deliveries:
    """An idempotent acks=all producer and every delivery report it got."""

    def __init__(self, bootstrap: str) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "batch.num.messages": 50,
                "message.timeout.ms": DELIVERY_TIMEOUT_MS,
                "retry.backoff.ms": 50,
            }
        )
        self.acked: dict[bytes, int] = {}
        self.failed: dict[bytes, str] = {}
        self.sent = 0

    def _report(self, error: KafkaError | None, message: Message) -> None:
        key = message.key()
        assert isinstance(key, bytes)
        if error is None:
            offset = message.offset()
            assert offset is not None
            self.acked[key] = offset
        else:
            self.failed[key] = error.str()

    def produce(self, count: int) -> None:
        for _ in range(count):
            key = f"{self.sent:06d}".encode()
            self.producer.produce(
                TOPIC, key=key, value=key * (VALUE_BYTES // len(key)), on_delivery=self._report
            )
            self.sent += 1
            self.producer.poll(0)
        assert self.producer.flush(DELIVERY_TIMEOUT_MS / 1000 + 20) == 0, "every record got a delivery report"
        assert len(self.acked) + len(self.failed) == self.sent


def stored(bootstrap: str) -> list[tuple[int, bytes]]:
    """(offset, key) of every record of the topic, read by a real consumer from the start."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "faults-check", "enable.auto.commit": False}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        records: list[tuple[int, bytes]] = []
        while len(records) < high:
            message = consumer.poll(10)
            assert message is not None, f"read {len(records)} of {high} records"
            assert message.error() is None, message.error()
            offset, key = message.offset(), message.key()
            assert offset is not None and isinstance(key, bytes)
            records.append((offset, key))
        return records
    finally:
        consumer.close()


def check_nothing_acknowledged_was_lost(deliveries: Deliveries, records: list[tuple[int, bytes]]) -> None:
    assert [offset for offset, _ in records] == list(range(len(records))), "offsets have no gap"
    at = dict(records)
    lost = {key: offset for key, offset in deliveries.acked.items() if at.get(offset) != key}
    assert not lost, f"{len(lost)} acknowledged records are not where their acknowledgement put them"


def check_stopped_on_its_own(broker: KafkaWireBroker, reason: str) -> None:
    assert broker.process is not None
    status = broker.process.wait(30)
    assert status == 1, f"exit status {status}\n{broker.log()[-2000:]}"
    broker.stop()
    log = broker.log()
    assert "stopped: log directory failed: " in log and reason in log, log[-2000:]
    assert "Traceback" not in log, log[-4000:]


def test_a_full_file_system_loses_no_acknowledged_record(tmpfs: Path, tmp_path: Path) -> None:
    broker = broker_on(tmpfs, tmp_path)
    try:
        deliveries = Deliveries(broker.bootstrap)
        deliveries.produce(4000)  # 4 MB of values on a 3 MiB file system
        assert deliveries.failed, "the disk filled up: some records must have failed"
        assert deliveries.acked, "records were acknowledged before the disk filled up"
        check_stopped_on_its_own(broker, "No space left on device")
        remount(tmpfs, "size=64m")
        broker.restart()
        check_nothing_acknowledged_was_lost(deliveries, stored(broker.bootstrap))
    finally:
        broker.close()


def test_a_file_system_turning_read_only_loses_no_acknowledged_record(tmpfs: Path, tmp_path: Path) -> None:
    broker = broker_on(tmpfs, tmp_path)
    try:
        deliveries = Deliveries(broker.bootstrap)
        deliveries.produce(500)
        assert len(deliveries.acked) == 500
        remount(tmpfs, "ro")
        deliveries.produce(500)
        assert len(deliveries.failed) == 500, "nothing could be written"
        check_stopped_on_its_own(broker, "Read-only file system")
        remount(tmpfs, "rw")
        broker.restart()
        records = stored(broker.bootstrap)
        check_nothing_acknowledged_was_lost(deliveries, records)
        assert len(records) == 500
    finally:
        broker.close()


def test_running_out_of_file_descriptors_loses_no_acknowledged_record(tmpfs: Path, tmp_path: Path) -> None:
    remount(tmpfs, "size=64m")
    broker = broker_on(tmpfs, tmp_path, nofile=200)
    flood: list[socket.socket] = []
    try:
        deliveries = Deliveries(broker.bootstrap)
        deliveries.produce(200)
        assert len(deliveries.acked) == 200
        for _ in range(250):  # idle connections: more than the process may open
            try:
                flood.append(socket.create_connection((broker.address.host, broker.address.port), timeout=5))
            except OSError:
                break
        deliveries.produce(800)
        for connection in flood:
            connection.close()
        if broker.running():
            assert len(deliveries.acked) == 1000, (
                f"the broker stayed up: every record is stored: {deliveries.failed}"
            )
            broker.stop()
        else:
            check_stopped_on_its_own(broker, "Too many open files")
        broker.restart()
        check_nothing_acknowledged_was_lost(deliveries, stored(broker.bootstrap))
    finally:
        for connection in flood:
            connection.close()
        broker.close()
