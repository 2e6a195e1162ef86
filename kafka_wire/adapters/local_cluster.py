"""Brokers in this process for tests, with fault injection: :class:`LocalCluster`.

One asyncio loop runs in a thread of its own; on it, one :class:`BrokerServer` per node listens
on free ports of 127.0.0.1 with its data in a directory of its own. One node is a single broker
(``kafka-wire serve``); more are a KRaft cluster of combined nodes (``process.roles=broker,
controller``, every node a voter), configured as ``tests/cluster/harness.py`` configures its
processes. Every method may be called from any thread: what touches an engine runs on the loop.

Fault methods take ``broker`` (a node id; None: every node): :meth:`push_errors`,
:meth:`add_latency`, :meth:`close_mid_response` and :meth:`clear` set the engine's
:class:`~kafka_wire.broker.faults.FaultInjector`; :meth:`down` / :meth:`up` stop and resume
serving clients (:meth:`BrokerServer.set_down`); :meth:`move_leader` moves a partition's
leadership through the controller.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import secrets
import threading
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.adapters.broker_server import BrokerServer
from kafka_wire.adapters.fault_control import FaultError, describe_partition, move_leader
from kafka_wire.adapters.ports import free_port
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    ErrorCode,
    MetadataRequest,
)

T = TypeVar("T")
HOST: Final = "127.0.0.1"
#: How long starting, stopping and each fault operation may take.
TIMEOUT_S: Final = 60.0
#: A cluster's nodes notice one another quickly (the harness's values).
FAST_FAILOVER: Final[Mapping[str, str]] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "5000",
}
_log = logging.getLogger("kafka_wire.adapters.local_cluster")


@dataclass(slots=True)
class LocalNode:
    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    properties: dict[str, str]
    server: BrokerServer | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"


class LocalCluster:
    """``size`` nodes (ids 1..size) in this process, data under ``workdir``; ``properties``
    (Kafka broker properties) are added to every node's."""

    def __init__(self, workdir: Path, size: int = 1, properties: Mapping[str, str] | None = None) -> None:
        if size < 1:
            raise ValueError("a cluster has at least one node")
        self.size = size
        self.cluster_id = _cluster_id()
        self.nodes: dict[int, LocalNode] = {}
        for node_id in range(1, size + 1):
            node = LocalNode(node_id, free_port(), free_port(), workdir / f"node-{node_id}", {})
            self.nodes[node_id] = node
        voters = ",".join(f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes.values())
        for node in self.nodes.values():
            props = {
                "node.id": str(node.node_id),
                "log.dirs": str(node.data_dir),
                "listeners": f"PLAINTEXT://{HOST}:{node.port}",
                "group.initial.rebalance.delay.ms": "0",
            }
            if size > 1:
                props |= {
                    "process.roles": "broker,controller",
                    "listeners": f"PLAINTEXT://{HOST}:{node.port},CONTROLLER://{HOST}:{node.controller_port}",
                    "advertised.listeners": f"PLAINTEXT://{HOST}:{node.port}",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "controller.listener.names": "CONTROLLER",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "controller.quorum.voters": voters,
                    "cluster.id": self.cluster_id,
                    "default.replication.factor": str(min(3, size)),
                    "min.insync.replicas": str(min(2, size)),
                    "offsets.topic.replication.factor": str(min(3, size)),
                    **FAST_FAILOVER,
                }
            node.properties = props | dict(properties or {})
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Every node's client address, comma-separated."""
        return ",".join(n.bootstrap for n in self.nodes.values())

    def start(self) -> None:
        """Start the loop's thread and every node; return once every broker is known to the
        cluster (a single node: once it answers)."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="kafka-wire-local-cluster", daemon=True)
        self._thread.start()
        try:
            self.run(self._start())
        except BaseException:
            self.stop()
            raise

    def stop(self, *, controlled: bool = False) -> None:
        """Stop every node at once (bounded in time), then the loop and its thread. Without
        ``controlled`` the nodes skip their controlled shutdowns: with the whole cluster going
        away there is nowhere to move leaderships, and the last nodes would have no quorum to
        answer."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self.run(self._stop(controlled))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(TIMEOUT_S)
            loop.close()
            self._loop = self._thread = None

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = TIMEOUT_S) -> T:
        """Run ``coroutine`` on the cluster's loop and return its result (from any other thread)."""
        if self._loop is None:
            coroutine.close()
            raise RuntimeError("the cluster is not running")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout_s)

    async def _start(self) -> None:
        await asyncio.gather(*(self._start_node(node) for node in self.nodes.values()))
        deadline = time.monotonic() + TIMEOUT_S
        node = self.nodes[1]
        while True:
            try:
                client = await KafkaClient.connect(HOST, node.port)
                try:
                    metadata = await client.request(MetadataRequest(topics=[]))
                finally:
                    await client.close()
                if {b.node_id for b in metadata.brokers} == set(self.nodes):
                    return
            except (OSError, TimeoutError) as exc:
                _log.debug("waiting for the cluster: %s", exc)
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cluster did not come up within {TIMEOUT_S} s")
            await asyncio.sleep(0.1)

    async def _start_node(self, node: LocalNode) -> None:
        loaded = load_server_properties(node.properties)
        config = loaded.config
        if config.cluster is None:
            server = BrokerServer(config, node.data_dir)
            node.server = server
            await server.start(HOST, node.port)
        else:
            from kafka_wire.broker.node import Node

            cluster_node = Node(
                config, rng=random.Random(secrets.randbits(128)), logger=logging.getLogger("kafka_wire.node")
            )
            server = BrokerServer(config, node.data_dir, cluster=cluster_node)
            node.server = server
            await server.start_listeners(config.cluster.listeners)
        if server.failure is not None:
            raise RuntimeError(f"node {node.node_id} cannot start: {server.failure}")

    async def _stop(self, controlled: bool) -> None:
        servers = [n.server for n in self.nodes.values() if n.server is not None]
        await asyncio.gather(*(s.stop(controlled=controlled) for s in servers), return_exceptions=True)
        for node in self.nodes.values():
            node.server = None

    # -- faults ---------------------------------------------------------------------------------

    def _servers(self, broker: int | None) -> list[BrokerServer]:
        nodes = self.nodes.values() if broker is None else [self.nodes[broker]]
        return [n.server for n in nodes if n.server is not None]

    async def _each(self, broker: int | None, action: str, *args: Any, **kwargs: Any) -> None:
        for server in self._servers(broker):
            getattr(server.broker.faults, action)(*args, **kwargs)

    def push_errors(
        self,
        api_key: int,
        codes: Sequence[int] | int,
        *,
        count: int = 1,
        forever: bool = False,
        broker: int | None = None,
    ) -> None:
        """The next requests of ``api_key`` on ``broker`` (None: on each node) are answered with
        ``codes`` (``FaultInjector.push_errors``)."""
        self.run(self._each(broker, "push_errors", api_key, codes, count=count, forever=forever))

    def add_latency(self, ms: int, api_key: int | None = None, *, broker: int | None = None) -> None:
        """Answers of ``api_key`` (None: every API) leave ``ms`` later (0 removes it)."""
        self.run(self._each(broker, "add_latency", ms, api_key))

    def close_mid_response(
        self, api_key: int, count: int = 1, *, forever: bool = False, broker: int | None = None
    ) -> None:
        """The next ``count`` answers of ``api_key`` are cut in half and their connection closed."""
        self.run(self._each(broker, "close_mid_response", api_key, count, forever=forever))

    def clear(self, api_key: int | None = None, *, broker: int | None = None) -> None:
        """Forget the faults (of ``api_key``; None: all, latency too)."""
        self.run(self._each(broker, "clear", api_key))

    def down(self, broker: int = 1) -> None:
        """Stop serving clients: their connections close, new ones are closed at once."""
        self.run(self._set_down(broker, True))

    def up(self, broker: int = 1) -> None:
        """Serve clients again."""
        self.run(self._set_down(broker, False))

    async def _set_down(self, broker: int, down: bool) -> None:
        for server in self._servers(broker):
            server.set_down(down)

    def leader(self, topic: str, partition: int = 0) -> int:
        """The partition's leader, as the first node that is up knows it."""
        node = self._any_up()
        return self.run(describe_partition(HOST, node.port, topic, partition)).leader

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        """Make ``broker`` the partition's leader (through the controller), and return once every
        node's metadata says so. A single node leads everything: :class:`FaultError`."""
        if self.size == 1:
            raise FaultError("a single node leads every partition: there is no other leader to move to")
        node = self._any_up()
        self.run(move_leader(HOST, node.port, topic, partition, broker))
        deadline = time.monotonic() + TIMEOUT_S
        while any(
            self.run(describe_partition(HOST, n.port, topic, partition)).leader != broker
            for n in self.nodes.values()
            if n.server is not None and not n.server.down
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}-{partition} did not move to broker {broker}")
            time.sleep(0.05)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None) -> None:
        """Create a topic (replication factor: up to 3, the cluster's size) and return once
        every node knows its leaders and every partition's ISR is full."""
        rf = replication_factor or min(3, self.size)
        self.run(self._create_topic(name, partitions, rf))

    async def _create_topic(self, name: str, partitions: int, rf: int) -> None:
        node = self._any_up()
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            client = await KafkaClient.connect(HOST, node.port)
            try:
                created = await client.request(
                    CreateTopicsRequest(
                        topics=[
                            CreateTopicsRequestCreatableTopic(
                                name=name, num_partitions=partitions, replication_factor=rf
                            )
                        ],
                        timeout_ms=30_000,
                    )
                )
            finally:
                await client.close()
            code = created.topics[0].error_code
            if code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                break
            if time.monotonic() > deadline:
                raise FaultError(f"cannot create {name}: {ErrorCode.lookup(code)}")
            await asyncio.sleep(0.1)
        for n in self.nodes.values():
            for partition in range(partitions):
                while True:
                    try:
                        view = await describe_partition(HOST, n.port, name, partition)
                        if view.leader >= 0 and len(view.isr) == len(view.replicas):
                            break
                    except FaultError:
                        pass
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{name}-{partition} has no leader on node {n.node_id}")
                    await asyncio.sleep(0.05)

    def _any_up(self) -> LocalNode:
        for node in self.nodes.values():
            if node.server is not None and not node.server.down:
                return node
        raise FaultError("every node is down")


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


__all__ = ["FaultError", "LocalCluster", "LocalNode"]
