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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import (
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
from kafka_wire.protocol.sasl_session import MIN_REAUTHENTICATION_INTERVAL_MS
from kafka_wire.protocol.server_responses import ResponseQueue, Splice
from kafka_wire.protocol.server_sasl import Outcome, ServerSaslExchange

if TYPE_CHECKING:
    from kafka_wire.messages import (
        ApiVersionsResponse,
        SaslAuthenticateRequest,
        SaslHandshakeRequest,
    )

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
    #: lasts this long (or until its credential expires: an OAUTHBEARER token's ``exp``);
    #: SaslAuthenticate v1+ tells the client, which re-authenticates in time, and a connection
    #: whose session expired is closed at its next request. 0 (Kafka's default): sessions end only
    #: with their credentials.
    max_reauth_ms: int = 0
    #: A re-authentication begun sooner than this after the previous one is refused: its
    #: SaslHandshake is answered as any request after authentication (ILLEGAL_SASL_STATE). Kafka's
    #: broker fixes it at one second.
    min_reauthentication_interval_ms: int = MIN_REAUTHENTICATION_INTERVAL_MS
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
        if self.max_reauth_ms < 0 or self.min_reauthentication_interval_ms < 0:
            raise ValueError("max_reauth_ms and min_reauthentication_interval_ms must be >= 0")
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


class ServerConnection(Guarded):
    """The server side of one connection (see the module docstring).

    Flow control: with ``max_in_flight_requests`` requests unanswered, ``next_event`` returns
    ``PAUSED`` (the connection is :attr:`paused`) and decodes nothing more until responses go
    out, as Kafka mutes a channel. Time: ``next_deadline_ms`` / ``handle_timer`` close an idle
    connection; a connection whose SASL session expired without re-authentication (KIP-368) is
    closed by its next request (``next_event`` returns :class:`ConnectionClosed`), as Kafka's is.

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
        #: The SASL exchange behind the gate (None: no gate).
        self._sasl = (
            None
            if sasl is None
            else ServerSaslExchange(
                sasl.mechanisms, config.max_reauth_ms, config.min_reauthentication_interval_ms
            )
        )
        self._reader = FrameReader(config.max_preauth_frame_bytes if sasl else config.max_frame_bytes)
        #: The responses owed, in request order.
        self._responses = ResponseQueue()
        self._eof = False
        self._now_ms = now_ms
        self._last_activity_ms = now_ms
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
    def sasl_mechanism(self) -> SaslServerMechanism | None:
        """The server mechanism of the last SASL exchange (None before one)."""
        return None if self._sasl is None else self._sasl.mechanism

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
        return self._responses.owed

    @property
    def paused(self) -> bool:
        """At the in-flight limit: ``next_event`` returns ``PAUSED`` until a response is sent."""
        limit = self.config.max_in_flight_requests
        return limit is not None and self._responses.owed >= limit

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
        queued = len(self._responses)
        data = self._responses.data_to_send()
        self._sent(queued)
        return data

    def parts_to_send(self) -> list[object]:
        """Like :meth:`data_to_send`, keeping spliced parts: adjacent bytes are joined."""
        queued = len(self._responses)
        parts = self._responses.parts_to_send()
        self._sent(queued)
        return parts

    def _sent(self, queued: int) -> None:
        if len(self._responses) < queued:  # responses left: traffic
            self._last_activity_ms = self._now_ms

    def send(self, response: Response, *, now_ms: int | None = None) -> bytes:
        """Queue the response to a :class:`Request` (from ``request.reply(body)``) and return the
        bytes now ready to write: responses are released in the order requests arrived.

        Any failure (an ``EncodeError`` included) moves the connection to ERROR.
        """
        self._live()
        try:
            self._tick(now_ms)
            self._machine.move(ServerInput.RESPONSE_SENT)  # a self-loop: legal or ERROR, before anything
            slot = self._responses.for_response(response)
            header = messages.ResponseHeader(correlation_id=slot.correlation_id)
            self._responses.fill(slot, (encode_response(header, response.body, slot.api_version),))
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
            self._responses.fill_raw(self._responses.for_raw(correlation_id), frame)
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
            self._machine.move(ServerInput.RESPONSE_SENT)  # a self-loop: legal or ERROR, before anything
            slot = self._responses.for_response(response)
            header = messages.ResponseHeader(correlation_id=slot.correlation_id)
            parts = encode_response_spliced(
                header, response.body, slot.api_version, [(s.placeholder, s.parts) for s in splices]
            )
            self._responses.fill(slot, tuple(p for p in parts if not (isinstance(p, bytes) and not p)))
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
            slot = self._responses.for_unsupported(event.correlation_id)
            if event.api_key == ApiKey.API_VERSIONS and ApiKey.API_VERSIONS in self._versions:
                body = api_versions_response({ApiKey.API_VERSIONS: self._versions[ApiKey.API_VERSIONS]})
                body.error_code = ErrorCode.UNSUPPORTED_VERSION
                header = messages.ResponseHeader(correlation_id=event.correlation_id)
                self._responses.fill(slot, (encode_response(header, body, 0),))
            else:
                self._responses.drop(slot)
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
        """When ``handle_timer`` has work (the idle limit), or None."""
        state = self._machine.state
        if state not in _OPEN:
            return None
        deadlines = []
        if self.config.max_idle_ms is not None:
            deadlines.append(self._last_activity_ms + self.config.max_idle_ms)
        return min(deadlines) if deadlines else None

    def handle_timer(self, now_ms: int) -> None:
        """Act on the deadlines ``now_ms`` has reached: close (MUST_CLOSE, then
        :class:`ConnectionClosed` from ``next_event``) a connection idle for ``max_idle_ms``, as
        Kafka's broker does. (A SASL session that expired is not a deadline: Kafka closes the
        connection when its next request arrives, and so does ``next_event``.)"""
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
                return ConnectionClosed(self._responses.unanswered(), self._closed_reason)
            if limit is not None and self._responses.owed >= limit:
                return PAUSED
            frame = self._reader.next_frame_before(self._eof)
            if frame is None:
                return NEED_DATA
            if frame is END:
                unanswered = self._responses.unanswered()
                self._machine.move(ServerInput.PEER_CLOSED)
                return ConnectionClosed(unanswered)
            if self._machine.state is ServerState.AWAITING_TOKEN:
                event = self._on_token(frame[4:])
            else:
                event = self._on_frame(frame)
            if event is not None:
                return event

    def _on_frame(self, frame: bytes) -> ServerEvent | None:
        state = self._machine.state
        if (
            state is ServerState.READY
            and self._sasl is not None
            and self._sasl.session_ended(self._now_ms)
            and not self._reauthenticates(frame)
        ):
            # KIP-368: the first request after the session ended closes the connection, unanswered.
            self._machine.move(ServerInput.SESSION_EXPIRED)
            self._closed_reason = "session expired"
            return None
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
        if self._sasl is not None and isinstance(
            body, messages.SaslHandshakeRequest | messages.SaslAuthenticateRequest
        ):
            return self._on_sasl(request, body)
        if request.expects_response:
            self._responses.expect(
                header.correlation_id, header.request_api_key, header.request_api_version, body
            )
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
            self._responses.expect(header.correlation_id, api_key, api_version, None, raw=True)
        return RawRequest(header, frame, expects)

    def _not_allowed(self, api_key: int) -> RemoteProtocolError:
        name = REQUESTS[api_key].__name__ if api_key in REQUESTS else f"api key {api_key}"
        state = self._machine.state.name
        return RemoteProtocolError(f"{name} is not allowed in state {state} (before SASL authentication)")

    def _unsupported(
        self, api_key: int, api_version: int, correlation_id: int, reason: str
    ) -> UnsupportedRequest:
        self._responses.expect(correlation_id, api_key, api_version, None)
        return UnsupportedRequest(
            api_key=api_key, api_version=api_version, correlation_id=correlation_id, reason=reason
        )

    def _answer(self, request: Request, body: Message) -> None:
        data = encode_response(
            messages.ResponseHeader(correlation_id=request.correlation_id), body, request.api_version
        )
        self._responses.answered(
            request.correlation_id, request.api_key, request.api_version, request.body, data
        )

    def _reauthenticates(self, frame: bytes) -> bool:
        """Whether this request frame is a SaslHandshake that starts a re-authentication."""
        if len(frame) < 8 or self._sasl is None:
            return False
        api_key, api_version = _KEY_VERSION.unpack_from(frame, 4)
        return api_key == ApiKey.SASL_HANDSHAKE and self._sasl.may_reauthenticate(api_version, self._now_ms)

    def _on_sasl(
        self, request: Request, body: SaslHandshakeRequest | SaslAuthenticateRequest
    ) -> ServerEvent | None:
        """A SASL request behind the gate: the exchange answers it, the connection moves."""
        assert self._sasl is not None
        state, now = self._machine.state, self._now_ms
        if state is ServerState.READY:
            if isinstance(body, messages.SaslHandshakeRequest) and self._sasl.may_reauthenticate(
                request.api_version, now
            ):
                answer, failure = self._sasl.reauthentication(body.mechanism, now)
                self._answer(request, answer)
                self._machine.move(ServerInput.GIVE_UP if failure else ServerInput.REAUTHENTICATION_STARTED)
                return failure
            # Kafka answers these after authentication (without re-authentication) with ILLEGAL_SASL_STATE.
            self._answer(request, self._sasl.refusal(body))
            return None
        if isinstance(body, messages.SaslHandshakeRequest):
            answer, failure = self._sasl.handshake(body.mechanism)
            self._answer(request, answer)
            if failure is not None:
                self._machine.move(ServerInput.GIVE_UP)
            else:
                self._machine.move(
                    ServerInput.HANDSHAKE_V0 if request.api_version == 0 else ServerInput.HANDSHAKE_V1
                )
            return failure
        again = state is ServerState.REAUTHENTICATING
        reply, outcome = self._sasl.authenticate(
            body.auth_bytes, request.api_version, self.principal, reauthentication=again, now_ms=now
        )
        self._answer(request, reply)
        return self._exchanged(outcome)

    def _on_token(self, token: bytes) -> ServerEvent | None:
        assert self._sasl is not None
        reply, outcome = self._sasl.raw_token(token, self._now_ms)
        if reply is not None:
            self._responses.answered(-1, -1, -1, None, reply)
        return self._exchanged(outcome)

    def _exchanged(self, outcome: Outcome) -> Outcome:
        """Move as a SASL exchange step ended: closing after a failure, open to every request
        once authenticated."""
        if isinstance(outcome, AuthenticationFailed):
            self._machine.move(ServerInput.GIVE_UP)
        elif isinstance(outcome, Authenticated):
            self._machine.move(ServerInput.AUTHENTICATED)
            self._reader.max_frame_bytes = self.config.max_frame_bytes
            self.principal = outcome.principal
        return outcome
