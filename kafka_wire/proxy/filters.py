"""The filter API: what a proxy filter sees and what it may decide.

A filter is a :class:`Filter` subclass. It names the api keys whose requests and responses it
wants to see decoded (``request_keys`` / ``response_keys``); every other frame passes it by
undecoded. For each request it sees, :meth:`Filter.on_request` gets a :class:`Call` (the header,
the generated request class, the connection) and returns a verdict:

- :data:`FORWARD`: pass it on (the filter may have changed ``call.body`` in place, or set a new one);
- :class:`Answer`: answer the client itself with a response body; the upstream never sees it;
- :class:`Delay`: hold it ``ms`` milliseconds, then pass it on;
- :class:`Close`: close the client's connection (and its upstream connection).

:meth:`Filter.on_response` does the same for the response (``call.response``); an Answer there
replaces the response. Either may instead return an awaitable of a verdict (an ``async def``
method): the proxy core hands it to its adapter as an effect and resumes the chain with its
result, so a filter may call a key service or a policy server. A filter that raises closes its
connection with a log line; the proxy goes on. Filters run in chain order for requests and in
reverse order for responses; a connection's exchanges keep their order through the chain.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal

from kafka_wire.codec.structs import Message
from kafka_wire.messages import RequestHeader
from kafka_wire.protocol.events import HeaderFields


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """Who a proxied connection belongs to."""

    #: The proxy's own number for the connection, unique per proxy.
    connection_id: int
    #: The client's address as the adapter saw it ("127.0.0.1:53211"), or a simulated name.
    client: str
    #: The proxy port the client connected to.
    port: int
    #: The upstream broker's "host:port".
    upstream: str


@dataclass(slots=True, eq=False)
class Call(HeaderFields):
    """One request on its way through the chain, and later its response."""

    connection: ConnectionInfo
    header: RequestHeader
    #: The request; a filter may change it in place or replace it.
    body: Message
    #: The response once it arrived (in ``on_response``); a filter may change it or replace it.
    response: Message | None = None
    #: What filters want to remember between a request and its response (keyed by filter name).
    notes: dict[str, object] = field(default_factory=dict)


class _Forward(enum.Enum):
    FORWARD = "FORWARD"


#: Pass the request (or response) on, as it now is.
FORWARD: Final = _Forward.FORWARD


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer the client with ``body`` (a response of the request's api key) instead."""

    body: Message


@dataclass(frozen=True, slots=True)
class Delay:
    """Hold the request (or response) ``ms`` milliseconds, then go on with the next filter."""

    ms: int


@dataclass(frozen=True, slots=True)
class Close:
    """Close the client's connection; ``reason`` goes to the log."""

    reason: str


Verdict = Literal[_Forward.FORWARD] | Answer | Delay | Close
#: What a filter method returns: a verdict now, or an awaitable of one (run by the adapter).
Outcome = Verdict | Awaitable[Verdict]

#: ``request_keys`` / ``response_keys`` value meaning every api key.
ALL_KEYS: Final = frozenset(range(-1, 0))


class Filter:
    """Base class of proxy filters (see the module docstring); override what you need.

    One filter object serves every connection of a proxy: keep per-connection state in
    ``call.notes`` or keyed by ``call.connection.connection_id`` (:meth:`on_close` tells when a
    connection ends).
    """

    #: The name in logs and in ``Call.notes``.
    name: ClassVar[str] = "filter"
    #: Api keys whose requests :meth:`on_request` sees (decoded); ``ALL_KEYS`` for every one.
    request_keys: frozenset[int] = frozenset()
    #: Api keys whose responses :meth:`on_response` sees (decoded); the request of such a call is
    #: decoded too.
    response_keys: frozenset[int] = frozenset()

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """Per api key the versions this filter understands, when fewer than kafka_wire decodes;
        the proxy offers clients only what every filter and the upstream support."""
        return {}

    def on_request(self, call: Call) -> Outcome:
        return FORWARD

    def on_response(self, call: Call) -> Outcome:
        return FORWARD

    def on_close(self, connection: ConnectionInfo) -> None:
        """The connection ended (its state may be dropped)."""

    def wants_request(self, api_key: int) -> bool:
        """Whether :meth:`on_request` sees requests of ``api_key``."""
        keys = self.request_keys
        return keys is ALL_KEYS or api_key in keys

    def decodes_request(self, api_key: int) -> bool:
        """Whether requests of ``api_key`` are decoded for this filter (it sees them, or their
        responses: a call carries both)."""
        return self.wants_request(api_key) or self.wants_response(api_key)

    def wants_response(self, api_key: int) -> bool:
        keys = self.response_keys
        return keys is ALL_KEYS or api_key in keys
