"""The broker's client connections: their requests read one at a time, dispatched, held and answered.

Connections are handled as Kafka's socket server handles them: a connection over
``max.connections`` or ``max.connections.per.ip`` is closed at once (``connections.py``); a
connection is read one request at a time, and muted (``muting.py``) while a request of it is held
unanswered, while ``queued.max.requests`` requests are held, or once the call's requests are
spent; idle connections, unfinished request frames and failed authentications end on timers.

A decoded request goes to the first of: an injected fault (``faults.py``), the cluster node (a
controller listener), the coordinators (group and transaction APIs, ``coordinators.py``), the refusal of SASL on a plaintext
listener, or ``apis.HANDLERS[api_key]``. What comes back is an answer (sent at the end of the
call, once the writes it depends on are applied: ``storage_pipeline.py``), or a held request
(``Waiting``) polled until it answers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.apis import HANDLERS, SUPPORTED
from kafka_wire.broker.channels import Answer, Channel, Held, failed_without_answer
from kafka_wire.broker.cluster_node import ClusterNode
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.connections import Admission, ConnectionTimers, Expiry
from kafka_wire.broker.coordinators import Coordinators, is_coordinator_request
from kafka_wire.broker.effects import CloseConnection, Effect, EffectSink, FileRegion, Send
from kafka_wire.broker.faults import FaultInjector, cut_in_half, injected_answer
from kafka_wire.broker.group_link import GroupAnswer
from kafka_wire.broker.muting import MuteInput, Muting
from kafka_wire.broker.quotas.throttling import cap_fetch
from kafka_wire.broker.sasl import sasl_refusal
from kafka_wire.broker.state import BrokerState, Context, Spliced, Waiting
from kafka_wire.broker.storage_pipeline import StoragePipeline
from kafka_wire.broker.throttles import Throttles
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.token_auth import token_authenticated
from kafka_wire.broker.versioning import fit
from kafka_wire.broker.work import Job
from kafka_wire.codec.structs import Message
from kafka_wire.errors import EncodeError, LocalProtocolError, ProtocolError
from kafka_wire.messages import ApiKey
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    AuthenticationFailed,
    ConnectionClosed,
    Request,
    UnsupportedRequest,
)
from kafka_wire.protocol.server import ServerConfig, ServerConnection, ServerSasl

#: The owner of the timers of answers held by an injected latency.
_FAULT_TIMERS: Final = "faults"


class ClientConnections:
    """The open client connections and their requests (see the module docstring). The broker
    composes it: it sets :attr:`now_ms` at each input and ends each call (``Broker._flush``)."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        cluster: ClusterNode,
        pipeline: StoragePipeline,
        effects: EffectSink,
        timer_queue: TimerQueue,
        faults: FaultInjector,
        sasl: Mapping[str, ServerSasl],
        logger: logging.Logger,
    ) -> None:
        self.config = config
        self._cluster = cluster
        self._pipeline = pipeline
        self._effects = effects
        self._timer_queue = timer_queue
        self._faults = faults
        self._sasl = sasl
        self._log = logger
        self._conns: dict[int, Channel] = {}
        self._held: list[Held] = []
        #: Answers built during the current call.
        self._answers: list[Answer] = []
        self._server_config = ServerConfig(
            api_versions=SUPPORTED,
            max_frame_bytes=config.max_frame_bytes,
            max_reauth_ms=config.connections_max_reauth_ms,
        )
        #: Per listener whose connections may send other APIs (a controller listener).
        self._server_configs: dict[str, ServerConfig] = {}
        self._admission = Admission(config, logger)
        self._timers = ConnectionTimers(
            timer_queue,
            idle_ms=config.connections_max_idle_ms,
            receive_timeout_ms=config.request_receive_timeout_ms,
            failed_authentication_delay_ms=config.failed_authentication_delay_ms,
        )
        self.muting = Muting(self._timers, queued_max_requests=config.queued_max_requests, logger=logger)
        self._state: BrokerState | None = None
        self._group: Coordinators | None = None
        #: The ``now_ms`` of the call being handled (for activity seen deep in the call).
        self.now_ms = 0
        #: Answers held by an injected latency, by their timer's number (``("faults", n)``).
        self._delayed: dict[int, Answer] = {}
        self._delayed_seq = 0
        self.throttles = Throttles(self.muting, timer_queue, cluster)

    def start(self, state: BrokerState, group: Coordinators) -> None:
        """The broker's state is loaded: requests may be handled."""
        self._state, self._group = state, group
        self.throttles.state = state

    def __contains__(self, conn_id: int) -> bool:
        return conn_id in self._conns

    def __iter__(self) -> Iterator[int]:
        return iter(list(self._conns))

    def take_answers(self) -> list[Answer]:
        """The answers built during the call (the call ends)."""
        answers, self._answers = self._answers, []
        return answers

    # -- connections ----------------------------------------------------------------------------

    def open(self, conn_id: int, host: str, listener: str, now_ms: int) -> bool:
        """Whether a connection from ``host`` to ``listener`` is taken (not over a limit)."""
        if conn_id in self._conns:
            raise LocalProtocolError(f"connection {conn_id} is already open")
        if self._admission.refuses(host, now_ms):
            return False
        gate = self._sasl.get(listener)
        server = ServerConnection(self._server_config_of(listener), sasl=gate, now_ms=now_ms)
        self._conns[conn_id] = Channel(server, host, listener=listener)
        self.muting.opened(conn_id)
        self._admission.opened(host)
        self._timers.active(conn_id, now_ms)
        return True

    def _server_config_of(self, listener: str) -> ServerConfig:
        if (versions := self._cluster.api_versions(listener)) is None:
            return self._server_config
        config = self._server_configs.get(listener)
        if config is None:
            config = self._server_configs[listener] = ServerConfig(
                api_versions=versions, max_frame_bytes=self.config.max_frame_bytes
            )
        return config

    def authenticated(self, conn_id: int, principal: str) -> None:
        """The connection's transport authenticated it (a TLS handshake): it carries ``principal``
        until SASL authenticates it. An unknown connection is the driver's misuse."""
        conn = self._conns.get(conn_id)
        if conn is None:
            raise LocalProtocolError(f"no open connection {conn_id}")
        conn.principal = principal
        self._log.info("connection %d from %s: principal User:%s", conn_id, conn.host, principal)

    def closed(self, conn_id: int) -> bool:
        """The driver reports the connection closed; whether it was open."""
        conn = self._conns.pop(conn_id, None)
        if conn is None:
            return False
        self._forget(conn_id, conn)
        return True

    def reads(self, conn_id: int) -> bool:
        """Whether bytes of the connection are read (not while its failed authentication waits
        for the close); an unknown connection is the driver's misuse."""
        if conn_id not in self._conns:
            raise LocalProtocolError(f"no open connection {conn_id}")
        return not self._timers.closing(conn_id)

    def receive(self, conn_id: int, data: bytes, now_ms: int, out: list[Effect]) -> None:
        """Bytes of the connection (:meth:`reads` it): its requests are decoded and handled while
        it may read."""
        conn = self._conns[conn_id]
        if not self.muting.paused(conn_id):
            self._timers.active(conn_id, now_ms)
        try:
            conn.server.receive_data(data, now_ms=now_ms)
            self._drain(conn_id, conn, now_ms, out)
        except ProtocolError:
            # Not Kafka, or not allowed: Kafka closes the connection. Others are unaffected.
            self._close(conn_id, conn, out)

    def expire(self, now_ms: int, out: list[Effect]) -> None:
        """Close the connections whose timers passed (idle, unfinished request, failed
        authentication). A SASL session that ended closes its connection at the next request
        (the connection layer's ``ConnectionClosed``), as Kafka's does."""
        for conn_id, expiry in self._timers.due(now_ms):
            conn = self._conns.get(conn_id)
            if conn is None:
                continue
            if expiry is not Expiry.AUTHENTICATION_FAILED:
                self._log.info("closing connection %d from %s: %s", conn_id, conn.host or "?", expiry.value)
            self._close(conn_id, conn, out)

    def close_all(self, out: list[Effect]) -> None:
        for conn_id, conn in list(self._conns.items()):
            self._close(conn_id, conn, out)

    def clear(self) -> None:
        """Shut down: every connection, held request and timer is dropped (the broker tells the
        driver to close them)."""
        self._conns.clear()
        self._held.clear()
        self._timers.clear()
        self.muting.clear()
        self._delayed.clear()
        self._timer_queue.clear(_FAULT_TIMERS)
        self.throttles.clear()

    def drop(self, conn_id: int) -> None:
        """Forget a connection without telling anyone (the broker has stopped)."""
        self._conns.pop(conn_id, None)

    # -- reading --------------------------------------------------------------------------------

    def _drain(self, conn_id: int, conn: Channel, now_ms: int, out: list[Effect]) -> None:
        """Decode and handle the connection's requests, one at a time, while it may read."""
        server = conn.server
        muting = self.muting
        while True:
            # One request at a time, as Kafka mutes a channel until its answer is sent.
            owed = conn.unanswered or self._pipeline.holds_answers_for(conn_id)
            if not muting.may_read(conn_id, owed=owed, held=self._held_count(), out=out):
                break
            event = server.next_event()
            if event is NEED_DATA:
                muting.drained(conn_id, now_ms, out)
                break
            if isinstance(event, Request):
                muting.decoded()
                self._dispatch(conn_id, conn, event, now_ms, out)
                if conn_id not in self._conns or muting.closing(conn_id):
                    return  # the request closed the connection (or will, once its answers are out)
            elif isinstance(event, UnsupportedRequest):
                self._send(conn_id, server.reject(event), out)
            elif isinstance(event, Authenticated):
                conn.token_authenticated = token_authenticated(server.sasl_mechanism)
                if event.principal != conn.principal:
                    self._log.info("connection %d: SASL principal User:%s", conn_id, event.principal)
                conn.principal = event.principal
            elif isinstance(event, AuthenticationFailed) and self.config.failed_authentication_delay_ms:
                # Answer (and close) later, so that passwords cannot be tried at full speed.
                muting.mute(conn_id, MuteInput.AUTHENTICATION_FAILED, out)
                self._timers.failed_authentication(conn_id, now_ms)
                return
            if isinstance(event, ConnectionClosed) and event.reason == "session expired":
                self._log.info(
                    "closing connection %d from %s: SASL session expired", conn_id, conn.host or "?"
                )
            if server.must_close or isinstance(event, ConnectionClosed):
                self._close(conn_id, conn, out)
                return
        self._send(conn_id, server.data_to_send(), out)
        if not muting.paused(conn_id):
            self._timers.receiving(conn_id, now_ms, in_progress=server.buffered_bytes > 0)

    def answered(self, conn_id: int) -> None:
        """A held request of the connection was answered: read it again once nothing is owed."""
        conn = self._conns.get(conn_id)
        if conn is not None:
            owed = conn.unanswered or self._pipeline.holds_answers_for(conn_id)
            self.muting.answered(conn_id, owed=owed)

    def resume(self, now_ms: int, out: list[Effect]) -> None:
        """Read on from muted connections that may go on: those whose held request was answered,
        then those waiting for room in the request queue or for a new call (in the order they
        stopped)."""
        while ready := self.muting.ready(self._held_count()):
            for conn_id in ready:
                conn = self._conns.get(conn_id)
                if conn is None or not self.muting.paused(conn_id):
                    continue
                try:
                    self._drain(conn_id, conn, now_ms, out)
                except ProtocolError:
                    self._close(conn_id, conn, out)
            self.poll_held(now_ms, out)

    def spent(self, conn_id: int, time_ns: int, now_ms: int) -> None:
        """The driver measured ``time_ns`` handling the connection's requests (``request_percentage``)."""
        conn = self._conns.get(conn_id)
        if conn is not None:
            self.throttles.spent(conn, time_ns, now_ms)

    def _dispatch(
        self, conn_id: int, conn: Channel, request: Request, now_ms: int, out: list[Effect]
    ) -> None:
        key = request.api_key
        conn.client_id = request.header.client_id or ""
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug(
                "conn %d: %s v%d %r", conn_id, type(request.body).__name__, request.api_version, request.body
            )
        if self._faults.armed and self._from_client(conn, request):
            code = self._faults.take_error(key)
            if code is not None:
                if request.expects_response:
                    self._respond(conn_id, request, injected_answer(key, request.body, code))
                else:  # acks=0: a failed produce closes the connection
                    self._close_failed_without_answer(conn_id, out)
                return
        if self._cluster.serves(conn.listener):
            served = self._cluster.handle(request, now_ms, conn.principal, conn.host)
            if isinstance(served, Message):
                self._respond(conn_id, request, served)
            else:
                self._hold(conn_id, conn, request, served)
            return
        if is_coordinator_request(request):
            assert self._group is not None
            self.group_answers(self._group.handle(conn_id, request, conn.host, now_ms, conn.principal))
            return
        if key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            self._respond(conn_id, request, sasl_refusal(key))
            return
        assert self._state is not None
        ctx = Context(
            state=self._state,
            effects=self._effects,
            conn_id=conn_id,
            request=request,
            now_ms=now_ms,
            principal=conn.principal,
            client_host=conn.host,
            listener=conn.listener,
            token_authenticated=conn.token_authenticated,
        )
        if key == ApiKey.FETCH and self.throttles.applies(conn):
            cap_fetch(self._state.quotas, conn.principal, request.header.client_id or "", request.body)  # type: ignore[arg-type]  # a Fetch's body
        result = HANDLERS[key](ctx, request.body)
        if not isinstance(result, Message | Spliced) and self._cluster.pump(now_ms):
            # Asked of this node's own controller (a single node's admin request): answered
            # in-process, often at once, and then the connection need not pause.
            ready = result.poll(now_ms)
            if ready is not None:
                result = ready
        if failed_without_answer(request, result):
            self._close_failed_without_answer(conn_id, out)
        elif isinstance(result, Message | Spliced):
            self._respond(conn_id, request, result)
            self.throttles.mute_unanswered(self._conns, self.now_ms, out)
        else:
            self._hold(conn_id, conn, request, result)

    def _hold(self, conn_id: int, conn: Channel, request: Request, waiting: Waiting) -> None:
        if not request.expects_response:
            conn.silent_held += 1
        self._held.append(Held(conn_id, request, waiting))

    def _from_client(self, conn: Channel, request: Request) -> bool:
        """Whether faults apply: not on a controller listener, not a follower's Fetch."""
        if self._cluster.serves(conn.listener):
            return False
        body = request.body
        return not isinstance(body, messages.FetchRequest) or (
            body.replica_id < 0 and body.replica_state.replica_id < 0
        )

    # -- held requests --------------------------------------------------------------------------

    def group_answers(self, answers: list[GroupAnswer]) -> None:
        for conn_id, request, body in answers:
            self._respond(conn_id, request, body)
            self.answered(conn_id)

    def _held_count(self) -> int:
        """Requests held unanswered (counted against ``queued.max.requests``)."""
        return len(self._held) + (self._group.waiting if self._group is not None else 0)

    def poll_held(self, now_ms: int, out: list[Effect]) -> None:
        """Answer the held requests that are ready (after the node served what was asked of its
        own controller), and continue the jobs in progress as far as the call's work budget
        allows."""
        self._cluster.pump(now_ms)
        if self._group is not None:
            # Deleted topics, leaderships, replicated writes, loads, markers, the loopback
            # (``coordinators.py``).
            self.group_answers(self._group.poll(now_ms))
        still: list[Held] = []
        failed_silently: list[int] = []
        for held in self._held:
            body = held.waiting.poll(now_ms)
            if body is None:
                still.append(held)
                continue
            if not held.request.expects_response and (conn := self._conns.get(held.conn_id)) is not None:
                conn.silent_held -= 1
            if failed_without_answer(held.request, body):
                failed_silently.append(held.conn_id)  # closed once self._held is settled
                continue
            self._respond(held.conn_id, held.request, body)
            self.answered(held.conn_id)
        self._held = still
        self.throttles.mute_unanswered(self._conns, self.now_ms, out)
        for conn_id in failed_silently:
            self._close_failed_without_answer(conn_id, out)

    def job_deadline_ms(self) -> int | None:
        """The earliest deadline of the jobs in progress: the time of a job's last slice."""
        jobs = [h.waiting.deadline_ms for h in self._held if isinstance(h.waiting, Job)]
        return min(jobs) if jobs else None

    def held_deadline_ms(self) -> int | None:
        """The earliest deadline of the held requests that are not jobs (a Fetch waiting for data)."""
        waits = [h.waiting.deadline_ms for h in self._held if not isinstance(h.waiting, Job)]
        return min(waits) if waits else None

    # -- answers --------------------------------------------------------------------------------

    def _respond(self, conn_id: int, request: Request, body: Message | Spliced) -> None:
        """Answer ``request``: built now, sent once the writes of this call have succeeded (or,
        with an injected latency, at a later tick)."""
        conn = self._conns.get(conn_id)
        if conn is not None and not request.expects_response:
            if request.api_key == ApiKey.PRODUCE:
                self.throttles.unanswered(conn_id, conn, request, body, self.now_ms)
            return
        if conn is not None and request.expects_response:
            if self._faults.armed and self._from_client(conn, request):
                until = self._faults.held_until(request.api_key, self.now_ms)
                if until is not None:
                    self._delayed_seq += 1
                    self._delayed[self._delayed_seq] = Answer(conn_id, request, body)
                    self._timer_queue.schedule((_FAULT_TIMERS, self._delayed_seq), until)
                    return
            body, throttle_ms = self.throttles.answer(conn, request, body, self.now_ms)
            conn.unreleased += 1
            self._answers.append(Answer(conn_id, request, body, throttle_ms))

    def release_throttled(self, now_ms: int) -> None:
        """Connections whose quota throttle time is over may be read again (``resume``)."""
        self.throttles.release(self._conns, now_ms)

    def release_delayed(self, now_ms: int) -> None:
        """Answers whose injected latency is over: answered now (the connection is read again)."""
        if not self._delayed:
            return
        while (due := self._timer_queue.pop_due(now_ms, _FAULT_TIMERS)) is not None:
            answer = self._delayed.pop(int(due.key[1]))  # type: ignore[call-overload]  # keys are (owner, int)
            conn = self._conns.get(answer.conn_id)
            if conn is not None:
                conn.unreleased += 1
                self._answers.append(answer)
                self.answered(answer.conn_id)

    def release(self, answers: list[Answer], out: list[Effect]) -> None:
        """Send ``answers`` (their writes are applied); then close the connections that were to
        close once their answers are out."""
        for answer in answers:
            conn = self._conns.get(answer.conn_id)
            if conn is None:
                continue  # closed since: its answers go with it
            conn.unreleased -= 1
            request, body = answer.request, answer.body
            ready: bytes | list[object]
            try:
                if isinstance(body, Spliced):
                    ready = conn.server.send_spliced(
                        request.reply(fit(body.body, request.api_version)), body.splices
                    )
                else:
                    ready = conn.server.send(request.reply(fit(body, request.api_version)))
            except (EncodeError, LocalProtocolError):
                # A bug, not the client's doing: this connection cannot be answered correctly.
                self._log.exception("conn %d: cannot answer %s", answer.conn_id, type(request.body).__name__)
                self._close(answer.conn_id, conn, out)
                continue
            if (
                self._faults.armed
                and self._from_client(conn, request)
                and self._faults.take_close(request.api_key)
            ):
                self._cut(answer.conn_id, conn, ready, out)
                continue
            self._send(answer.conn_id, ready, out)
            if answer.throttle_ms > 0:
                # KIP-219: the client has its answer, and the connection is muted for the throttle time.
                self.throttles.mute(answer.conn_id, answer.throttle_ms, self.now_ms, out)
        for conn_id in self.muting.closing_after_answers():
            conn = self._conns.get(conn_id)
            if conn is None:
                self.muting.forget(conn_id)
            elif not conn.unreleased:
                self._close(conn_id, conn, out)

    # -- output ---------------------------------------------------------------------------------

    def _send(self, conn_id: int, ready: bytes | list[object], out: list[Effect]) -> None:
        """Queue ``ready`` (what a connection call returned) and whatever else the connection has
        ready; spliced fetch responses keep their file regions."""
        conn = self._conns.get(conn_id)
        parts = [ready] if isinstance(ready, bytes) else list(ready)
        if conn is not None:
            parts += conn.server.parts_to_send()
        kept = tuple(p for p in parts if isinstance(p, bytes | FileRegion) and p != b"")
        if kept:
            out.append(Send(conn_id, kept))
            if conn is not None and not self.muting.paused(conn_id):
                self._timers.active(conn_id, self.now_ms)

    def _close(self, conn_id: int, conn: Channel, out: list[Effect]) -> None:
        self._send(conn_id, conn.server.data_to_send(), out)
        out.append(CloseConnection(conn_id))
        if self._conns.pop(conn_id, None) is not None:
            self._forget(conn_id, conn)

    def _cut(self, conn_id: int, conn: Channel, ready: bytes | list[object], out: list[Effect]) -> None:
        """An injected fault: send the first half of the response frame, then close."""
        parts = [ready] if isinstance(ready, bytes) else list(ready)
        parts += conn.server.parts_to_send()
        cut, total = cut_in_half(parts)
        self._log.info(
            "conn %d: closing mid-response (%d of %d bytes sent), as injected", conn_id, len(cut), total
        )
        out.append(Send(conn_id, (cut,)))
        out.append(CloseConnection(conn_id))
        if self._conns.pop(conn_id, None) is not None:
            self._forget(conn_id, conn)

    def _close_failed_without_answer(self, conn_id: int, out: list[Effect]) -> None:
        """acks=0: the producer gets no answer, so Kafka closes the connection to tell it."""
        if (conn := self._conns.get(conn_id)) is not None:
            self._log.info("conn %d: closing the connection after an acks=0 produce failed", conn_id)
            if conn.unreleased:
                # Earlier requests of the connection were answered in this call: as Kafka answers
                # them before it reads the produce, their answers go out first, then the close.
                self.muting.mute(conn_id, MuteInput.FAILED_WITHOUT_ANSWER, out)
            else:
                self._close(conn_id, conn, out)

    def _forget(self, conn_id: int, conn: Channel) -> None:
        """Drop what the engine keeps for a connection that is gone."""
        self._admission.closed(conn.host)
        self.muting.forget(conn_id)
        self._timers.forget(conn_id)
        # Admin jobs run to their end (their answer is dropped); the rest goes with the connection.
        self._held = [
            h
            for h in self._held
            if h.conn_id != conn_id or (isinstance(h.waiting, Job) and h.waiting.survives_disconnect)
        ]
        if self._group is not None:
            self._group.forget(conn_id)
        self.throttles.forget(conn_id)
        if self._state is not None and self._state.share is not None:
            # Kafka 4.1+: a share session ends with its connection, its records released.
            self._state.share.connection_closed(conn_id, self.now_ms)
        for seq in [n for n, answer in self._delayed.items() if answer.conn_id == conn_id]:
            del self._delayed[seq]
            self._timer_queue.cancel((_FAULT_TIMERS, seq))
