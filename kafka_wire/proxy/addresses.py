"""Broker addresses in responses, and the book that maps each upstream address to a proxy port.

Which responses carry addresses is read from the schemas, not kept as a list: a struct (or a
response root) with a string field ``host`` and an int field ``port`` in a version is a broker
endpoint (Metadata's brokers, FindCoordinator's coordinator, DescribeCluster's brokers, the node
endpoints Produce, Fetch, ShareFetch and ShareAcknowledge responses carry on a leader change,
DescribeQuorum's listeners, ...). :func:`address_paths` finds the field paths leading to them per
response version, once, when first asked.

:class:`AddressBook` gives each upstream address a proxy port: the bootstrap upstreams the ports
they were given, and an address first seen in a response the next free port from the listen
port upward (:meth:`AddressBook.take_new` hands those to the adapter, which starts listening).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kafka_wire.codec.structs import Struct
from kafka_wire.messages import RESPONSES

#: A path of attribute names from a response body to its endpoint structs; () is the body itself.
Path = tuple[str, ...]

#: The largest port number a proxy allots.
MAX_PORT: Final = 65535


def _has_endpoint(cls: type[Struct], version: int) -> bool:
    kinds = {f.name: f.kind for f in cls.FIELDS if version in f.versions}
    return kinds.get("host") == "string" and kinds.get("port") in ("int32", "uint16")


def _paths(cls: type[Struct], version: int, prefix: Path, seen: frozenset[type[Struct]]) -> Iterator[Path]:
    if _has_endpoint(cls, version):
        yield prefix
    for f in cls.FIELDS:
        child = f.struct
        if child is None or version not in f.versions or child in seen:
            continue
        yield from _paths(child, version, (*prefix, f.name), seen | {child})


@functools.cache
def address_paths(api_key: int, version: int) -> tuple[Path, ...]:
    """The paths to broker endpoints in the response to ``api_key`` at ``version`` (empty: none)."""
    cls = RESPONSES.get(api_key)
    if cls is None or version not in cls.VERSIONS:
        return ()
    return tuple(_paths(cls, version, (), frozenset({cls})))


def endpoints(body: Struct, paths: Sequence[Path]) -> Iterator[Any]:
    """Every endpoint struct the ``paths`` reach in ``body`` (arrays and null fields followed)."""
    for path in paths:
        level: list[Any] = [body]
        for name in path:
            nxt: list[Any] = []
            for item in level:
                value = getattr(item, name, None)
                if isinstance(value, list):
                    nxt.extend(value)
                elif value is not None:
                    nxt.append(value)
            level = nxt
        yield from level


@dataclass(frozen=True, slots=True)
class Route:
    """One proxy port and the upstream broker address it forwards to."""

    port: int
    upstream_host: str
    upstream_port: int


def counting_ports(first_port: int) -> Callable[[], int]:
    """A port allocator counting up from ``first_port`` (the book skips ports it has given)."""
    ports = itertools.count(first_port)
    return lambda: next(ports)


class AddressBook:
    """Upstream address <-> proxy port, shared by every connection of one proxy.

    ``advertised_host`` is the host put in rewritten responses (the proxy's address as clients
    reach it). A new upstream address gets the next port ``allocate`` gives that the book has not
    given yet: by default counting up from a first port; the asyncio adapter passes one that binds
    a socket (so a port the operating system picks, or one found free, is known at once).
    """

    def __init__(self, advertised_host: str, allocate: Callable[[], int]) -> None:
        self.advertised_host = advertised_host
        self._allocate = allocate
        self._by_upstream: dict[tuple[str, int], Route] = {}
        self._by_port: dict[int, Route] = {}
        self._new: list[Route] = []

    def add(self, upstream_host: str, upstream_port: int, port: int | None = None) -> Route:
        """The route for an upstream address, made (and queued for :meth:`take_new`) when new."""
        key = (upstream_host, upstream_port)
        route = self._by_upstream.get(key)
        if route is not None:
            return route
        while port is None or port in self._by_port:
            port = self._allocate()
            if not 0 < port <= MAX_PORT:
                raise OverflowError(
                    f"the port allocator gave {port}: no port left for {upstream_host}:{upstream_port}"
                )
        route = Route(port, upstream_host, upstream_port)
        self._by_upstream[key] = route
        self._by_port[port] = route
        self._new.append(route)
        return route

    def has_new(self) -> bool:
        return bool(self._new)

    def take_new(self) -> list[Route]:
        """Routes made since the last call: the adapter listens on their ports."""
        new, self._new = self._new, []
        return new

    def route(self, port: int) -> Route | None:
        """The route a proxy port serves."""
        return self._by_port.get(port)

    @property
    def routes(self) -> list[Route]:
        return list(self._by_port.values())

    def rewrite(self, body: Struct, api_key: int, version: int) -> bool:
        """Put proxy addresses in place of every upstream address in a response; True when one
        changed."""
        changed = False
        for endpoint in endpoints(body, address_paths(api_key, version)):
            host, port = endpoint.host, endpoint.port
            if not host or port < 0:
                continue  # no coordinator, an unknown leader: nothing to route
            route = self.add(host, port)
            endpoint.host, endpoint.port = self.advertised_host, route.port
            changed = True
        return changed
