"""``ProxyPair``: one client connection through the proxy, as a Sans-IO state machine.

The pair holds the client's side (a :class:`~kafka_wire.protocol.server.ServerConnection`) and
the upstream's (a :class:`~kafka_wire.protocol.client.ClientConnection`). Inputs: bytes from
either socket, their EOFs, the time (``handle_timer``) and the results of async filters
(``resume``). Outputs: bytes for each socket (``client_data_to_send`` / ``upstream_data_to_send``),
effects (``take_effects``: awaitables to run, log lines) and ``must_close`` once both sockets
should close (after their bytes are written).

Flow. The pair first negotiates ApiVersions with the upstream (state CONNECTING; the client's
bytes wait). Then each client request enters the chain in arrival order: frames of api keys no
filter reads stay undecoded (``RawRequest``) and go upstream as they came, with the upstream
connection's correlation id in place of the client's; the client's ApiVersions is answered by the
pair (what the filters, kafka_wire and the upstream support). Each upstream response is decoded
only when it may carry broker addresses (rewritten to proxy ports) or a filter reads it; else the
frame goes back untouched but for the correlation id. Answers reach the client in its request
order: an answer made here (ApiVersions, a filter's, an unsupported request's) waits for the
upstream's answers to earlier requests, since a client may reuse a correlation id in one pipeline.

Failures. Garbage or a broken frame from either side, a filter that raises, an upstream that
closes: the pair moves to CLOSED (ERROR for a failure inside), logs why, and ``must_close`` is
true. Nothing escapes to other pairs.
"""

from __future__ import annotations

import enum
import logging
import traceback
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from kafka_wire.errors import KafkaWireError
from kafka_wire.messages import ApiVersionsRequest, ApiVersionsResponse, ResponseHeader
from kafka_wire.protocol.client import ClientConfig, ClientConnection
from kafka_wire.protocol.events import (
    NEED_DATA,
    PAUSED,
    AuthenticationFailed,
    ConnectionClosed,
    RawRequest,
    RawResponse,
    Request,
    RequestTimedOut,
    UnsupportedRequest,
    VersionsNegotiated,
)
from kafka_wire.protocol.frames import Buffer
from kafka_wire.protocol.framing import decode_response, encode_request, encode_response
from kafka_wire.protocol.machine import Guarded, StateMachine, TransitionLogger
from kafka_wire.protocol.server import ServerConfig, ServerConnection, api_versions_response
from kafka_wire.proxy.addresses import Route
from kafka_wire.proxy.effects import Await, Effect, LogLine
from kafka_wire.proxy.exchange import Exchange, Reply, take_chunks
from kafka_wire.proxy.filters import FORWARD, Answer, Call, Close, ConnectionInfo, Delay, Filter, Verdict

if TYPE_CHECKING:
    from kafka_wire.proxy.proxy import Proxy


class PairState(enum.Enum):
    #: The upstream's ApiVersions exchange is under way; the client's bytes wait.
    CONNECTING = "CONNECTING"
    OPEN = "OPEN"
    #: Both sockets should close once their bytes are written.
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class PairInput(enum.Enum):
    """What happens to a pair: the inputs of :data:`PAIR_TRANSITIONS`."""

    CLIENT_DATA = "client data"
    UPSTREAM_DATA = "upstream data"
    UPSTREAM_READY = "upstream ready"
    TIMER = "timer"
    RESUMED = "filter resumed"
    CLIENT_CLOSED = "client closed"
    UPSTREAM_CLOSED = "upstream closed"
    FILTER_CLOSED = "filter closed"
    CLOSE = "close"


def _pair_table() -> dict[tuple[PairState, PairInput], PairState]:
    s, i = PairState, PairInput
    table: dict[tuple[PairState, PairInput], PairState] = {}
    for state in (s.CONNECTING, s.OPEN):
        for move in (i.CLIENT_DATA, i.UPSTREAM_DATA, i.TIMER, i.RESUMED):
            table[state, move] = state
        for move in (i.CLIENT_CLOSED, i.UPSTREAM_CLOSED, i.FILTER_CLOSED, i.CLOSE):
            table[state, move] = s.CLOSED
    table[s.CONNECTING, i.UPSTREAM_READY] = s.OPEN
    for move in i:  # late input after the end is dropped
        table[s.CLOSED, move] = s.CLOSED
    return table


