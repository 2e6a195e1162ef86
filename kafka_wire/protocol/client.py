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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire import __version__, messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import (
    AuthenticationError,
    DecodeError,
    LocalProtocolError,
    RemoteProtocolError,
    UnsupportedVersionError,
)
from kafka_wire.messages import REQUESTS, VALID_VERSIONS, ApiKey, ErrorCode
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    ClientEvent,
    ConnectionClosed,
    NeedData,
    RawResponse,
    RequestTimedOut,
    Response,
    VersionsNegotiated,
    expects_response,
)
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES, END, Buffer, FrameReader
from kafka_wire.protocol.framing import decode_response, encode_request
from kafka_wire.protocol.machine import Guarded, StateMachine, TransitionLogger
from kafka_wire.protocol.sasl.base import SaslClientMechanism

if TYPE_CHECKING:
    from kafka_wire.messages import (
        ApiVersionsResponse,
        ResponseHeader,
        SaslHandshakeResponse,
    )

_SIZE: Final = struct.Struct(">i")
_INT16: Final = struct.Struct(">h")
_KEY_VERSION: Final = struct.Struct(">hh")
_MAX_CORRELATION_ID: Final = 0x7FFFFFFF
#: How many acks=0 requests at the head of the queue are remembered (to drop a stray answer).
_MAX_NO_RESPONSE_TRACKED: Final = 1024


class ClientState(enum.Enum):
    NEGOTIATING = "NEGOTIATING"
    AUTHENTICATING = "AUTHENTICATING"
    READY = "READY"
    #: KIP-368: a new SASL exchange on the open connection; requests sent meanwhile wait.
    REAUTHENTICATING = "REAUTHENTICATING"
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class ClientInput(enum.Enum):
    """What happens to a client connection: the inputs of :data:`CLIENT_TRANSITIONS`."""

    REQUEST_SENT = "request sent"
    DATA_RECEIVED = "data received"
    EOF_RECEIVED = "EOF received"
    VERSIONS_AGREED = "versions agreed"
    SASL_STARTED = "SASL started"
    AUTHENTICATED = "authenticated"
    REAUTHENTICATION_DUE = "re-authentication due"
    PEER_CLOSED = "peer closed"
    CLOSE = "close"
    REQUEST_TIMED_OUT = "request timed out"
    IDLE_EXPIRED = "idle expired"


_S = ClientState
_I = ClientInput
_CLIENT_OPEN: Final = (_S.NEGOTIATING, _S.AUTHENTICATING, _S.READY, _S.REAUTHENTICATING)


def _client_table() -> dict[tuple[ClientState, ClientInput], ClientState]:
    table: dict[tuple[ClientState, ClientInput], ClientState] = {}
    for state in _CLIENT_OPEN:
        for event in (_I.DATA_RECEIVED, _I.EOF_RECEIVED):
            table[state, event] = state
        for event in (_I.PEER_CLOSED, _I.CLOSE, _I.REQUEST_TIMED_OUT, _I.IDLE_EXPIRED):
            table[state, event] = _S.CLOSED
    table[_S.NEGOTIATING, _I.VERSIONS_AGREED] = _S.READY
    table[_S.NEGOTIATING, _I.SASL_STARTED] = _S.AUTHENTICATING
    table[_S.AUTHENTICATING, _I.AUTHENTICATED] = _S.READY
    table[_S.READY, _I.REQUEST_SENT] = _S.READY
    table[_S.READY, _I.REAUTHENTICATION_DUE] = _S.REAUTHENTICATING
    table[_S.REAUTHENTICATING, _I.REQUEST_SENT] = _S.REAUTHENTICATING  # held until authenticated
    table[_S.REAUTHENTICATING, _I.AUTHENTICATED] = _S.READY
    # Bytes may still arrive after this side closed (a timeout, close()): they are dropped.
    table[_S.CLOSED, _I.DATA_RECEIVED] = _S.CLOSED
    table[_S.CLOSED, _I.EOF_RECEIVED] = _S.CLOSED
    table[_S.CLOSED, _I.CLOSE] = _S.CLOSED
    return table


#: Every legal move; an input missing here raises LocalProtocolError and moves to ERROR, as does
#: any exception inside a connection method.
CLIENT_TRANSITIONS: Final[Mapping[tuple[ClientState, ClientInput], ClientState]] = _client_table()

