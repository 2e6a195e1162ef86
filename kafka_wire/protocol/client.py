"""``ClientConnection``: the client side of one Kafka connection, as a Sans-IO state machine.

Requests go in and bytes come out (``send``); received bytes go in and events come out
(``receive_data`` / ``next_event``). The connection assigns correlation ids, picks header
versions, negotiates API versions with an ApiVersions exchange, runs the SASL handshake when a
mechanism is given, and matches responses to requests in order. It never reads a clock: round-trip
information travels in the ``context`` the caller passes to ``send``.

This module holds the connection's state machine (:data:`CLIENT_TRANSITIONS`, the one table of its
moves) and makes every move; it delegates to parts that own their state: the requests held, written
and in flight are :mod:`~kafka_wire.protocol.client_requests`'s, the versions negotiated
:mod:`~kafka_wire.protocol.client_versions`'s, and the SASL exchange
:mod:`~kafka_wire.protocol.client_sasl`'s. Its configuration is
:mod:`~kafka_wire.protocol.client_config`'s.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, LocalProtocolError, RemoteProtocolError
from kafka_wire.messages import ApiKey
from kafka_wire.protocol.client_config import (
    DEFAULT_API_VERSIONS_VERSION,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_REQUEST_TIMEOUT_MS,
    ClientConfig,
)
from kafka_wire.protocol.client_requests import InFlight, RequestKind, RequestQueue
from kafka_wire.protocol.client_sasl import REAUTHENTICATE_AT, ClientSaslExchange, SaslClientSource
from kafka_wire.protocol.client_versions import VersionNegotiation, decode_api_response
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    ClientEvent,
    ConnectionClosed,
    NeedData,
    RawResponse,
    Response,
)
from kafka_wire.protocol.frames import END, Buffer, FrameReader
from kafka_wire.protocol.machine import Guarded, StateMachine, TransitionLogger

if TYPE_CHECKING:
    from kafka_wire.messages import ApiVersionsResponse

__all__ = [
    "CLIENT_TRANSITIONS",
    "DEFAULT_API_VERSIONS_VERSION",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "REAUTHENTICATE_AT",
    "ClientConfig",
    "ClientConnection",
    "ClientInput",
    "ClientState",
    "SaslClientSource",
]


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
        #: The SASL exchange (None: no SASL).
        self._sasl = None if sasl is None else ClientSaslExchange(sasl, config.sasl_handshake_version)
        self._reader = FrameReader(config.max_frame_bytes)
        #: The requests held, written and in flight.
        self._requests = RequestQueue(config)
        self._versions = VersionNegotiation()
        self._eof = False
        self._now_ms = now_ms
        self._last_activity_ms = now_ms
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
        return self._versions.agreed

    @property
    def in_flight(self) -> int:
        """Requests sent and awaiting a response (internal ones included)."""
        return self._requests.awaiting()

    @property
    def held(self) -> int:
        """Requests sent by the caller and not written yet (in-flight limit, re-authentication)."""
        return len(self._requests.held)

    def pending_contexts(self) -> list[object]:
        """The ``context`` of every request still awaiting its response, oldest first."""
        return self._requests.contexts()

    # -- sending -------------------------------------------------------------------------------

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both sides support.

        Raises :class:`UnsupportedVersionError` when there is none (a question: the connection
        stays as it was). Before negotiation (or with ``negotiate=False``) it is the newest
        version this library knows.
        """
        return self._versions.version_for(api_key)

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
            requests = self._requests
            if self._machine.state is ClientState.READY and not requests.held and requests.below_limit():
                requests.write(RequestKind.USER, request, api_version, self._now_ms, context, timeout)
            else:
                requests.hold(request, api_version, context, timeout)
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

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
            timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
            self._requests.hold_frame(
                frame, request, context, timeout, expects=expects_response, raw=not decode
            )
            self._write_held()
            return self.data_to_send()
        except BaseException as exc:
            self._fail(exc)
            raise

    def _write_held(self) -> None:
        """Write held requests while the state and the in-flight limit allow."""
        if self._machine.state is ClientState.READY:
            self._requests.write_held(self._now_ms)

    def data_to_send(self) -> bytes:
        """Bytes queued by the connection itself (ApiVersions, SASL, held requests) or by ``send``."""
        out = self._requests.take()
        if out:
            self._last_activity_ms = self._now_ms
        return out

    def _send_api_versions(self, api_version: int) -> None:
        request = messages.ApiVersionsRequest(
            client_software_name=self.config.software_name,
            client_software_version=self.config.software_version,
        )
        self._requests.write(RequestKind.API_VERSIONS, request, api_version, self._now_ms)

    def _start_sasl(self) -> None:
        assert self._sasl is not None
        request, version = self._sasl.handshake(self._versions.has_sasl_authenticate())
        self._requests.write(RequestKind.SASL_HANDSHAKE, request, version, self._now_ms)

    def _send_token(self, token: bytes) -> None:
        assert self._sasl is not None
        if self._sasl.raw:
            self._requests.write_token(token, self._now_ms)
        else:
            request = messages.SaslAuthenticateRequest(auth_bytes=token)
            version = self.version_for(ApiKey.SASL_AUTHENTICATE)
            self._requests.write(RequestKind.SASL_AUTHENTICATE, request, version, self._now_ms)

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
                return ConnectionClosed(self._requests.unanswered(), self._closed_reason)
            frame = self._reader.next_frame_before(self._eof)
            if frame is None:
                return NEED_DATA
            if frame is END:
                unanswered = self._requests.unanswered()
                self._machine.move(ClientInput.PEER_CLOSED)
                return ConnectionClosed(unanswered)
            event = self._handle_frame(frame)
            if self._requests.held:
                self._write_held()
            if event is not None:
                return event

    # -- time ----------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When ``handle_timer`` has work: a request's timeout, the idle limit or a KIP-368
        re-authentication; None when there is none."""
        state = self._machine.state
        if state is ClientState.CLOSED or state is ClientState.ERROR:
            return None
        deadlines = self._requests.deadlines()
        idle = self.config.max_idle_ms
        if idle is not None and not self.in_flight and not self._requests.held:
            deadlines.append(self._last_activity_ms + idle)
        due = None if self._sasl is None else self._sasl.reauthenticate_at_ms
        if due is not None and state is ClientState.READY:
            deadlines.append(due)
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
            late = self._requests.late(now)
            if late is not None:
                event = self._requests.time_out(late)
                self._machine.move(ClientInput.REQUEST_TIMED_OUT)
                self._closed_reason = "request timed out"
                self._timer_events.append(event)
                return
            idle = self.config.max_idle_ms
            if (
                idle is not None
                and not self.in_flight
                and not self._requests.held
                and self._last_activity_ms + idle <= now
            ):
                self._machine.move(ClientInput.IDLE_EXPIRED)
                self._closed_reason = "idle"
                return
            sasl = self._sasl
            due = None if sasl is None else sasl.reauthenticate_at_ms
            if sasl is not None and due is not None and due <= now and state is ClientState.READY:
                self._machine.move(ClientInput.REAUTHENTICATION_DUE)
                sasl.restart()
                self._start_sasl()
        except BaseException as exc:
            self._fail(exc)
            raise

    # -- responses -----------------------------------------------------------------------------

    def _handle_frame(self, frame: bytes) -> ClientEvent | None:
        pending = self._requests.match(frame)
        if pending is None:
            return None
        if pending.kind is RequestKind.SASL_RAW:
            step = self._exchange().on_token(
                frame[4:], self._now_ms, reauthentication=self._reauthenticating()
            )
            return self._on_sasl_step(step)
        if pending.raw:
            self._requests.answered(pending)
            return RawResponse(
                frame, pending.api_key, pending.api_version, pending.correlation_id, pending.context
            )
        header, body = decode_api_response(
            frame, pending.api_key, pending.api_version, strict=self.config.strict
        )
        self._requests.answered(pending)
        if pending.kind is RequestKind.USER:
            return Response(
                body=body,
                api_key=pending.api_key,
                api_version=pending.api_version,
                correlation_id=pending.correlation_id,
                header=header,
                request=pending.request,
                context=pending.context,
            )
        if isinstance(body, messages.ApiVersionsResponse):
            return self._on_api_versions(body, pending)
        if isinstance(body, messages.SaslHandshakeResponse):
            self._send_token(self._exchange().on_handshake(body))
            return None
        assert isinstance(body, messages.SaslAuthenticateResponse)
        step = self._exchange().on_authenticate(body, self._now_ms, reauthentication=self._reauthenticating())
        return self._on_sasl_step(step)

    def _on_api_versions(self, body: ApiVersionsResponse, pending: InFlight) -> ClientEvent | None:
        outcome = self._versions.negotiate(body, pending.api_version)
        if isinstance(outcome, int):  # the broker lacks this version: ask again at an older one
            self._send_api_versions(outcome)
            return None
        if self._sasl is None:
            self._machine.move(ClientInput.VERSIONS_AGREED)
        else:
            self._machine.move(ClientInput.SASL_STARTED)
            self._start_sasl()
        return outcome

    def _exchange(self) -> ClientSaslExchange:
        assert self._sasl is not None
        return self._sasl

    def _reauthenticating(self) -> bool:
        return self._machine.state is ClientState.REAUTHENTICATING

    def _on_sasl_step(self, step: bytes | Authenticated) -> ClientEvent | None:
        """A SASL exchange step: the reply to send, or the end of the exchange."""
        if isinstance(step, bytes):
            self._send_token(step)
            return None
        self._machine.move(ClientInput.AUTHENTICATED)
        return step
