"""The control protocol of ``kafka-wire serve --control-port`` (``kafka_wire.adapters.fault_control``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.adapters.fault_control import ControlServer
from kafka_wire.adapters.local_cluster import HOST, LocalCluster
from kafka_wire.testing.fixtures import ClusterFactory

ROOT = Path(__file__).resolve().parents[2]


def call(
    port: int, path: str, body: object | None = None, method: str = "POST"
) -> tuple[int, dict[str, object]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{HOST}:{port}{path}", data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status: int = answer.status
            return status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@contextmanager
def control_of(cluster: LocalCluster, node_id: int = 1) -> Iterator[int]:
    """The control protocol of one node, on a free port, for the block."""
    server = cluster.nodes[node_id].server
    assert server is not None
    control = ControlServer(server)
    port = cluster.run(control.start(HOST, 0))
    try:
        yield port
    finally:
        cluster.run(control.stop())


@pytest.fixture
def single(kafka_cluster: LocalCluster) -> Iterator[tuple[LocalCluster, int]]:
    with control_of(kafka_cluster) as port:
        yield kafka_cluster, port


def test_errors_pushed_over_http_fail_the_clients_call(single: tuple[LocalCluster, int]) -> None:
    cluster, port = single
    assert call(port, "/faults/errors", {"api": "CREATE_TOPICS", "errors": ["POLICY_VIOLATION"]}) == (
        200,
        {"ok": True},
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4"})
    with pytest.raises(KafkaException) as raised:
        admin.create_topics([NewTopic("refused", 1, 1)])["refused"].result(30)
    assert raised.value.args[0].code() == KafkaError.POLICY_VIOLATION


def test_every_endpoint_and_what_it_refuses(single: tuple[LocalCluster, int]) -> None:
    cluster, port = single
    assert (
        call(port, "/faults/errors", {"api": 0, "errors": [6, "NOT_ENOUGH_REPLICAS"], "count": 2})[0] == 200
    )
    assert call(port, "/faults/latency", {"ms": 300})[0] == 200
    assert call(port, "/faults/latency", {"ms": 50, "api": "FETCH"})[0] == 200
    assert call(port, "/faults/close", {"api": "fetch", "count": 3})[0] == 200
    assert call(port, "/broker/down", {})[0] == 200
    status, shown = call(port, "/faults", method="GET")
    assert status == 200 and shown == {
        "ok": True,
        "down": True,
        "faults": {
            "errors": {"PRODUCE": [[6, 19, 6, 19]]},
            "close_mid_response": {"FETCH": 3},
            "latency_ms": {"FETCH": 50},
            "broker_latency_ms": 300,
        },
    }
    assert call(port, "/broker/up", {})[0] == 200
    assert call(port, "/faults/clear", {"api": "FETCH"})[0] == 200
    assert call(port, "/faults/clear", {})[0] == 200
    assert call(port, "/faults", method="GET")[1]["faults"] == {
        "errors": {},
        "close_mid_response": {},
        "latency_ms": {},
        "broker_latency_ms": 0,
    }
    assert call(port, "/faults", method="GET")[1]["down"] is False
    # Refusals: a bad body, an unknown API or code, no such endpoint, a single node's leader.
    assert call(port, "/faults/errors", {"api": "NOPE", "errors": [6]})[0] == 400
    assert call(port, "/faults/errors", {"api": "PRODUCE", "errors": ["NOPE"]})[0] == 400
    assert call(port, "/faults/errors", {"api": "PRODUCE", "errors": [0]})[0] == 400
    assert call(port, "/faults/latency", {"ms": "soon"})[0] == 400
    assert call(port, "/faults/latency", [1])[0] == 400
    assert call(port, "/nowhere", {})[0] == 404
    status, answer = call(port, "/leader", {"topic": "t", "partition": 0, "broker": 2})
    assert status == 409 and "single node" in str(answer["error"])
    del cluster


@pytest.mark.cluster
def test_a_leader_moved_over_http(kafka_cluster_factory: ClusterFactory) -> None:
    cluster = kafka_cluster_factory(3)
    cluster.create_topic("moves", partitions=1, replication_factor=3)
    target = next(node for node in (1, 2, 3) if node != cluster.leader("moves", 0))
    with control_of(cluster, 1) as port:
        assert call(port, "/leader", {"topic": "moves", "partition": 0, "broker": target}) == (
            200,
            {"ok": True},
        )
        assert cluster.leader("moves", 0) == target
        status, answer = call(port, "/leader", {"topic": "moves", "partition": 0, "broker": 7})
        assert status == 409 and "not a replica" in str(answer["error"])


def test_serve_opens_the_control_port(tmp_path: Path) -> None:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_wire.cli",
            "serve",
            "--host",
            HOST,
            "--port",
            "0",
            "--data-dir",
            str(tmp_path / "data"),
            "--control-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "fault control on 127.0.0.1:" in line, line
        port = int(line.split("fault control on 127.0.0.1:")[1].split()[0])
        assert call(port, "/faults/latency", {"ms": 5}) == (200, {"ok": True})
        assert call(port, "/faults", method="GET")[1]["faults"] == {
            "errors": {},
            "close_mid_response": {},
            "latency_ms": {},
            "broker_latency_ms": 5,
        }
    finally:
        process.terminate()
        status = process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
    assert status == 0
