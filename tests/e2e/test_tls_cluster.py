"""A three-node ``kafka-wire serve`` cluster whose every listener speaks TLS: the controllers' quorum,
the brokers' registrations and heartbeats and the followers' fetches go over SSL listeners that
require client certificates (each node presents the broker certificate), and confluent-kafka
produces and consumes over mutual TLS a topic with three in-sync replicas.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from tests.e2e.apache_kafka import random_cluster_id
from tests.e2e.brokers import KafkaWireBroker, kafka_wire_cli
from tests.e2e.certs import Pki, make_pki
from tests.e2e.tls_brokers import client_context, pem_tls, security
from tests.interop.harness import Address, DriverOptions, free_port, run_driver

NODES = 3
#: Registration, elections and the first fetches of a cluster on a shared machine.
READY_TIMEOUT_S = 60.0
TOPIC = "tls-replicated"


@dataclass
class TlsNode(KafkaWireBroker):
    """One node: ``kafka-wire serve --config FILE`` (the properties hold its listeners)."""

    config: Path | None = None

    def command(self) -> list[str]:
        assert self.config is not None
        return [str(kafka_wire_cli()), "serve", "--config", str(self.config), "--log-level", "INFO"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[TlsNode], Pki]]:
    workdir = tmp_path_factory.mktemp("tls-cluster")
    pki = make_pki(workdir / "pki")
    ports = [(free_port(), free_port()) for _ in range(NODES)]
    cluster_id = random_cluster_id()
    voters = ",".join(f"{i}@127.0.0.1:{controller}" for i, (_, controller) in enumerate(ports))
    nodes = []
    for i, (broker_port, controller_port) in enumerate(ports):
        listeners = f"BROKER://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}"
        props = {
            "process.roles": "broker,controller",
            "node.id": str(i),
            "cluster.id": cluster_id,
            "controller.quorum.voters": voters,
            "listeners": listeners,
            "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "BROKER",
            "listener.security.protocol.map": "BROKER:SSL,CONTROLLER:SSL",
            "ssl.client.auth": "required",
            # Clients are User:<cn>; the nodes themselves (OU=brokers) keep their whole name.
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=clients,.*$/$1/L,DEFAULT",
            **pem_tls(pki),
            "log.dirs": str(workdir / f"node-{i}"),
            "default.replication.factor": "3",
            "offsets.topic.replication.factor": "3",
        }
        config = workdir / f"node-{i}.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        nodes.append(
            TlsNode(
                f"node-{i}",
                Address("127.0.0.1", broker_port),
                workdir / f"node-{i}",
                workdir / f"node-{i}.log",
                persistent=True,
                config=config,
            )
        )
    try:
        for node in nodes:
            node.start()
        yield nodes, pki
    finally:
        for node in nodes:
            node.close()


async def _request_metadata(address: Address, pki: Pki, topics: list[str] | None) -> MetadataResponse:
    client = await KafkaClient.connect(
        address.host, address.port, ssl=client_context(pki, "alice"), timeout_ms=10_000
    )
    try:
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
        )
        return await client.request(request)
    finally:
        await client.close()


def _wait_for(what: str, check: Callable[[], bool], nodes: list[TlsNode]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            if check():
                return
        except (TimeoutError, OSError):
            pass
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {n.name}\n{n.log()[-3000:]}" for n in nodes)
            raise AssertionError(f"{what} within {READY_TIMEOUT_S} s\n{tails}")
        time.sleep(0.2)


def test_a_cluster_over_tls_replicates_and_serves(cluster: tuple[list[TlsNode], Pki]) -> None:
    nodes, pki = cluster
    first = nodes[0].address

    def registered() -> bool:
        response = asyncio.run(_request_metadata(first, pki, []))
        return sorted(b.port for b in response.brokers) == sorted(n.address.port for n in nodes)

    _wait_for("every broker registered over TLS", registered, nodes)

    async def create() -> int:
        client = await KafkaClient.connect(first.host, first.port, ssl=client_context(pki, "alice"))
        try:
            response = await client.request(
                CreateTopicsRequest(
                    topics=[
                        CreateTopicsRequestCreatableTopic(name=TOPIC, num_partitions=1, replication_factor=3)
                    ],
                    timeout_ms=30_000,
                )
            )
        finally:
            await client.close()
        return response.topics[0].error_code

    assert asyncio.run(create()) == 0

    def in_sync() -> bool:
        response = asyncio.run(_request_metadata(first, pki, [TOPIC]))
        partitions = response.topics[0].partitions
        return len(partitions) == 1 and len(partitions[0].isr_nodes) == 3

    _wait_for("three in-sync replicas of a new topic", in_sync, nodes)
    options = DriverOptions(security=security(pki, "SSL", "alice"))
    bootstrap = ",".join(n.address.bootstrap for n in nodes)
    run = run_driver(
        "confluent", bootstrap, "produce,consume", topic=TOPIC, timeout_s=40.0, options=options
    ).check()
    assert len(run.event("consumed")["values"]) == 3
    # The followers fetched the records over TLS: every replica stays in sync.
    _wait_for("the replicas in sync after the produce", in_sync, nodes)
