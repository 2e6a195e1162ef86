"""A Kafka broker's ``server.properties`` read for kafka_wire: what it configures and what it ignores.

:func:`load_server_properties` takes Kafka-named properties (a stock Kafka 4 KRaft file loads) and
returns the :class:`BrokerConfig`, what the server binds and advertises, its log directory and
:class:`Note` lines for the caller to log. It does no I/O.

- Properties the engine acts on go to :meth:`BrokerConfig.from_properties`, including the broker
  properties that set topic defaults (Kafka's synonym table).
- ``listeners``, ``advertised.listeners``, ``inter.broker.listener.name``,
  ``controller.listener.names``, ``listener.security.protocol.map``: the broker listener is the
  one ``inter.broker.listener.name`` names, else the first that is not a controller listener. It
  is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; an SSL or SASL_SSL listener's ``ssl.*`` settings
  are read by :func:`~kafka_wire.broker.tls_settings.listener_tls` (:attr:`ServerProperties.tls`),
  a SASL listener's mechanisms and PLAIN users come from ``sasl.enabled.mechanisms`` and its JAAS
  entries (:mod:`kafka_wire.broker.sasl_config`; or kafka_wire's own ``sasl.users.*``), and
  ``sasl.mechanism.inter.broker.protocol`` must be one of them, as Kafka checks.
  An empty host (``PLAINTEXT://:9092``) binds 127.0.0.1, not every interface as Kafka does:
  kafka_wire listens on loopback unless told an address (``0.0.0.0`` binds all). Its advertised
  address comes from ``advertised.listeners`` (else the bind address). Without
  ``controller.quorum.voters``, controller listeners are not opened (INFO): the node is its own
  one-voter quorum, reached in-process.
- ``log.dirs`` (else ``log.dir``): the data directory; kafka_wire keeps one.
- ``process.roles`` must include ``broker``; ``node.id`` (``broker.id`` is its synonym and must
  agree); ``offsets.topic.replication.factor`` above 1 is clamped to the one node (WARNING).
- **KRaft mode** (a replicated cluster): when ``controller.quorum.voters`` is set, the node is
  one of a cluster and :attr:`BrokerConfig.cluster` holds its :class:`ClusterSettings`, checked
  as Kafka checks them (:func:`_cluster`): ``process.roles`` and ``node.id`` set; a controller
  is a voter and listens on the first of ``controller.listener.names``; a broker-only node is no
  voter and opens no controller listener; a controller-only node opens controller listeners
  only; every listener is opened. Controller listeners are PLAINTEXT or SSL (the node's links to
  an SSL listener of another node speak TLS with that listener's ``ssl.*`` settings); broker
  listeners may also be SASL_PLAINTEXT or SASL_SSL, each with its own SASL settings, the
  inter-broker one too (the nodes then log in to each other with PLAIN, over TLS on SASL_SSL:
  :func:`kafka_wire.broker.sasl_config.inter_broker_login`). Without voters :attr:`BrokerConfig.cluster` is
  None: the node is a cluster of its own (``config.standalone``: broker and controller, the only
  voter, no controller listener), as ``kafka-wire serve`` runs by default (Kafka's stock
  combined-mode file, whose quorum is the node itself through
  ``controller.quorum.bootstrap.servers``, loads that way).
- Every other property Kafka 4.0 defines is accepted and ignored (DEBUG); a property Kafka 4.0
  removed or never had is named in one WARNING each and ignored.

An invalid value of a property kafka_wire reads raises :class:`BrokerConfigError` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field, replace
from typing import Final, Literal

from kafka_wire.broker import cluster_view
from kafka_wire.broker.cluster_settings import STANDALONE_LISTENER, ClusterSettings, Voter
from kafka_wire.broker.config import BrokerConfig, BrokerConfigError, acts_on
from kafka_wire.broker.kafka_properties import (
    KAFKA_BROKER_PREFIXES,
    KAFKA_BROKER_PROPERTIES,
    REMOVED_BROKER_PROPERTIES,
)
from kafka_wire.broker.sasl_config import (
    ListenerSasl,
    SaslConfigError,
    enabled_mechanisms,
    inter_broker_login,
    inter_broker_mechanism,
    is_sasl_property,
    listener_sasl,
)
from kafka_wire.broker.tls_settings import TLS_PROTOCOLS, TlsSettings, is_ssl_key, listener_tls
from kafka_wire.quick_dataclass import dataclass

#: Security protocols kafka_wire's broker listener can speak.
SERVED_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Kafka's default ``listener.security.protocol.map``: each protocol's name maps to itself.
DEFAULT_PROTOCOL_MAP: Final = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
#: What an empty listener host binds (Kafka: every interface; kafka_wire: loopback).
EMPTY_HOST_BINDS: Final = "127.0.0.1"
PROCESS_ROLES: Final = ("broker", "controller")
#: Bind addresses meaning "every interface": never advertised (Kafka refuses them too).
_EVERY_INTERFACE: Final = ("0.0.0.0", "::")

#: Properties read here (beyond what ``BrokerConfig.from_properties`` reads).
_SERVER_KEYS: Final = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "inter.broker.listener.name",
        "controller.listener.names",
        "listener.security.protocol.map",
        "log.dirs",
        "log.dir",
        "process.roles",
        "broker.id",
        "offsets.topic.replication.factor",
    }
)
#: Read in KRaft mode only (a single node ignores them, DEBUG).
_CLUSTER_KEYS: Final = frozenset({"controller.quorum.voters", "controller.quorum.bootstrap.servers"})
# Patterns as strings: ``re`` compiles (and keeps) each on its first use, not when a start imports
# this module.
_VOTER: Final = r"(?P<id>[0-9]+)@(?P<host>\[[0-9A-Fa-f:.]*\]|[^:\[\]/@]+):(?P<port>[0-9]+)"
_HOST_PORT: Final = r"(?P<host>\[[0-9A-Fa-f:.]*\]|[^:\[\]/@]+):(?P<port>[0-9]+)"
_ENDPOINT: Final = r"(?P<name>[A-Za-z0-9_.-]+)://(?P<host>\[[0-9A-Fa-f:.]*\]|[^:\[\]/]*):(?P<port>-?[0-9]+)"

Level = Literal["debug", "info", "warning"]


@dataclass(frozen=True, slots=True)
class Note:
    """A line for the server's log about the properties it was given."""

    level: Level
    message: str


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One entry of ``listeners`` / ``advertised.listeners``; ``host`` is "" when empty."""

    listener: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class ServerProperties:
    config: BrokerConfig
    #: The broker listener's bind address (``listeners``; host "" replaced by 127.0.0.1), or
    #: None when ``listeners`` is not set.
    bind: Endpoint | None
    #: What clients are told (``advertised.listeners``, else ``bind``), or None when neither is set.
    advertised: Endpoint | None
    #: ``log.dirs`` / ``log.dir``, or None.
    data_dir: str | None
    notes: tuple[Note, ...]
    #: The TLS settings of each opened listener whose protocol is SSL or SASL_SSL, by name.
    tls: Mapping[str, TlsSettings] = field(default_factory=dict)


def load_server_properties(
    properties: Mapping[str, str], base: BrokerConfig | None = None
) -> ServerProperties:
    """Read Kafka-named broker ``properties`` (see the module docstring)."""
    notes: list[Note] = []
    props = {key: value.strip() for key, value in properties.items()}
    if "broker.id" in props and "node.id" not in props:
        props["node.id"] = props["broker.id"]
    config = BrokerConfig.from_properties(props, base)
    if "broker.id" in props and _int("broker.id", props["broker.id"]) != config.node_id:
        raise BrokerConfigError("broker.id", f"must equal node.id ({config.node_id}) when both are set")
    clustered = bool(props.get("controller.quorum.voters"))
    read = _SERVER_KEYS | _CLUSTER_KEYS if clustered else _SERVER_KEYS
    tls: dict[str, TlsSettings] = {}
    if clustered:
        settings, bind, advertised, sasl = _cluster(props, config)
        config = replace(config, cluster=settings, sasl_listeners=sasl)
        protocols = dict(settings.security_protocols)
        for endpoint in settings.listeners:
            if protocols.get(endpoint.listener) in TLS_PROTOCOLS:
                tls[endpoint.listener] = listener_tls(props, endpoint.listener)
    else:
        _check_roles(props, notes)
        _check_offsets_replication(props, notes)
        config = replace(config, offsets_topic_replication_factor=1)
        bind, advertised, gate = _listeners(props, config, notes)
        config = replace(config, sasl_listeners={} if gate is None else {STANDALONE_LISTENER: gate})
        if bind is not None and _protocol_map(props).get(bind.listener) in TLS_PROTOCOLS:
            tls[bind.listener] = listener_tls(props, bind.listener)
    if advertised is not None:
        config = replace(config, host=advertised.host, port=advertised.port)
    data_dir = _data_dir(props)
    for key in properties:
        if acts_on(key) or key in read or (tls and is_ssl_key(key)) or is_sasl_property(key):
            continue
        if key in REMOVED_BROKER_PROPERTIES or key.startswith("zookeeper."):
            notes.append(Note("warning", f"{key}: removed in Kafka 4.0; ignored"))
        elif key in KAFKA_BROKER_PROPERTIES or key.startswith(KAFKA_BROKER_PREFIXES):
            notes.append(Note("debug", f"{key}: a Kafka broker property kafka_wire does not act on; ignored"))
        else:
            notes.append(Note("warning", f"{key}: unknown broker property; ignored"))
    return ServerProperties(
        config=config, bind=bind, advertised=advertised, data_dir=data_dir, notes=tuple(notes), tls=tls
    )


def parse_endpoints(key: str, value: str) -> list[Endpoint]:
    """``NAME://host:port,…`` (Kafka's listener syntax; names upper-cased, IPv6 hosts in brackets)."""
    endpoints = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = re.fullmatch(_ENDPOINT, item)
        if match is None:
            raise BrokerConfigError(key, f"{item!r} is not NAME://host:port")
        port = int(match["port"])
        if not 0 <= port <= 65535:
            raise BrokerConfigError(key, f"{item!r}: port {port} is not a TCP port")
        endpoints.append(Endpoint(match["name"].upper(), match["host"].strip("[]"), port))
    names = [e.listener for e in endpoints]
    if len(set(names)) != len(names):
        raise BrokerConfigError(key, "each listener name may appear once")
    return endpoints


