"""One proxy: its configuration, its filter chain, its address book; it opens a pair per client.

:class:`Proxy` is Sans-IO like the rest of the core: the adapter accepts a client on a proxy
port, calls :meth:`Proxy.open` and connects to the upstream the pair names, then feeds both
sockets' bytes and the time to the :class:`~kafka_wire.proxy.pair.ProxyPair`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import REQUESTS, ApiKey
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES
from kafka_wire.protocol.server import all_api_versions
from kafka_wire.proxy.addresses import AddressBook, address_paths, counting_ports
from kafka_wire.proxy.filters import ConnectionInfo, Filter
from kafka_wire.proxy.pair import ProxyPair

#: Requests one connection may have in the chain before the proxy stops decoding more of its bytes
#: (librdkafka pipelines up to 1M requests; Kafka's clients 5 per connection).
DEFAULT_MAX_QUEUED_REQUESTS: Final = 1000
#: Undecoded client bytes a pair holds before the adapter stops reading (one frame may be bigger:
#: the limit is checked between reads).
DEFAULT_MAX_BUFFERED_BYTES: Final = 16 * 1024 * 1024
#: Requests kept in flight to the upstream per connection (Kafka's broker reads one at a time,
#: and clients pipeline; the upstream's own muting keeps order).
DEFAULT_UPSTREAM_IN_FLIGHT: Final = 1000

#: SaslHandshake v0 is followed by raw SASL tokens, which are not request frames: a proxy that
#: passes SASL through offers v1 only (clients then carry tokens in SaslAuthenticate).
_VERSION_FLOORS: Final[Mapping[int, int]] = {ApiKey.SASL_HANDSHAKE: 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    #: The host the proxy advertises in rewritten responses (how clients reach it).
    advertised_host: str = "127.0.0.1"
    #: Largest frame accepted from either side (Kafka's ``socket.request.max.bytes``).
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    max_queued_requests: int = DEFAULT_MAX_QUEUED_REQUESTS
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES
    upstream_in_flight: int = DEFAULT_UPSTREAM_IN_FLIGHT
    #: The client id the proxy's own upstream requests (ApiVersions) carry; relayed requests keep
    #: their client's.
    client_id: str = "kafka-wire-proxy"
    #: How long the upstream may take to answer the proxy's ApiVersions (None: forever).
    connect_timeout_ms: int | None = 30_000

    def __post_init__(self) -> None:
        for name in ("max_queued_requests", "max_buffered_bytes", "upstream_in_flight"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_frame_bytes < 12:
            raise ValueError("max_frame_bytes must be at least 12")


@dataclass(slots=True)
class Proxy:
    """What every connection of one proxy shares (see the module docstring).

    ``upstreams`` are the bootstrap brokers, each with its proxy port (None: the next one the
    allocator gives). ``allocate`` gives ports for brokers seen later (default: counting up from
    the first bootstrap port).
    """

    upstreams: Sequence[tuple[str, int, int | None]]
    filters: Sequence[Filter] = ()
    config: ProxyConfig = field(default_factory=ProxyConfig)
    allocate: Callable[[], int] | None = None
    book: AddressBook = field(init=False)
    _next_id: int = field(init=False, default=0)
    #: The request versions kafka_wire decodes, and the api keys no filter reads: worked out once,
    #: here, which loads every message class (seconds on a loaded machine) before the first client.
    _ours: dict[int, tuple[int, int]] = field(init=False)
    _passthrough: frozenset[int] = field(init=False)

    def __post_init__(self) -> None:
        if not self.upstreams:
            raise ValueError("a proxy needs at least one upstream")
        first = next((p for _, _, p in self.upstreams if p), 0)
        allocate = self.allocate or counting_ports(first or 9092)
        self.book = AddressBook(self.config.advertised_host, allocate)
        for host, port, listen in self.upstreams:
            self.book.add(host, port, listen)
        self._ours = all_api_versions()
        self._passthrough = frozenset(
            k for k in REQUESTS if k != ApiKey.API_VERSIONS and not self.decodes_request(k)
        )

    def open(self, port: int, client: str, now_ms: int) -> ProxyPair:
        """A pair for a client that connected to proxy ``port``; connect it to ``pair.upstream``."""
        route = self.book.route(port)
        if route is None:
            raise LocalProtocolError(f"no upstream is routed to proxy port {port}")
        self._next_id += 1
        info = ConnectionInfo(self._next_id, client, port, f"{route.upstream_host}:{route.upstream_port}")
        return ProxyPair(self, info, route, now_ms)

    def closed(self, pair: ProxyPair) -> None:
        """The adapter closed both of ``pair``'s sockets: filters forget the connection."""
        for f in self.filters:
            f.on_close(pair.info)

    # -- what the chain needs to decode --------------------------------------------------------

    def decodes_request(self, api_key: int) -> bool:
        return any(f.decodes_request(api_key) for f in self.filters)

    def decodes_response(self, api_key: int, api_version: int) -> bool:
        return bool(address_paths(api_key, api_version)) or any(
            f.wants_response(api_key) for f in self.filters
        )

    def passthrough(self) -> frozenset[int]:
        """Api keys whose requests no filter reads: relayed undecoded."""
        return self._passthrough

    def offer(self, upstream: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        """The versions offered to clients: per api key what the upstream, kafka_wire's codec and
        every filter support (``upstream`` is what the upstream and kafka_wire agreed on)."""
        ours = self._ours
        offered: dict[int, tuple[int, int]] = {}
        for key, (lo, hi) in sorted(upstream.items()):
            if key not in ours:
                continue
            lo, hi = max(lo, ours[key][0], _VERSION_FLOORS.get(key, 0)), min(hi, ours[key][1])
            for f in self.filters:
                limit = f.api_versions().get(key)
                if limit is not None:
                    lo, hi = max(lo, limit[0]), min(hi, limit[1])
            if lo <= hi:
                offered[key] = (lo, hi)
        return offered
