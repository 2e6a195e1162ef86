"""``ClientConnection``: the client side of one Kafka connection, as a Sans-IO state machine.

Requests go in and bytes come out (``send``); received bytes go in and events come out
(``receive_data`` / ``next_event``). The connection assigns correlation ids, picks header
versions, negotiates API versions with an ApiVersions exchange, runs the SASL handshake when a
mechanism is given, and matches responses to requests in order. It never reads a clock: round-trip
information travels in the ``context`` the caller passes to ``send``.
"""

from __future__ import annotations

import enum
import struct
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire import __version__
from kafka_wire.codec.structs import Message
from kafka_wire.errors import (
    AuthenticationError,
    DecodeError,
    LocalProtocolError,
    RemoteProtocolError,
    UnsupportedVersionError,
)
from kafka_wire.messages import (
    REQUESTS,
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ErrorCode,
    RequestHeader,
    ResponseHeader,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    ClientEvent,
    ConnectionClosed,
    NeedData,
    Response,
    VersionsNegotiated,
    expects_response,
)
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES, END, Buffer, FrameReader
from kafka_wire.protocol.framing import decode_response, encode_request
from kafka_wire.protocol.sasl.base import SaslClientMechanism

_SIZE: Final = struct.Struct(">i")
_INT16: Final = struct.Struct(">h")
_MAX_CORRELATION_ID: Final = 0x7FFFFFFF
#: How many acks=0 requests at the head of the queue are remembered (to drop a stray answer).
_MAX_NO_RESPONSE_TRACKED: Final = 1024


class ClientState(enum.Enum):
    NEGOTIATING = "NEGOTIATING"
    AUTHENTICATING = "AUTHENTICATING"
    READY = "READY"
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class ClientInput(enum.Enum):
    SEND = "send"
    RECEIVE_DATA = "receive_data"
    RECEIVE_EOF = "receive_eof"
    NEXT_EVENT = "next_event"
    VERSIONS_AGREED = "versions agreed"
    SASL_STARTED = "SASL started"
    AUTHENTICATED = "authenticated"
    PEER_CLOSED = "peer closed"
    CLOSE = "close"


_S = ClientState
_I = ClientInput

#: Every legal move; a call whose (state, input) is missing raises LocalProtocolError and moves to ERROR.
CLIENT_TRANSITIONS: Final[Mapping[tuple[ClientState, ClientInput], ClientState]] = {
    (_S.NEGOTIATING, _I.RECEIVE_DATA): _S.NEGOTIATING,
    (_S.NEGOTIATING, _I.RECEIVE_EOF): _S.NEGOTIATING,
    (_S.NEGOTIATING, _I.NEXT_EVENT): _S.NEGOTIATING,
    (_S.NEGOTIATING, _I.VERSIONS_AGREED): _S.READY,
    (_S.NEGOTIATING, _I.SASL_STARTED): _S.AUTHENTICATING,
    (_S.NEGOTIATING, _I.PEER_CLOSED): _S.CLOSED,
    (_S.NEGOTIATING, _I.CLOSE): _S.CLOSED,
    (_S.AUTHENTICATING, _I.RECEIVE_DATA): _S.AUTHENTICATING,
    (_S.AUTHENTICATING, _I.RECEIVE_EOF): _S.AUTHENTICATING,
    (_S.AUTHENTICATING, _I.NEXT_EVENT): _S.AUTHENTICATING,
    (_S.AUTHENTICATING, _I.AUTHENTICATED): _S.READY,
    (_S.AUTHENTICATING, _I.PEER_CLOSED): _S.CLOSED,
    (_S.AUTHENTICATING, _I.CLOSE): _S.CLOSED,
    (_S.READY, _I.SEND): _S.READY,
    (_S.READY, _I.RECEIVE_DATA): _S.READY,
    (_S.READY, _I.RECEIVE_EOF): _S.READY,
    (_S.READY, _I.NEXT_EVENT): _S.READY,
    (_S.READY, _I.PEER_CLOSED): _S.CLOSED,
    (_S.READY, _I.CLOSE): _S.CLOSED,
    (_S.CLOSED, _I.NEXT_EVENT): _S.CLOSED,
    (_S.CLOSED, _I.CLOSE): _S.CLOSED,
}

