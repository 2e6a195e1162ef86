"""The records a :class:`~kafka_wire.proxy.pair.ProxyPair` keeps per request: one request and its
response on their way through the filter chain (:class:`Exchange`), and its place in the order the
client is answered in (:class:`Reply`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_wire.codec.structs import Message
from kafka_wire.messages import RequestHeader
from kafka_wire.protocol.server import ServerConnection
from kafka_wire.proxy.filters import Call


@dataclass(slots=True, eq=False)
class Reply:
    """A request's place in the client's answer order; ``send`` is set once its answer is ready."""

    send: Callable[[ServerConnection], bytes] | None = None


@dataclass(slots=True, eq=False)
class Exchange:
    """One request and its response on their way through the chain."""

    correlation_id: int
    header: RequestHeader
    #: The client's frame (None when a filter decoded it: re-encoded on the way out).
    frame: bytes | None
    call: Call | None
    expects_response: bool
    #: The upstream's response frame, once it came.
    response_frame: bytes | None = None
    #: The next filter to run (requests count up, responses down).
    step: int = 0
    #: When a Delay ends (None: not delayed).
    wake_ms: int | None = None
    #: Waiting for an async filter's verdict (its token).
    token: int | None = None
    #: The decoded response when no filter reads the call (addresses only).
    response: Message | None = None
    decoded: bool = False
    #: A filter or the address book changed the response: it must be re-encoded.
    changed: bool = False
    #: Its place in the answer order (None: no response expected).
    reply: Reply | None = None


def take_chunks(chunks: list[bytes]) -> bytes:
    """The chunks as one ``bytes``, emptied: a single chunk (a relayed frame) is not copied."""
    out = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    chunks.clear()
    return out
