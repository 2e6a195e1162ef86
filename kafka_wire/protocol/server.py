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
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import (
    AuthenticationError,
    DecodeError,
    LocalProtocolError,
    RemoteProtocolError,
    UnsupportedApiError,
)
from kafka_wire.messages import REQUESTS, VALID_VERSIONS, ApiKey, ErrorCode
from kafka_wire.protocol.events import (
    NEED_DATA,
    PAUSED,
    Authenticated,
    AuthenticationFailed,
    ConnectionClosed,
    NeedData,
    Paused,
    RawRequest,
    Request,
    Response,
    ServerEvent,
    UnsupportedRequest,
)
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES, END, Buffer, FrameReader
from kafka_wire.protocol.framing import (
    decode_request_frame,
    encode_response,
    encode_response_spliced,
    produce_acks,
    request_header_version,
)
from kafka_wire.protocol.machine import Guarded, StateMachine, TransitionLogger
from kafka_wire.protocol.sasl.base import SaslServerMechanism
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.messages import (
        ApiVersionsResponse,
        SaslAuthenticateRequest,
        SaslHandshakeRequest,
    )

_SIZE: Final = struct.Struct(">i")
_KEY_VERSION: Final = struct.Struct(">hh")

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
    #: KIP-368: an authenticated client started a new SASL exchange; only SaslAuthenticate is
    #: accepted until it ends.
    REAUTHENTICATING = "REAUTHENTICATING"
    #: The server decided to end the connection (failed authentication, a rejected request, an
    #: expired session, idle): write ``data_to_send()`` and close.
    MUST_CLOSE = "MUST_CLOSE"
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class ServerInput(enum.Enum):
    """What happens to a server connection: the inputs of :data:`SERVER_TRANSITIONS`."""

    DATA_RECEIVED = "data received"
    EOF_RECEIVED = "EOF received"
    RESPONSE_SENT = "response sent"
    HANDSHAKE_V0 = "SaslHandshake v0"
    HANDSHAKE_V1 = "SaslHandshake v1"
    REAUTHENTICATION_STARTED = "re-authentication started"
    AUTHENTICATED = "authenticated"
    GIVE_UP = "give up"
    SESSION_EXPIRED = "session expired"
    IDLE_EXPIRED = "idle expired"
    PEER_CLOSED = "peer closed"
    CLOSE = "close"


_S = ServerState
_I = ServerInput
_OPEN: Final = (_S.AWAITING_HANDSHAKE, _S.AUTHENTICATING, _S.AWAITING_TOKEN, _S.READY, _S.REAUTHENTICATING)


def _table() -> dict[tuple[ServerState, ServerInput], ServerState]:
    table: dict[tuple[ServerState, ServerInput], ServerState] = {}
    for state in _OPEN:
        for move in (_I.DATA_RECEIVED, _I.EOF_RECEIVED, _I.RESPONSE_SENT):
            table[state, move] = state
        table[state, _I.GIVE_UP] = _S.MUST_CLOSE
        table[state, _I.IDLE_EXPIRED] = _S.MUST_CLOSE
        table[state, _I.PEER_CLOSED] = _S.CLOSED
        table[state, _I.CLOSE] = _S.CLOSED
    table[_S.AWAITING_HANDSHAKE, _I.HANDSHAKE_V0] = _S.AWAITING_TOKEN
    table[_S.AWAITING_HANDSHAKE, _I.HANDSHAKE_V1] = _S.AUTHENTICATING
    table[_S.AUTHENTICATING, _I.AUTHENTICATED] = _S.READY
    table[_S.AWAITING_TOKEN, _I.AUTHENTICATED] = _S.READY
    table[_S.READY, _I.REAUTHENTICATION_STARTED] = _S.REAUTHENTICATING
    table[_S.READY, _I.SESSION_EXPIRED] = _S.MUST_CLOSE
    table[_S.REAUTHENTICATING, _I.AUTHENTICATED] = _S.READY
    for state in (_S.MUST_CLOSE, _S.CLOSED):
        table[state, _I.DATA_RECEIVED] = state  # ignored: the connection is over
        table[state, _I.EOF_RECEIVED] = state
        table[state, _I.CLOSE] = _S.CLOSED
    return table


