"""A local cluster of real ``kafka-wire serve`` processes, configured as Kafka users configure Kafka;
or of Apache Kafka 4.4 nodes with the same properties (``implementation="apache_kafka"``).

:class:`LocalCluster` writes one ``server.properties`` per node (combined mode:
``process.roles=broker,controller``, a PLAINTEXT broker listener and a CONTROLLER listener on free
ports of 127.0.0.1, ``controller.quorum.voters`` naming every node, one ``cluster.id``, the node's
own ``log.dirs``) and runs each node as ``python -m kafka_wire.cli serve --config FILE`` from the
repository root, with the repository first on ``PYTHONPATH`` so the code under test is this
checkout's. A node can be started, SIGKILLed, SIGTERMed and started again on the same ports and
data directory. A node counts as up when its broker port answers ApiVersions.

What the cluster says about itself is asked through kafka_wire's own client
(:class:`kafka_wire.adapters.asyncio.KafkaClient`): Metadata, DescribeTopicPartitions and
DescribeQuorum, sent to one chosen node, plus CreateTopics, Produce and Fetch with their error
codes as the node answered them. The comparison of the replicas' logs reads each node's data
directory with :mod:`kafka_wire.spark.logs` after the nodes stopped.

An Apache Kafka node (the jars of ``make peers``, ``tests/e2e/apache_kafka.py``) gets the same
properties, its data directory formatted by Kafka's storage tool before its first start, and runs
``kafka.Kafka`` with the JVM options of Kafka's start scripts.

Each node's stdout and stderr go to files in the cluster's work directory; :meth:`LocalCluster.
log_tails` gives the end of each (the fixture prints them when a test fails).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Literal, TypeVar

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.adapters.ports import free_ports
from kafka_wire.logformat.checkpoints import REPLICATION_OFFSET_CHECKPOINT, parse_partition_checkpoint
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsRequestTopicRequest,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    MetadataRequest,
    MetadataRequestTopic,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafka_wire.records import RecordsReader, build_batch
from kafka_wire.records.batch import RecordBatch
from kafka_wire.spark.logs import discover, iter_segment
from tests.e2e.apache_kafka import LOG4J2, format_storage, random_cluster_id, server_command

T = TypeVar("T")
#: What a node runs: ``kafka-wire serve`` or Apache Kafka 4.4.
Implementation = Literal["kafka_wire", "apache_kafka"]

ROOT: Final = Path(__file__).resolve().parents[2]
HOST: Final = "127.0.0.1"
#: The raft log of the controllers: replicated by the quorum, not by the ISR rules compared here.
METADATA_TOPIC: Final = "__cluster_metadata"
#: How long a node may take from its start until its broker port answers ApiVersions.
START_TIMEOUT_S: Final = 30.0
#: The same for an Apache Kafka node (a JVM start, 5-10 s on two cores; longer beside others).
KAFKA_START_TIMEOUT_S: Final = 90.0
#: How long a SIGTERMed node may take to exit before it is SIGKILLed.
STOP_TIMEOUT_S: Final = 15.0
#: One request to one node.
REQUEST_TIMEOUT_MS: Final = 5_000
#: Lines of each node's output shown when a test fails.
TAIL_LINES: Final = 40
#: Settings that make the tests' failovers quick (Kafka's defaults: 9000, 2000, 30000 ms).
FAST_FAILOVER: Final[Mapping[str, str]] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "5000",
}
#: kafka-wire's own settings for its nodes here: the last node of a cluster stopped whole has no
#: quorum left to answer its controlled shutdown, and stops after this wait (Kafka's broker waits
#: too; kafka-wire's default is 30 s, beyond ``STOP_TIMEOUT_S``).
KAFKA_WIRE_ONLY: Final[Mapping[str, str]] = {"kafka.wire.controlled.shutdown.timeout.ms": "5000"}

METADATA_VERSION: Final = 12
#: CreateTopics errors that a retry may cure (no active controller known yet, a forwarded request
#: that timed out, and too few unfenced brokers for the replication factor: a broker whose session
#: ran out while the controllers failed over is fenced until its next heartbeat reaches the new
#: active controller, and Kafka's controller answers INVALID_REPLICATION_FACTOR meanwhile too).
CREATE_RETRIABLE: Final = frozenset(
    {ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.INVALID_REPLICATION_FACTOR}
)
PRODUCE_VERSION: Final = 9
FETCH_VERSION: Final = 12


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one client coroutine to completion on a fresh event loop (the tests are synchronous)."""
    return asyncio.run(coroutine)


