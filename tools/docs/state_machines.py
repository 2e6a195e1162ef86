"""``docs/reference/state-machines.md``: every transition table of the library, drawn."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tools.docs.mermaid import state_diagram

PAGE = "reference/state-machines.md"


def _tables() -> list[tuple[str, str, str, Mapping[Any, Any]]]:
    """(section, machine, where the table lives, table), in page order; imported when drawn."""
    from kafka_wire.broker.driver_contract import DRIVER_TRANSITIONS
    from kafka_wire.broker.group.reconciliation import MEMBER_TRANSITIONS
    from kafka_wire.broker.group.share_model import SHARE_GROUP_TRANSITIONS
    from kafka_wire.broker.group.share_partition import RECORD_TRANSITIONS
    from kafka_wire.broker.group.states import GROUP_TRANSITIONS
    from kafka_wire.broker.lifecycle import LIFECYCLE_TRANSITIONS
    from kafka_wire.broker.muting import MUTE_TRANSITIONS
    from kafka_wire.broker.partition.roles import REPLICA_TRANSITIONS
    from kafka_wire.broker.peers import LINK_TRANSITIONS
    from kafka_wire.broker.raft.states import QUORUM_TRANSITIONS
    from kafka_wire.protocol import sasl
    from kafka_wire.protocol.client import CLIENT_TRANSITIONS
    from kafka_wire.protocol.server import SERVER_TRANSITIONS
    from kafka_wire.proxy.pair import PAIR_TRANSITIONS

    return [
        (
            "Connections",
            "ClientConnection",
            "kafka_wire.protocol.client.CLIENT_TRANSITIONS",
            CLIENT_TRANSITIONS,
        ),
        (
            "Connections",
            "ServerConnection",
            "kafka_wire.protocol.server.SERVER_TRANSITIONS",
            SERVER_TRANSITIONS,
        ),
        (
            "SASL mechanisms",
            "PlainClient",
            "kafka_wire.protocol.sasl.PLAIN_CLIENT_TRANSITIONS",
            sasl.PLAIN_CLIENT_TRANSITIONS,
        ),
        (
            "SASL mechanisms",
            "PlainServer",
            "kafka_wire.protocol.sasl.PLAIN_SERVER_TRANSITIONS",
            sasl.PLAIN_SERVER_TRANSITIONS,
        ),
        (
            "SASL mechanisms",
            "ScramClient",
            "kafka_wire.protocol.sasl.SCRAM_CLIENT_TRANSITIONS",
            sasl.SCRAM_CLIENT_TRANSITIONS,
        ),
        (
            "SASL mechanisms",
            "ScramServer",
            "kafka_wire.protocol.sasl.SCRAM_SERVER_TRANSITIONS",
            sasl.SCRAM_SERVER_TRANSITIONS,
        ),
        (
            "SASL mechanisms",
            "OAuthBearerClient",
            "kafka_wire.protocol.sasl.OAUTHBEARER_CLIENT_TRANSITIONS",
            sasl.OAUTHBEARER_CLIENT_TRANSITIONS,
        ),
        (
            "SASL mechanisms",
            "OAuthBearerServer",
            "kafka_wire.protocol.sasl.OAUTHBEARER_SERVER_TRANSITIONS",
            sasl.OAUTHBEARER_SERVER_TRANSITIONS,
        ),
        ("Proxy", "ProxyPair", "kafka_wire.proxy.pair.PAIR_TRANSITIONS", PAIR_TRANSITIONS),
        ("Broker", "Classic group", "kafka_wire.broker.group.states.GROUP_TRANSITIONS", GROUP_TRANSITIONS),
        (
            "Broker",
            "Consumer group member (KIP-848)",
            "kafka_wire.broker.group.reconciliation.MEMBER_TRANSITIONS",
            MEMBER_TRANSITIONS,
        ),
        (
            "Broker",
            "Share group (KIP-932)",
            "kafka_wire.broker.group.share_model.SHARE_GROUP_TRANSITIONS",
            SHARE_GROUP_TRANSITIONS,
        ),
        (
            "Broker",
            "Share-partition record (KIP-932)",
            "kafka_wire.broker.group.share_partition.RECORD_TRANSITIONS",
            RECORD_TRANSITIONS,
        ),
        (
            "Broker",
            "Partition replica",
            "kafka_wire.broker.partition.roles.REPLICA_TRANSITIONS",
            REPLICA_TRANSITIONS,
        ),
        (
            "Broker",
            "KRaft replica",
            "kafka_wire.broker.raft.states.QUORUM_TRANSITIONS",
            QUORUM_TRANSITIONS,
        ),
        ("Broker", "Link to another node", "kafka_wire.broker.peers.LINK_TRANSITIONS", LINK_TRANSITIONS),
        (
            "Broker",
            "Broker lifecycle in a cluster",
            "kafka_wire.broker.lifecycle.LIFECYCLE_TRANSITIONS",
            LIFECYCLE_TRANSITIONS,
        ),
        (
            "Broker",
            "Driver contract (storage batches in flight)",
            "kafka_wire.broker.driver_contract.DRIVER_TRANSITIONS",
            DRIVER_TRANSITIONS,
        ),
        (
            "Broker",
            "Client connection muting",
            "kafka_wire.broker.muting.MUTE_TRANSITIONS",
            MUTE_TRANSITIONS,
        ),
    ]


#: What each section says once, above its diagrams.
_SECTION_NOTES: Mapping[str, str] = {
    "Connections": (
        "How they are used: [guide/connections.md](../guide/connections.md). Arrows are labelled with\n"
        "the events that move a connection (`kafka_wire.protocol.machine`); an event missing from a\n"
        "table raises `LocalProtocolError` and moves the connection to `ERROR`, as any exception\n"
        "inside a connection does."
    ),
    "SASL mechanisms": (
        "How they are used: [guide/sasl.md](../guide/sasl.md). A call (`initial_response`, `step`) that a\n"
        "table lacks raises `LocalProtocolError` and moves the machine to `ERROR`; every failure moves it\n"
        "to `ERROR` too. OAUTHBEARER's `server accepted` / `server refused` and `token accepted` /\n"
        "`token refused` are moves that `step` makes after reading the token."
    ),
    "Proxy": (
        "How it is used: [guide/proxy.md](../guide/proxy.md). A pair is one client connection and its\n"
        "upstream connection; an input the table lacks, or any failure inside (a filter's included),\n"
        "moves it to `ERROR`, and its sockets close."
    ),
    "Broker": (
        "The classic group's states are reported to clients with Kafka's names (`Empty`,\n"
        "`PreparingRebalance`, `CompletingRebalance`, `Stable`, `Dead`); a move the table lacks is a\n"
        "coordinator bug (`LocalProtocolError`), never an answer to a client\n"
        "([internals/group-coordinator.md](../internals/group-coordinator.md))."
    ),
}


def page(tables: Callable[[], list[tuple[str, str, str, Mapping[Any, Any]]]] = _tables) -> str:
    lines = [
        "# State machines",
        "",
        "Generated by `make docs` (`python -m tools.docs`) from the transition tables, which are the",
        "machines themselves: each machine moves only through its table. Do not edit.",
    ]
    section = ""
    for heading, machine, where, table in tables():
        if heading != section:
            section = heading
            lines += ["", f"## {heading}", "", _SECTION_NOTES[heading]]
        lines += ["", f"### {machine}", "", f"`{where}`", "", state_diagram(table)]
    return "\n".join(lines) + "\n"
