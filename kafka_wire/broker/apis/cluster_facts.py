"""What the client-facing handlers tell about the cluster: brokers, leaders and offline replicas.

The answers come from the metadata image (the node's
:class:`~kafka_wire.broker.cluster_view.ClusterView`), as Kafka's broker metadata cache gives them:
the live brokers are the registered unfenced ones that have an endpoint on the listener the client
connected to; a replica is offline when its broker is not registered, fenced, or has no such
endpoint; a leader is reported when its broker is registered with that endpoint (-1 otherwise).

The "controller" told to clients is, as in Kafka since KIP-590, a random live broker (clients send
their admin requests to it, and brokers forward them to the active controller); the choice uses
the broker's injected random generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_wire.broker.cluster_view import BrokerInfo, ClusterView, Endpoint
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.messages import ErrorCode


@dataclass(frozen=True, slots=True)
class LiveBroker:
    node_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class CurrentLeader:
    """A partition's leader as Kafka's ``KafkaApis.getCurrentLeader`` tells a client that asked
    the wrong broker (the ``CurrentLeader`` of Fetch v16+ and Produce v10+), and the leader's
    endpoint for the ``NodeEndpoints`` of the same answer (None: no live broker to name)."""

    leader_id: int
    leader_epoch: int
    node: LiveBroker | None


def client_listener(ctx: Context, view: ClusterView) -> str:
    """The listener whose endpoints the client is told (the one it came in on)."""
    return ctx.listener or view.inter_broker_listener


def live_brokers(ctx: Context, *, include_fenced: bool = False) -> list[LiveBroker]:
    """The brokers a client may connect to, by node id (fenced ones too when asked)."""
    return brokers_on(ctx.state, client_listener(ctx, ctx.state.cluster), include_fenced=include_fenced)


def brokers_on(state: BrokerState, listener: str, *, include_fenced: bool = False) -> list[LiveBroker]:
    """:func:`live_brokers` for a request that came in on ``listener`` (empty: the inter-broker
    listener)."""
    view = state.cluster
    listener = listener or view.inter_broker_listener
    found = []
    for broker in sorted(view.brokers(), key=lambda b: b.node_id):
        if broker.fenced and not include_fenced:
            continue
        endpoint = broker.endpoint(listener)
        if endpoint is not None:
            found.append(LiveBroker(broker.node_id, endpoint.host, endpoint.port, broker.rack, broker.fenced))
    return found


def current_leader(state: BrokerState, listener: str, topic: str, partition: int) -> CurrentLeader:
    """The leader and leader epoch of this node's replica of the partition, else of its
    registration in the metadata image (-1 and -1 when neither exists), with the leader's endpoint
    on ``listener`` when it is a live (registered, unfenced) broker there."""
    replica = state.replica(topic, partition)
    registration = state.cluster.partition(topic, partition)
    if replica is not None:
        leader_id, leader_epoch = replica.leadership.leader_id, replica.leader_epoch
    elif registration is not None:
        leader_id, leader_epoch = registration.leader, registration.leader_epoch
    else:
        leader_id, leader_epoch = -1, -1
    node = next((b for b in brokers_on(state, listener) if b.node_id == leader_id), None)
    return CurrentLeader(leader_id, leader_epoch, node)


def missing_replica_error(state: BrokerState, topic: str, partition: int) -> int:
    """The error for a partition this node holds no replica of (Kafka's ``getPartitionOrError``):
    NOT_LEADER_OR_FOLLOWER when the cluster's metadata has it elsewhere (the client's metadata is
    stale), UNKNOWN_TOPIC_OR_PARTITION otherwise."""
    if state.cluster.partition(topic, partition) is not None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def reachable(view: ClusterView, node_id: int, listener: str) -> Endpoint | None:
    """The endpoint of a registered broker on ``listener`` (Kafka's ``getAliveEndpoint``)."""
    broker = view.broker(node_id) if node_id >= 0 else None
    return broker.endpoint(listener) if broker is not None else None


def is_offline(broker: BrokerInfo | None, listener: str) -> bool:
    return broker is None or broker.fenced or broker.endpoint(listener) is None


def offline_replicas(view: ClusterView, replicas: Sequence[int], listener: str) -> list[int]:
    """Replicas on brokers that are unregistered, fenced or without ``listener``."""
    return [r for r in replicas if is_offline(view.broker(r), listener)]


def advertised_controller(ctx: Context) -> int:
    """The controller id clients are told: a random live broker (-1: none)."""
    view = ctx.state.cluster
    alive = sorted(b.node_id for b in view.brokers() if not b.fenced)
    return ctx.state.rng.choice(alive) if alive else -1