def _listeners(
    props: Mapping[str, str], config: BrokerConfig, notes: list[Note]
) -> tuple[Endpoint | None, Endpoint | None, ListenerSasl | None]:
    listeners = parse_endpoints("listeners", props["listeners"]) if "listeners" in props else []
    advertised = parse_endpoints("advertised.listeners", props.get("advertised.listeners", ""))
    controllers = {
        n.strip().upper() for n in props.get("controller.listener.names", "").split(",") if n.strip()
    }
    protocols = _protocol_map(props)
    for endpoint in listeners:
        if endpoint.listener in controllers:
            notes.append(
                Note(
                    "info",
                    f"listeners: controller listener {endpoint.listener} ({endpoint.host}:{endpoint.port}) "
                    "is not opened: without controller.quorum.voters the node is its own one-voter quorum, "
                    "reached in-process",
                )
            )
    name = _broker_listener(props, listeners or advertised, controllers)
    if name is None:
        return None, None, None
    bind = next((e for e in listeners if e.listener == name), None)
    gate = None
    if bind is not None:
        gate = _check_protocol(name, protocols, props, config)
        bind = replace(bind, host=bind.host or EMPTY_HOST_BINDS)
        for other in listeners:
            if other.listener not in controllers and other.listener != name:
                notes.append(
                    Note(
                        "info",
                        f"listeners: {other.listener} is not opened: kafka_wire serves one listener ({name})",
                    )
                )
    told = next((e for e in advertised if e.listener == name), bind)
    if told is not None and told.host in _EVERY_INTERFACE:
        key = "advertised.listeners" if told is not bind else "listeners"
        raise BrokerConfigError(
            key, f"clients cannot connect to {told.host}: set advertised.listeners to their address"
        )
    if told is None or told is bind:
        return bind, bind, gate
    if not told.host:
        told = replace(told, host=bind.host if bind is not None else EMPTY_HOST_BINDS)
    return bind, told, gate


