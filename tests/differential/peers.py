"""The two brokers of the differential suite: Apache Kafka 4.4 and ``kafka-wire serve``.

Both are one KRaft combined node (``process.roles=broker,controller``, ``node.id=1``, a PLAINTEXT
and a CONTROLLER listener on 127.0.0.1) with the same broker properties (those of Kafka's example
``server.properties`` that are not addresses, and :data:`COMMON`), so that
everything a client can see of the two nodes but the ids chosen at random (cluster, topics,
directories) and the ports can be compared as it is.

:func:`kafka_wire_node` is the one place that chooses the form of kafka-wire under test: today a
one-voter cluster node configured with a properties file, because that is the metadata path (the
controller's validation, its records, its image) that stays when the single node's separate path
goes (issue 27); when ``kafka-wire serve`` alone is that node, the function can start it bare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Final

from tests.e2e.apache_kafka import EXAMPLE_PROPERTIES, KafkaNode, apache_kafka, random_cluster_id
from tests.e2e.brokers import KafkaWireBroker, kafka_wire_cli
from tests.interop.harness import Address, free_port

HOST: Final = "127.0.0.1"
NODE_ID: Final = 1
#: Broker properties both nodes get. Kafka's own example sets the initial rebalance delay to 0 (a
#: group's first join waits 3 s otherwise); the replication factors of one node; one partition of
#: the offsets topic (both load it at once, not 50 one by one).
COMMON: Final[Mapping[str, str]] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "num.partitions": "1",
}


@dataclass
class KafkaWireNode(KafkaWireBroker):
    """``kafka-wire serve --config server.properties`` as a one-voter KRaft combined node."""

    controller_port: int = 0
    cluster_id: str = ""
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def properties_path(self) -> Path:
        return self.log_path.parent / "server.properties"

    def properties(self) -> dict[str, str]:
        host, port = self.address
        listeners = f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{self.controller_port}"
        return {
            **EXAMPLE_PROPERTIES,
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@{host}:{self.controller_port}",
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "cluster.id": self.cluster_id,
            "log.dirs": str(self.data_dir),
            **self.overrides,
        }

    def command(self) -> list[str]:
        self.properties_path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{key}={value}\n" for key, value in self.properties().items())
        self.properties_path.write_text(text)
        return [str(kafka_wire_cli()), "serve", "--config", str(self.properties_path)]


def kafka_wire_node(workdir: Path, overrides: Mapping[str, str] = COMMON) -> KafkaWireBroker:
    """kafka-wire as the suite judges it (not started), its data and log in ``workdir``."""
    return KafkaWireNode(
        "kafka_wire",
        Address(HOST, free_port(HOST)),
        workdir / "data",
        workdir / "kafka-wire.log",
        persistent=True,
        controller_port=free_port(HOST),
        cluster_id=random_cluster_id(),
        overrides=dict(overrides),
    )


#: The JVM compiles with its quick compiler only: a node starts in about half the time (16-21 s
#: against 34-37 s on two busy cores), and the answers are the same.
QUICK_JIT: Final = "-XX:TieredStopAtLevel=1"


@dataclass
class QuickKafkaNode(KafkaNode):
    """A Kafka node started with :data:`QUICK_JIT`."""

    def command(self) -> list[str]:
        java, *rest = super().command()
        return [java, QUICK_JIT, *rest]


def kafka_node(workdir: Path, overrides: Mapping[str, str] = COMMON) -> KafkaNode:
    """Apache Kafka 4.4 (not started), its data and log in ``workdir``."""
    node = apache_kafka(workdir, HOST, dict(overrides))
    return QuickKafkaNode(**{f.name: getattr(node, f.name) for f in fields(node)})
