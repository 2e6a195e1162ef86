"""``kafka-wire cluster``: a local replicated cluster of ``kafka-wire serve`` child processes.

``kafka-wire cluster --nodes 3 --base-port 9092 --data-dir data`` starts N combined nodes
(``process.roles=broker,controller``, every node a voter). Node ``i`` (0 to N-1) has
``node.id=i``, its broker listener on ``base-port + 2i`` and its controller listener on
``base-port + 2i + 1``, its data in ``<data-dir>/node-i`` and its properties in
``<data-dir>/node-i.properties`` (rewritten at each start). One cluster id is made for the
cluster (kept in ``<data-dir>/cluster.id``, so a restart finds its data) and given to every node
with ``--set cluster.id=...``; ``--set KEY=VALUE`` is passed on to every node.

``--sasl-listener`` gives every node a SASL_PLAINTEXT client listener too, node ``i``'s on
``base-port + 2N + i`` (after the others), configured by Kafka's SASL properties given with
``--set`` (``sasl.enabled.mechanisms``, ``listener.name.sasl_plaintext.<mechanism>.sasl.jaas.config``;
docs/guide/sasl.md). The nodes keep speaking PLAINTEXT to each other on their broker listeners.

It prints each node's addresses and the bootstrap servers, then waits. SIGINT (Ctrl-C) or SIGTERM
stops every node (each with a controlled shutdown) and the command exits 0; a node that exits
on its own is reported and the others are stopped (exit 1). Children run in their own session, so
a Ctrl-C in the terminal reaches them only through this command, once.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Final

from kafka_wire.logformat.partition_metadata import kafka_uuid_text

#: How long stopping children may take before they are killed: their controlled shutdown's
#: bound (30 s by default) and some.
STOP_TIMEOUT_S: Final = 40.0
_POLL_S: Final = 0.2
#: The file of the data directory that keeps the cluster id between runs.
CLUSTER_ID_FILE: Final = "cluster.id"
MAX_NODES: Final = 32


class ClusterArgumentError(Exception):
    """An argument of ``kafka-wire cluster`` cannot be used (one line)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "cluster",
        help="run a local replicated cluster",
        description=(
            "Run N combined kafka-wire nodes (broker and KRaft controller) as child processes. "
            "Node i listens for clients on BASE_PORT+2i and for controllers on BASE_PORT+2i+1."
        ),
    )
    parser.add_argument("--nodes", type=int, default=3, help="how many nodes (default 3)")
    parser.add_argument("--base-port", type=int, default=9092, help="node 0's broker port (default 9092)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address every node listens on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path("data"), help="parent of node-<i>/ (default ./data)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker property for every node, e.g. min.insync.replicas=2",
    )
    parser.add_argument(
        "--sasl-listener",
        action="store_true",
        help="also give node i a SASL_PLAINTEXT listener on BASE_PORT+2N+i (its SASL properties with --set)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the nodes' log level (default WARNING)",
    )
    parser.set_defaults(handler=run)


@dataclass(frozen=True, slots=True)
class NodePlan:
    node_id: int
    broker_port: int
    controller_port: int
    data_dir: Path
    properties_file: Path
    #: The SASL_PLAINTEXT client listener's port (``--sasl-listener``), else None.
    sasl_port: int | None = None


def plan(nodes: int, base_port: int, data_dir: Path, sasl: bool = False) -> list[NodePlan]:
    if not 1 <= nodes <= MAX_NODES:
        raise ClusterArgumentError(f"--nodes {nodes}: must be between 1 and {MAX_NODES}")
    last = base_port + (3 if sasl else 2) * nodes - 1
    if not 1 <= base_port or last > 65535:
        raise ClusterArgumentError(f"--base-port {base_port}: ports {base_port} to {last} must be TCP ports")
    return [
        NodePlan(
            i,
            base_port + 2 * i,
            base_port + 2 * i + 1,
            data_dir / f"node-{i}",
            data_dir / f"node-{i}.properties",
            base_port + 2 * nodes + i if sasl else None,
        )
        for i in range(nodes)
    ]