def _broker_listener(
    props: Mapping[str, str], endpoints: list[Endpoint], controllers: set[str]
) -> str | None:
    named = props.get("inter.broker.listener.name", "").strip().upper()
    if named:
        if named in controllers:
            raise BrokerConfigError("inter.broker.listener.name", f"{named} is a controller listener")
        if endpoints and named not in {e.listener for e in endpoints}:
            raise BrokerConfigError("inter.broker.listener.name", f"{named} is not among the listeners")
        return named
    brokers = [e.listener for e in endpoints if e.listener not in controllers]
    if endpoints and not brokers:
        raise BrokerConfigError("listeners", "no broker listener: every listener is a controller listener")
    return brokers[0] if brokers else None


def _protocol_map(props: Mapping[str, str]) -> dict[str, str]:
    if "listener.security.protocol.map" not in props:
        return dict(DEFAULT_PROTOCOL_MAP)
    protocols: dict[str, str] = {}
    for item in (part.strip() for part in props["listener.security.protocol.map"].split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise BrokerConfigError("listener.security.protocol.map", f"{item!r} is not NAME:PROTOCOL")
        protocols[name.strip().upper()] = protocol.strip().upper()
    return protocols


def _check_protocol(
    name: str, protocols: Mapping[str, str], props: Mapping[str, str], config: BrokerConfig
) -> ListenerSasl | None:
    """The single node's listener: PLAINTEXT or SSL (None), SASL_PLAINTEXT or SASL_SSL (its SASL
    settings; it is the inter-broker listener too)."""
    protocol = protocols.get(name)
    if protocol is None:
        raise BrokerConfigError("listener.security.protocol.map", f"no security protocol for listener {name}")
    if protocol not in SERVED_PROTOCOLS:
        raise BrokerConfigError(
            "listeners",
            f"listener {name} uses {protocol}; kafka_wire serves {' and '.join(SERVED_PROTOCOLS)} only",
        )
    if not protocol.startswith("SASL_"):
        if config.sasl_users:
            raise BrokerConfigError(
                "listeners", f"listener {name} uses {protocol} but sasl.users.* are set (SASL_{protocol})"
            )
        return None
    shortcut = _shortcut(props, name, config)
    if shortcut is not None:
        return shortcut
    gate = _sasl_of(props, name, config)
    try:
        inter_broker_mechanism(props, name)
    except SaslConfigError as exc:
        raise BrokerConfigError(exc.key, exc.reason) from None
    return gate


def _shortcut(props: Mapping[str, str], listener: str, config: BrokerConfig) -> ListenerSasl | None:
    """A SASL listener served from ``sasl.users.*`` (kafka_wire's own shortcut): set, and no
    ``sasl.enabled.mechanisms`` for the listener."""
    if not config.sasl_users or enabled_mechanisms(props, listener)[0] in props:
        return None
    return ListenerSasl(
        mechanisms=tuple(config.sasl_users), plain_users=dict(config.sasl_users.get("PLAIN", {}))
    )


def _sasl_of(props: Mapping[str, str], listener: str, config: BrokerConfig) -> ListenerSasl:
    shortcut = _shortcut(props, listener, config)
    if shortcut is not None:
        return shortcut
    try:
        return listener_sasl(props, listener)
    except SaslConfigError as exc:
        raise BrokerConfigError(exc.key, exc.reason) from None


def parse_voters(value: str) -> tuple[Voter, ...]:
    """``controller.quorum.voters``: ``id@host:port,...``, each id once."""
    voters = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = re.fullmatch(_VOTER, item)
        if match is None:
            raise BrokerConfigError("controller.quorum.voters", f"{item!r} is not id@host:port")
        port = int(match["port"])
        if not 0 < port <= 65535:
            raise BrokerConfigError("controller.quorum.voters", f"{item!r}: port {port} is not a TCP port")
        voters.append(Voter(int(match["id"]), match["host"].strip("[]"), port))
    ids = [v.node_id for v in voters]
    if len(set(ids)) != len(ids):
        raise BrokerConfigError("controller.quorum.voters", "each voter id may appear once")
    if not voters:
        raise BrokerConfigError("controller.quorum.voters", "no voter given")
    return tuple(voters)


def parse_bootstrap_servers(value: str) -> tuple[tuple[str, int], ...]:
    """``controller.quorum.bootstrap.servers``: ``host:port,...``, in order."""
    servers = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = re.fullmatch(_HOST_PORT, item)
        if match is None:
            raise BrokerConfigError("controller.quorum.bootstrap.servers", f"{item!r} is not host:port")
        servers.append((match["host"].strip("[]"), int(match["port"])))
    return tuple(servers)


def _roles(props: Mapping[str, str]) -> frozenset[str]:
    roles = [r.strip() for r in props["process.roles"].split(",") if r.strip()]
    unknown = [r for r in roles if r not in PROCESS_ROLES]
    if unknown or not roles:
        raise BrokerConfigError("process.roles", "must be broker, controller, or broker,controller")
    if len(set(roles)) != len(roles):
        raise BrokerConfigError("process.roles", "each role may appear once")
    return frozenset(roles)


def _cluster(
    props: Mapping[str, str], config: BrokerConfig
) -> tuple[ClusterSettings, Endpoint | None, Endpoint | None, dict[str, ListenerSasl]]:
    """KRaft mode: the node's roles, listeners and quorum, checked (see the module docstring)."""
    if "process.roles" not in props:
        raise BrokerConfigError("process.roles", "must be set when controller.quorum.voters is (KRaft mode)")
    roles = _roles(props)
    if "node.id" not in props:
        raise BrokerConfigError("node.id", "must be set when process.roles is (KRaft mode)")
    voters = parse_voters(props["controller.quorum.voters"])
    bootstrap = parse_bootstrap_servers(props.get("controller.quorum.bootstrap.servers", ""))
    controllers = tuple(
        n.strip().upper() for n in props.get("controller.listener.names", "").split(",") if n.strip()
    )
    if not controllers:
        raise BrokerConfigError("controller.listener.names", "must be set in KRaft mode")
    listeners = parse_endpoints("listeners", props.get("listeners", ""))
    if not listeners:
        raise BrokerConfigError("listeners", "must be set in KRaft mode (process.roles)")
    names = [e.listener for e in listeners]
    protocols = _protocol_map(props)
    if "listener.security.protocol.map" not in props:
        # Kafka's KRaft rule: with no map given, controller listeners default to PLAINTEXT.
        protocols.update({name: "PLAINTEXT" for name in controllers if name not in protocols})
    sasl: dict[str, ListenerSasl] = {}
    for name in names:
        protocol = protocols.get(name)
        if protocol is None:
            raise BrokerConfigError(
                "listener.security.protocol.map", f"no security protocol for listener {name}"
            )
        if protocol.startswith("SASL_") and name not in controllers:
            sasl[name] = _sasl_of(props, name, config)
        elif protocol not in ("PLAINTEXT", "SSL"):
            raise BrokerConfigError(
                "listeners",
                f"listener {name} uses {protocol}; a kafka_wire cluster serves PLAINTEXT and SSL, and "
                "SASL_PLAINTEXT and SASL_SSL on broker listeners",
            )
    node_id = config.node_id
    voter_ids = [v.node_id for v in voters]
    if "controller" in roles:
        if node_id not in voter_ids:
            raise BrokerConfigError(
                "controller.quorum.voters",
                f"node.id {node_id} must be among the voters when process.roles has the controller role",
            )
        if controllers[0] not in names:
            raise BrokerConfigError(
                "controller.listener.names",
                f"{controllers[0]} (its first name) must appear in listeners when process.roles has the "
                "controller role",
            )
    else:
        if node_id in voter_ids:
            raise BrokerConfigError(
                "controller.quorum.voters",
                f"node.id {node_id} must not be a voter when process.roles has only the broker role",
            )
        if opened := [n for n in names if n in controllers]:
            raise BrokerConfigError(
                "listeners",
                f"{', '.join(opened)} is in controller.listener.names: a broker-only node opens no controller "
                "listener",
            )
    if roles == {"controller"} and (others := [n for n in names if n not in controllers]):
        raise BrokerConfigError(
            "listeners",
            f"a controller-only node listens on controller listeners only; {', '.join(others)} is not one",
        )
    inter_broker = ""
    login = None
    if "broker" in roles:
        inter_broker = _broker_listener(props, listeners, set(controllers)) or ""
        if inter_broker in sasl:
            try:
                login = inter_broker_login(props, inter_broker)
            except SaslConfigError as exc:
                raise BrokerConfigError(exc.key, exc.reason) from None
    bound = tuple(replace(e, host=e.host or EMPTY_HOST_BINDS) for e in listeners)
    told = {
        e.listener: e for e in parse_endpoints("advertised.listeners", props.get("advertised.listeners", ""))
    }
    for name in told:
        if name not in names:
            raise BrokerConfigError("advertised.listeners", f"{name} is not among the listeners")
    advertised = []
    for endpoint in bound:
        given = told.get(endpoint.listener)
        use = endpoint if given is None else replace(given, host=given.host or endpoint.host)
        if use.host in _EVERY_INTERFACE:
            key = "advertised.listeners" if given is not None else "listeners"
            raise BrokerConfigError(
                key, f"other nodes cannot connect to {use.host}: set advertised.listeners to their address"
            )
        advertised.append(use)
    settings = ClusterSettings(
        roles=roles,
        listeners=tuple(cluster_view.Endpoint(e.listener, e.host, e.port) for e in bound),
        advertised_listeners=tuple(cluster_view.Endpoint(e.listener, e.host, e.port) for e in advertised),
        controller_listener_names=controllers,
        inter_broker_listener=inter_broker,
        voters=voters,
        bootstrap_servers=bootstrap,
        security_protocols=tuple((name, protocols[name]) for name in names),
        inter_broker_login=login,
    )
    broker_bind = next((e for e in bound if e.listener == inter_broker), None)
    broker_told = next((e for e in advertised if e.listener == inter_broker), None)
    return settings, broker_bind, broker_told, sasl


def _check_roles(props: Mapping[str, str], notes: list[Note]) -> None:
    if "process.roles" not in props:
        return
    roles = [r.strip() for r in props["process.roles"].split(",") if r.strip()]
    unknown = [r for r in roles if r not in PROCESS_ROLES]
    if unknown or "broker" not in roles:
        raise BrokerConfigError(
            "process.roles",
            "must include broker (without controller.quorum.voters the node is a single-node cluster)",
        )
    if "controller" in roles:
        notes.append(
            Note(
                "info",
                "process.roles: without controller.quorum.voters this node is a single-node cluster of its own",
            )
        )


def _check_offsets_replication(props: Mapping[str, str], notes: list[Note]) -> None:
    if "offsets.topic.replication.factor" not in props:
        return
    factor = _int("offsets.topic.replication.factor", props["offsets.topic.replication.factor"])
    if not 1 <= factor <= 32767:
        raise BrokerConfigError("offsets.topic.replication.factor", f"{factor} is not between 1 and 32767")
    if factor > 1:
        notes.append(
            Note(
                "warning",
                f"offsets.topic.replication.factor={factor}: this is one node; __consumer_offsets gets 1 replica",
            )
        )


def _data_dir(props: Mapping[str, str]) -> str | None:
    key = "log.dirs" if props.get("log.dirs") else "log.dir" if props.get("log.dir") else None
    if key is None:
        return None
    dirs = [d.strip() for d in props[key].split(",") if d.strip()]
    if len(dirs) != 1:
        raise BrokerConfigError(
            key, f"kafka_wire keeps its data in one log directory; this lists {len(dirs)}"
        )
    return dirs[0]


def _int(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise BrokerConfigError(key, f"invalid value {value!r}") from None
