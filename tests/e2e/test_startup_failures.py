"""A start that cannot go on is one line on stderr saying what to do, exit status 1, no traceback.

Each case runs ``kafka-wire serve`` on a data directory a previous run wrote, damaged in one way.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from tests.broker.engine import LEGACY_DATA_DIR
from tests.e2e.brokers import KafkaWireBroker, kafka_wire, kafka_wire_cli


@pytest.fixture
def written(tmp_path: Path) -> Iterator[KafkaWireBroker]:
    """A data directory with one topic, written by a broker that then stopped cleanly."""
    broker = kafka_wire(tmp_path)
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(30)
        assert broker.stop() == 0
        yield broker
    finally:
        broker.close()


def serve(data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(kafka_wire_cli()), "serve", "--port", "0", "--data-dir", str(data_dir), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kafka-wire serve: cannot start: ")
    return lines[0]


@pytest.fixture
def legacy(tmp_path: Path) -> KafkaWireBroker:
    """A copy of a previous release's data directory (topics in kafka-wire-metadata.json)."""
    broker = kafka_wire(tmp_path)
    shutil.copytree(LEGACY_DATA_DIR, broker.data_dir)
    return broker


def test_a_truncated_metadata_file_of_a_previous_release(legacy: KafkaWireBroker) -> None:
    path = legacy.data_dir / "kafka-wire-metadata.json"
    path.write_bytes(path.read_bytes()[:40])
    line = one_line(serve(legacy.data_dir))
    assert "kafka-wire-metadata.json is damaged" in line and "restore it from a backup" in line


def test_a_directory_of_another_node(written: KafkaWireBroker) -> None:
    line = one_line(serve(written.data_dir, "--set", "node.id=7"))
    assert "belongs to node.id=1, but this broker is node.id=7" in line


def test_a_read_only_directory(tmp_path: Path, written: KafkaWireBroker) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        subprocess.run(["cp", "-a", str(written.data_dir), str(mount / "data")], check=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        line = one_line(serve(mount / "data"))
        assert "Read-only file system" in line and "it must be writable" in line
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_previous_releases_deleted_metadata_file_is_rebuilt(legacy: KafkaWireBroker) -> None:
    (legacy.data_dir / "kafka-wire-metadata.json").unlink()
    legacy.start()
    try:
        topics = AdminClient({"bootstrap.servers": legacy.bootstrap}).list_topics(timeout=30).topics
        assert "orders" in topics and len(topics["orders"].partitions) == 3
    finally:
        assert legacy.stop() == 0
    assert (
        "rebuilt 3 topic(s) from their partition directories (__consumer_offsets, events, orders)"
        in legacy.log()
    )
