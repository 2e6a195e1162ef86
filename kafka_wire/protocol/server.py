"""``ServerConnection``: the broker (or proxy) side of one Kafka connection, Sans-IO.

Received bytes become :class:`Request` events with typed bodies; responses built with
``Request.reply(body)`` go to ``send`` and come back as bytes, always in the order the requests
arrived, whatever order the server answers them in. Requests of an API key or version the server
does not support become :class:`UnsupportedRequest` events, answered Kafka's way by ``reject``.
With a :class:`ServerSasl` gate, nothing but ApiVersions, SaslHandshake and SaslAuthenticate is
accepted until a client authenticates; the connection runs the SASL exchange itself.
"""

from __future__ import annotations

import enum
import struct
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import (
    AuthenticationError,
    DecodeError,
    LocalProtocolError,
    RemoteProtocolError,
    UnsupportedApiError,
)
from kafka_wire.messages import (
    REQUESTS,
    ApiKey,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ErrorCode,
    ResponseHeader,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    AuthenticationFailed,
    ConnectionClosed,
    NeedData,
    Request,
    Response,
    ServerEvent,
    UnsupportedRequest,
)
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES, END, Buffer, FrameReader
from kafka_wire.protocol.framing import decode_request_frame, encode_response
from kafka_wire.protocol.sasl.base import SaslServerMechanism

_SIZE: Final = struct.Struct(">i")

#: Kafka's ``sasl.server.max.receive.size``: the largest frame accepted before authentication.
DEFAULT_MAX_PREAUTH_FRAME_BYTES: Final = 512 * 1024


class ServerState(enum.Enum):
    #: SASL gate: only ApiVersions and SaslHandshake are accepted.
    AWAITING_HANDSHAKE = "AWAITING_HANDSHAKE"
    #: After SaslHandshake v1: only SaslAuthenticate is accepted.
    AUTHENTICATING = "AUTHENTICATING"
    #: After SaslHandshake v0: the next frames are raw SASL tokens.
    AWAITING_TOKEN = "AWAITING_TOKEN"
    READY = "READY"
    #: The server decided to end the connection (failed authentication, a rejected request):
    #: write ``data_to_send()`` and close.
    MUST_CLOSE = "MUST_CLOSE"
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class ServerInput(enum.Enum):
    RECEIVE_DATA = "receive_data"
    RECEIVE_EOF = "receive_eof"
    NEXT_EVENT = "next_event"
    SEND = "send"
    REJECT = "reject"
    HANDSHAKE_V0 = "SaslHandshake v0"
    HANDSHAKE_V1 = "SaslHandshake v1"
    AUTHENTICATED = "authenticated"
    GIVE_UP = "give up"
    PEER_CLOSED = "peer closed"
    CLOSE = "close"


_S = ServerState
_I = ServerInput
_OPEN: Final = (_S.AWAITING_HANDSHAKE, _S.AUTHENTICATING, _S.AWAITING_TOKEN, _S.READY)


def _table() -> dict[tuple[ServerState, ServerInput], ServerState]:
    table: dict[tuple[ServerState, ServerInput], ServerState] = {}
    for state in _OPEN:
        for move in (_I.RECEIVE_DATA, _I.RECEIVE_EOF, _I.NEXT_EVENT, _I.SEND, _I.REJECT):
            table[state, move] = state
        table[state, _I.GIVE_UP] = _S.MUST_CLOSE
        table[state, _I.PEER_CLOSED] = _S.CLOSED
        table[state, _I.CLOSE] = _S.CLOSED
    table[_S.AWAITING_HANDSHAKE, _I.HANDSHAKE_V0] = _S.AWAITING_TOKEN
    table[_S.AWAITING_HANDSHAKE, _I.HANDSHAKE_V1] = _S.AUTHENTICATING
    table[_S.AUTHENTICATING, _I.AUTHENTICATED] = _S.READY
    table[_S.AWAITING_TOKEN, _I.AUTHENTICATED] = _S.READY
    for state in (_S.MUST_CLOSE, _S.CLOSED):
        table[state, _I.RECEIVE_DATA] = state  # ignored: the connection is over
        table[state, _I.RECEIVE_EOF] = state
        table[state, _I.NEXT_EVENT] = state
        table[state, _I.CLOSE] = _S.CLOSED
    return table


