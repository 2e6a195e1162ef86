"""The simulator's workloads: which clients run, on which topics, at what rates (the default one
and the transactional one)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.sim.clients.admin import AdminClient, TopicSpec
from kafka_wire.sim.clients.consumer import AssignConsumer
from kafka_wire.sim.clients.consumer_member import ConsumerProtocolMember
from kafka_wire.sim.clients.ctp_worker import CtpWorker
from kafka_wire.sim.clients.group import GroupMember
from kafka_wire.sim.clients.producer import Producer
from kafka_wire.sim.clients.share_consumer import ShareConsumer
from kafka_wire.sim.clients.txn_producer import TxnProducer

if TYPE_CHECKING:
    from kafka_wire.sim.contracts import SimClient, WorldView
    from kafka_wire.sim.history import History


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    #: Nodes ``node1..node<n>``, each listening on port 9092 for clients.
    nodes: int = 3
    #: ``(name, partitions)`` of each topic the admin creates.
    topics: tuple[tuple[str, int], ...] = (("t1", 3), ("t2", 3), ("t3", 3))
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False
    #: Mean time between two records of one producer.
    producer_interval_ms: int = 150
    #: The share of the acks=1 producer's batches sent with acks=0.
    acks0_share: float = 0.1
    group: str = "group-1"
    #: The KIP-848 consumer group (``group.protocol=consumer``) of the two other members.
    consumer_group: str = "group-848"
    #: Each group member's process restarts (a new member id) after a pause in this range (None:
    #: never), so the group rebalances and members fetch committed offsets again and again.
    member_restart_ms: tuple[int, int] | None = (4000, 12000)
    #: The group the consume-transform-produce workers of the transactional workload commit to.
    ctp_group: str = "ctp"

    def __post_init__(self) -> None:
        if self.nodes < 1 or not self.topics or self.replication_factor < 1:
            raise ValueError("a workload needs nodes, topics and a replication factor")
        if self.producer_interval_ms < 2:
            raise ValueError("producer_interval_ms must be at least 2")

    def bootstrap(self) -> list[tuple[str, int]]:
        return [(f"node{n}", 9092) for n in range(1, self.nodes + 1)]

    def specs(self) -> list[TopicSpec]:
        configs = {
            "min.insync.replicas": str(min(self.min_insync_replicas, self.replication_factor)),
            "unclean.leader.election.enable": "true" if self.unclean_leader_election else "false",
        }
        return [
            TopicSpec(name, partitions, self.replication_factor, dict(configs))
            for name, partitions in self.topics
        ]


def default_clients(workload: Workload, history: History, rng: random.Random) -> list[SimClient]:
    """One admin, an idempotent acks=all producer, an acks=all one, an acks=1 one (some batches
    acks=0), a consumer by assignment over every topic, two members of one classic group over the
    first topic and two members of one KIP-848 consumer group over the first two topics. Each
    client draws from its own generator, seeded from ``rng`` in this order."""
    bootstrap = workload.bootstrap()
    names = [name for name, _ in workload.topics]
    interval = workload.producer_interval_ms

    def child() -> random.Random:
        return random.Random(rng.getrandbits(64))

    clients: list[SimClient] = [
        AdminClient("admin", history, child(), bootstrap, workload.specs()),
        Producer(
            "producer-idem",
            history,
            child(),
            bootstrap,
            names,
            acks=-1,
            idempotent=True,
            interval_ms=interval,
        ),
        Producer("producer-all", history, child(), bootstrap, names, acks=-1, interval_ms=interval),
        Producer(
            "producer-one",
            history,
            child(),
            bootstrap,
            names,
            acks=1,
            interval_ms=interval,
            acks0_share=workload.acks0_share,
        ),
        AssignConsumer("consumer", history, child(), bootstrap, names),
    ]
    clients += [
        GroupMember(
            f"member-{i}",
            history,
            child(),
            bootstrap,
            names[:1],
            workload.group,
            restart_every_ms=workload.member_restart_ms,
        )
        for i in (1, 2)
    ]
    clients += [
        ConsumerProtocolMember(
            f"cmember-{i}",
            history,
            child(),
            bootstrap,
            names[:2],
            workload.consumer_group,
            restart_every_ms=workload.member_restart_ms,
        )
        for i in (1, 2)
    ]
    return clients


#: Broker settings of the transactional workload: few ``__transaction_state`` partitions (each is
#: replicated like any other), and timed-out transactions looked for every second.
TXN_SETTINGS: Final[dict[str, str]] = {
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def txn_clients(workload: Workload, history: History, rng: random.Random) -> list[SimClient]:
    """The transactional workload: one admin, an idempotent acks=all producer (plain records
    among the transactions), two transactional producers of transaction version 2 and one of
    version 1, a consumer by assignment at read_uncommitted and one at read_committed, over every
    topic, then two consume-transform-produce workers (transaction versions 2 and 1) from the
    first topic to the last, splitting the first's partitions, committing to one group. Each
    client draws from its own generator, seeded from ``rng`` in this order."""
    bootstrap = workload.bootstrap()
    names = [name for name, _ in workload.topics]

    def child() -> random.Random:
        return random.Random(rng.getrandbits(64))

    clients: list[SimClient] = [
        AdminClient("admin", history, child(), bootstrap, workload.specs()),
        Producer(
            "producer-idem",
            history,
            child(),
            bootstrap,
            names,
            acks=-1,
            idempotent=True,
            interval_ms=workload.producer_interval_ms * 2,
        ),
        TxnProducer("txn-a", history, child(), bootstrap, names, version=2),
        TxnProducer("txn-b", history, child(), bootstrap, names, version=2),
        TxnProducer("txn-c", history, child(), bootstrap, names, version=1),
        AssignConsumer("consumer", history, child(), bootstrap, names),
        AssignConsumer("consumer-rc", history, child(), bootstrap, names, read_committed=True),
    ]
    clients += [
        CtpWorker(
            f"ctp-{i + 1}",
            history,
            child(),
            bootstrap,
            names[0],
            names[-1],
            workload.ctp_group,
            index=i,
            workers=2,
            version=version,
        )
        for i, version in enumerate((2, 1))
    ]
    return clients


#: The share workload's group, its acquisition lock and delivery limit (group configs, which the
#: checker reads too), and the broker properties it needs: a short share session, frequent
#: heartbeats, few ``__share_group_state`` partitions, and the lowest bounds that allow them and
#: the lock (Kafka 4.4's defaults refuse a 6 s session, a 1 s heartbeat and a 2 s lock).
SHARE_GROUP: Final = "share-1"
SHARE_LOCK_MS: Final = 2_000
SHARE_DELIVERY_LIMIT: Final = 3
SHARE_GROUP_CONFIGS: Final[dict[str, str]] = {
    "share.auto.offset.reset": "earliest",
    "share.record.lock.duration.ms": str(SHARE_LOCK_MS),
    "share.delivery.count.limit": str(SHARE_DELIVERY_LIMIT),
}
SHARE_SETTINGS: Final[dict[str, str]] = {
    "group.share.session.timeout.ms": "6000",
    "group.share.min.session.timeout.ms": "6000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
    "group.share.min.record.lock.duration.ms": "1000",
    "share.coordinator.state.topic.num.partitions": "3",
}


def share_clients(workload: Workload, history: History, rng: random.Random) -> list[SimClient]:
    """The share workload (KIP-932): one admin, an idempotent acks=all producer and an acks=all
    one over every topic, and three members of one share group subscribed to every topic (one of
    them restarting now and then). Each client draws from its own generator, seeded from ``rng``
    in this order."""
    bootstrap = workload.bootstrap()
    names = [name for name, _ in workload.topics]

    def child() -> random.Random:
        return random.Random(rng.getrandbits(64))

    clients: list[SimClient] = [
        AdminClient("admin", history, child(), bootstrap, workload.specs()),
        Producer(
            "producer-idem",
            history,
            child(),
            bootstrap,
            names,
            acks=-1,
            idempotent=True,
            interval_ms=workload.producer_interval_ms,
        ),
        Producer(
            "producer-all",
            history,
            child(),
            bootstrap,
            names,
            acks=-1,
            interval_ms=workload.producer_interval_ms,
        ),
    ]
    clients += [
        ShareConsumer(
            f"share-{i}",
            history,
            child(),
            bootstrap,
            names,
            SHARE_GROUP,
            group_configs=SHARE_GROUP_CONFIGS,
            restart_every_ms=workload.member_restart_ms if i == 3 else None,
        )
        for i in (1, 2, 3)
    ]
    return clients


def clients_for(
    world: WorldView,
    *,
    replication_factor: int | None = None,
    transactional: bool = False,
    name: str = "default",
) -> list[SimClient]:
    """:func:`default_clients` (or :func:`txn_clients`, :func:`share_clients`: ``name``) for ``world``: its nodes, topics and unclean-election setting, its
    history, generators seeded from ``world.rng`` (drawn here, once). The replication factor
    defaults to the node count, at most 3."""
    nodes = len(world.nodes())
    workload = Workload(
        nodes=nodes,
        topics=tuple(world.topics()),
        replication_factor=replication_factor or min(3, nodes),
        unclean_leader_election=world.unclean_elections(),
    )
    build = {"txn": txn_clients, "share": share_clients}.get(
        "txn" if transactional else name, default_clients
    )
    return build(workload, world.history, world.rng)