#: Kafka's ``max.in.flight.requests.per.connection`` default.
DEFAULT_MAX_IN_FLIGHT: Final = 5
#: Kafka's ``request.timeout.ms`` default (the consumer's; the producer's is 30 s too).
DEFAULT_REQUEST_TIMEOUT_MS: Final = 30_000
#: Kafka's client re-authenticates at a random point between 85% and 95% of the session
#: lifetime (KIP-368); without randomness, this connection picks the middle.
REAUTHENTICATE_AT: Final = 0.90

#: The ApiVersions version a client tries first: the newest this library knows.
DEFAULT_API_VERSIONS_VERSION: Final = max(VALID_VERSIONS[ApiKey.API_VERSIONS])


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
    #: Kafka's ``max.in.flight.requests.per.connection``: requests sent beyond it wait in the
    #: connection and leave (in ``data_to_send()``) as earlier responses arrive.
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: Kafka's ``request.timeout.ms``: a request unanswered this long after it left fails with a
    #: :class:`RequestTimedOut` event and closes the connection (``handle_timer``). None: never.
    request_timeout_ms: int | None = DEFAULT_REQUEST_TIMEOUT_MS
    #: Kafka's ``connections.max.idle.ms``: close a connection with nothing in flight after this
    #: long without traffic. None (the default): never; Kafka's clients use 540000 and reconnect
    #: on demand, which this single connection cannot.
    max_idle_ms: int | None = None

    def __post_init__(self) -> None:
        if self.api_versions_version not in VALID_VERSIONS[ApiKey.API_VERSIONS]:
            raise ValueError(f"api_versions_version must be one of {VALID_VERSIONS[ApiKey.API_VERSIONS]}")
        if self.sasl_handshake_version not in (None, *VALID_VERSIONS[ApiKey.SASL_HANDSHAKE]):
            raise ValueError(
                f"sasl_handshake_version must be None or one of {VALID_VERSIONS[ApiKey.SASL_HANDSHAKE]}"
            )
        if self.max_frame_bytes < 8:
            raise ValueError("max_frame_bytes must be at least 8")
        if not 0 <= self.first_correlation_id <= _MAX_CORRELATION_ID:
            raise ValueError("first_correlation_id must be a non-negative int32")
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        for name in ("request_timeout_ms", "max_idle_ms"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be None or >= 0")


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
    #: When it fails for want of a response (None: no response expected, or no timeout).
    deadline_ms: int | None = None
    #: Sent with ``send_raw(decode=False)``: the response is handed back undecoded.
    raw: bool = False


@dataclass(frozen=True, slots=True)
class _Held:
    """A request sent while the connection could not write it (in-flight limit, re-authentication):
    encoded at once, with correlation id 0 until it leaves."""

    frame: bytes
    request: Message | None
    api_key: int
    api_version: int
    context: object
    timeout_ms: int | None
    expects_response: bool = True
    raw: bool = False


def _our_versions(api_key: int) -> tuple[int, int] | None:
    versions = VALID_VERSIONS.get(api_key)
    return None if versions is None else (min(versions), max(versions))


#: A SASL mechanism, or a factory making a fresh one per exchange (needed to re-authenticate).
SaslClientSource = SaslClientMechanism | Callable[[], SaslClientMechanism]


class ClientConnection(Guarded):
    """The client side of one connection.

    Typical use: write ``data_to_send()`` (the ApiVersions request), feed what arrives to
    ``receive_data`` and call ``next_event`` until :class:`VersionsNegotiated` (then
    :class:`Authenticated` when a SASL mechanism was given); from then on ``send`` requests and
    read :class:`Response` events, answered in the order sent.

    Time: the connection knows only the ``now_ms`` it is told (``handle_timer``, and the optional
    ``now_ms`` of the other inputs); ``next_deadline_ms()`` says when to call ``handle_timer``,
    which fails requests past ``request_timeout_ms``, closes an idle connection and starts a
    KIP-368 re-authentication before the session the broker granted expires (``sasl`` must then
    be a factory, since a mechanism serves one exchange).

    Any exception inside a method moves the connection to ``ERROR`` and propagates; every later
    call raises :class:`LocalProtocolError`. ``logger`` receives each change of state (see
    :mod:`kafka_wire.protocol.machine`).
    """

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        sasl: SaslClientSource | None = None,
        now_ms: int = 0,
        logger: TransitionLogger | None = None,
    ) -> None:
        self.config = config = config or ClientConfig()
        self._sasl_factory: Callable[[], SaslClientMechanism] | None = None
        if callable(sasl):
            self._sasl_factory = sasl
            sasl = sasl()
        self._sasl: SaslClientMechanism | None = sasl
        self._reader = FrameReader(config.max_frame_bytes)
        self._in_flight: deque[_InFlight] = deque()
        #: Requests sent by the caller that wait to be written.
        self._held: deque[_Held] = deque()
        #: USER requests written and awaiting their response (what max_in_flight limits).
        self._user_in_flight = 0
        #: Frames to write, joined once when taken (a single frame leaves uncopied).
        self._out: list[bytes] = []
        self._next_correlation_id = config.first_correlation_id
        self._eof = False
        self._broker_versions: dict[int, tuple[int, int]] = {}
        self._api_versions: dict[int, tuple[int, int]] = {}
        self._sasl_raw = False
        self._now_ms = now_ms
        self._last_activity_ms = now_ms
        self._reauthenticate_at_ms: int | None = None
        #: Events made by handle_timer, handed out by next_event first.
        self._timer_events: deque[ClientEvent] = deque()
        self._closed_reason = ""
        self._failure: BaseException | None = None
        initial = ClientState.READY
        if config.negotiate:
            initial = ClientState.NEGOTIATING
        elif sasl is not None:
            initial = ClientState.AUTHENTICATING
        self._machine: StateMachine[ClientState, ClientInput] = StateMachine(
            "client connection", CLIENT_TRANSITIONS, initial, error=ClientState.ERROR, logger=logger
        )
        if config.negotiate:
            self._send_api_versions(config.api_versions_version)
        elif sasl is not None:
            self._start_sasl()

    # -- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> ClientState:
        return self._machine.state

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """Per api key, the (min, max) versions both sides support; empty until negotiated."""
        return self._api_versions

    @property
    def in_flight(self) -> int:
        """Requests sent and awaiting a response (internal ones included)."""
        return sum(1 for f in self._in_flight if f.kind is not _Kind.NO_RESPONSE)

    @property
    def held(self) -> int:
        """Requests sent by the caller and not written yet (in-flight limit, re-authentication)."""
        return len(self._held)

    def pending_contexts(self) -> list[object]:
        """The ``context`` of every request still awaiting its response, oldest first."""
        return [f.context for f in self._in_flight if f.kind is _Kind.USER] + [h.context for h in self._held]

    # -- sending -------------------------------------------------------------------------------

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both sides support.

        Raises :class:`UnsupportedVersionError` when there is none (a question: the connection
        stays as it was). Before negotiation (or with ``negotiate=False``) it is the newest
        version this library knows.
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

    def send(
        self,
        request: Message,
        version: int | None = None,
        *,
        context: object = None,
        timeout_ms: int | None = None,
        now_ms: int | None = None,
    ) -> bytes:
        """Frame ``request`` (at ``version``, or the highest both sides support) and return the
        bytes to write, after any bytes the connection had queued itself.

        ``context`` comes back on the :class:`Response`. A Produce request with ``acks=0`` gets
        no response and is not tracked. ``timeout_ms`` overrides ``request_timeout_ms`` for this
        request. With ``max_in_flight`` requests awaiting responses (or during a
        re-authentication) the request is held and leaves later, in ``data_to_send()``.
        Any failure (``EncodeError``, ``UnsupportedVersionError``: ask ``version_for`` first)
        moves the connection to ERROR.
        """
        self._live()
        try:
            self._tick(now_ms)
            self._machine.move(ClientInput.REQUEST_SENT)  # a self-loop: legal or ERROR, before anything
            if request.KIND != "request" or request.API_KEY is None:
                raise LocalProtocolError(f"send takes a request, not {type(request).__name__}")
            api_version = self.version_for(request.API_KEY) if version is None else version
            timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
            if self._may_write():
                self._write_request(_Kind.USER, request, api_version, context, timeout)
            else:
                frame = encode_request(
                    messages.RequestHeader(client_id=self.config.client_id), request, api_version
                )
                self._held.append(
                    _Held(
                        frame,
                        request,
                        request.API_KEY,
                        api_version,
                        context,
                        timeout,
                        expects_response(request),
                    )
                )
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def _may_write(self) -> bool:
        return (
            self._machine.state is ClientState.READY
            and not self._held
            and self._user_in_flight < self.config.max_in_flight
        )

    def _write_held(self) -> None:
        """Write held requests while the state and the in-flight limit allow."""
        held = self._held
        while (
            held
            and self._machine.state is ClientState.READY
            and self._user_in_flight < self.config.max_in_flight
        ):
            h = held.popleft()
            with memoryview(h.frame) as view:  # one copy, the correlation id (byte 8) replaced
                frame = b"".join((view[:8], _SIZE.pack(self._next_correlation_id), view[12:]))
            self._track(
                _Kind.USER,
                frame,
                h.request,
                h.api_key,
                h.api_version,
                h.context,
                h.timeout_ms,
                expects=h.expects_response,
                raw=h.raw,
            )

    def send_raw(
        self,
        frame: Buffer,
        *,
        decode: bool = False,
        request: Message | None = None,
        expects_response: bool = True,
        context: object = None,
        timeout_ms: int | None = None,
        now_ms: int | None = None,
    ) -> bytes:
        """Send a whole request frame (size prefix included) built elsewhere, as a proxy relays a
        client's frame: its api key and version are read from its header, its correlation id is
        replaced by this connection's, and the rest (client id included) leaves untouched.

        The response comes back as a :class:`RawResponse` (the frame undecoded) or, with
        ``decode``, as a :class:`Response` whose ``request`` is ``request``. ``expects_response``
        is False for a Produce with acks=0. Flow control, timeouts and ``context`` work as in
        :meth:`send`. The caller vouches that the version is one the broker supports.
        """
        self._live()
        try:
            self._tick(now_ms)
            self._machine.move(ClientInput.REQUEST_SENT)  # a self-loop: legal or ERROR, before anything
            if len(frame) < 12 or _SIZE.unpack_from(frame, 0)[0] != len(frame) - 4:
                raise LocalProtocolError("send_raw takes one whole size-prefixed request frame")
            api_key, api_version = _KEY_VERSION.unpack_from(frame, 4)
            if _our_versions(api_key) is None:
                raise LocalProtocolError(f"kafka_wire does not know api key {api_key}")
            timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
            held = _Held(
                bytes(frame), request, api_key, api_version, context, timeout, expects_response, not decode
            )
            self._held.append(held)
            self._write_held()
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def data_to_send(self) -> bytes:
        """Bytes queued by the connection itself (ApiVersions, SASL, held requests) or by ``send``."""
        chunks = self._out
        out = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        if out:
            self._last_activity_ms = self._now_ms
        return out

    def _write_request(
        self,
        kind: _Kind,
        request: Message,
        api_version: int,
        context: object = None,
        timeout_ms: int | None = None,
    ) -> None:
        header = messages.RequestHeader(
            correlation_id=self._next_correlation_id, client_id=self.config.client_id
        )
        if kind is not _Kind.USER:
            timeout_ms = self.config.request_timeout_ms
        assert request.API_KEY is not None
        self._track(
            kind,
            encode_request(header, request, api_version),
            request,
            request.API_KEY,
            api_version,
            context,
            timeout_ms,
            expects=expects_response(request),
        )

    def _track(
        self,
        kind: _Kind,
        frame: Buffer,
        request: Message | None,
        api_key: int,
        api_version: int,
        context: object,
        timeout_ms: int | None,
        *,
        expects: bool,
        raw: bool = False,
    ) -> None:
        correlation_id = self._next_correlation_id
        self._out.append(frame if type(frame) is bytes else bytes(frame))
        self._next_correlation_id = 0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        deadline = None if timeout_ms is None else self._now_ms + timeout_ms
        if not expects:
            kind, deadline = _Kind.NO_RESPONSE, None  # tracked only to tolerate brokers that answer anyway
        elif kind is _Kind.USER:
            self._user_in_flight += 1
        self._in_flight.append(
            _InFlight(kind, correlation_id, api_key, api_version, request, context, deadline, raw)
        )
        while (
            len(self._in_flight) > _MAX_NO_RESPONSE_TRACKED and self._in_flight[0].kind is _Kind.NO_RESPONSE
        ):
            self._in_flight.popleft()

    def _send_api_versions(self, api_version: int) -> None:
        request = messages.ApiVersionsRequest(
            client_software_name=self.config.software_name,
            client_software_version=self.config.software_version,
        )
        self._write_request(_Kind.API_VERSIONS, request, api_version)

    def _start_sasl(self) -> None:
        assert self._sasl is not None
        version = self.config.sasl_handshake_version
        if version is None:
            has_authenticate = not self._broker_versions or ApiKey.SASL_AUTHENTICATE in self._api_versions
            version = 1 if has_authenticate else 0
        self._sasl_raw = version == 0
        self._write_request(
            _Kind.SASL_HANDSHAKE, messages.SaslHandshakeRequest(mechanism=self._sasl.name), version
        )

    def _send_token(self, token: bytes) -> None:
        if self._sasl_raw:
            self._out.append(_SIZE.pack(len(token)) + token)
            deadline = (
                None
                if self.config.request_timeout_ms is None
                else self._now_ms + self.config.request_timeout_ms
            )
            self._in_flight.append(_InFlight(_Kind.SASL_RAW, -1, -1, -1, None, None, deadline))
        else:
            request = messages.SaslAuthenticateRequest(auth_bytes=token)
            self._write_request(_Kind.SASL_AUTHENTICATE, request, self.version_for(ApiKey.SASL_AUTHENTICATE))

    # -- receiving -----------------------------------------------------------------------------

    def receive_data(self, data: Buffer, *, now_ms: int | None = None) -> None:
        """Bytes read from the socket, in any chunking."""
        self._live()
        try:
            self._tick(now_ms)
            if self._eof:
                raise LocalProtocolError("receive_data after receive_eof")
            self._machine.move(ClientInput.DATA_RECEIVED)
            if self._machine.state is not ClientState.CLOSED:
                self._reader.feed(data)
                self._last_activity_ms = self._now_ms
        except BaseException as exc:
            self._fail(exc)
            raise

    def receive_eof(self, *, now_ms: int | None = None) -> None:
        """The peer closed its side; ``next_event`` reports :class:`ConnectionClosed` once the
        buffered frames are consumed."""
        self._live()
        try:
            self._tick(now_ms)
            self._machine.move(ClientInput.EOF_RECEIVED)
            self._eof = True
        except BaseException as exc:
            self._fail(exc)
            raise

    def close(self) -> None:
        """We are closing the connection; later sends fail. Legal in every state, ERROR included."""
        if self._machine.state is not ClientState.ERROR:
            try:
                self._machine.move(ClientInput.CLOSE)
            except BaseException as exc:
                self._fail(exc)
                raise

    def next_event(self) -> ClientEvent | NeedData:
        """The next event, or ``NEED_DATA``.

        Raises :class:`RemoteProtocolError` for a broken response (bad frame, correlation id that
        does not match, undecodable body) and :class:`AuthenticationError` when SASL fails; these,
        like any exception inside (a SASL mechanism's included), move the connection to ERROR.
        """
        self._live()
        try:
            return self._next_event()
        except DecodeError as exc:
            error = RemoteProtocolError(f"bad response: {exc}")
            error.__cause__ = exc
            self._fail(error)
            raise error from exc
        except BaseException as exc:
            self._fail(exc)
            raise

    def _next_event(self) -> ClientEvent | NeedData:
        while True:
            if self._timer_events:
                return self._timer_events.popleft()
            if self._machine.state is ClientState.CLOSED:
                return ConnectionClosed(self._unanswered(), self._closed_reason)
            frame = self._reader.next_frame_before(self._eof)
            if frame is None:
                return NEED_DATA
            if frame is END:
                unanswered = self._unanswered()
                self._machine.move(ClientInput.PEER_CLOSED)
                return ConnectionClosed(unanswered)
            event = self._handle_frame(frame)
            if self._held:
                self._write_held()
            if event is not None:
                return event

    def _unanswered(self) -> tuple[Message, ...]:
        written = [f.request for f in self._in_flight if f.kind is _Kind.USER and f.request is not None]
        return tuple(written + [h.request for h in self._held if h.request is not None])

    # -- time ----------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When ``handle_timer`` has work: a request's timeout, the idle limit or a KIP-368
        re-authentication; None when there is none."""
        state = self._machine.state
        if state is ClientState.CLOSED or state is ClientState.ERROR:
            return None
        deadlines = [f.deadline_ms for f in self._in_flight if f.deadline_ms is not None]
        idle = self.config.max_idle_ms
        if idle is not None and not self.in_flight and not self._held:
            deadlines.append(self._last_activity_ms + idle)
        if self._reauthenticate_at_ms is not None and state is ClientState.READY:
            deadlines.append(self._reauthenticate_at_ms)
        return min(deadlines) if deadlines else None

    def handle_timer(self, now_ms: int) -> None:
        """Act on the deadlines that ``now_ms`` has reached; events it makes come from
        ``next_event`` and bytes from ``data_to_send``.

        A request past its timeout: a :class:`RequestTimedOut` event and the connection closes
        (CLOSED), as Kafka's client disconnects. Idle too long: :class:`ConnectionClosed` with
        reason ``"idle"``. Re-authentication due: a SaslHandshake and a new SASL exchange start
        (state REAUTHENTICATING; requests sent meanwhile wait for its end).
        """
        self._live()
        try:
            self._tick(now_ms)
            state = self._machine.state
            if state is ClientState.CLOSED:
                return
            now = self._now_ms
            expired = [f for f in self._in_flight if f.deadline_ms is not None and f.deadline_ms <= now]
            if expired:
                self._time_out(min(expired, key=lambda f: f.deadline_ms or 0))
                return
            idle = self.config.max_idle_ms
            if (
                idle is not None
                and not self.in_flight
                and not self._held
                and self._last_activity_ms + idle <= now
            ):
                self._machine.move(ClientInput.IDLE_EXPIRED)
                self._closed_reason = "idle"
                return
            due = self._reauthenticate_at_ms
            if due is not None and due <= now and state is ClientState.READY:
                self._reauthenticate()
        except BaseException as exc:
            self._fail(exc)
            raise

    def _time_out(self, late: _InFlight) -> None:
        users = [f for f in self._in_flight if f.kind is _Kind.USER]
        event = RequestTimedOut(
            request=late.request,
            correlation_id=late.correlation_id,
            context=late.context,
            unanswered=self._unanswered(),
            contexts=tuple([f.context for f in users] + [h.context for h in self._held]),
        )
        self._in_flight.clear()
        self._held.clear()
        self._user_in_flight = 0
        self._machine.move(ClientInput.REQUEST_TIMED_OUT)
        self._closed_reason = "request timed out"
        self._timer_events.append(event)

    def _reauthenticate(self) -> None:
        self._reauthenticate_at_ms = None
        assert self._sasl_factory is not None
        self._machine.move(ClientInput.REAUTHENTICATION_DUE)
        self._sasl = self._sasl_factory()
        self._start_sasl()

    # -- responses -----------------------------------------------------------------------------

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
        if pending.raw:
            self._in_flight.popleft()
            self._user_in_flight -= 1
            return RawResponse(frame, pending.api_key, pending.api_version, correlation_id, pending.context)
        header, body = self._decode(frame, pending)
        self._in_flight.popleft()
        if pending.kind is _Kind.USER:
            self._user_in_flight -= 1
            return Response(
                body=body,
                api_key=pending.api_key,
                api_version=pending.api_version,
                correlation_id=correlation_id,
                header=header,
                request=pending.request,
                context=pending.context,
            )
        if isinstance(body, messages.ApiVersionsResponse):
            return self._on_api_versions(body, pending.api_version)
        if isinstance(body, messages.SaslHandshakeResponse):
            self._on_sasl_handshake(body)
            return None
        assert isinstance(body, messages.SaslAuthenticateResponse)
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
            self._machine.move(ClientInput.VERSIONS_AGREED)
        else:
            self._machine.move(ClientInput.SASL_STARTED)
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
        again = self._machine.state is ClientState.REAUTHENTICATING
        self._machine.move(ClientInput.AUTHENTICATED)
        if session_lifetime_ms > 0 and self._sasl_factory is not None:
            self._reauthenticate_at_ms = self._now_ms + int(session_lifetime_ms * REAUTHENTICATE_AT)
        return Authenticated(
            mechanism=self._sasl.name, session_lifetime_ms=session_lifetime_ms, reauthentication=again
        )