#: Every legal move; a call whose (state, input) is missing raises LocalProtocolError and moves to ERROR.
SERVER_TRANSITIONS: Final[Mapping[tuple[ServerState, ServerInput], ServerState]] = _table()

#: Requests a client may send before it has authenticated, per gate state.
_PREAUTH: Final[Mapping[ServerState, frozenset[int]]] = {
    _S.AWAITING_HANDSHAKE: frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}),
    _S.AUTHENTICATING: frozenset({ApiKey.SASL_AUTHENTICATE}),
}


def all_api_versions() -> dict[int, tuple[int, int]]:
    """Per api key, the (min, max) request versions this library can decode."""
    return {key: (min(cls.VERSIONS), max(cls.VERSIONS)) for key, cls in sorted(REQUESTS.items())}


def api_versions_response(api_versions: Mapping[int, tuple[int, int]]) -> ApiVersionsResponse:
    """An ApiVersions response body listing ``api_versions`` in api key order."""
    return ApiVersionsResponse(
        api_keys=[
            ApiVersionsResponseApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, (lo, hi) in sorted(api_versions.items())
        ]
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    #: Per api key, the (min, max) versions the server accepts; None accepts every version this
    #: library can decode. Others become :class:`UnsupportedRequest` events.
    api_versions: Mapping[int, tuple[int, int]] | None = None
    #: Kafka's ``socket.request.max.bytes`` default; checked before a body is buffered.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: The frame limit until a SASL client has authenticated.
    max_preauth_frame_bytes: int = DEFAULT_MAX_PREAUTH_FRAME_BYTES
    #: Refuse bytes after a request body (Kafka accepts them).
    strict: bool = False

    def __post_init__(self) -> None:
        if self.max_frame_bytes < 12 or self.max_preauth_frame_bytes < 12:
            raise ValueError("frame limits must be at least 12 bytes (a request header)")
        for key, (lo, hi) in (self.api_versions or {}).items():
            cls = REQUESTS.get(key)
            if cls is None or lo > hi or lo not in cls.VERSIONS or hi not in cls.VERSIONS:
                raise ValueError(f"api_versions[{key}] = ({lo}, {hi}) is not a range this library can decode")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSasl:
    """The SASL gate: mechanism name to a factory making a fresh server mechanism per attempt."""

    mechanisms: Mapping[str, Callable[[], SaslServerMechanism]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.mechanisms:
            raise ValueError("a SASL gate needs at least one mechanism")


@dataclass(slots=True)
class _Slot:
    """One response owed, in arrival order; ``data`` is None until it is ready."""

    correlation_id: int
    api_key: int
    api_version: int
    request: Message | None
    #: The encoded response: bytes, and opaque parts standing for bytes (file regions) when it
    #: was built with :meth:`ServerConnection.send_spliced`.
    data: tuple[object, ...] | None = None


@dataclass(frozen=True, slots=True)
class Splice:
    """A span of an encoded response to replace: the ``size`` bytes starting with ``tag`` become
    ``parts`` (bytes, and objects standing for ``size`` bytes in all, such as file regions a driver
    sends with ``sendfile``). The response carries ``tag`` padded to ``size`` where the parts go,
    so every length prefix is already right."""

    tag: bytes
    size: int
    parts: tuple[object, ...]


class ServerConnection:
    """The server side of one connection (see the module docstring)."""

    def __init__(self, config: ServerConfig | None = None, *, sasl: ServerSasl | None = None) -> None:
        self.config = config = config or ServerConfig()
        self._versions = dict(config.api_versions) if config.api_versions is not None else all_api_versions()
        if sasl is not None:  # the gate needs its two APIs whatever the table says
            for api in (SaslHandshakeRequest, SaslAuthenticateRequest):
                assert api.API_KEY is not None
                self._versions.setdefault(api.API_KEY, (min(api.VERSIONS), max(api.VERSIONS)))
        self._sasl = sasl
        self._mechanism: SaslServerMechanism | None = None
        self._mechanism_name = ""
        self._reader = FrameReader(config.max_preauth_frame_bytes if sasl else config.max_frame_bytes)
        self._slots: deque[_Slot] = deque()
        #: Slots without their response yet (kept as a count: servers ask after every request).
        self._owed = 0
        self._eof = False
        self._state = ServerState.AWAITING_HANDSHAKE if sasl else ServerState.READY
        self.principal = ""

    @property
    def state(self) -> ServerState:
        return self._state

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self._versions

    @property
    def must_close(self) -> bool:
        """True when the adapter should write ``data_to_send()`` and close the socket."""
        return self._state in (ServerState.MUST_CLOSE, ServerState.ERROR)

    @property
    def responses_owed(self) -> int:
        """Requests received and not answered yet (a server that reads one request at a time, as
        Kafka does, stops decoding while this is not zero)."""
        return self._owed

    @property
    def buffered_bytes(self) -> int:
        """Bytes received and not yet returned as a request: the start of a frame in progress,
        or frames not decoded yet."""
        return self._reader.buffered

    def _move(self, move: ServerInput) -> None:
        try:
            self._state = SERVER_TRANSITIONS[(self._state, move)]
        except KeyError:
            state, self._state = self._state, ServerState.ERROR
            raise LocalProtocolError(f"cannot {move.value} in state {state.name}") from None

    def _check(self, move: ServerInput) -> None:
        if (self._state, move) not in SERVER_TRANSITIONS:
            self._move(move)

    # -- output --------------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Responses that are ready, in request order.

        Stops before a response built with :meth:`send_spliced`: :meth:`parts_to_send` gives it.
        """
        count = 0
        for slot in self._slots:
            if slot.data is None or not all(isinstance(part, bytes) for part in slot.data):
                break
            count += 1
        return b"".join(part for data in self._take(count) for part in data if isinstance(part, bytes))

    def parts_to_send(self) -> list[object]:
        """Like :meth:`data_to_send`, keeping spliced parts: adjacent bytes are joined."""
        count = 0
        for slot in self._slots:
            if slot.data is None:
                break
            count += 1
        parts: list[object] = []
        for data in self._take(count):
            for part in data:
                if isinstance(part, bytes) and parts and isinstance(parts[-1], bytes):
                    parts[-1] += part
                else:
                    parts.append(part)
        return parts

    def _take(self, count: int) -> list[tuple[object, ...]]:
        taken = []
        for _ in range(count):
            data = self._slots.popleft().data
            assert data is not None
            taken.append(data)
        return taken

    def _slot_for(self, response: Response) -> _Slot:
        self._check(ServerInput.SEND)
        slot = next(
            (s for s in self._slots if s.correlation_id == response.correlation_id and s.data is None), None
        )
        if slot is None:
            self._state = ServerState.ERROR
            raise LocalProtocolError(f"no request with correlation id {response.correlation_id} awaits a response")
        if (response.api_key, response.api_version) != (slot.api_key, slot.api_version) or (
            response.body.API_KEY != slot.api_key
        ):
            self._state = ServerState.ERROR
            raise LocalProtocolError(
                f"correlation id {slot.correlation_id} asked api {slot.api_key} v{slot.api_version}; "
                f"got {type(response.body).__name__} v{response.api_version}"
            )
        return slot

    def send(self, response: Response) -> bytes:
        """Queue the response to a :class:`Request` (from ``request.reply(body)``) and return the
        bytes now ready to write: responses are released in the order requests arrived.

        An ``EncodeError`` leaves the connection as it was.
        """
        slot = self._slot_for(response)
        slot.data = (encode_response(ResponseHeader(correlation_id=slot.correlation_id), response.body, slot.api_version),)
        self._owed -= 1
        self._move(ServerInput.SEND)
        return self.data_to_send()

    def send_spliced(self, response: Response, splices: Sequence[Splice]) -> list[object]:
        """Like :meth:`send`, replacing each splice's span of the encoded frame by its parts (in the
        order the tags appear); returns the parts now ready to write (see :meth:`parts_to_send`)."""
        slot = self._slot_for(response)
        frame = encode_response(ResponseHeader(correlation_id=slot.correlation_id), response.body, slot.api_version)
        parts: list[object] = []
        position = 0
        for splice in splices:
            found = frame.find(splice.tag, position)
            if found < 0 or found + splice.size > len(frame):
                self._state = ServerState.ERROR
                raise LocalProtocolError(f"splice tag {splice.tag!r} is not in the encoded response")
            parts.append(frame[position:found])
            parts.extend(splice.parts)
            position = found + splice.size
        parts.append(frame[position:])
        slot.data = tuple(p for p in parts if not (isinstance(p, bytes) and not p))
        self._owed -= 1
        self._move(ServerInput.SEND)
        return self.parts_to_send()

    def reject(self, event: UnsupportedRequest) -> bytes:
        """Answer an unsupported request as Kafka does and return the bytes to write.

        An ApiVersions request of an unknown version gets an ApiVersions v0 response with
        UNSUPPORTED_VERSION that names the ApiVersions versions we support, so the client retries;
        anything else closes the connection (state MUST_CLOSE).
        """
        self._check(ServerInput.REJECT)
        slot = next((s for s in self._slots if s.correlation_id == event.correlation_id and s.data is None), None)
        if slot is None or slot.request is not None:
            self._state = ServerState.ERROR
            raise LocalProtocolError(f"no unsupported request with correlation id {event.correlation_id} is pending")
        if event.api_key == ApiKey.API_VERSIONS and ApiKey.API_VERSIONS in self._versions:
            body = api_versions_response({ApiKey.API_VERSIONS: self._versions[ApiKey.API_VERSIONS]})
            body.error_code = ErrorCode.UNSUPPORTED_VERSION
            slot.data = (encode_response(ResponseHeader(correlation_id=event.correlation_id), body, 0),)
            self._owed -= 1
            self._move(ServerInput.REJECT)
        else:
            self._slots.remove(slot)
            self._owed -= 1
            self._move(ServerInput.GIVE_UP)
        return self.data_to_send()

    def close(self) -> None:
        """The server is closing this connection."""
        self._move(ServerInput.CLOSE)

    # -- input ---------------------------------------------------------------------------------

    def receive_data(self, data: Buffer) -> None:
        self._check(ServerInput.RECEIVE_DATA)
        if self._eof:
            self._state = ServerState.ERROR
            raise LocalProtocolError("receive_data after receive_eof")
        if self._state in _OPEN:
            self._reader.feed(data)

    def receive_eof(self) -> None:
        self._move(ServerInput.RECEIVE_EOF)
        self._eof = True

    def next_event(self) -> ServerEvent | NeedData:
        """The next event, or ``NEED_DATA``.

        Raises :class:`RemoteProtocolError` (state ERROR; close the socket) for bytes that are
        not a request: a bad size, a frame over the limit, an undecodable body, a request not
        allowed before authentication. Kafka closes the connection in each case.
        """
        self._move(ServerInput.NEXT_EVENT)
        try:
            return self._next_event()
        except RemoteProtocolError:
            self._state = ServerState.ERROR
            raise
        except DecodeError as exc:
            self._state = ServerState.ERROR
            raise RemoteProtocolError(f"bad request: {exc}") from exc

    def _next_event(self) -> ServerEvent | NeedData:
        while True:
            if self._state not in _OPEN:
                return ConnectionClosed(self._unanswered())
            frame = self._reader.next_frame_before(self._eof)
            if frame is None:
                return NEED_DATA
            if frame is END:
                unanswered = self._unanswered()
                self._move(ServerInput.PEER_CLOSED)
                return ConnectionClosed(unanswered)
            event = self._on_token(frame[4:]) if self._state is ServerState.AWAITING_TOKEN else self._on_frame(frame)
            if event is not None:
                return event

    def _unanswered(self) -> tuple[Message, ...]:
        return tuple(s.request for s in self._slots if s.data is None and s.request is not None)

    def _on_frame(self, frame: bytes) -> ServerEvent | None:
        allowed = _PREAUTH.get(self._state)
        try:
            decoded = decode_request_frame(frame, strict=self.config.strict)
        except UnsupportedApiError as exc:
            api_key, api_version = exc.api_key or 0, exc.version or 0
            if allowed is not None and api_key not in allowed:
                raise self._not_allowed(api_key) from exc
            return self._unsupported(api_key, api_version, exc.correlation_id, exc.reason)
        header, body = decoded.header, decoded.body
        if allowed is not None and header.request_api_key not in allowed:
            raise self._not_allowed(header.request_api_key)
        lo, hi = self._versions.get(header.request_api_key, (0, -1))
        if not lo <= header.request_api_version <= hi:
            reason = f"unsupported version: api {header.request_api_key} v{header.request_api_version}"
            return self._unsupported(header.request_api_key, header.request_api_version, header.correlation_id, reason)
        request = Request(header, body, decoded.trailing)
        if self._sasl is not None:
            if self._state is ServerState.READY and isinstance(body, SaslHandshakeRequest | SaslAuthenticateRequest):
                # Kafka answers these after authentication (without re-authentication) with ILLEGAL_SASL_STATE.
                illegal = ErrorCode.ILLEGAL_SASL_STATE
                refusal = (
                    SaslHandshakeResponse(error_code=illegal, mechanisms=list(self._sasl.mechanisms))
                    if isinstance(body, SaslHandshakeRequest)
                    else SaslAuthenticateResponse(error_code=illegal, error_message="already authenticated")
                )
                self._answer(request, refusal)
                return None
            if isinstance(body, SaslHandshakeRequest):
                return self._on_handshake(request, body)
            if isinstance(body, SaslAuthenticateRequest):
                return self._on_authenticate(request, body)
        if request.expects_response:
            self._slots.append(_Slot(header.correlation_id, header.request_api_key, header.request_api_version, body))
            self._owed += 1
        return request

    def _not_allowed(self, api_key: int) -> RemoteProtocolError:
        name = REQUESTS[api_key].__name__ if api_key in REQUESTS else f"api key {api_key}"
        return RemoteProtocolError(f"{name} is not allowed in state {self._state.name} (before SASL authentication)")

    def _unsupported(self, api_key: int, api_version: int, correlation_id: int, reason: str) -> UnsupportedRequest:
        self._slots.append(_Slot(correlation_id, api_key, api_version, None))
        self._owed += 1
        return UnsupportedRequest(api_key=api_key, api_version=api_version, correlation_id=correlation_id, reason=reason)

    def _answer(self, request: Request, body: Message) -> None:
        data = encode_response(ResponseHeader(correlation_id=request.correlation_id), body, request.api_version)
        self._slots.append(_Slot(request.correlation_id, request.api_key, request.api_version, request.body, (data,)))

    def _on_handshake(self, request: Request, body: SaslHandshakeRequest) -> ServerEvent | None:
        assert self._sasl is not None
        enabled = list(self._sasl.mechanisms)
        factory = self._sasl.mechanisms.get(body.mechanism)
        if factory is None:
            self._answer(request, SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled))
            self._move(ServerInput.GIVE_UP)
            return AuthenticationFailed(
                mechanism=body.mechanism,
                reason=f"mechanism {body.mechanism!r} is not enabled (enabled: {', '.join(enabled)})",
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            )
        self._mechanism, self._mechanism_name = factory(), body.mechanism
        self._answer(request, SaslHandshakeResponse(mechanisms=enabled))
        self._move(ServerInput.HANDSHAKE_V0 if request.api_version == 0 else ServerInput.HANDSHAKE_V1)
        return None

    def _step(self, token: bytes) -> tuple[bytes, AuthenticationError | None]:
        assert self._mechanism is not None
        try:
            return self._mechanism.step(token), None
        except AuthenticationError as exc:
            return b"", exc

    def _on_authenticate(self, request: Request, body: SaslAuthenticateRequest) -> ServerEvent | None:
        reply, failure = self._step(body.auth_bytes)
        if failure is not None:
            code = failure.error_code or ErrorCode.SASL_AUTHENTICATION_FAILED
            self._answer(request, SaslAuthenticateResponse(error_code=code, error_message=failure.reason))
            return self._failed(failure.reason, code)
        self._answer(request, SaslAuthenticateResponse(auth_bytes=reply))
        return self._succeeded()

    def _on_token(self, token: bytes) -> ServerEvent | None:
        reply, failure = self._step(token)
        if failure is not None:  # Kafka closes a raw-token connection without an answer
            return self._failed(failure.reason, failure.error_code or ErrorCode.SASL_AUTHENTICATION_FAILED)
        self._slots.append(_Slot(-1, -1, -1, None, (_SIZE.pack(len(reply)) + reply,)))
        return self._succeeded()

    def _failed(self, reason: str, error_code: int) -> AuthenticationFailed:
        self._move(ServerInput.GIVE_UP)
        return AuthenticationFailed(mechanism=self._mechanism_name, reason=reason, error_code=error_code)

    def _succeeded(self) -> Authenticated | None:
        assert self._mechanism is not None
        if not self._mechanism.complete:
            return None
        self._move(ServerInput.AUTHENTICATED)
        self._reader.max_frame_bytes = self.config.max_frame_bytes
        self.principal = self._mechanism.principal
        return Authenticated(mechanism=self._mechanism_name, principal=self.principal)