def wait_until(what: str, check: Callable[[], T | None], timeout_s: float, interval_s: float = 0.2) -> T:
    """Call ``check`` until it returns something other than None (errors count as None, the last
    one is reported); AssertionError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while True:
        try:
            found = check()
        except (OSError, TimeoutError, ConnectionError, RuntimeError) as e:
            found, last_error = None, e
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout_s} s waiting for {what} (last error: {last_error!r})"
            )
        time.sleep(interval_s)  # bounded polling of other processes


@dataclass(frozen=True)
class PartitionView:
    """One partition as a node's Metadata or DescribeTopicPartitions answer shows it."""

    error_code: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()


@dataclass
class Node:
    """One ``kafka-wire serve`` process of the cluster (not necessarily running)."""

    node_id: int
    port: int
    controller_port: int
    workdir: Path
    #: ``process.roles``: both (combined), or one of them.
    broker: bool = True
    controller: bool = True
    properties: dict[str, str] = field(default_factory=dict)
    implementation: Implementation = "kafka_wire"
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    _files: list[IO[bytes]] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def config_path(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def stdout_path(self) -> Path:
        return self.workdir / "stdout.log"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / "stderr.log"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        if self.implementation == "apache_kafka":
            return server_command(self.config_path, self.workdir / "log4j2.properties")
        command = [sys.executable, "-m", "kafka_wire.cli", "serve", "--config", str(self.config_path)]
        level = os.environ.get("KW_CLUSTER_LOG_LEVEL")
        return [*command, "--log-level", level] if level else command

    def write_config(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        lines = [f"{key}={value}" for key, value in self.properties.items()]
        self.config_path.write_text("\n".join(lines) + "\n")

    def spawn(self) -> None:
        """Start the process (not waiting for it to be up)."""
        assert not self.running(), f"node {self.node_id} is already running"
        self._close_files()
        self.write_config()
        if self.implementation == "apache_kafka":
            (self.workdir / "log4j2.properties").write_text(LOG4J2)
            if not (self.data_dir / "meta.properties").is_file():
                format_storage(self.config_path, self.properties["cluster.id"], [])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        out = self.stdout_path.open("ab")
        err = self.stderr_path.open("ab")
        self._files = [out, err]
        mark = f"--- start {self.starts + 1} at {time.strftime('%H:%M:%S')}\n".encode()
        out.write(mark)
        err.write(mark)
        out.flush()
        err.flush()
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=ROOT,
            env=env,
            start_new_session=True,  # its own process group, killed whole
        )
        self.starts += 1

    def wait_up(self, timeout_s: float | None = None) -> float:
        """Wait until the broker port (a controller-only node: the controller port) answers
        ApiVersions; return the seconds that took."""
        if timeout_s is None:
            timeout_s = KAFKA_START_TIMEOUT_S if self.implementation == "apache_kafka" else START_TIMEOUT_S
        start = time.monotonic()
        port = self.port if self.broker else self.controller_port

        def answers() -> bool | None:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(
                    f"node {self.node_id} exited with status {self.process.returncode}:\n{self.tail()}"
                )
            return True if run(api_versions(HOST, port)) else None

        wait_until(f"node {self.node_id} to answer ApiVersions on {HOST}:{port}", answers, timeout_s, 0.1)
        return time.monotonic() - start

    def kill(self) -> None:
        """SIGKILL the node's process group and reap it."""
        process = self.process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self._close_files()

    def signal_stop(self) -> None:
        """Send SIGTERM to the node's process group (not waiting)."""
        process = self.process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)

    def terminate(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM the node and wait for it to exit; its exit status (None: it had to be killed)."""
        self.signal_stop()
        return self.wait_stopped(timeout_s)

    def wait_stopped(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """Wait for the node, already sent SIGTERM, to exit (a second SIGTERM would make it leave at
        once, skipping its shutdown); its exit status (None: it had to be killed)."""
        process = self.process
        status: int | None = None
        if process is not None:
            try:
                status = process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._close_files()
        return status

    def _close_files(self) -> None:
        for f in self._files:
            f.close()
        self._files = []

    def tail(self, lines: int = TAIL_LINES) -> str:
        parts = []
        for path in (self.stderr_path, self.stdout_path):
            text = path.read_text(errors="replace") if path.exists() else ""
            parts.append(f"--- node {self.node_id} {path.name} (last {lines} lines)\n")
            parts.append("\n".join(text.splitlines()[-lines:]))
        return "\n".join(parts)

    def replication_offsets(self) -> dict[tuple[str, int], int]:
        """The high watermarks of this node's ``replication-offset-checkpoint``."""
        path = self.data_dir / REPLICATION_OFFSET_CHECKPOINT
        return parse_partition_checkpoint(path.read_text()) if path.exists() else {}


#: Listener ports are drawn below the kernel's ephemeral range: the nodes' own outbound
#: connections take ephemeral ports, and one of them could take a port chosen for a node that has
#: not started listening yet ("Address already in use").
def listener_ports(count: int, host: str = HOST) -> int:
    """The first of ``count`` consecutive ports outside the ephemeral range, free now and
    reserved against every other test process for the rest of this one."""
    return free_ports(count, host)


def listener_port(host: str = HOST) -> int:
    """A port outside the ephemeral range, free now and reserved (see ``listener_ports``)."""
    return listener_ports(1, host)


class LocalCluster:
    """``size`` combined nodes (ids 1..size) of one cluster, in ``workdir``; with
    ``controllers``, separate roles instead: that many controller-only nodes (ids 1..controllers)
    and ``size`` broker-only nodes after them. Every node runs ``implementation``."""

    def __init__(
        self,
        workdir: Path,
        size: int = 3,
        overrides: Mapping[str, str] | None = None,
        controllers: int = 0,
        implementation: Implementation = "kafka_wire",
    ) -> None:
        self.workdir = workdir
        self.cluster_id = random_cluster_id()
        self.nodes: dict[int, Node] = {}
        for node_id in range(1, size + controllers + 1):
            broker, controller = (
                (node_id > controllers, node_id <= controllers) if controllers else (True, True)
            )
            self.nodes[node_id] = Node(
                node_id,
                listener_port(),
                listener_port(),
                workdir / f"node-{node_id}",
                broker,
                controller,
                implementation=implementation,
            )
        voters = ",".join(
            f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes.values() if n.controller
        )
        for node in self.nodes.values():
            roles = [role for role, has in (("broker", node.broker), ("controller", node.controller)) if has]
            listeners = [f"PLAINTEXT://{HOST}:{node.port}"] if node.broker else []
            listeners += [f"CONTROLLER://{HOST}:{node.controller_port}"] if node.controller else []
            node.properties = {
                "node.id": str(node.node_id),
                "process.roles": ",".join(roles),
                "listeners": ",".join(listeners),
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": voters,
                "cluster.id": self.cluster_id,
                "log.dirs": str(node.data_dir),
                "default.replication.factor": str(min(3, size)),
                "min.insync.replicas": str(min(2, size)),
                "offsets.topic.replication.factor": str(min(3, size)),
                "unclean.leader.election.enable": "false",
                **FAST_FAILOVER,
                **(KAFKA_WIRE_ONLY if implementation == "kafka_wire" else {}),
                **(overrides or {}),
            }
            if node.broker:
                node.properties["advertised.listeners"] = f"PLAINTEXT://{HOST}:{node.port}"
                node.properties["inter.broker.listener.name"] = "PLAINTEXT"

    # -- processes ----------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Every broker's address (clients find the live ones)."""
        return ",".join(n.bootstrap for n in self.nodes.values() if n.broker)

    def alive(self) -> list[Node]:
        """The running brokers."""
        return [n for n in self.nodes.values() if n.broker and n.running()]

    def start_all(self, timeout_s: float | None = None) -> None:
        """Start every node, wait until each answers, then until every broker is registered."""
        for node in self.nodes.values():
            node.spawn()
        for node in self.nodes.values():
            node.wait_up(timeout_s)
        self.wait_brokers({n.node_id for n in self.nodes.values() if n.broker}, timeout_s or START_TIMEOUT_S)

    def start(self, node_id: int, timeout_s: float | None = None) -> float:
        """Start a stopped node again (same ports and data) and wait until it answers."""
        node = self.nodes[node_id]
        node.spawn()
        return node.wait_up(timeout_s)

    def start_many(self, node_ids: Iterable[int], timeout_s: float | None = None) -> None:
        """Start several stopped nodes at once, then wait until each answers (a node may only
        answer once the others are back, when together they make the controller quorum)."""
        nodes = [self.nodes[i] for i in node_ids]
        for node in nodes:
            node.spawn()
        for node in nodes:
            node.wait_up(timeout_s)

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def terminate(self, node_id: int) -> int | None:
        return self.nodes[node_id].terminate()

    def stop_all(self) -> dict[int, int | None]:
        """SIGTERM every running node at once (one by one, the last ones would shut down without
        a controller quorum), then wait for each; their exit statuses (None: killed after
        ``STOP_TIMEOUT_S``)."""
        running = [n for n in self.nodes.values() if n.running()]
        for node in running:
            node.signal_stop()
        return {n.node_id: n.wait_stopped() for n in running}

    def close(self) -> None:
        """Teardown: SIGKILL whatever still runs."""
        for node in self.nodes.values():
            node.kill()

    def log_tails(self) -> str:
        return "\n".join(node.tail() for node in self.nodes.values())

    # -- what the cluster says ----------------------------------------------------------------

    def any_alive(self, exclude: Iterable[int] = ()) -> Node:
        skip = set(exclude)
        for node in self.alive():
            if node.node_id not in skip:
                return node
        raise AssertionError("no node is running")

    def metadata(self, topic: str, via: Node | None = None) -> dict[int, PartitionView]:
        """``topic``'s partitions as ``via`` (default: any live node) answers Metadata; {} when
        the topic is unknown there."""
        node = via or self.any_alive()
        return run(metadata(HOST, node.port, topic))

    def brokers(self, via: Node | None = None) -> set[int]:
        node = via or self.any_alive()
        return run(metadata_brokers(HOST, node.port))

    def wait_brokers(self, expected: set[int], timeout_s: float = START_TIMEOUT_S) -> None:
        """Until the live nodes' Metadata lists exactly the ``expected`` brokers."""

        def listed() -> bool | None:
            return True if all(self.brokers(n) == expected for n in self.alive()) else None

        wait_until(f"brokers {sorted(expected)} in every node's Metadata", listed, timeout_s)

    def leader(self, topic: str, partition: int, exclude: Iterable[int] = ()) -> int:
        """The partition's leader as a live node (not in ``exclude``) reports it; -1 for none."""
        view = self.metadata(topic, self.any_alive(exclude)).get(partition)
        return -1 if view is None else view.leader

    def wait_leader(
        self, topic: str, partition: int, allowed: Iterable[int] | None = None, timeout_s: float = 30.0
    ) -> int:
        """Until every live node reports the same live leader for the partition (one of
        ``allowed`` when given); that leader's id. A timeout's message shows what each node said."""
        ok = set(allowed) if allowed is not None else None
        seen: dict[int, PartitionView | None] = {}

        def agreed() -> int | None:
            live = {n.node_id for n in self.alive()}
            seen.clear()
            for n in self.alive():
                seen[n.node_id] = self.metadata(topic, n).get(partition)
            leaders = {v.leader if v is not None else -1 for v in seen.values()}
            if len(leaders) != 1:
                return None
            leader = leaders.pop()
            if leader not in live or (ok is not None and leader not in ok):
                return None
            return leader

        try:
            return wait_until(f"a live leader of {topic}-{partition}", agreed, timeout_s)
        except AssertionError as e:
            raise AssertionError(f"{e}; the live nodes said {seen}") from None

    def wait_isr(
        self, topic: str, expected: Callable[[PartitionView], bool], what: str, timeout_s: float = 60.0
    ) -> dict[int, PartitionView]:
        """Until every partition of ``topic`` (as a live node reports it) satisfies ``expected``;
        a timeout's message shows the last answer."""
        seen: dict[int, PartitionView] = {}

        def holds() -> dict[int, PartitionView] | None:
            views = self.metadata(topic)
            seen.clear()
            seen.update(views)
            return views if views and all(expected(v) for v in views.values()) else None

        try:
            return wait_until(f"{topic}: {what}", holds, timeout_s)
        except AssertionError as e:
            raise AssertionError(f"{e}; last seen {seen}") from None

    def wait_full_isr(self, topic: str, timeout_s: float = 60.0) -> dict[int, PartitionView]:
        """Until every partition of ``topic`` has all its replicas in its ISR."""
        return self.wait_isr(
            topic,
            lambda v: v.leader >= 0 and set(v.isr) == set(v.replicas),
            "every replica in the ISR",
            timeout_s,
        )

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int = 3,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """CreateTopics through a live node, then wait until every live node knows the topic with a
        leader for each partition."""
        tries: list[int] = []

        def created() -> bool | None:
            node = self.any_alive()
            error = run(create_topic(HOST, node.port, topic, partitions, replication_factor, configs or {}))
            tries.append(error)
            if error == ErrorCode.NONE or (error == ErrorCode.TOPIC_ALREADY_EXISTS and len(tries) > 1):
                return True  # (already there after a retry: the earlier try's answer was lost)
            assert error in CREATE_RETRIABLE, f"CreateTopics {topic}: errors {tries}"
            return None

        try:
            wait_until(f"CreateTopics {topic} to succeed", created, 30.0, 0.5)
        except AssertionError as e:
            raise AssertionError(f"{e}; its answers: {tries}") from None

        def known() -> bool | None:
            for n in self.alive():
                views = self.metadata(topic, n)
                if len(views) != partitions or any(v.leader < 0 for v in views.values()):
                    return None
            return True

        wait_until(f"topic {topic} with leaders on every node", known, 30.0)

    def quorum_leader(self) -> int:
        """The active controller (the raft leader): the live node whose DescribeQuorum answer is
        not NOT_LEADER_OR_FOLLOWER (only the leader answers it, as in Kafka); -1 when none does."""
        for node in [n for n in self.nodes.values() if n.controller and n.running()]:
            try:
                leader = run(describe_quorum_leader(HOST, node.controller_port))
            except (OSError, TimeoutError, ConnectionError):
                continue
            if leader is not None:
                return leader
        return -1

    def produce_to(
        self, node_id: int, topic: str, partition: int, values: list[bytes], acks: int = -1
    ) -> tuple[int, int]:
        """One Produce to node ``node_id``: ``(error code, base offset)``."""
        return run(produce(HOST, self.nodes[node_id].port, topic, partition, values, acks))

    def fetch_from(
        self, node_id: int, topic: str, partition: int, offset: int = 0
    ) -> tuple[int, int, list[bytes]]:
        """One Fetch from node ``node_id``: ``(error code, high watermark, record values)``."""
        return run(fetch(HOST, self.nodes[node_id].port, topic, partition, offset))

    def describe_partitions(self, topic: str, via: Node | None = None) -> dict[int, PartitionView]:
        """``topic``'s partitions as a node's DescribeTopicPartitions answer shows them."""
        node = via or self.any_alive()
        return run(describe_topic_partitions(HOST, node.port, topic))

    # -- the logs at rest ---------------------------------------------------------------------

    def replica_batches(self, node_id: int) -> dict[tuple[str, int], tuple[int, list[tuple[int, bytes]]]]:
        """Per partition of one node's data directory (the metadata log aside) that its
        ``replication-offset-checkpoint`` names: that high watermark, and the last offset and
        bytes of every stored batch, in log order (read after the node stopped)."""
        node = self.nodes[node_id]
        hws = node.replication_offsets()
        out: dict[tuple[str, int], tuple[int, list[tuple[int, bytes]]]] = {}
        for tp, log in discover([node.data_dir]).items():
            key = (tp.topic, tp.partition)
            if tp.topic == METADATA_TOPIC or key not in hws:
                continue
            batches: list[tuple[int, bytes]] = []
            for segment in log.segments:
                with open(segment.log_path, "rb") as f:
                    data = f.read()
                for position, batch in iter_segment(segment.log_path):
                    batches.append((batch.last_offset, data[position : position + batch.batch_length + 12]))
            out[key] = (hws[key], batches)
        return out


def assert_replicas_identical(
    cluster: LocalCluster, last_acked: Mapping[tuple[str, int], int], context: str = ""
) -> set[tuple[str, int]]:
    """After the nodes stopped: for every partition in every node's
    ``replication-offset-checkpoint``, the stored batches that end below the lowest of the nodes'
    high watermarks are the same on every node, byte for byte and in the same order, and that
    high watermark is past ``last_acked`` (the last acknowledged offset of a partition). Returns
    the partitions compared; AssertionError naming the first difference."""
    stored = {node_id: cluster.replica_batches(node_id) for node_id in cluster.nodes}
    for node_id, partitions in stored.items():
        for key in last_acked:
            assert key in partitions, (
                f"node {node_id}: no {key} in its replication-offset-checkpoint. {context}"
            )
    keys = set.intersection(*(set(partitions) for partitions in stored.values()))
    for key in sorted(keys):
        hws = {node_id: stored[node_id][key][0] for node_id in stored}
        common = min(hws.values())
        acked = last_acked.get(key, -1)
        assert common > acked, (
            f"{key}: high watermarks {hws}, the last acknowledged offset {acked}. {context}"
        )
        below = {
            node_id: [raw for last, raw in stored[node_id][key][1] if last < common] for node_id in stored
        }
        reference_id = min(below)
        reference = below[reference_id]
        for node_id, batches in below.items():
            for i, (mine, theirs) in enumerate(zip(batches, reference, strict=False)):
                assert mine == theirs, (
                    f"{key}: batch {i} below the high watermark {common} differs between nodes "
                    f"{node_id} and {reference_id}. {context}"
                )
            assert len(batches) == len(reference), (
                f"{key}: node {node_id} has {len(batches)} batches below {common}, node {reference_id} "
                f"{len(reference)}. {context}"
            )
    return keys


# -- requests to one node, through kafka_wire's own client ----------------------------------------


async def _connect(host: str, port: int) -> KafkaClient:
    return await KafkaClient.connect(host, port, timeout_ms=REQUEST_TIMEOUT_MS)


async def api_versions(host: str, port: int) -> bool:
    """Whether the node at ``host:port`` completes the ApiVersions exchange."""
    try:
        client = await _connect(host, port)
    except (OSError, TimeoutError, ConnectionError):
        return False
    await client.close()
    return True


async def metadata(host: str, port: int, topic: str) -> dict[int, PartitionView]:
    client = await _connect(host, port)
    try:
        request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
        response = await client.request(request, METADATA_VERSION, timeout_ms=REQUEST_TIMEOUT_MS)
    finally:
        await client.close()
    out = {}
    for t in response.topics:
        if t.name != topic or t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            continue
        for p in t.partitions:
            out[p.partition_index] = PartitionView(
                p.error_code,
                p.leader_id,
                p.leader_epoch,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                tuple(p.offline_replicas),
            )
    return out


async def metadata_brokers(host: str, port: int) -> set[int]:
    client = await _connect(host, port)
    try:
        response = await client.request(
            MetadataRequest(topics=[]), METADATA_VERSION, timeout_ms=REQUEST_TIMEOUT_MS
        )
    finally:
        await client.close()
    return {b.node_id for b in response.brokers}


async def describe_topic_partitions(host: str, port: int, topic: str) -> dict[int, PartitionView]:
    client = await _connect(host, port)
    try:
        request = DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequestTopicRequest(name=topic)], response_partition_limit=2000
        )
        response = await client.request(request, 0, timeout_ms=REQUEST_TIMEOUT_MS)
    finally:
        await client.close()
    out = {}
    for t in response.topics:
        assert t.error_code == ErrorCode.NONE, f"DescribeTopicPartitions {topic}: error {t.error_code}"
        for p in t.partitions:
            out[p.partition_index] = PartitionView(
                p.error_code,
                p.leader_id,
                p.leader_epoch,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                tuple(p.offline_replicas),
            )
    return out


