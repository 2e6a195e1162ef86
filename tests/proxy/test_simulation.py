"""The proxy in the simulator: simulated clients reach a seeded 3-node cluster only through a
:class:`~kafka_wire.sim.proxy_host.ProxyHost`, on virtual time, and every acknowledged write is
read back."""

from __future__ import annotations

import random

from kafka_wire.proxy import Proxy, ProxyConfig
from kafka_wire.proxy.addresses import counting_ports
from kafka_wire.sim.clients.admin import AdminClient, TopicSpec
from kafka_wire.sim.clients.consumer import AssignConsumer
from kafka_wire.sim.clients.producer import Producer
from kafka_wire.sim.history import OpKind, OpType
from kafka_wire.sim.proxy_host import ProxyHost
from kafka_wire.sim.world import World
from tests.sim.test_world import formed_world

PROXY = [("proxy", 9192)]


def run(seed: int) -> tuple[World, ProxyHost]:
    world = formed_world(seed)
    proxy = Proxy(
        [("node1", 9092, 9192)], config=ProxyConfig(advertised_host="proxy"), allocate=counting_ports(9193)
    )
    host = ProxyHost("proxy", proxy, world.network, world.scheduler)
    rng = random.Random(seed)
    world.add_client(
        AdminClient("admin", world.history, random.Random(rng.getrandbits(64)), PROXY, [TopicSpec("t", 3, 3)])
    )
    world.add_client(
        Producer(
            "producer",
            world.history,
            random.Random(rng.getrandbits(64)),
            PROXY,
            ["t"],
            acks=-1,
            interval_ms=20,
        )
    )
    world.add_client(
        AssignConsumer("consumer", world.history, random.Random(rng.getrandbits(64)), PROXY, ["t"])
    )
    world.run_for(3000)
    return world, host


def test_clients_reach_the_cluster_through_the_proxy_and_read_every_acknowledged_write() -> None:
    world, host = run(7)
    acked = {op.value for op in world.history.ops if op.kind is OpKind.SEND and op.type is OpType.OK}
    polled = {value for op in world.history.ops if op.kind is OpKind.POLL for _, value in op.records}
    assert len(acked) >= 10, host.log
    assert acked <= polled
    # Every node got a proxy port as its address appeared in metadata; clients dialled only the proxy.
    routes = host.proxy.book.routes
    assert sorted(r.upstream_host for r in routes) == ["node1", "node2", "node3"]
    assert sorted(r.port for r in routes) == [9192, 9193, 9194]
    assert all(
        c.locs[1] == "proxy"
        for c in world.network.conns.values()
        if c.locs[0] in ("admin", "producer", "consumer")
    )
    assert host.pairs_opened >= 3