#: Every legal move; an input missing here raises LocalProtocolError and moves to ERROR, as does
#: any exception inside a connection method.
SERVER_TRANSITIONS: Final[Mapping[tuple[ServerState, ServerInput], ServerState]] = _table()

#: Requests a client may send before it has authenticated, per gate state.
_PREAUTH: Final[Mapping[ServerState, frozenset[int]]] = {
    _S.AWAITING_HANDSHAKE: frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}),
    _S.AUTHENTICATING: frozenset({ApiKey.SASL_AUTHENTICATE}),
    _S.REAUTHENTICATING: frozenset({ApiKey.SASL_AUTHENTICATE}),
}


def all_api_versions() -> dict[int, tuple[int, int]]:
    """Per api key, the (min, max) request versions this library can decode."""
    return {key: (min(versions), max(versions)) for key, versions in sorted(VALID_VERSIONS.items())}


def api_versions_response(api_versions: Mapping[int, tuple[int, int]]) -> ApiVersionsResponse:
    """An ApiVersions response body listing ``api_versions`` in api key order."""
    return messages.ApiVersionsResponse(
        api_keys=[
            messages.ApiVersionsResponseApiVersion(api_key=key, min_version=lo, max_version=hi)
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
    #: How many requests may await their responses before ``next_event`` returns ``PAUSED``
    #: (Kafka's broker mutes a channel while one request is in flight: 1). None: no limit.
    max_in_flight_requests: int | None = None
    #: Kafka's ``connections.max.idle.ms`` (600000 on a broker): close (MUST_CLOSE) a connection
    #: without traffic for this long. None: never.
    max_idle_ms: int | None = None
    #: Kafka's ``connections.max.reauth.ms`` (KIP-368): with a SASL gate, an authenticated session
    #: lasts this long; SaslAuthenticate v1+ tells the client, which re-authenticates in time, and
    #: a connection whose session expired is closed. 0 (Kafka's default): sessions never expire.
    max_reauth_ms: int = 0
    #: Api keys whose requests are not decoded (a proxy forwarding frames): they come out of
    #: ``next_event`` as :class:`RawRequest` (header decoded, body left as bytes) and are answered
    #: with ``send_raw``. ApiVersions is always decoded, and so are the SASL requests before
    #: authentication.
    passthrough: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.max_frame_bytes < 12 or self.max_preauth_frame_bytes < 12:
            raise ValueError("frame limits must be at least 12 bytes (a request header)")
        if self.max_in_flight_requests is not None and self.max_in_flight_requests < 1:
            raise ValueError("max_in_flight_requests must be None or at least 1")
        if self.max_idle_ms is not None and self.max_idle_ms < 0:
            raise ValueError("max_idle_ms must be None or >= 0")
        if self.max_reauth_ms < 0:
            raise ValueError("max_reauth_ms must be >= 0")
        if ApiKey.API_VERSIONS in self.passthrough:
            raise ValueError("ApiVersions cannot be passed through: the connection answers it")
        for key, (lo, hi) in (self.api_versions or {}).items():
            versions = VALID_VERSIONS.get(key)
            if versions is None or lo > hi or lo not in versions or hi not in versions:
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
    #: A request passed through undecoded (``request`` is None, yet it is supported).
    raw: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Splice:
    """Parts that take the place of one records payload when a response is encoded (zero-copy
    fetch): bytes, and objects standing for bytes, such as file regions a driver sends with
    ``sendfile``, ``size`` bytes in all.

    Put :attr:`placeholder` (``size`` bytes, never copied or sent) in the records field; the
    encoder records where each records payload lands, and :meth:`ServerConnection.send_spliced`
    cuts the frame at this one's position, so every length prefix is already right.
    """

    size: int
    parts: tuple[object, ...]
    placeholder: bytes = field(init=False)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a splice stands for at least one byte")
        object.__setattr__(self, "placeholder", bytes(self.size))  # calloc'd: pages never touched


class ServerConnection(Guarded):
    """The server side of one connection (see the module docstring).

    Flow control: with ``max_in_flight_requests`` requests unanswered, ``next_event`` returns
    ``PAUSED`` (the connection is :attr:`paused`) and decodes nothing more until responses go
    out, as Kafka mutes a channel. Time: ``next_deadline_ms`` / ``handle_timer`` close an idle
    connection and one whose SASL session expired without re-authentication (KIP-368).

    Any exception inside a method (a SASL mechanism's included) moves the connection to ``ERROR``
    and propagates; every later call raises :class:`LocalProtocolError`. ``logger`` receives
    each change of state (see :mod:`kafka_wire.protocol.machine`).
    """

    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        sasl: ServerSasl | None = None,
        now_ms: int = 0,
        logger: TransitionLogger | None = None,
    ) -> None:
        self.config = config = config or ServerConfig()
        self._versions = dict(config.api_versions) if config.api_versions is not None else all_api_versions()
        if sasl is not None:  # the gate needs its two APIs whatever the table says
            for api in (messages.SaslHandshakeRequest, messages.SaslAuthenticateRequest):
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
        self._now_ms = now_ms
        self._last_activity_ms = now_ms
        #: When the authenticated session ends (KIP-368), if it does.
        self._session_expires_ms: int | None = None
        self._closed_reason = ""
        self._failure: BaseException | None = None
        initial = ServerState.AWAITING_HANDSHAKE if sasl else ServerState.READY
        self._machine: StateMachine[ServerState, ServerInput] = StateMachine(
            "server connection", SERVER_TRANSITIONS, initial, error=ServerState.ERROR, logger=logger
        )
        self.principal = ""

    @property
    def state(self) -> ServerState:
        return self._machine.state

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self._versions

    @property
    def must_close(self) -> bool:
        """True when the adapter should write ``data_to_send()`` and close the socket."""
        return self._machine.state in (ServerState.MUST_CLOSE, ServerState.ERROR)

    @property
    def responses_owed(self) -> int:
        """Requests received and not answered yet (a server that reads one request at a time, as
        Kafka does, stops decoding while this is not zero)."""
        return self._owed

    @property
    def paused(self) -> bool:
        """At the in-flight limit: ``next_event`` returns ``PAUSED`` until a response is sent."""
        limit = self.config.max_in_flight_requests
        return limit is not None and self._owed >= limit

    @property
    def buffered_bytes(self) -> int:
        """Bytes received and not yet returned as a request: the start of a frame in progress,
        or frames not decoded yet."""
        return self._reader.buffered

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
        if taken:
            self._last_activity_ms = self._now_ms
        return taken

    def _slot_for(self, response: Response) -> _Slot:
        self._machine.move(ServerInput.RESPONSE_SENT)  # a self-loop: legal or ERROR, before anything
        slot = next(
            (s for s in self._slots if s.correlation_id == response.correlation_id and s.data is None), None
        )
        if slot is None:
            raise LocalProtocolError(
                f"no request with correlation id {response.correlation_id} awaits a response"
            )
        if (response.api_key, response.api_version) != (slot.api_key, slot.api_version) or (
            response.body.API_KEY != slot.api_key
        ):
            raise LocalProtocolError(
                f"correlation id {slot.correlation_id} asked api {slot.api_key} v{slot.api_version}; "
                f"got {type(response.body).__name__} v{response.api_version}"
            )
        return slot

    def send(self, response: Response, *, now_ms: int | None = None) -> bytes:
        """Queue the response to a :class:`Request` (from ``request.reply(body)``) and return the
        bytes now ready to write: responses are released in the order requests arrived.

        Any failure (an ``EncodeError`` included) moves the connection to ERROR.
        """
        self._live()
        try:
            self._tick(now_ms)
            slot = self._slot_for(response)
            header = messages.ResponseHeader(correlation_id=slot.correlation_id)
            slot.data = (encode_response(header, response.body, slot.api_version),)
            self._owed -= 1
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def send_raw(self, correlation_id: int, frame: Buffer, *, now_ms: int | None = None) -> bytes:
        """Queue a whole response frame (size prefix included) for the request with
        ``correlation_id``, whose correlation id field is set to it (a proxy relays the upstream's
        frame untouched otherwise), and return the bytes now ready to write, as :meth:`send`.

        The caller vouches that the frame answers that request at its version."""
        self._live()
        try:
            self._tick(now_ms)
            self._machine.move(ServerInput.RESPONSE_SENT)  # a self-loop: legal or ERROR, before anything
            slot = next(
                (s for s in self._slots if s.correlation_id == correlation_id and s.data is None), None
            )
            if slot is None or (slot.request is None and not slot.raw):
                raise LocalProtocolError(f"no request with correlation id {correlation_id} awaits a response")
            if len(frame) < 8 or _SIZE.unpack_from(frame, 0)[0] != len(frame) - 4:
                raise LocalProtocolError("send_raw takes one whole size-prefixed response frame")
            with memoryview(frame) as view:  # one copy of the frame, its correlation id replaced
                slot.data = (b"".join((view[:4], _SIZE.pack(correlation_id), view[8:])),)
            self._owed -= 1
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def send_spliced(
        self, response: Response, splices: Sequence[Splice], *, now_ms: int | None = None
    ) -> list[object]:
        """Like :meth:`send`, with each splice's parts in place of the records payload that is its
        placeholder (found by the positions the encoder records, not by searching the frame);
        returns the parts now ready to write (see :meth:`parts_to_send`)."""
        self._live()
        try:
            self._tick(now_ms)
            slot = self._slot_for(response)
            header = messages.ResponseHeader(correlation_id=slot.correlation_id)
            parts = encode_response_spliced(
                header, response.body, slot.api_version, [(s.placeholder, s.parts) for s in splices]
            )
            slot.data = tuple(p for p in parts if not (isinstance(p, bytes) and not p))
            self._owed -= 1
            return self.parts_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def reject(self, event: UnsupportedRequest) -> bytes:
        """Answer an unsupported request as Kafka does and return the bytes to write.

        An ApiVersions request of an unknown version gets an ApiVersions v0 response with
        UNSUPPORTED_VERSION that names the ApiVersions versions we support, so the client retries;
        anything else closes the connection (state MUST_CLOSE).
        """
        self._live()
        try:
            self._machine.move(ServerInput.RESPONSE_SENT)  # a self-loop: legal or ERROR, before anything
            slot = next(
                (s for s in self._slots if s.correlation_id == event.correlation_id and s.data is None), None
            )
            if slot is None or slot.request is not None or slot.raw:
                raise LocalProtocolError(
                    f"no unsupported request with correlation id {event.correlation_id} is pending"
                )
            if event.api_key == ApiKey.API_VERSIONS and ApiKey.API_VERSIONS in self._versions:
                body = api_versions_response({ApiKey.API_VERSIONS: self._versions[ApiKey.API_VERSIONS]})
                body.error_code = ErrorCode.UNSUPPORTED_VERSION
                slot.data = (
                    encode_response(messages.ResponseHeader(correlation_id=event.correlation_id), body, 0),
                )
                self._owed -= 1
            else:
                self._slots.remove(slot)
                self._owed -= 1
                self._machine.move(ServerInput.GIVE_UP)
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def close(self) -> None:
        """The server is closing this connection. Legal in every state, ERROR included."""
        if self._machine.state is not ServerState.ERROR:
            try:
                self._machine.move(ServerInput.CLOSE)
            except BaseException as exc:
                self._fail(exc)
                raise

    # -- time ----------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When ``handle_timer`` has work (idle limit, session expiry), or None."""
        state = self._machine.state
        if state not in _OPEN:
            return None
        deadlines = []
        if self.config.max_idle_ms is not None:
            deadlines.append(self._last_activity_ms + self.config.max_idle_ms)
        if self._session_expires_ms is not None and state is ServerState.READY:
            deadlines.append(self._session_expires_ms)
        return min(deadlines) if deadlines else None

    def handle_timer(self, now_ms: int) -> None:
        """Act on the deadlines ``now_ms`` has reached: close (MUST_CLOSE, then
        :class:`ConnectionClosed` from ``next_event``) a connection idle for ``max_idle_ms`` or
        whose session expired without re-authentication, as Kafka's broker does."""
        self._live()
        try:
            self._tick(now_ms)
            state = self._machine.state
            if state not in _OPEN:
                return
            idle = self.config.max_idle_ms
            if idle is not None and self._last_activity_ms + idle <= self._now_ms:
                self._machine.move(ServerInput.IDLE_EXPIRED)
                self._closed_reason = "idle"
            elif (
                state is ServerState.READY
                and self._session_expires_ms is not None
                and self._session_expires_ms <= self._now_ms
            ):
                self._machine.move(ServerInput.SESSION_EXPIRED)
                self._closed_reason = "session expired"
        except BaseException as exc:
            self._fail(exc)
            raise

    # -- input ---------------------------------------------------------------------------------

    def receive_data(self, data: Buffer, *, now_ms: int | None = None) -> None:
        self._live()
        try:
            self._tick(now_ms)
            if self._eof:
                raise LocalProtocolError("receive_data after receive_eof")
            self._machine.move(ServerInput.DATA_RECEIVED)
            if self._machine.state in _OPEN:
                self._reader.feed(data)
                self._last_activity_ms = self._now_ms
        except BaseException as exc:
            self._fail(exc)
            raise

    def receive_eof(self, *, now_ms: int | None = None) -> None:
        self._live()
        try:
            self._tick(now_ms)
            self._machine.move(ServerInput.EOF_RECEIVED)
            self._eof = True
        except BaseException as exc:
            self._fail(exc)
            raise

    def next_event(self) -> ServerEvent | NeedData | Paused:
        """The next event, ``NEED_DATA``, or ``PAUSED`` at the in-flight limit.

        Raises :class:`RemoteProtocolError` (state ERROR; close the socket) for bytes that are
        not a request: a bad size, a frame over the limit, an undecodable body, a request not
        allowed before authentication. Kafka closes the connection in each case. Any other
        exception inside (a SASL mechanism's included) moves the connection to ERROR too.
        """
        self._live()
        try:
            return self._next_event()
        except DecodeError as exc:
            error = RemoteProtocolError(f"bad request: {exc}")
            error.__cause__ = exc
            self._fail(error)
            raise error from exc
        except BaseException as exc:
            self._fail(exc)
            raise

    def _next_event(self) -> ServerEvent | NeedData | Paused:
        limit = self.config.max_in_flight_requests
        while True:
            if self._machine.state not in _OPEN:
                return ConnectionClosed(self._unanswered(), self._closed_reason)
            if limit is not None and self._owed >= limit:
                return PAUSED
            frame = self._reader.next_frame_before(self._eof)
            if frame is None:
                return NEED_DATA
            if frame is END:
                unanswered = self._unanswered()
                self._machine.move(ServerInput.PEER_CLOSED)
                return ConnectionClosed(unanswered)
            if self._machine.state is ServerState.AWAITING_TOKEN:
                event = self._on_token(frame[4:])
            else:
                event = self._on_frame(frame)
            if event is not None:
                return event

    def _unanswered(self) -> tuple[Message, ...]:
        return tuple(s.request for s in self._slots if s.data is None and s.request is not None)

    def _on_frame(self, frame: bytes) -> ServerEvent | None:
        state = self._machine.state
        allowed = _PREAUTH.get(state)
        if allowed is None and self.config.passthrough and len(frame) >= 12:
            raw = self._raw(frame)
            if raw is not None:
                return raw
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
            return self._unsupported(
                header.request_api_key, header.request_api_version, header.correlation_id, reason
            )
        request = Request(header, body, decoded.trailing)
        if self._sasl is not None:
            if state is ServerState.READY and isinstance(
                body, messages.SaslHandshakeRequest | messages.SaslAuthenticateRequest
            ):
                if isinstance(body, messages.SaslHandshakeRequest) and self._may_reauthenticate(request):
                    return self._on_reauthentication(request, body)
                # Kafka answers these after authentication (without re-authentication) with ILLEGAL_SASL_STATE.
                illegal = ErrorCode.ILLEGAL_SASL_STATE
                refusal = (
                    messages.SaslHandshakeResponse(error_code=illegal, mechanisms=list(self._sasl.mechanisms))
                    if isinstance(body, messages.SaslHandshakeRequest)
                    else messages.SaslAuthenticateResponse(
                        error_code=illegal, error_message="already authenticated"
                    )
                )
                self._answer(request, refusal)
                return None
            if isinstance(body, messages.SaslHandshakeRequest):
                return self._on_handshake(request, body)
            if isinstance(body, messages.SaslAuthenticateRequest):
                return self._on_authenticate(request, body)
        if request.expects_response:
            self._slots.append(
                _Slot(header.correlation_id, header.request_api_key, header.request_api_version, body)
            )
            self._owed += 1
        return request

    def _raw(self, frame: bytes) -> RawRequest | None:
        """A passthrough request as a :class:`RawRequest`, or None to decode it as usual."""
        api_key, api_version = _KEY_VERSION.unpack_from(frame, 4)
        if api_key not in self.config.passthrough:
            return None
        lo, hi = self._versions.get(api_key, (0, -1))
        if not lo <= api_version <= hi:
            return None  # decoded, to be refused as unsupported
        header, pos = messages.RequestHeader.decode_from(
            frame, 4, request_header_version(api_key, api_version)
        )
        expects = api_key != ApiKey.PRODUCE or produce_acks(frame, pos, api_version) != 0
        if expects:
            self._slots.append(_Slot(header.correlation_id, api_key, api_version, None, raw=True))
            self._owed += 1
        return RawRequest(header, frame, expects)

    def _not_allowed(self, api_key: int) -> RemoteProtocolError:
        name = REQUESTS[api_key].__name__ if api_key in REQUESTS else f"api key {api_key}"
        state = self._machine.state.name
        return RemoteProtocolError(f"{name} is not allowed in state {state} (before SASL authentication)")

    def _unsupported(
        self, api_key: int, api_version: int, correlation_id: int, reason: str
    ) -> UnsupportedRequest:
        self._slots.append(_Slot(correlation_id, api_key, api_version, None))
        self._owed += 1
        return UnsupportedRequest(
            api_key=api_key, api_version=api_version, correlation_id=correlation_id, reason=reason
        )

    def _answer(self, request: Request, body: Message) -> None:
        data = encode_response(
            messages.ResponseHeader(correlation_id=request.correlation_id), body, request.api_version
        )
        self._slots.append(
            _Slot(request.correlation_id, request.api_key, request.api_version, request.body, (data,))
        )

    def _may_reauthenticate(self, handshake: Request) -> bool:
        """KIP-368: with sessions that expire, a SaslHandshake v1+ starts a re-authentication."""
        return self.config.max_reauth_ms > 0 and handshake.api_version >= 1

    def _on_reauthentication(self, request: Request, body: SaslHandshakeRequest) -> ServerEvent | None:
        assert self._sasl is not None
        enabled = list(self._sasl.mechanisms)
        if body.mechanism != self._mechanism_name:
            # Kafka refuses a re-authentication that changes the mechanism, and closes.
            self._answer(
                request,
                messages.SaslHandshakeResponse(
                    error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
                ),
            )
            self._machine.move(ServerInput.GIVE_UP)
            return AuthenticationFailed(
                mechanism=body.mechanism,
                reason=f"re-authentication must keep mechanism {self._mechanism_name!r}",
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            )
        self._mechanism = self._sasl.mechanisms[body.mechanism]()
        self._answer(request, messages.SaslHandshakeResponse(mechanisms=enabled))
        self._machine.move(ServerInput.REAUTHENTICATION_STARTED)
        return None

    def _on_handshake(self, request: Request, body: SaslHandshakeRequest) -> ServerEvent | None:
        assert self._sasl is not None
        enabled = list(self._sasl.mechanisms)
        factory = self._sasl.mechanisms.get(body.mechanism)
        if factory is None:
            self._answer(
                request,
                messages.SaslHandshakeResponse(
                    error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
                ),
            )
            self._machine.move(ServerInput.GIVE_UP)
            return AuthenticationFailed(
                mechanism=body.mechanism,
                reason=f"mechanism {body.mechanism!r} is not enabled (enabled: {', '.join(enabled)})",
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            )
        self._mechanism, self._mechanism_name = factory(), body.mechanism
        self._answer(request, messages.SaslHandshakeResponse(mechanisms=enabled))
        self._machine.move(ServerInput.HANDSHAKE_V0 if request.api_version == 0 else ServerInput.HANDSHAKE_V1)
        return None

    def _step(self, token: bytes) -> tuple[bytes, AuthenticationError | None]:
        assert self._mechanism is not None
        try:
            return self._mechanism.step(token), None
        except AuthenticationError as exc:
            return b"", exc

    def _on_authenticate(self, request: Request, body: SaslAuthenticateRequest) -> ServerEvent | None:
        reply, failure = self._step(body.auth_bytes)
        if failure is None and self._mechanism is not None and self._mechanism.complete:
            failure = self._principal_change()
        if failure is not None:
            code = failure.error_code or ErrorCode.SASL_AUTHENTICATION_FAILED
            self._answer(
                request, messages.SaslAuthenticateResponse(error_code=code, error_message=failure.reason)
            )
            return self._failed(failure.reason, code)
        lifetime = 0
        if self._mechanism is not None and self._mechanism.complete and request.api_version >= 1:
            lifetime = self.config.max_reauth_ms  # KIP-368: the client re-authenticates before it ends
        self._answer(
            request, messages.SaslAuthenticateResponse(auth_bytes=reply, session_lifetime_ms=lifetime)
        )
        return self._succeeded()

    def _principal_change(self) -> AuthenticationError | None:
        assert self._mechanism is not None
        if (
            self._machine.state is ServerState.REAUTHENTICATING
            and self._mechanism.principal != self.principal
        ):
            return AuthenticationError(
                "Cannot change principals during re-authentication",
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
            )
        return None

    def _on_token(self, token: bytes) -> ServerEvent | None:
        reply, failure = self._step(token)
        if failure is not None:  # Kafka closes a raw-token connection without an answer
            return self._failed(failure.reason, failure.error_code or ErrorCode.SASL_AUTHENTICATION_FAILED)
        self._slots.append(_Slot(-1, -1, -1, None, (_SIZE.pack(len(reply)) + reply,)))
        return self._succeeded()

    def _failed(self, reason: str, error_code: int) -> AuthenticationFailed:
        self._machine.move(ServerInput.GIVE_UP)
        return AuthenticationFailed(mechanism=self._mechanism_name, reason=reason, error_code=error_code)

    def _succeeded(self) -> Authenticated | None:
        assert self._mechanism is not None
        if not self._mechanism.complete:
            return None
        again = self._machine.state is ServerState.REAUTHENTICATING
        self._machine.move(ServerInput.AUTHENTICATED)
        self._reader.max_frame_bytes = self.config.max_frame_bytes
        self.principal = self._mechanism.principal
        lifetime = self.config.max_reauth_ms
        # Sessions expire for every client (KIP-368): one that cannot re-authenticate (raw tokens,
        # SaslAuthenticate v0) is closed when its session ends.
        self._session_expires_ms = self._now_ms + lifetime if lifetime > 0 else None
        return Authenticated(
            mechanism=self._mechanism_name,
            principal=self.principal,
            session_lifetime_ms=lifetime,
            reauthentication=again,
        )