async def describe_quorum_leader(host: str, controller_port: int) -> int | None:
    """The raft leader's id from DescribeQuorum on a controller listener; None when this
    controller is not the leader (NOT_LEADER_OR_FOLLOWER)."""
    client = await _connect(host, controller_port)
    try:
        request = DescribeQuorumRequest(
            topics=[
                DescribeQuorumRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[DescribeQuorumRequestPartitionData(partition_index=0)],
                )
            ]
        )
        response = await client.request(request, timeout_ms=REQUEST_TIMEOUT_MS)
    finally:
        await client.close()
    if response.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return None
    assert response.error_code == ErrorCode.NONE, f"DescribeQuorum: error {response.error_code}"
    partition = response.topics[0].partitions[0]
    if partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return None
    assert partition.error_code == ErrorCode.NONE, f"DescribeQuorum: error {partition.error_code}"
    return partition.leader_id


async def create_topic(
    host: str, port: int, topic: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
) -> int:
    client = await _connect(host, port)
    try:
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name=topic,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    configs=[
                        CreateTopicsRequestCreatableTopicConfig(name=k, value=v) for k, v in configs.items()
                    ],
                )
            ],
            timeout_ms=20_000,
        )
        response = await client.request(request, timeout_ms=30_000)
    finally:
        await client.close()
    return response.topics[0].error_code


