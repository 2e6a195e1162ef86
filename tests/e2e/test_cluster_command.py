"""``kafka-wire cluster`` and the KRaft-mode start of ``kafka-wire serve``: arguments and
properties refused in one clear line, children supervised (a node that exits is reported and the
others are stopped; SIGINT stops every node)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.errors import AuthenticationError
from kafka_wire.protocol.sasl import ScramClient
from tests.cluster.harness import listener_ports, wait_until
from tests.e2e.brokers import kafka_wire_cli
from tests.e2e.sasl_setup import ADMIN, client_settings, create_scram_users, sasl_properties


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(kafka_wire_cli()), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "0"], "kafka-wire cluster: --nodes 0: must be between 1 and 32"),
        (
            ["--nodes", "2", "--base-port", "65534"],
            "kafka-wire cluster: --base-port 65534: ports 65534 to 65537",
        ),
        (["--set", "novalue"], "kafka-wire cluster: --set novalue: expected KEY=VALUE"),
    ],
)
def test_cluster_arguments_are_refused_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = cli("cluster", "--data-dir", str(tmp_path / "data"), *args)
    assert result.returncode == 2, result
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(message), result.stderr


CLUSTER_NODE = [
    "--set", "process.roles=broker,controller",
    "--set", "controller.quorum.voters=1@127.0.0.1:19093,2@127.0.0.1:19095",
    "--set", "listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
    "--set", "controller.listener.names=CONTROLLER",
    "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--set", "node.id=5"],
            "kafka-wire serve: --set: controller.quorum.voters=1@127.0.0.1:19093,2@127.0.0.1:19095: "
            "node.id 5 must be among the voters when process.roles has the controller role",
        ),
        (
            ["--set", "node.id=1", "--set", "controller.listener.names=OTHER"],
            "kafka-wire serve: --set: controller.listener.names=OTHER: OTHER (its first name) must appear in "
            "listeners",
        ),
        (
            ["--set", "node.id=1", "--port", "9999"],
            "kafka-wire serve: --host and --port do not apply to a cluster node",
        ),
    ],
)
def test_cluster_node_properties_are_refused_in_one_line(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    result = cli("serve", "--data-dir", str(tmp_path / "data"), *CLUSTER_NODE, *extra)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(message), result.stderr


def test_a_new_cluster_node_needs_the_cluster_id(tmp_path: Path) -> None:
    result = cli("serve", "--data-dir", str(tmp_path / "data"), *CLUSTER_NODE, "--set", "node.id=1")
    assert result.returncode == 1, result
    assert "cluster.id is not set: a node of a cluster needs the cluster's id" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_node_that_exits_is_reported_and_the_others_stopped(tmp_path: Path) -> None:
    base = listener_ports(4)
    blocker = socket.socket()  # node 1's broker port is taken: node 1 cannot start
    blocker.bind(("127.0.0.1", base + 2))
    blocker.listen()
    try:
        result = cli(
            "cluster", "--nodes", "2", "--base-port", str(base), "--data-dir", str(tmp_path / "data")
        )
    finally:
        blocker.close()
    assert result.returncode == 1, result
    assert f"bootstrap servers 127.0.0.1:{base},127.0.0.1:{base + 2}" in result.stdout
    assert "exited with status 1" in result.stderr
    assert "kafka-wire cluster: stopped the other nodes" in result.stderr
    assert "Traceback" not in result.stderr
    properties = (tmp_path / "data" / "node-1.properties").read_text()
    assert f"listeners=PLAINTEXT://127.0.0.1:{base + 2},CONTROLLER://127.0.0.1:{base + 3}" in properties
    assert "node.id=1" in properties
    assert (tmp_path / "data" / "cluster.id").read_text().strip()


CHILD = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"


def test_sigint_stops_every_child(tmp_path: Path) -> None:
    pids = [tmp_path / "a.pid", tmp_path / "b.pid"]
    program = (
        "import sys; from kafka_wire.cli.cluster import supervise; "
        f"sys.exit(supervise([[sys.executable, '-c', {CHILD!r}, {str(pids[0])!r}], "
        f"[sys.executable, '-c', {CHILD!r}, {str(pids[1])!r}]], ['a', 'b']))"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not all(p.exists() and p.read_text() for p in pids):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    children = [int(p.read_text()) for p in pids]
    parent.send_signal(signal.SIGINT)
    out, err = parent.communicate(timeout=30)
    assert parent.returncode == 0, (out, err)
    assert "kafka-wire cluster: stopped" in out
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_cluster_starts_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    base = listener_ports(6)
    parent = subprocess.Popen(
        [
            str(kafka_wire_cli()),
            "cluster",
            "--nodes",
            "3",
            "--base-port",
            str(base),
            "--data-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and parent.poll() is None:
            ready = 0
            for node in range(3):
                with socket.socket() as probe:
                    ready += probe.connect_ex(("127.0.0.1", base + 2 * node)) == 0
            if ready == 3:
                break
            time.sleep(0.1)
        assert parent.poll() is None, parent.communicate()
        # The three brokers registered with the quorum's controller: every node lists them all.
        bootstrap = ",".join(f"127.0.0.1:{base + 2 * node}" for node in range(3))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        brokers: set[int] = set()
        while time.monotonic() < deadline + 30 and brokers != {0, 1, 2}:
            try:
                brokers = set(admin.list_topics(timeout=5).brokers)
            except KafkaException:  # no answer yet: the quorum is electing
                pass
            time.sleep(0.2)
        assert brokers == {0, 1, 2}
        parent.send_signal(signal.SIGINT)
        out, err = parent.communicate(timeout=60)
        assert parent.returncode == 0, (out, err)
        assert "kafka-wire cluster: stopped" in out
    finally:
        stop(parent, tmp_path)


def stop(parent: subprocess.Popen[str], data_dir: Path) -> None:
    """Kill ``parent`` (the ``kafka-wire cluster`` process) if it still runs, close its pipes (a
    failed test leaves them open otherwise) and kill its nodes, which run in their own session."""
    if parent.poll() is None:
        parent.kill()
        parent.wait()
    for pipe in (parent.stdout, parent.stderr):
        if pipe is not None:
            pipe.close()
    kill_nodes_of(data_dir)


def kill_nodes_of(data_dir: Path) -> None:
    """SIGKILL every process whose command line names ``data_dir`` (the nodes of a cluster)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(data_dir).encode() in cmdline and int(proc.name) != os.getpid():
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_the_cluster_serves_sasl_clients(tmp_path: Path) -> None:
    """``--sasl-listener``: every node's SASL_PLAINTEXT listener (BASE+2N+i) serves the SASL
    properties given with ``--set``; a SCRAM user created through one node logs in on each."""
    base = listener_ports(9)
    sets = [arg for key, value in sasl_properties().items() for arg in ("--set", f"{key}={value}")]
    parent = subprocess.Popen(
        [
            *(str(kafka_wire_cli()), "cluster", "--nodes", "3", "--base-port", str(base)),
            *("--sasl-listener", "--data-dir", str(tmp_path), *sets),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sasl_ports = [base + 6 + node for node in range(3)]
    try:
        wait_until("the SASL listeners", lambda: all(_accepts(port) for port in sasl_ports) or None, 30)
        assert parent.poll() is None, parent.communicate()
        # The three brokers registered: a PLAIN admin on the SASL listeners lists them all.
        bootstrap = ",".join(f"127.0.0.1:{port}" for port in sasl_ports)
        admin = AdminClient({"bootstrap.servers": bootstrap, **client_settings("PLAIN", *ADMIN)})
        wait_until("every broker", lambda: _brokers(admin) == {0, 1, 2} or None, 60)
        create_scram_users(f"127.0.0.1:{sasl_ports[0]}", {"SCRAM-SHA-512": ("gina", "gina-secret")})
        for port in sasl_ports:
            wait_until("a SCRAM login", lambda p=port: _scram_login(p) or None, 30)  # type: ignore[misc]
        parent.send_signal(signal.SIGINT)
        out, err = parent.communicate(timeout=60)
        assert parent.returncode == 0, (out, err)
        assert f"SASL 127.0.0.1:{sasl_ports[2]}" in out
    finally:
        stop(parent, tmp_path)


def _brokers(admin: AdminClient) -> set[int]:
    try:
        return set(admin.list_topics(timeout=5).brokers)
    except KafkaException:  # no answer yet: the quorum is electing
        return set()


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _scram_login(port: int) -> bool:
    async def login() -> None:
        sasl = ScramClient("SCRAM-SHA-512", "gina", "gina-secret", "cluster-command-nonce")
        async with await KafkaClient.connect("127.0.0.1", port, sasl=sasl):
            pass

    try:
        asyncio.run(login())
    except (AuthenticationError, OSError):
        return False
    return True