#: The ApiVersions version a client tries first: the newest this library knows.
DEFAULT_API_VERSIONS_VERSION: Final = max(ApiVersionsRequest.VERSIONS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    #: Sent in every request header; None is a null client id.
    client_id: str | None = "kafka-wire"
    #: ApiVersions v3+ fields; brokers check them against ``[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?``.
    software_name: str = "kafka-wire"
    software_version: str = __version__
    #: Start with an ApiVersions exchange and pick versions from it (Kafka's clients always do).
    negotiate: bool = True
    #: The ApiVersions version tried first; a broker that lacks it answers UNSUPPORTED_VERSION and
    #: the connection retries with the version the broker names, or v0.
    api_versions_version: int = DEFAULT_API_VERSIONS_VERSION
    #: SaslHandshake version: None picks v1 (tokens in SaslAuthenticate) when the broker has
    #: SaslAuthenticate, v0 (raw tokens) otherwise.
    sasl_handshake_version: int | None = None
    #: Responses larger than this are refused before their body is buffered.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: Refuse bytes after a response body (Kafka's clients ignore them).
    strict: bool = False
    #: The first correlation id (Kafka's Java client starts at 0).
    first_correlation_id: int = 0

    def __post_init__(self) -> None:
        if self.api_versions_version not in ApiVersionsRequest.VERSIONS:
            raise ValueError(f"api_versions_version must be one of {ApiVersionsRequest.VERSIONS}")
        if self.sasl_handshake_version not in (None, *SaslHandshakeRequest.VERSIONS):
            raise ValueError(f"sasl_handshake_version must be None or one of {SaslHandshakeRequest.VERSIONS}")
        if self.max_frame_bytes < 8:
            raise ValueError("max_frame_bytes must be at least 8")
        if not 0 <= self.first_correlation_id <= _MAX_CORRELATION_ID:
            raise ValueError("first_correlation_id must be a non-negative int32")


class _Kind(enum.Enum):
    USER = "user"
    NO_RESPONSE = "no response expected"
    API_VERSIONS = "ApiVersions"
    SASL_HANDSHAKE = "SaslHandshake"
    SASL_AUTHENTICATE = "SaslAuthenticate"
    SASL_RAW = "raw SASL token"


@dataclass(frozen=True, slots=True)
class _InFlight:
    kind: _Kind
    correlation_id: int
    api_key: int
    api_version: int
    request: Message | None
    context: object = None


def _our_versions(api_key: int) -> tuple[int, int] | None:
    cls = REQUESTS.get(api_key)
    return None if cls is None else (min(cls.VERSIONS), max(cls.VERSIONS))


class ClientConnection:
    """The client side of one connection.

    Typical use: write ``data_to_send()`` (the ApiVersions request), feed what arrives to
    ``receive_data`` and call ``next_event`` until :class:`VersionsNegotiated` (then
    :class:`Authenticated` when a SASL mechanism was given); from then on ``send`` requests and
    read :class:`Response` events, answered in the order sent.
    """

    def __init__(self, config: ClientConfig | None = None, *, sasl: SaslClientMechanism | None = None) -> None:
        self.config = config = config or ClientConfig()
        self._sasl = sasl
        self._reader = FrameReader(config.max_frame_bytes)
        self._in_flight: deque[_InFlight] = deque()
        self._out = bytearray()
        self._next_correlation_id = config.first_correlation_id
        self._eof = False
        self._broker_versions: dict[int, tuple[int, int]] = {}
        self._api_versions: dict[int, tuple[int, int]] = {}
        self._sasl_raw = False
        self._state = ClientState.READY
        if config.negotiate:
            self._state = ClientState.NEGOTIATING
            self._send_api_versions(config.api_versions_version)
        elif sasl is not None:
            self._state = ClientState.AUTHENTICATING
            self._start_sasl()

    # -- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> ClientState:
        return self._state

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """Per api key, the (min, max) versions both sides support; empty until negotiated."""
        return self._api_versions

    @property
    def in_flight(self) -> int:
        """Requests sent and awaiting a response (internal ones included)."""
        return sum(1 for f in self._in_flight if f.kind is not _Kind.NO_RESPONSE)

    def pending_contexts(self) -> list[object]:
        """The ``context`` of every request still awaiting its response, oldest first."""
        return [f.context for f in self._in_flight if f.kind is _Kind.USER]

    def _move(self, move: ClientInput) -> None:
        try:
            self._state = CLIENT_TRANSITIONS[(self._state, move)]
        except KeyError:
            state, self._state = self._state, ClientState.ERROR
            raise LocalProtocolError(f"cannot {move.value} in state {state.name}") from None

    def _check(self, move: ClientInput) -> None:
        if (self._state, move) not in CLIENT_TRANSITIONS:
            self._move(move)

    # -- sending -------------------------------------------------------------------------------

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both sides support.

        Raises :class:`UnsupportedVersionError` when there is none. Before negotiation (or with
        ``negotiate=False``) it is the newest version this library knows.
        """
        ours = _our_versions(api_key)
        if ours is None:
            raise UnsupportedVersionError(f"kafka_wire does not know api key {api_key}")
        if not self._broker_versions:
            return ours[1]
        agreed = self._api_versions.get(api_key)
        if agreed is None:
            theirs = self._broker_versions.get(api_key)
            name = REQUESTS[api_key].__name__
            if theirs is None:
                raise UnsupportedVersionError(f"the broker does not support {name}")
            raise UnsupportedVersionError(
                f"no {name} version in common: broker v{theirs[0]}-{theirs[1]}, kafka_wire v{ours[0]}-{ours[1]}"
            )
        return agreed[1]

    def send(self, request: Message, version: int | None = None, *, context: object = None) -> bytes:
        """Frame ``request`` (at ``version``, or the highest both sides support) and return the
        bytes to write, after any bytes the connection had queued itself.

        ``context`` comes back on the :class:`Response`. A Produce request with ``acks=0`` gets
        no response and is not tracked. Encoding errors (``EncodeError``) leave the connection
        as it was: nothing was sent and no correlation id was used.
        """
        self._check(ClientInput.SEND)
        if request.KIND != "request" or request.API_KEY is None:
            self._state = ClientState.ERROR
            raise LocalProtocolError(f"send takes a request, not {type(request).__name__}")
        api_version = self.version_for(request.API_KEY) if version is None else version
        self._write_request(_Kind.USER, request, api_version, context)
        self._move(ClientInput.SEND)
        return self.data_to_send()

    def data_to_send(self) -> bytes:
        """Bytes queued by the connection itself (ApiVersions, SASL) or by ``send``."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def _write_request(self, kind: _Kind, request: Message, api_version: int, context: object = None) -> None:
        correlation_id = self._next_correlation_id
        header = RequestHeader(correlation_id=correlation_id, client_id=self.config.client_id)
        frame = encode_request(header, request, api_version)
        assert request.API_KEY is not None  # checked by encode_request
        self._out += frame
        self._next_correlation_id = 0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        if not expects_response(request):
            kind = _Kind.NO_RESPONSE  # tracked only to tolerate brokers that answer anyway
        self._in_flight.append(_InFlight(kind, correlation_id, request.API_KEY, api_version, request, context))
        while len(self._in_flight) > _MAX_NO_RESPONSE_TRACKED and self._in_flight[0].kind is _Kind.NO_RESPONSE:
            self._in_flight.popleft()

    def _send_api_versions(self, api_version: int) -> None:
        request = ApiVersionsRequest(
            client_software_name=self.config.software_name, client_software_version=self.config.software_version
        )
        self._write_request(_Kind.API_VERSIONS, request, api_version)

    def _start_sasl(self) -> None:
        assert self._sasl is not None
        version = self.config.sasl_handshake_version
        if version is None:
            has_authenticate = not self._broker_versions or ApiKey.SASL_AUTHENTICATE in self._api_versions
            version = 1 if has_authenticate else 0
        self._sasl_raw = version == 0
        self._write_request(_Kind.SASL_HANDSHAKE, SaslHandshakeRequest(mechanism=self._sasl.name), version)

    def _send_token(self, token: bytes) -> None:
        if self._sasl_raw:
            self._out += _SIZE.pack(len(token)) + token
            self._in_flight.append(_InFlight(_Kind.SASL_RAW, -1, -1, -1, None))
        else:
            request = SaslAuthenticateRequest(auth_bytes=token)
            self._write_request(_Kind.SASL_AUTHENTICATE, request, self.version_for(ApiKey.SASL_AUTHENTICATE))

    # -- receiving -----------------------------------------------------------------------------

    def receive_data(self, data: Buffer) -> None:
        """Bytes read from the socket, in any chunking."""
        self._check(ClientInput.RECEIVE_DATA)
        if self._eof:
            self._state = ClientState.ERROR
            raise LocalProtocolError("receive_data after receive_eof")
        self._reader.feed(data)

    def receive_eof(self) -> None:
        """The peer closed its side; ``next_event`` reports :class:`ConnectionClosed` once the
        buffered frames are consumed."""
        self._move(ClientInput.RECEIVE_EOF)
        self._eof = True

    def close(self) -> None:
        """We are closing the connection; later sends fail."""
        self._move(ClientInput.CLOSE)

    def next_event(self) -> ClientEvent | NeedData:
        """The next event, or ``NEED_DATA``.

        Raises :class:`RemoteProtocolError` for a broken response (bad frame, correlation id that
        does not match, undecodable body) and :class:`AuthenticationError` when SASL fails; both
        move the connection to ERROR.
        """
        self._move(ClientInput.NEXT_EVENT)
        try:
            return self._next_event()
        except (RemoteProtocolError, AuthenticationError):
            self._state = ClientState.ERROR
            raise
        except DecodeError as exc:
            self._state = ClientState.ERROR
            raise RemoteProtocolError(f"bad response: {exc}") from exc

    def _next_event(self) -> ClientEvent | NeedData:
        while True:
            if self._state is ClientState.CLOSED:
                return ConnectionClosed(self._unanswered())
            frame = self._reader.next_frame_before(self._eof)
            if frame is None:
                return NEED_DATA
            if frame is END:
                unanswered = self._unanswered()
                self._move(ClientInput.PEER_CLOSED)
                return ConnectionClosed(unanswered)
            event = self._handle_frame(frame)
            if event is not None:
                return event

    def _unanswered(self) -> tuple[Message, ...]:
        return tuple(f.request for f in self._in_flight if f.kind is _Kind.USER and f.request is not None)

    def _handle_frame(self, frame: bytes) -> ClientEvent | None:
        in_flight = self._in_flight
        if in_flight and in_flight[0].kind is _Kind.SASL_RAW:
            in_flight.popleft()
            return self._on_sasl_token(frame[4:])
        if len(frame) < 8:
            raise RemoteProtocolError(f"response of {len(frame) - 4} bytes has no correlation id")
        (correlation_id,) = _SIZE.unpack_from(frame, 4)
        while in_flight and in_flight[0].kind is _Kind.NO_RESPONSE:
            if in_flight.popleft().correlation_id == correlation_id:
                # Leniency: some brokers (Tansu) answer Produce with acks=0; Kafka never does. Drop it.
                return None
        if not in_flight:
            raise RemoteProtocolError(
                f"unsolicited response (correlation id {correlation_id}): no request is in flight"
            )
        pending = in_flight[0]
        if correlation_id != pending.correlation_id:
            raise RemoteProtocolError(
                f"response correlation id {correlation_id} does not match the oldest request in flight "
                f"({REQUESTS[pending.api_key].__name__} v{pending.api_version}, correlation id {pending.correlation_id})"
            )
        header, body = self._decode(frame, pending)
        self._in_flight.popleft()
        if pending.kind is _Kind.USER:
            return Response(
                body=body,
                api_key=pending.api_key,
                api_version=pending.api_version,
                correlation_id=correlation_id,
                header=header,
                request=pending.request,
                context=pending.context,
            )
        if isinstance(body, ApiVersionsResponse):
            return self._on_api_versions(body, pending.api_version)
        if isinstance(body, SaslHandshakeResponse):
            self._on_sasl_handshake(body)
            return None
        assert isinstance(body, SaslAuthenticateResponse)
        if body.error_code != ErrorCode.NONE:
            raise AuthenticationError(
                body.error_message or f"SASL authentication failed ({ErrorCode.lookup(body.error_code)!r})",
                error_code=body.error_code,
            )
        return self._on_sasl_token(body.auth_bytes, body.session_lifetime_ms)

    def _decode(self, frame: bytes, pending: _InFlight) -> tuple[ResponseHeader, Message]:
        api_key, api_version, strict = pending.api_key, pending.api_version, self.config.strict
        if api_key == ApiKey.API_VERSIONS and api_version > 0 and len(frame) >= 10:
            # A broker that lacks the version we asked for answers in v0 (KIP-511).
            (error_code,) = _INT16.unpack_from(frame, 8)
            if error_code == ErrorCode.UNSUPPORTED_VERSION:
                try:
                    return decode_response(frame, api_key, 0, strict=strict)
                except DecodeError:
                    pass
        return decode_response(frame, api_key, api_version, strict=strict)

    def _on_api_versions(self, body: ApiVersionsResponse, api_version: int) -> ClientEvent | None:
        if body.error_code == ErrorCode.UNSUPPORTED_VERSION:
            offered = [k.max_version for k in body.api_keys if k.api_key == ApiKey.API_VERSIONS]
            retry = min(offered[0], api_version - 1) if offered else 0
            if api_version == 0 or retry < 0:
                raise RemoteProtocolError("the broker refused ApiVersions v0 as UNSUPPORTED_VERSION")
            self._send_api_versions(max(retry, 0))
            return None
        if body.error_code != ErrorCode.NONE:
            raise RemoteProtocolError(f"ApiVersions failed: {ErrorCode.lookup(body.error_code)!r}")
        broker = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        agreed: dict[int, tuple[int, int]] = {}
        for api_key, (lo, hi) in broker.items():
            ours = _our_versions(api_key)
            if ours is not None and max(lo, ours[0]) <= min(hi, ours[1]):
                agreed[api_key] = (max(lo, ours[0]), min(hi, ours[1]))
        self._broker_versions, self._api_versions = broker, agreed
        event = VersionsNegotiated(api_versions=dict(agreed), response=body, api_version=api_version)
        if self._sasl is None:
            self._move(ClientInput.VERSIONS_AGREED)
        else:
            self._move(ClientInput.SASL_STARTED)
            self._start_sasl()
        return event

    def _on_sasl_handshake(self, body: SaslHandshakeResponse) -> None:
        assert self._sasl is not None
        if body.error_code != ErrorCode.NONE:
            raise AuthenticationError(
                f"the broker refused SASL mechanism {self._sasl.name} ({ErrorCode.lookup(body.error_code)!r}); "
                f"it enables {', '.join(body.mechanisms) or 'none'}",
                error_code=body.error_code,
            )
        self._send_token(self._sasl.initial_response())

    def _on_sasl_token(self, token: bytes, session_lifetime_ms: int = 0) -> ClientEvent | None:
        assert self._sasl is not None
        reply = self._sasl.step(token)
        if reply is not None:
            self._send_token(reply)
            return None
        self._move(ClientInput.AUTHENTICATED)
        return Authenticated(mechanism=self._sasl.name, session_lifetime_ms=session_lifetime_ms)
