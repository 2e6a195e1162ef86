"""The cluster harness itself, without starting a node: the properties each node gets, and the
replica comparison on logs written here (it must see a difference below the high watermark, and
only there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_wire.logformat import parse_properties
from kafka_wire.logformat.checkpoints import REPLICATION_OFFSET_CHECKPOINT, format_partition_checkpoint
from kafka_wire.logformat.names import LOG_SUFFIX, partition_dir, segment_file_name
from kafka_wire.records import build_batch
from tests.cluster.harness import LocalCluster, assert_replicas_identical


def test_each_node_gets_kafkas_properties(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, 3, {"unclean.leader.election.enable": "true"})
    ports = [p for n in cluster.nodes.values() for p in (n.port, n.controller_port)]
    assert len(set(ports)) == 6
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in cluster.nodes.values())
    for node in cluster.nodes.values():
        node.write_config()
        props = parse_properties(node.config_path.read_text())
        assert props["node.id"] == str(node.node_id)
        assert props["process.roles"] == "broker,controller"
        assert (
            props["listeners"]
            == f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        )
        assert props["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{node.port}"
        assert props["controller.listener.names"] == "CONTROLLER"
        assert props["inter.broker.listener.name"] == "PLAINTEXT"
        assert props["controller.quorum.voters"] == voters
        assert props["cluster.id"] == cluster.cluster_id and len(cluster.cluster_id) == 22
        assert props["log.dirs"] == str(node.data_dir)
        assert props["default.replication.factor"] == "3"
        assert props["min.insync.replicas"] == "2"
        assert props["offsets.topic.replication.factor"] == "3"
        assert props["unclean.leader.election.enable"] == "true"
        assert node.command()[1:5] == ["-m", "kafka_wire.cli", "serve", "--config"]


def _batches(tag: bytes) -> list[bytes]:
    """Three batches of two records each, at offsets 0, 2 and 4; ``tag`` marks the last one."""
    return [
        build_batch([(None, b"a"), (None, b"b")], base_offset=0, default_timestamp=1),
        build_batch([(None, b"c"), (None, b"d")], base_offset=2, default_timestamp=1),
        build_batch([(None, tag), (None, b"f")], base_offset=4, default_timestamp=1),
    ]


def _write_replicas(cluster: LocalCluster, logs: dict[int, list[bytes]], hw: int) -> None:
    for node_id, batches in logs.items():
        data_dir = cluster.nodes[node_id].data_dir
        folder = data_dir / partition_dir("t", 0)
        folder.mkdir(parents=True)
        (folder / segment_file_name(0, LOG_SUFFIX)).write_bytes(b"".join(batches))
        (data_dir / REPLICATION_OFFSET_CHECKPOINT).write_text(format_partition_checkpoint({("t", 0): hw}))


def test_replicas_equal_below_the_high_watermark_pass(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, 3)
    # Node 3's last batch differs, but it is above the high watermark (4): not compared.
    _write_replicas(cluster, {1: _batches(b"e"), 2: _batches(b"e"), 3: _batches(b"X")}, hw=4)
    assert assert_replicas_identical(cluster, {("t", 0): 3}) == {("t", 0)}


def test_a_replica_differing_below_the_high_watermark_fails(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, 3)
    _write_replicas(cluster, {1: _batches(b"e"), 2: _batches(b"e"), 3: _batches(b"X")}, hw=6)
    with pytest.raises(AssertionError, match="batch 2 below the high watermark 6 differs"):
        assert_replicas_identical(cluster, {("t", 0): 5})


def test_a_replica_missing_a_batch_below_the_high_watermark_fails(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, 3)
    _write_replicas(cluster, {1: _batches(b"e"), 2: _batches(b"e"), 3: _batches(b"e")[:2]}, hw=6)
    with pytest.raises(AssertionError, match="node 3 has 2 batches below 6"):
        assert_replicas_identical(cluster, {("t", 0): 5})


def test_a_high_watermark_below_an_acknowledged_record_fails(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, 3)
    _write_replicas(cluster, {1: _batches(b"e"), 2: _batches(b"e"), 3: _batches(b"e")}, hw=4)
    with pytest.raises(AssertionError, match="the last acknowledged offset 5"):
        assert_replicas_identical(cluster, {("t", 0): 5})