def node_properties(node: NodePlan, nodes: Sequence[NodePlan], host: str) -> dict[str, str]:
    """The ``server.properties`` of one node."""
    voters = ",".join(f"{n.node_id}@{host}:{n.controller_port}" for n in nodes)
    factor = str(min(3, len(nodes)))
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{host}:{node.broker_port},CONTROLLER://{host}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{node.broker_port},CONTROLLER://{host}:{node.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(node.data_dir.resolve()),
        "default.replication.factor": factor,
        "offsets.topic.replication.factor": factor,
    }
    if node.sasl_port is not None:
        sasl = f",SASL_PLAINTEXT://{host}:{node.sasl_port}"
        properties["listeners"] += sasl
        properties["advertised.listeners"] += sasl
        properties["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
    return properties


def cluster_id_of(data_dir: Path) -> str:
    """The cluster id kept in the data directory, or a new one (written there)."""
    path = data_dir / CLUSTER_ID_FILE
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    made = kafka_uuid_text(uuid.uuid4())
    data_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(made + "\n", encoding="utf-8")
    return made


def _write_properties(path: Path, properties: dict[str, str]) -> None:
    lines = ["# written by kafka-wire cluster at each start"]
    lines += [f"{key}={value}" for key, value in properties.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    try:
        nodes = plan(args.nodes, args.base_port, args.data_dir, args.sasl_listener)
        for pair in args.set:
            key, sep, _ = pair.partition("=")
            if not sep or not key.strip():
                raise ClusterArgumentError(f"--set {pair}: expected KEY=VALUE")
        args.data_dir.mkdir(parents=True, exist_ok=True)
        cluster_id = cluster_id_of(args.data_dir)
    except ClusterArgumentError as exc:
        print(f"kafka-wire cluster: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"kafka-wire cluster: {args.data_dir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    commands = []
    for node in nodes:
        _write_properties(node.properties_file, node_properties(node, nodes, args.host))
        command = [sys.executable, "-m", "kafka_wire.cli", "serve", "--config", str(node.properties_file)]
        command += ["--set", f"cluster.id={cluster_id}", "--log-level", args.log_level]
        for pair in args.set:
            command += ["--set", pair]
        commands.append(command)
    print(f"kafka-wire cluster: {len(nodes)} nodes, cluster.id={cluster_id}", flush=True)
    for node in nodes:
        print(
            f"  node {node.node_id}: broker {args.host}:{node.broker_port}, "
            f"controller {args.host}:{node.controller_port}, "
            + (f"SASL {args.host}:{node.sasl_port}, " if node.sasl_port is not None else "")
            + f"data in {node.data_dir}",
            flush=True,
        )
    print(
        "kafka-wire cluster: bootstrap servers "
        + ",".join(f"{args.host}:{n.broker_port}" for n in nodes)
        + " (Ctrl-C stops all)",
        flush=True,
    )
    return supervise(commands, [f"node {n.node_id}" for n in nodes])


def supervise(commands: Sequence[Sequence[str]], names: Sequence[str]) -> int:
    """Run ``commands`` as children until SIGINT/SIGTERM (exit 0) or until one exits (reported;
    exit 1); either way every child is stopped (SIGTERM, then SIGKILL after STOP_TIMEOUT_S)."""
    stop_signal: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_signal.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    children: list[subprocess.Popen[bytes]] = []
    status = 0
    try:
        for command in commands:
            children.append(subprocess.Popen(list(command), start_new_session=True))
        while not stop_signal:
            dead = [
                (name, child) for name, child in zip(names, children, strict=True) if child.poll() is not None
            ]
            if dead:
                for name, child in dead:
                    print(
                        f"kafka-wire cluster: {name} exited with status {child.returncode}",
                        file=sys.stderr,
                        flush=True,
                    )
                status = 1
                break
            time.sleep(_POLL_S)
    finally:
        _stop(children)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if status == 0:
        print("kafka-wire cluster: stopped", flush=True)
    else:
        print("kafka-wire cluster: stopped the other nodes", file=sys.stderr, flush=True)
    return status


def _stop(children: Sequence[subprocess.Popen[bytes]]) -> None:
    running = [c for c in children if c.poll() is None]
    for child in running:
        child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for child in running:
        try:
            child.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
