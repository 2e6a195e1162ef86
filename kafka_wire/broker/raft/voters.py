"""The quorum's voters and bootstrap servers as Kafka configures them.

``controller.quorum.voters`` is ``id@host:port`` entries joined by commas
(``1@localhost:9093,2@localhost:9095``); ``controller.quorum.bootstrap.servers`` is ``host:port``
entries joined by commas. Hosts may be bracketed IPv6 literals (``[::1]:9093``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.broker.log.config import ConfigError


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter of the metadata quorum: its node id and controller endpoint."""

    node_id: int
    host: str
    port: int


def _host_port(text: str, key: str) -> tuple[str, int]:
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise ConfigError(key, f"{text!r} is not [host]:port")
        host, port_text = text[1:close], text[close + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or not host:
            raise ConfigError(key, f"{text!r} is not host:port")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(key, f"{text!r} has no valid port")
    return host, int(port_text)


def parse_voters(text: str) -> tuple[Voter, ...]:
    """Parse ``controller.quorum.voters``; an empty value is no voters. Duplicate ids are refused."""
    voters: list[Voter] = []
    seen: set[int] = set()
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        node, at, address = entry.partition("@")
        node = node.strip()
        if not at or not node.lstrip("-").isdigit():
            raise ConfigError("controller.quorum.voters", f"{entry!r} is not id@host:port")
        node_id = int(node)
        if node_id < 0:
            raise ConfigError("controller.quorum.voters", f"{entry!r} has a negative node id")
        if node_id in seen:
            raise ConfigError("controller.quorum.voters", f"node id {node_id} appears twice")
        seen.add(node_id)
        host, port = _host_port(address.strip(), "controller.quorum.voters")
        voters.append(Voter(node_id, host, port))
    return tuple(voters)


def parse_bootstrap_servers(text: str) -> tuple[tuple[str, int], ...]:
    """Parse ``controller.quorum.bootstrap.servers`` into ``(host, port)`` pairs, in order."""
    return tuple(
        _host_port(entry, "controller.quorum.bootstrap.servers")
        for entry in (e.strip() for e in text.split(","))
        if entry
    )
