"""How a node belongs to a replicated KRaft cluster: its roles, listeners and voters
(:class:`ClusterSettings`, from ``server.properties``: built and checked by
:func:`kafka_wire.broker.server_properties.load_server_properties`), and the listener names of a
node that is a cluster by itself (:func:`kafka_wire.broker.config.standalone`)."""

from __future__ import annotations

from dataclasses import field
from typing import Final

from kafka_wire.broker.cluster_view import Endpoint
from kafka_wire.quick_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class Voter:
    """One entry of ``controller.quorum.voters`` (``id@host:port``)."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSettings:
    """How this node belongs to a replicated cluster (KRaft mode): present exactly when
    ``controller.quorum.voters`` is set. Built and checked by
    :func:`kafka_wire.broker.server_properties.load_server_properties`."""

    #: ``process.roles``: ``broker``, ``controller`` or both.
    roles: frozenset[str]
    #: ``listeners``: every listener this node opens (empty host: loopback), in the given order.
    listeners: tuple[Endpoint, ...]
    #: ``advertised.listeners`` completed by ``listeners``: what other nodes and clients are told.
    advertised_listeners: tuple[Endpoint, ...]
    #: ``controller.listener.names``; the first is the one this node uses to reach controllers.
    controller_listener_names: tuple[str, ...]
    #: ``inter.broker.listener.name`` (else the first broker listener); "" for a controller-only node.
    inter_broker_listener: str
    #: ``controller.quorum.voters``
    voters: tuple[Voter, ...]
    #: ``controller.quorum.bootstrap.servers`` as (host, port).
    bootstrap_servers: tuple[tuple[str, int], ...] = ()
    #: Each listener's security protocol (``listener.security.protocol.map``), by name: what
    #: the broker's registration announces.
    security_protocols: tuple[tuple[str, str], ...] = ()
    #: The PLAIN user and password this node logs in to the other nodes' inter-broker listener
    #: with, when that listener is SASL_PLAINTEXT (``sasl_config.inter_broker_login``).
    inter_broker_login: tuple[str, str] | None = field(default=None, repr=False)

    def logins(self) -> dict[str, tuple[str, str]]:
        """The PLAIN login of each listener this node connects to with SASL."""
        login = self.inter_broker_login
        return {} if login is None else {self.inter_broker_listener: login}

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def controller_listener(self) -> str:
        return self.controller_listener_names[0]

    def voter(self, node_id: int) -> Voter | None:
        return next((v for v in self.voters if v.node_id == node_id), None)

    def advertised(self, listener: str) -> Endpoint | None:
        return next((e for e in self.advertised_listeners if e.listener == listener), None)

    def sole_voter(self, node_id: int) -> bool:
        """Whether ``node_id`` is the only voter of the quorum (a cluster of one controller)."""
        return len(self.voters) == 1 and self.voters[0].node_id == node_id


#: The listener names of a standalone node (:func:`kafka_wire.broker.config.standalone`).
STANDALONE_LISTENER: Final = "PLAINTEXT"
STANDALONE_CONTROLLER_LISTENER: Final = "CONTROLLER"
