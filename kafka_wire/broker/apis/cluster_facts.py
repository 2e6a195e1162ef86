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
from kafka_wire.broker.state import Context


@dataclass(frozen=True, slots=True)
class LiveBroker:
    node_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool = False


def client_listener(ctx: Context, view: ClusterView) -> str:
    """The listener whose endpoints the client is told (the one it came in on)."""
    return ctx.listener or view.inter_broker_listener


def live_brokers(ctx: Context, *, include_fenced: bool = False) -> list[LiveBroker]:
    """The brokers a client may connect to, by node id (fenced ones too when asked)."""
    view = ctx.state.cluster
    listener = client_listener(ctx, view)
    found = []
    for broker in sorted(view.brokers(), key=lambda b: b.node_id):
        if broker.fenced and not include_fenced:
            continue
        endpoint = broker.endpoint(listener)
        if endpoint is not None:
            found.append(LiveBroker(broker.node_id, endpoint.host, endpoint.port, broker.rack, broker.fenced))
    return found


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