async def produce(
    host: str, port: int, topic: str, partition: int, values: list[bytes], acks: int = -1
) -> tuple[int, int]:
    """One Produce of ``values`` (one batch) to the node at ``port``: ``(error code, base offset)``."""
    client = await _connect(host, port)
    try:
        batch = build_batch([(None, v) for v in values], default_timestamp=int(time.time() * 1000))
        request = ProduceRequest(
            acks=acks,
            timeout_ms=REQUEST_TIMEOUT_MS,
            topic_data=[
                ProduceRequestTopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)],
                )
            ],
        )
        response = await client.request(request, PRODUCE_VERSION, timeout_ms=REQUEST_TIMEOUT_MS * 2)
    finally:
        await client.close()
    result = response.responses[0].partition_responses[0]
    return result.error_code, result.base_offset


async def fetch(
    host: str, port: int, topic: str, partition: int, offset: int = 0
) -> tuple[int, int, list[bytes]]:
    """One Fetch from the node at ``port``: ``(error code, high watermark, record values)``."""
    client = await _connect(host, port)
    try:
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=100,
            min_bytes=1,
            max_bytes=8 << 20,
            topics=[
                FetchRequestTopic(
                    topic=topic,
                    partitions=[
                        FetchRequestPartition(
                            partition=partition, fetch_offset=offset, partition_max_bytes=8 << 20
                        )
                    ],
                )
            ],
        )
        response = await client.request(request, FETCH_VERSION, timeout_ms=REQUEST_TIMEOUT_MS)
    finally:
        await client.close()
    data = response.responses[0].partitions[0]
    values: list[bytes] = []
    if data.records:
        for batch in RecordsReader(bytes(data.records)):
            if isinstance(batch, RecordBatch) and batch.is_control:
                continue
            values.extend(
                bytes(r.value) for r in batch.records() if r.value is not None and r.offset >= offset
            )
    return data.error_code, data.high_watermark, values
