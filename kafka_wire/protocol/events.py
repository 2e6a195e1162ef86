"""What connections hand back: events, and the ``NEED_DATA`` sentinel.

Events are small frozen values. ``ClientConnection.next_event()`` yields :class:`Response`,
:class:`VersionsNegotiated`, :class:`Authenticated`, :class:`RequestTimedOut` and
:class:`ConnectionClosed`; ``ServerConnection.next_event()`` yields :class:`Request`,
:class:`UnsupportedRequest`, :class:`Authenticated`, :class:`AuthenticationFailed` and
:class:`ConnectionClosed`. Either returns ``NEED_DATA`` when it has no complete frame; a server
at its in-flight limit returns ``PAUSED`` until responses go out. In passthrough (a proxy's use),
frames of the api keys asked for stay undecoded: :class:`RawRequest` on a server,
:class:`RawResponse` on a client.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final, Literal

from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.messages import (
        ApiVersionsResponse,
        RequestHeader,
        ResponseHeader,
    )


class _Sentinel(enum.Enum):
    NEED_DATA = "NEED_DATA"
    PAUSED = "PAUSED"

    def __repr__(self) -> str:
        return self.value

    __str__ = __repr__


#: ``next_event()`` found no complete frame: feed more bytes with ``receive_data``.
NEED_DATA: Final = _Sentinel.NEED_DATA
NeedData = Literal[_Sentinel.NEED_DATA]
#: ``ServerConnection.next_event()``: the connection holds its in-flight limit of requests
#: unanswered (Kafka's muted channel); send responses, then ask again.
PAUSED: Final = _Sentinel.PAUSED
Paused = Literal[_Sentinel.PAUSED]


def expects_response(body: Message) -> bool:
    """False only for a Produce request with ``acks=0``: the broker sends nothing back."""
    return not (body.API_KEY == ApiKey.PRODUCE and getattr(body, "acks", -1) == 0)


@dataclass(frozen=True, slots=True)
class Response:
    """A response: received by a client, or built by a server (``Request.reply``) to send.

    ``request`` and ``context`` are the request this answers and whatever the caller passed to
    ``ClientConnection.send(..., context=...)`` (a send time, a future, a retry count).
    ``header`` is None on a response a server has built but not yet sent.
    """

    body: Message
    api_key: int
    api_version: int
    correlation_id: int
    header: ResponseHeader | None = None
    request: Message | None = None
    context: object = None


class HeaderFields:
    """``api_key``, ``api_version`` and ``correlation_id`` read from a ``header`` attribute (a
    :class:`~kafka_wire.messages.RequestHeader`)."""

    __slots__ = ()
    header: RequestHeader

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id


@dataclass(frozen=True, slots=True)
class Request(HeaderFields):
    """A request a server received: the header and the typed body."""

    header: RequestHeader
    body: Message
    #: Bytes the client sent after the body (librdkafka sends some; Kafka ignores them).
    trailing: bytes = b""

    @property
    def expects_response(self) -> bool:
        return expects_response(self.body)

    def reply(self, body: Message) -> Response:
        """The response event answering this request, for ``ServerConnection.send``."""
        return Response(
            body=body,
            api_key=self.api_key,
            api_version=self.api_version,
            correlation_id=self.correlation_id,
            request=self.body,
        )


@dataclass(frozen=True, slots=True)
class RawRequest(HeaderFields):
    """A request a server in passthrough received and did not decode (``ServerConfig.passthrough``):
    the decoded header and the whole frame, size prefix included. Answer it with
    ``ServerConnection.send_raw``."""

    header: RequestHeader
    frame: bytes
    #: False for a Produce request with ``acks=0`` (read from the frame without decoding the body).
    expects_response: bool = True


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A response to a frame sent with ``ClientConnection.send_raw(..., decode=False)``: the whole
    response frame, size prefix included, undecoded."""

    frame: bytes
    api_key: int
    api_version: int
    correlation_id: int
    context: object = None


@dataclass(frozen=True, slots=True)
class UnsupportedRequest:
    """A request with an API key or version the server does not support.

    Answer it with ``ServerConnection.reject(event)``, which does what Kafka does: an ApiVersions
    v0 response with UNSUPPORTED_VERSION for ApiVersions, closing the connection otherwise.
    """

    api_key: int
    api_version: int
    correlation_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class VersionsNegotiated:
    """The ApiVersions exchange finished; ``api_versions`` maps api key to the (min, max) both sides support."""

    api_versions: Mapping[int, tuple[int, int]]
    response: ApiVersionsResponse
    #: The ApiVersions version the exchange ended with (lower than first tried after a retry).
    api_version: int


@dataclass(frozen=True, slots=True)
class Authenticated:
    """SASL authentication succeeded."""

    mechanism: str
    #: The authenticated user (server side); empty on the client.
    principal: str = ""
    #: Re-authentication deadline the server granted (KIP-368), 0 for none.
    session_lifetime_ms: int = 0
    #: True when this ended a re-authentication of an open connection (KIP-368).
    reauthentication: bool = False


@dataclass(frozen=True, slots=True)
class AuthenticationFailed:
    """Server side: a client failed to authenticate; the connection must now be closed."""

    mechanism: str
    reason: str
    error_code: int


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The connection is over; ``unanswered`` lists requests that got no response.

    ``reason`` is empty when the peer closed it, else why this side did (``"idle"``: nothing
    happened for ``max_idle_ms``; ``"session expired"``: KIP-368, no re-authentication in time).
    """

    unanswered: tuple[Message, ...] = field(default=())
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RequestTimedOut:
    """Client side: ``request`` got no response within ``request_timeout_ms`` (Kafka's
    ``request.timeout.ms``). As Kafka's client does, the connection is closed (state CLOSED):
    every request in flight fails with it; ``unanswered`` and ``contexts`` list them, oldest first."""

    request: Message | None
    correlation_id: int
    context: object
    unanswered: tuple[Message, ...]
    contexts: tuple[object, ...]


ClientEvent = Response | RawResponse | VersionsNegotiated | Authenticated | RequestTimedOut | ConnectionClosed
ServerEvent = (
    Request | RawRequest | UnsupportedRequest | Authenticated | AuthenticationFailed | ConnectionClosed
)