#: Every legal move of a pair; anything else (or any exception inside) moves it to ERROR.
PAIR_TRANSITIONS: Final[Mapping[tuple[PairState, PairInput], PairState]] = _pair_table()

_LIVE: Final = (PairState.CONNECTING, PairState.OPEN)


class ProxyPair(Guarded):
    """One client connection and its upstream connection (see the module docstring)."""

    def __init__(
        self,
        proxy: Proxy,
        info: ConnectionInfo,
        route: Route,
        now_ms: int,
        logger: TransitionLogger | None = None,
    ) -> None:
        self.proxy = proxy
        self.info = info
        #: Where the adapter connects the upstream side.
        self.upstream = (route.upstream_host, route.upstream_port)
        config = proxy.config
        self._now_ms = now_ms
        self._failure: BaseException | None = None
        self._machine: StateMachine[PairState, PairInput] = StateMachine(
            f"proxy pair {info.connection_id}",
            PAIR_TRANSITIONS,
            PairState.CONNECTING,
            error=PairState.ERROR,
            logger=logger,
        )
        self._upstream = ClientConnection(
            ClientConfig(
                client_id=config.client_id,
                max_frame_bytes=config.max_frame_bytes,
                max_in_flight=config.upstream_in_flight,
                request_timeout_ms=config.connect_timeout_ms,
            ),
            now_ms=now_ms,
        )
        self._server: ServerConnection | None = None
        self._early = bytearray()
        self._client_eof = False
        #: Bytes for each socket, as chunks joined once when taken (a relayed frame is not copied).
        self._client_out: list[bytes] = []
        self._upstream_out: list[bytes] = [self._upstream.data_to_send()]
        self._requests: deque[Exchange] = deque()
        self._responses: deque[Exchange] = deque()
        #: The client's requests that expect an answer, in arrival order.
        self._replies: deque[Reply] = deque()
        self._parked: dict[int, Exchange] = {}
        self._next_token = 0
        self._effects: list[Effect] = []
        self._upstream_versions: ApiVersionsResponse | None = None
        self._server_eof = False
        self._offered: dict[int, tuple[int, int]] = {}
        self.close_reason = ""

    # -- state and outputs ---------------------------------------------------------------------

    @property
    def state(self) -> PairState:
        return self._machine.state

    @property
    def must_close(self) -> bool:
        """Both sockets should close once the bytes to send are written."""
        return self._machine.state not in _LIVE

    @property
    def wants_client_data(self) -> bool:
        """False while the pair holds as much of the client's input as it may (the adapter stops
        reading the client's socket until the pair drains)."""
        config = self.proxy.config
        held = len(self._early) + (self._server.buffered_bytes if self._server else 0)
        return (
            self._machine.state in _LIVE
            and held < config.max_buffered_bytes
            and len(self._requests) < config.max_queued_requests
        )

    def client_data_to_send(self) -> bytes:
        return take_chunks(self._client_out)

    def upstream_data_to_send(self) -> bytes:
        return take_chunks(self._upstream_out)

    def take_effects(self) -> list[Effect]:
        effects, self._effects = self._effects, []
        return effects

    def next_deadline_ms(self) -> int | None:
        if self._machine.state not in _LIVE:
            return None
        deadlines = [d for d in (self._upstream.next_deadline_ms(),) if d is not None]
        if self._server is not None and (d := self._server.next_deadline_ms()) is not None:
            deadlines.append(d)
        for queue in (self._requests, self._responses):
            if queue and queue[0].wake_ms is not None:
                deadlines.append(queue[0].wake_ms)
        return min(deadlines) if deadlines else None

    # -- inputs --------------------------------------------------------------------------------

    def receive_client(self, data: Buffer, *, now_ms: int) -> None:
        self._input(PairInput.CLIENT_DATA, now_ms, data, None)

    def receive_upstream(self, data: Buffer, *, now_ms: int) -> None:
        self._input(PairInput.UPSTREAM_DATA, now_ms, None, data)

    def client_eof(self, *, now_ms: int) -> None:
        self._client_eof = True
        self._input(PairInput.CLIENT_DATA, now_ms, None, None)

    def upstream_eof(self, *, now_ms: int) -> None:
        self._input(PairInput.UPSTREAM_DATA, now_ms, None, None, upstream_eof=True)

    def handle_timer(self, now_ms: int) -> None:
        self._input(PairInput.TIMER, now_ms, None, None)

    def resume(self, token: int, outcome: Verdict | BaseException, *, now_ms: int) -> None:
        """An async filter finished: its verdict, or the exception it raised."""
        self._input(PairInput.RESUMED, now_ms, None, None, resumed=(token, outcome))

    def close(self, reason: str = "closed by the proxy") -> None:
        """Close both sides (the proxy is stopping). Legal in every state."""
        if self._machine.state in _LIVE:
            self.close_reason = reason
            self._machine.move(PairInput.CLOSE)

    def _input(
        self,
        move: PairInput,
        now_ms: int,
        client: Buffer | None,
        upstream: Buffer | None,
        *,
        upstream_eof: bool = False,
        resumed: tuple[int, Verdict | BaseException] | None = None,
    ) -> None:
        if self._machine.state not in _LIVE:
            return  # the pair is over: late input is dropped
        self._tick(now_ms)
        try:
            self._machine.move(move)
            if upstream is not None:
                self._upstream.receive_data(upstream, now_ms=self._now_ms)
            if upstream_eof:
                self._upstream.receive_eof(now_ms=self._now_ms)
            if move is PairInput.TIMER:
                self._upstream.handle_timer(self._now_ms)
                if self._server is not None:
                    self._server.handle_timer(self._now_ms)
            if client is not None:
                if self._server is None:
                    self._early += client
                else:
                    self._server.receive_data(client, now_ms=self._now_ms)
            if resumed is not None:
                self._on_resumed(*resumed)
            self._run()
        except (KafkaWireError, OSError, ValueError) as exc:
            self._fail(exc)
            self._log(logging.WARNING, f"closed: {type(exc).__name__}: {exc}")
        except Exception as exc:  # a filter's bug included: this pair closes, the proxy goes on
            self._fail(exc)
            trace = "".join(traceback.format_exception(exc)).rstrip()
            self._log(logging.ERROR, f"closed by a failure inside: {type(exc).__name__}: {exc}\n{trace}")
        except BaseException as exc:  # KeyboardInterrupt and the like: ERROR, and up it goes
            self._fail(exc)
            raise

    def _fail(self, exc: BaseException) -> None:
        super()._fail(exc)
        self.close_reason = f"{type(exc).__name__}: {exc}"

    def _log(self, level: int, message: str) -> None:
        self._effects.append(
            LogLine(level, f"proxy connection {self.info.connection_id} ({self.info.client}): {message}")
        )

    def _closed(self, move: PairInput, reason: str) -> None:
        if self._machine.state in _LIVE:
            self.close_reason = reason
            self._machine.move(move)
            self._log(logging.INFO, f"closed: {reason}")

    # -- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        """Move everything that can move: upstream events, client requests, the chains. A step
        feeds only the steps after it, but for the client's requests that stopped at a limit (the
        queue, the in-flight count) that the chains may have lifted: only then a second pass."""
        progress = True
        while progress and self._machine.state in _LIVE:
            progress = self._upstream_events()
            blocked = self._client_events()
            progress = self._pump_requests() or progress
            progress = (self._pump_responses() or progress) and blocked
            if out := self._upstream.data_to_send():
                self._upstream_out.append(out)
            if self._server is not None:
                if out := self._server.data_to_send():
                    self._client_out.append(out)
                if self._server.must_close and self._machine.state in _LIVE:
                    self._closed(PairInput.CLOSE, "the client sent a request the proxy refuses")

    def _upstream_events(self) -> bool:
        progress = False
        while self._machine.state in _LIVE:
            event = self._upstream.next_event()
            if event is NEED_DATA:
                return progress
            progress = True
            if isinstance(event, RawResponse):
                exchange = event.context
                assert isinstance(exchange, Exchange)
                exchange.response_frame = event.frame
                exchange.step = len(self.proxy.filters) - 1
                self._responses.append(exchange)
            elif isinstance(event, VersionsNegotiated):
                self._on_upstream_ready(event)
            elif isinstance(event, ConnectionClosed | RequestTimedOut):
                why = (
                    "the upstream closed"
                    if isinstance(event, ConnectionClosed)
                    else "the upstream did not answer"
                )
                self._closed(PairInput.UPSTREAM_CLOSED, why)
            else:  # Authenticated, Response: the pair never asks for them
                raise KafkaWireError(f"unexpected upstream event {type(event).__name__}")
        return progress

    def _on_upstream_ready(self, event: VersionsNegotiated) -> None:
        self._machine.move(PairInput.UPSTREAM_READY)
        proxy = self.proxy
        self._upstream_versions = event.response
        self._offered = proxy.offer(event.api_versions)
        config = proxy.config
        # Relayed requests time out at the client, not here (a JoinGroup may wait minutes).
        self._upstream.config = replace(self._upstream.config, request_timeout_ms=None)
        self._server = ServerConnection(
            ServerConfig(
                api_versions=self._offered,
                max_frame_bytes=config.max_frame_bytes,
                passthrough=proxy.passthrough() & frozenset(self._offered),
            ),
            now_ms=self._now_ms,
        )
        if self._early:
            self._server.receive_data(bytes(self._early), now_ms=self._now_ms)
            self._early.clear()

    def _client_events(self) -> bool:
        """Take the client's requests; True when they stopped at a limit, not for want of bytes."""
        server = self._server
        if server is None:
            if self._client_eof:
                self._closed(PairInput.CLIENT_CLOSED, "the client closed")
            return False
        limit = self.proxy.config.max_queued_requests
        if self._client_eof and not self._server_eof:
            self._server_eof = True
            server.receive_eof(now_ms=self._now_ms)
        while self._machine.state in _LIVE and len(self._requests) < limit:
            event = server.next_event()
            if event is NEED_DATA or event is PAUSED:
                return event is PAUSED
            if isinstance(event, RawRequest):
                self._enqueue(
                    Exchange(event.correlation_id, event.header, event.frame, None, event.expects_response)
                )
            elif isinstance(event, Request):
                call = Call(self.info, event.header, event.body)
                self._enqueue(
                    Exchange(event.correlation_id, event.header, None, call, event.expects_response)
                )
            elif isinstance(event, UnsupportedRequest):
                self._reject(event)
            elif isinstance(event, ConnectionClosed):
                self._closed(PairInput.CLIENT_CLOSED, "the client closed")
            elif isinstance(event, AuthenticationFailed):  # no SASL gate on the client side
                raise KafkaWireError(f"unexpected client event {type(event).__name__}")
        return self._machine.state in _LIVE

    def _enqueue(self, exchange: Exchange) -> None:
        if exchange.expects_response:
            exchange.reply = Reply()
            self._replies.append(exchange.reply)
        self._requests.append(exchange)

    def _reject(self, event: UnsupportedRequest) -> None:
        self._replies.append(Reply(lambda server: server.reject(event)))
        self._flush_replies()

    def _flush_replies(self) -> None:
        """Send the ready answers at the head of the answer order."""
        server, replies = self._server, self._replies
        assert server is not None
        while replies and (send := replies[0].send) is not None:
            replies.popleft()
            if out := send(server):
                self._client_out.append(out)

    def _api_versions(self, version: int) -> ApiVersionsResponse:
        answer = api_versions_response(self._offered)
        upstream = self._upstream_versions
        if upstream is not None:
            answer.throttle_time_ms = upstream.throttle_time_ms
            if version >= 3:  # the feature fields are tagged fields of v3+
                answer.supported_features = upstream.supported_features
                answer.finalized_features_epoch = upstream.finalized_features_epoch
                answer.finalized_features = upstream.finalized_features
                answer.zk_migration_ready = upstream.zk_migration_ready
        return answer

    # -- the chain -----------------------------------------------------------------------------

    def _ask(self, exchange: Exchange, f: Filter, call: Call, response: bool) -> Verdict | None:
        """Run one filter; None when it went async (the exchange is parked on a token)."""
        outcome = f.on_response(call) if response else f.on_request(call)
        if outcome is FORWARD or isinstance(outcome, Answer | Delay | Close):
            return outcome
        self._next_token += 1
        exchange.token = self._next_token
        self._parked[self._next_token] = exchange
        self._effects.append(Await(self._next_token, outcome, self.info.connection_id))
        return None

    def _on_resumed(self, token: int, outcome: Verdict | BaseException) -> None:
        exchange = self._parked.pop(token, None)
        if exchange is None:
            return
        exchange.token = None
        if isinstance(outcome, BaseException):
            raise outcome
        is_response = exchange.response_frame is not None
        exchange.step += -1 if is_response else 1
        self._apply(exchange, outcome, is_response)

    def _apply(self, exchange: Exchange, verdict: Verdict, response: bool) -> None:
        """A verdict on a parked or running exchange (the step already moved past its filter)."""
        if isinstance(verdict, Delay):
            exchange.wake_ms = self._now_ms + max(verdict.ms, 0)
        elif isinstance(verdict, Close):
            self._closed(PairInput.FILTER_CLOSED, f"a filter closed the connection: {verdict.reason}")
        elif isinstance(verdict, Answer):
            assert exchange.call is not None
            exchange.call.response = verdict.body
            exchange.changed = exchange.decoded = True
            if not response:
                # Answered here, never sent upstream: this filter and those before it see the answer.
                exchange.response_frame = b""
                exchange.step -= 1
                queue = self._requests
                if queue and queue[0] is exchange:
                    queue.popleft()
                self._responses.append(exchange)

    def _pump_requests(self) -> bool:
        filters = self.proxy.filters
        progress = False
        while self._requests and self._machine.state in _LIVE:
            x = self._requests[0]
            if x.token is not None or (x.wake_ms is not None and x.wake_ms > self._now_ms):
                return progress
            x.wake_ms = None
            call = x.call
            while call is not None and x.step < len(filters) and x.response_frame is None:
                f = filters[x.step]
                if not f.wants_request(call.api_key):
                    x.step += 1
                    continue
                verdict = self._ask(x, f, call, response=False)
                if verdict is None:
                    return True
                x.step += 1
                if verdict is not FORWARD:
                    self._apply(x, verdict, response=False)
                    break
            if self._machine.state not in _LIVE:
                return True
            if x.response_frame is not None or x.wake_ms is not None:
                progress = True
                continue  # answered here (already moved on) or delayed
            self._requests.popleft()
            if call is not None and isinstance(call.body, ApiVersionsRequest):
                # Answered by the pair itself: what the filters, kafka_wire and the upstream support.
                call.response = self._api_versions(x.header.request_api_version)
                x.response_frame, x.changed, x.decoded = b"", True, True
                x.step = len(filters) - 1
                self._responses.append(x)
            else:
                self._send_upstream(x)
            progress = True
        return progress

    def _send_upstream(self, x: Exchange) -> None:
        frame = x.frame
        if frame is None:
            assert x.call is not None
            frame = encode_request(x.header, x.call.body, x.header.request_api_version)
        out = self._upstream.send_raw(
            frame, expects_response=x.expects_response, context=x, now_ms=self._now_ms
        )
        if out:
            self._upstream_out.append(out)

    def _pump_responses(self) -> bool:
        filters = self.proxy.filters
        progress = False
        while self._responses and self._machine.state in _LIVE:
            x = self._responses[0]
            if x.token is not None or (x.wake_ms is not None and x.wake_ms > self._now_ms):
                return progress
            x.wake_ms = None
            if not x.decoded:
                self._decode_response(x)
            call = x.call
            while x.step >= 0 and call is not None and call.response is not None:
                f = filters[x.step]
                if not f.wants_response(call.api_key):
                    x.step -= 1
                    continue
                verdict = self._ask(x, f, call, response=True)
                if verdict is None:
                    return True
                x.step -= 1
                if verdict is not FORWARD:
                    self._apply(x, verdict, response=True)
                    if not isinstance(verdict, Answer):
                        break
            if self._machine.state not in _LIVE:
                return True
            if x.wake_ms is not None:
                progress = True
                continue
            self._responses.popleft()
            self._answer_client(x)
            progress = True
        return progress

    def _decode_response(self, x: Exchange) -> None:
        """Decode the upstream's answer when addresses or a filter need it (once, before the
        response filters run)."""
        x.decoded = True
        key, version = x.header.request_api_key, x.header.request_api_version
        if not self.proxy.decodes_response(key, version):
            return
        assert x.response_frame is not None
        _, body = decode_response(x.response_frame, key, version)
        x.response = body
        if x.call is not None:
            x.call.response = body
        x.changed = self.proxy.book.rewrite(body, key, version)
        x.changed = x.changed or any(f.wants_response(key) for f in self.proxy.filters)

    def _answer_client(self, x: Exchange) -> None:
        if x.reply is None:
            return
        body = x.call.response if x.call is not None else x.response
        if x.changed and body is not None:
            header = ResponseHeader(correlation_id=x.correlation_id)
            frame = encode_response(header, body, x.header.request_api_version)
        else:
            assert x.response_frame is not None
            frame = x.response_frame
        now_ms, correlation_id = self._now_ms, x.correlation_id
        x.reply.send = lambda server: server.send_raw(correlation_id, frame, now_ms=now_ms)
        self._flush_replies()
