"""``ServerConnection``: the broker (or proxy) side of one Kafka connection, Sans-IO.

Received bytes become :class:`Request` events with typed bodies; responses built with
``Request.reply(body)`` go to ``send`` and come back as bytes, always in the order the requests
arrived, whatever order the server answers them in. Requests of an API key or version the server
does not support become :class:`UnsupportedRequest` events, answered Kafka's way by ``reject``.
With a :class:`ServerSasl` gate, nothing but ApiVersions, SaslHandshake and SaslAuthenticate is
accepted until a client authenticates; the connection runs the SASL exchange itself.

This module holds the connection's state machine (:data:`SERVER_TRANSITIONS`, the one table of its
moves) and makes every move; it delegates to parts that own their state: frames become events in
:mod:`~kafka_wire.protocol.server_requests`, the responses owed wait in request order in
:mod:`~kafka_wire.protocol.server_responses`, and the SASL exchange and its session are
:mod:`~kafka_wire.protocol.server_sasl`'s. Its configuration is :mod:`~kafka_wire.protocol.server_config`'s.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, LocalProtocolError, RemoteProtocolError
from kafka_wire.messages import ApiKey, ErrorCode
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
from kafka_wire.protocol.frames import END, Buffer, FrameReader
from kafka_wire.protocol.framing import encode_response, encode_response_spliced
from kafka_wire.protocol.machine import Guarded, StateMachine, TransitionLogger
from kafka_wire.protocol.sasl.base import SaslServerMechanism
from kafka_wire.protocol.server_config import (
    DEFAULT_MAX_PREAUTH_FRAME_BYTES,
    ServerConfig,
    ServerSasl,
    all_api_versions,
    api_versions_response,
)
from kafka_wire.protocol.server_requests import RequestDecoder
from kafka_wire.protocol.server_responses import ResponseQueue, Splice
from kafka_wire.protocol.server_sasl import Outcome, ServerSaslExchange

if TYPE_CHECKING:
    from kafka_wire.messages import SaslAuthenticateRequest, SaslHandshakeRequest

__all__ = [
    "DEFAULT_MAX_PREAUTH_FRAME_BYTES",
    "SERVER_TRANSITIONS",
    "ServerConfig",
    "ServerConnection",
    "ServerInput",
    "ServerSasl",
    "ServerState",
    "Splice",
    "all_api_versions",
    "api_versions_response",
]


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
        self._requests = RequestDecoder(self._versions, config.passthrough, config.strict)
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
            and not self._sasl.starts_reauthentication(frame, self._now_ms)
        ):
            # KIP-368: the first request after the session ended closes the connection, unanswered.
            self._machine.move(ServerInput.SESSION_EXPIRED)
            self._closed_reason = "session expired"
            return None
        event = self._requests.decode(frame, _PREAUTH.get(state), state.name)
        if isinstance(event, UnsupportedRequest):
            self._responses.expect(event.correlation_id, event.api_key, event.api_version, None)
        elif isinstance(event, RawRequest):
            if event.expects_response:
                self._responses.expect(event.correlation_id, event.api_key, event.api_version, None, raw=True)
        else:
            body = event.body
            if self._sasl is not None and isinstance(
                body, messages.SaslHandshakeRequest | messages.SaslAuthenticateRequest
            ):
                return self._on_sasl(event, body)
            if event.expects_response:
                self._responses.expect(event.correlation_id, event.api_key, event.api_version, body)
        return event

    def _answer(self, request: Request, body: Message) -> None:
        data = encode_response(
            messages.ResponseHeader(correlation_id=request.correlation_id), body, request.api_version
        )
        self._responses.answered(
            request.correlation_id, request.api_key, request.api_version, request.body, data
        )

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
