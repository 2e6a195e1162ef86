"""``Broker``: the engine, composed. Connection bytes and time in; effects out.

Inputs: ``start``, ``connection_opened``, ``receive_data``, ``connection_closed``, ``tick`` (at
``next_deadline_ms()``) and ``shutdown``, each with ``now_ms``. Each returns a list of effects: the
storage effects of the call first (its *batch*), then ``Send`` / ``CloseConnection`` /
``PauseReading`` / ``ResumeReading`` that do not depend on them.
The driver applies the batches in order and reports each one's outcome in order, while it goes on
feeding the engine other input (except while ``start``'s writes are in flight); answers wait for the
writes they depend on (``kafka_wire.broker.storage_pipeline``; a synchronous driver applies and
reports at once: :func:`kafka_wire.broker.driving.settle`):

- ``storage_applied(now_ms)``: every write of the oldest batch in flight succeeded; it returns the
  answers (and messages to other nodes) that waited for it, so nothing is acknowledged before the
  write holding it succeeded;
- ``storage_failed(failure, now_ms)``: a write failed. The data directory is the broker's only log
  directory, so it goes offline as a whole: the answers still waiting report the failure
  (KAFKA_STORAGE_ERROR; NOT_COORDINATOR for group APIs), every connection is closed and
  ``StopBroker`` follows. Nothing more is written, so no state in memory is ever served ahead of
  the disk; the next start recovers the logs from what the disk holds.

Connections are handled as Kafka's socket server handles them: a connection over
``max.connections`` or ``max.connections.per.ip`` is closed at once; a connection is read one
request at a time (while a request of it is held unanswered, its further requests are not decoded
and the driver is told to stop reading it); when ``queued.max.requests`` requests are held, no
connection's requests are decoded; idle connections, unfinished request frames and failed
authentications end on timers (see ``connections.py``).

Each call does bounded work (``kafka_wire.broker.work``): a request whose cost grows with its input
runs as a job that yields when the call's budget is spent and goes on at the next ``tick``
(``next_deadline_ms()`` is then the current time); like any held request it keeps its connection
from being read meanwhile.

In a replicated cluster (``BrokerConfig.cluster``), a :class:`ClusterNode` (``kafka_wire.broker.node``)
is given at construction and the broker hands it what is not a client's: requests arriving on a
controller listener (``connection_opened(..., listener=...)``), the bytes and events of outbound
connections (negative ids: ``connection_established``, ``receive_data``, ``connection_closed``),
and every ``tick``. Its network effects (``OpenConnection``, and ``Send`` / ``CloseConnection`` of
its links) leave with the call's, once every batch handed out up to that call is applied. With
no cluster node nothing of this happens: a single node.

No clock, socket, file or ambient randomness is used: the same inputs give the same effects.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Protocol

from kafka_wire import messages
from kafka_wire.broker.apis import GROUP_APIS, HANDLERS, SUPPORTED
from kafka_wire.broker.channels import Answer, Channel, Held, failed_without_answer
from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.config import BrokerConfig, standalone
from kafka_wire.broker.connections import Admission, ConnectionTimers, Expiry
from kafka_wire.broker.data_dir import DataDir
from kafka_wire.broker.driving import StorageFailure
from kafka_wire.broker.effects import (
    CloseConnection,
    Effect,
    EffectSink,
    FileRegion,
    PauseReading,
    ResumeReading,
    Send,
    StopBroker,
    WriteProgress,
)
from kafka_wire.broker.failed_answers import failed_answer
from kafka_wire.broker.faults import FaultInjector, injected_answer
from kafka_wire.broker.fetch_sessions import FetchSessionCache
from kafka_wire.broker.group_link import GroupAnswer, GroupLink
from kafka_wire.broker.legacy_import import LegacyImport
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.maintenance import LogMaintenance
from kafka_wire.broker.node import Node
from kafka_wire.broker.sasl import server_sasl
from kafka_wire.broker.state import BrokerState, Context, Spliced, Waiting
from kafka_wire.broker.storage import StorageReader
from kafka_wire.broker.storage_pipeline import StoragePipeline
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.versioning import fit
from kafka_wire.broker.work import Job
from kafka_wire.codec.structs import Message
from kafka_wire.errors import EncodeError, LocalProtocolError, ProtocolError
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    AuthenticationFailed,
    ConnectionClosed,
    Request,
    UnsupportedRequest,
)
from kafka_wire.protocol.server import ServerConfig, ServerConnection

if TYPE_CHECKING:  # the coordinator loads on first use (kafka_wire.broker.group_link)
    from kafka_wire.broker.group.service import GroupCoordinator


class ClusterNode(Protocol):
    """What a :class:`Broker` hands on to its node (``kafka_wire.broker.node.Node``)."""

    @property
    def view(self) -> ClusterView:
        """The cluster as the node sees it (``BrokerState.cluster``)."""
        ...

    def start(self, state: BrokerState, effects: EffectSink, now_ms: int) -> None:
        """The broker's state is loaded: build the node's parts; storage effects go to ``effects``
        (now and in every later call)."""
        ...

    def api_versions(self, listener: str) -> Mapping[int, tuple[int, int]] | None:
        """What a connection on ``listener`` may send (None: the broker's own APIs)."""
        ...

    def serves(self, listener: str) -> bool:
        """Whether requests on ``listener`` go to :meth:`handle` (a controller listener)."""
        ...

    def handle(self, request: Request, now_ms: int) -> Message | Waiting: ...

    def pump(self, now_ms: int) -> bool:
        """Serve what the broker's handlers asked of the node's own controller in this call;
        whether there was anything."""
        ...

    def owns(self, conn_id: int) -> bool:
        """Whether ``conn_id`` is one of the node's outbound connections."""
        ...

    def connection_established(self, conn_id: int, now_ms: int) -> None: ...

    def receive_data(self, conn_id: int, data: bytes, now_ms: int) -> None: ...

    def connection_closed(self, conn_id: int, now_ms: int) -> None: ...

    def tick(self, now_ms: int) -> None: ...

    def next_deadline_ms(self) -> int | None: ...

    def take_network_effects(self) -> list[Effect]:
        """``OpenConnection`` / ``Send`` / ``CloseConnection`` of the node's links since the last take."""
        ...

    def take_coordinator_changes(self) -> list[tuple[int, bool]]:
        """``__consumer_offsets`` partitions this node started (True) or stopped (False) leading
        since the last take: the group coordinator serves the groups of the partitions it leads."""
        ...

    def begin_shutdown(self, now_ms: int) -> None:
        """Ask the controller to move leadership away (controlled shutdown)."""
        ...

    @property
    def may_stop(self) -> bool:
        """Controlled shutdown is done (or given up): ``shutdown`` may follow."""
        ...

    def shutdown(self) -> None:
        """Close every link; nothing more is sent."""
        ...


#: The owner of the timers of answers held by an injected latency.
_FAULT_TIMERS: Final = "faults"
#: Requests decoded and handled in one engine call, over all connections. A connection with more
#: pipelined requests than that is read no further in this call and goes on at the next ``tick``
#: (due at once): a client that sends thousands of requests without reading an answer cannot
#: hold the driver's loop, and so the other connections, for seconds.
REQUESTS_PER_CALL: Final = 64

#: The default logger: nothing is emitted.
_SILENT: Final = logging.getLogger("kafka_wire.broker.silent")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class Broker:
    """A single-node Kafka broker as a pure state machine."""

    def __init__(
        self,
        config: BrokerConfig,
        storage: StorageReader,
        *,
        rng: random.Random,
        member_id_factory: Callable[[str], str] | None = None,
        nonce_factory: Callable[[], str] | None = None,
        logger: logging.Logger | None = None,
        cluster: ClusterNode | None = None,
    ) -> None:
        if cluster is None:  # a node of its own: a one-voter cluster
            config = standalone(config)
            cluster = Node(config, rng=rng, logger=logger)
        self.config = config
        #: The node of the cluster (a replicated one, or the one-voter cluster of a single node).
        self._cluster: ClusterNode = cluster
        self._log = logger or _SILENT
        self._storage = storage
        self._rng = rng
        self._nonce_factory = nonce_factory or (lambda: f"{rng.getrandbits(192):048x}")
        self._member_id_factory = member_id_factory
        self._conns: dict[int, Channel] = {}
        self._held: list[Held] = []
        self._server_config = ServerConfig(
            api_versions=SUPPORTED,
            max_frame_bytes=config.max_frame_bytes,
            max_reauth_ms=config.connections_max_reauth_ms,
        )
        #: Per listener whose connections may send other APIs (a controller listener).
        self._server_configs: dict[str, ServerConfig] = {}
        self._sasl = server_sasl(config.sasl_users, self._nonce_factory)
        self._state: BrokerState | None = None
        self._group: GroupLink | None = None
        #: Every deadline of the engine: connections, logs, groups (``kafka_wire.broker.timers``).
        self._timer_queue = TimerQueue()
        #: The storage effects of the call in progress (``kafka_wire.broker.effects.EffectSink``).
        progress = WriteProgress()
        self._effects = EffectSink(progress)
        #: The writes in flight and what waits for them; the driver contract's state.
        self._pipeline = StoragePipeline(progress, self._log)
        self._maintenance = LogMaintenance(self._timer_queue, config.retention_check_interval_ms)
        #: Answers built during the current call.
        self._answers: list[Answer] = []
        #: Why the broker stopped serving (None while it serves): a failed write, or ``shutdown``.
        self._stopped: str | None = None
        self._admission = Admission(config, self._log)
        self._timers = ConnectionTimers(
            self._timer_queue,
            idle_ms=config.connections_max_idle_ms,
            receive_timeout_ms=config.request_receive_timeout_ms,
            failed_authentication_delay_ms=config.failed_authentication_delay_ms,
        )
        #: Paused connections whose held request was answered: to be read again.
        self._unmuted: list[int] = []
        #: Connections to close once the answers built for them have gone out (an acks=0 produce
        #: failed after earlier requests of the connection were answered in the same call).
        self._close_after_answers: set[int] = set()
        #: Paused connections waiting for room under queued.max.requests, in the order they stopped.
        self._queue_blocked: dict[int, None] = {}
        #: Connections with requests left when the call's :data:`REQUESTS_PER_CALL` were spent.
        self._call_blocked: dict[int, None] = {}
        self._call_requests = 0
        #: The ``now_ms`` of the call being handled (for activity seen deep in the call).
        self._now_ms = 0
        #: Faults a test asks for (``kafka_wire.broker.faults``); none by default.
        self.faults = FaultInjector()
        #: Answers held by an injected latency, by their timer's number (``("faults", n)``).
        self._delayed: dict[int, Answer] = {}
        self._delayed_seq = 0

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def state(self) -> BrokerState:
        if self._state is None:
            raise LocalProtocolError("the broker has not been started")
        return self._state

    @property
    def node(self) -> ClusterNode:
        """The node of the cluster this broker belongs to."""
        return self._cluster

    @property
    def group_coordinator(self) -> GroupCoordinator:
        """The group coordinator, for its read-only views (``group``, ``groups``, ``state_of``)."""
        if self._group is None:
            raise LocalProtocolError("the broker has not been started")
        return self._group.coordinator

    def start(self, now_ms: int) -> list[Effect]:
        """Check the data directory, open (and recover) every log, load group state; effects create
        missing files. A data directory that cannot be served raises
        :class:`~kafka_wire.broker.data_dir.DataDirError`, whose message says what to do."""
        if self._state is not None:
            raise LocalProtocolError("the broker is already started")
        self._pipeline.start()
        config = self.config
        sole_voter = config.cluster is not None and config.cluster.sole_voter(config.node_id)
        opened = DataDir.open(
            self._storage,
            node_id=config.node_id,
            cluster_id=config.cluster_id,
            rng=self._rng,
            sole_voter=sole_voter,
        )
        for warning in opened.warnings:
            self._log.warning("%s", warning)
        metadata = opened.metadata
        state = BrokerState(
            config=config,
            storage=self._storage,
            rng=self._rng,
            metadata=metadata,
            defaults=LogConfig.from_properties(config.topic_defaults),
            fetch_sessions=FetchSessionCache(
                config.fetch_session_cache_slots, self._rng, eviction_ms=config.fetch_session_eviction_ms
            ),
            cluster=self._cluster.view,
            directory_id=opened.directory_id,
        )
        self._state = state
        state.may_slice = lambda: self._pipeline.jobs_may_step
        self._effects.extend(opened.effects)
        legacy = None
        if sole_voter:  # a cluster of its own: the node may hold an old single node's directory
            legacy = LegacyImport.find(self._storage, cluster_id=metadata.cluster_id, rng=self._rng)
        if legacy is not None:
            for warning in legacy.warnings:
                self._log.warning("%s", warning)
            legacy.adopt_internal_topics(config, self._log)
            state.bootstrap_records = legacy.records(config.node_id)
            self._effects.extend(legacy.effects)
        self._cluster.start(state, self._effects, now_ms)  # the topics come from the metadata log
        if legacy is not None:  # imported: the first metadata batch is written by now
            self._effects.extend(legacy.renamed())
        self._group = GroupLink(
            config,
            state,
            self._effects,
            self._timer_queue,
            self._log,
            member_id_factory=self._member_id_factory,
        )
        self._maintenance.start(now_ms)
        return self._flush([])

    def shutdown(self, now_ms: int) -> list[Effect]:
        """Close every connection and make every log durable (nothing is written once stopped).

        Jobs in progress stop where they are: the next start opens the partitions of a topic
        whose creation was cut short, and moves aside the directories of one whose deletion was."""
        if self._stopped is not None:
            return []
        self._pipeline.shutdown()
        out: list[Effect] = [CloseConnection(conn_id) for conn_id in self._conns]
        self._cluster.shutdown()
        out += self._cluster.take_network_effects()
        self._conns.clear()
        self._held.clear()
        if self._group is not None:
            self._group.clear()
        self._timers.clear()
        self._unmuted.clear()
        self._queue_blocked.clear()
        self._call_blocked.clear()
        self._delayed.clear()
        self._timer_queue.clear(_FAULT_TIMERS)
        state = self.state
        for replica in state.partitions.values():
            self._effects.extend(replica.log.close())
        self._stopped = "shut down"
        return self._flush(out)

    # -- connections ----------------------------------------------------------------------------

    def connection_opened(
        self, conn_id: int, now_ms: int, *, host: str = "", listener: str = "PLAINTEXT"
    ) -> list[Effect]:
        """A client connected from ``host`` (its address) to ``listener`` (its name in
        ``listeners``). Over a connection limit, or after ``shutdown``, the answer is
        ``CloseConnection``: the engine forgets the connection at once (the driver need not report
        its close)."""
        if self._stopped is not None:
            return [CloseConnection(conn_id)]
        self._check_input()
        if conn_id in self._conns:
            raise LocalProtocolError(f"connection {conn_id} is already open")
        self._now_ms = now_ms
        if self._admission.refuses(host, now_ms):
            return [CloseConnection(conn_id)]
        server = ServerConnection(self._server_config_of(listener), sasl=self._sasl, now_ms=now_ms)
        self._conns[conn_id] = Channel(server, host, listener=listener)
        self._admission.opened(host)
        self._timers.active(conn_id, now_ms)
        return []

    def _server_config_of(self, listener: str) -> ServerConfig:
        if (versions := self._cluster.api_versions(listener)) is None:
            return self._server_config
        config = self._server_configs.get(listener)
        if config is None:
            config = self._server_configs[listener] = ServerConfig(
                api_versions=versions, max_frame_bytes=self.config.max_frame_bytes
            )
        return config

    def connection_established(self, conn_id: int, now_ms: int) -> list[Effect]:
        """An outbound connection the cluster node asked for (``OpenConnection``) is open."""
        if self._stopped is not None:
            return [CloseConnection(conn_id)]
        self._check_input()
        self._now_ms = now_ms
        self._begin_call(jobs=False)
        self._cluster.connection_established(conn_id, now_ms)
        return self._flush([])

    def _node_input(self, now_ms: int) -> list[Effect]:
        """After the cluster node took an input: what it made ready, answered."""
        out: list[Effect] = []
        self._poll_held(now_ms, out)
        self._resume(now_ms, out)
        return self._flush(out)

    def connection_closed(self, conn_id: int, now_ms: int) -> list[Effect]:
        if self._stopped is not None:
            self._conns.pop(conn_id, None)
            return []
        self._check_input()
        self._now_ms = now_ms
        self._begin_call(jobs=False)
        if self._cluster.owns(conn_id):
            self._cluster.connection_closed(conn_id, now_ms)
            return self._node_input(now_ms)
        conn = self._conns.pop(conn_id, None)
        out: list[Effect] = []
        if conn is not None:
            self._forget(conn_id, conn)
            self._resume(now_ms, out)  # its held request no longer counts against the queue
        return self._flush(out)

    def receive_data(self, conn_id: int, data: bytes, now_ms: int) -> list[Effect]:
        if self._stopped is not None:
            return [CloseConnection(conn_id)]
        self._check_input()
        conn = self._conns.get(conn_id)
        if conn is None and conn_id < 0:
            if not self._cluster.owns(conn_id):
                return []  # a link the node gave up (its close is on the way): bytes dropped
            self._now_ms = now_ms
            self._begin_call(jobs=False)
            self._cluster.receive_data(conn_id, data, now_ms)
            return self._node_input(now_ms)
        if conn is None:
            raise LocalProtocolError(f"no open connection {conn_id}")
        self._now_ms = now_ms
        out: list[Effect] = []
        if self._timers.closing(conn_id):  # a failed authentication: nothing more is read
            return self._flush(out)
        if not conn.paused:
            self._timers.active(conn_id, now_ms)
        self._begin_call()
        try:
            conn.server.receive_data(data, now_ms=now_ms)
            self._drain(conn_id, conn, now_ms, out)
        except ProtocolError:
            # Not Kafka, or not allowed: Kafka closes the connection. Others are unaffected.
            self._close(conn_id, conn, out)
        self._cluster.pump(now_ms)  # what the requests asked of the node's own controller
        self._end_jobs()  # the jobs in progress go on at the next tick, not in this call
        self._poll_held(now_ms, out)
        self._resume(now_ms, out)
        return self._flush(out)

    def tick(self, now_ms: int) -> list[Effect]:
        if self._stopped is not None:
            return []
        self._check_input()
        self._now_ms = now_ms
        out: list[Effect] = []
        self._begin_call(jobs=self._pipeline.jobs_may_step)
        assert self._group is not None
        self._expire_connections(now_ms, out)
        self._group_answers(self._group.tick(now_ms))
        self._cluster.tick(now_ms)
        self._maintenance.run_due(self.state, now_ms)
        if self._delayed:
            self._release_delayed(now_ms)
        self._poll_held(now_ms, out)
        self._resume(now_ms, out)
        return self._flush(out)

    def next_deadline_ms(self) -> int | None:
        if self._stopped is not None:
            return None
        if self._call_blocked:
            return self._now_ms  # requests left over from an earlier call: at once
        deadlines: list[int] = []
        if self._held:
            jobs = [h.waiting.deadline_ms for h in self._held if isinstance(h.waiting, Job)]
            if jobs and self._pipeline.jobs_may_step:
                # A job's deadline is the time of its last slice, so now: nothing else can come sooner.
                return min(jobs)
            # Jobs wait for the writes in flight: the driver's report wakes them.
            deadlines = [h.waiting.deadline_ms for h in self._held if not isinstance(h.waiting, Job)]
        if (queued := self._timer_queue.next_deadline_ms()) is not None:
            deadlines.append(queued)
        if self._group is not None and (group := self._group.next_deadline_ms()) is not None:
            deadlines.append(group)  # before its first call, or with loaded members to arm: at once
        if (node := self._cluster.next_deadline_ms()) is not None:
            deadlines.append(node)
        return min(deadlines) if deadlines else None

    # -- storage outcomes -----------------------------------------------------------------------

    @property
    def awaiting_storage(self) -> bool:
        """True while batches handed out wait for their outcome to be reported."""
        return self._pipeline.in_flight > 0

    @property
    def stopped(self) -> str | None:
        """Why the broker stopped serving (a failed write, or ``shutdown``), or None."""
        return self._stopped

    def begin_controlled_shutdown(self, now_ms: int) -> list[Effect]:
        """Start a controlled shutdown (a cluster's broker asks the controller to move its
        leaderships away); the driver calls ``shutdown`` once :attr:`may_stop`, or at its bound."""
        if self._stopped is not None:
            return []
        self._check_input()
        self._now_ms = now_ms
        self._begin_call(jobs=False)
        self._cluster.begin_shutdown(now_ms)
        return self._flush([])

    @property
    def may_stop(self) -> bool:
        """Whether ``shutdown`` may come now (always, but during a cluster's controlled shutdown)."""
        return self._stopped is not None or self._cluster.may_stop

    def storage_applied(self, now_ms: int) -> list[Effect]:
        """Every storage effect of the oldest batch in flight succeeded: what waited for it goes
        out, and the connections whose answers it held are read again (their next requests are
        handled in this call, which may hand out another batch)."""
        answers, out = self._pipeline.applied()
        self._release(answers, out)
        if self._stopped is not None:
            return out
        self._now_ms = now_ms
        self._begin_call(jobs=self._pipeline.jobs_may_step)
        for conn_id in dict.fromkeys(answer.conn_id for answer in answers):
            self._answered(conn_id)
        self._resume(now_ms, out)
        return self._flush(out)

    def storage_failed(self, failure: StorageFailure, now_ms: int) -> list[Effect]:
        """A storage effect of the oldest batch in flight failed (the driver applies nothing more).

        The data directory goes offline, and with it the broker: the answers still waiting report
        the failure, every connection closes after what it was sent, and ``StopBroker`` ends the
        list.
        """
        starting = self._pipeline.starting
        answers = self._pipeline.failed()
        reason = f"log directory failed: {failure}"
        if not starting:  # a failed start is the driver's to report
            self._log.error("%s; the broker stops (its only log directory is offline)", reason)
        out: list[Effect] = []
        self._cluster.shutdown()
        out += [e for e in self._cluster.take_network_effects() if isinstance(e, CloseConnection)]
        for answer in answers:
            body = answer.body.body if isinstance(answer.body, Spliced) else answer.body
            code = (
                ErrorCode.NOT_COORDINATOR
                if answer.request.api_key in GROUP_APIS
                else ErrorCode.KAFKA_STORAGE_ERROR
            )
            self._release([Answer(answer.conn_id, answer.request, failed_answer(body, code, reason))], out)
        for conn_id, conn in list(self._conns.items()):
            self._close(conn_id, conn, out)
        self._stopped = reason
        out.append(StopBroker(reason))
        return out

    def _check_input(self) -> None:
        self._pipeline.check_input()

    # -- request handling -----------------------------------------------------------------------

    def _begin_call(self, *, jobs: bool = True) -> None:
        """A fresh work budget for this call (none with ``jobs=False``)."""
        self._call_requests = 0
        if self._state is not None:
            self._state.begin_call()
            if not jobs:
                self._end_jobs()

    def _end_jobs(self) -> None:
        """No more job steps in this call: they go on at the next tick."""
        if self._state is not None:
            self._state.budget.left = 0

    def _jobs_held(self) -> bool:
        return any(isinstance(h.waiting, Job) for h in self._held)

    def _drain(self, conn_id: int, conn: Channel, now_ms: int, out: list[Effect]) -> None:
        """Decode and handle the connection's requests, one at a time: stop (and pause reading)
        while one is held unanswered or the request queue is full."""
        server = conn.server
        while True:
            if conn.unanswered or self._pipeline.holds_answers_for(conn_id):
                # One request at a time, as Kafka mutes a channel until its answer is sent.
                self._pause(conn_id, conn, out)
                break
            if self._held_count() >= self.config.queued_max_requests:
                self._pause(conn_id, conn, out)
                self._queue_blocked[conn_id] = None
                break
            if self._call_requests >= REQUESTS_PER_CALL:
                self._pause(conn_id, conn, out)
                self._call_blocked[conn_id] = None
                break
            event = server.next_event()
            if event is NEED_DATA:
                self._unpause(conn_id, conn, now_ms, out)
                break
            if isinstance(event, Request):
                self._call_requests += 1
                self._dispatch(conn_id, conn, event, now_ms, out)
                if conn_id not in self._conns or conn_id in self._close_after_answers:
                    return  # the request closed the connection (or will, once its answers are out)
            elif isinstance(event, UnsupportedRequest):
                self._send(conn_id, server.reject(event), out)
            elif isinstance(event, Authenticated):
                conn.principal = event.principal
                self._timers.session(conn_id, server.next_deadline_ms())
            elif isinstance(event, AuthenticationFailed) and self.config.failed_authentication_delay_ms:
                # Answer (and close) later, so that passwords cannot be tried at full speed.
                self._pause(conn_id, conn, out)
                self._timers.failed_authentication(conn_id, now_ms)
                return
            if server.must_close or isinstance(event, ConnectionClosed):
                self._close(conn_id, conn, out)
                return
        self._send(conn_id, server.data_to_send(), out)
        if not conn.paused:
            self._timers.receiving(conn_id, now_ms, in_progress=server.buffered_bytes > 0)

    def _pause(self, conn_id: int, conn: Channel, out: list[Effect]) -> None:
        if not conn.paused:
            conn.paused = True
            out.append(PauseReading(conn_id))
        self._timers.quiet(conn_id)

    def _unpause(self, conn_id: int, conn: Channel, now_ms: int, out: list[Effect]) -> None:
        if conn.paused:
            conn.paused = False
            out.append(ResumeReading(conn_id))
            self._timers.active(conn_id, now_ms)

    def _answered(self, conn_id: int) -> None:
        """A held request of the connection was answered: read it again once nothing is owed."""
        conn = self._conns.get(conn_id)
        if (
            conn is not None
            and conn.paused
            and not conn.unanswered
            and not self._pipeline.holds_answers_for(conn_id)
            and not self._timers.closing(conn_id)
            and conn_id not in self._close_after_answers
        ):
            self._unmuted.append(conn_id)

    def _resume(self, now_ms: int, out: list[Effect]) -> None:
        """Read on from paused connections that may go on: those whose held request was answered,
        then those waiting for room in the request queue (in the order they stopped)."""
        while True:
            ready, self._unmuted = self._unmuted, []
            if self._queue_blocked and self._held_count() < self.config.queued_max_requests:
                ready += self._queue_blocked
                self._queue_blocked.clear()
            if self._call_blocked and self._call_requests < REQUESTS_PER_CALL:
                ready += self._call_blocked
                self._call_blocked.clear()
            if not ready:
                return
            for conn_id in ready:
                conn = self._conns.get(conn_id)
                if conn is None or not conn.paused:
                    continue
                try:
                    self._drain(conn_id, conn, now_ms, out)
                except ProtocolError:
                    self._close(conn_id, conn, out)
            self._poll_held(now_ms, out)

    def _expire_connections(self, now_ms: int, out: list[Effect]) -> None:
        for conn_id, expiry in self._timers.due(now_ms):
            conn = self._conns.get(conn_id)
            if conn is None:
                continue
            if expiry is Expiry.SESSION:
                conn.server.handle_timer(now_ms)
                if not conn.server.must_close:  # re-authenticating: the session it ends with decides
                    self._timers.session(conn_id, conn.server.next_deadline_ms())
                    continue
            if expiry is not Expiry.AUTHENTICATION_FAILED:
                self._log.info("closing connection %d from %s: %s", conn_id, conn.host or "?", expiry.value)
            self._close(conn_id, conn, out)

    def _dispatch(
        self, conn_id: int, conn: Channel, request: Request, now_ms: int, out: list[Effect]
    ) -> None:
        key = request.api_key
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug(
                "conn %d: %s v%d %r", conn_id, type(request.body).__name__, request.api_version, request.body
            )
        if self.faults.armed and self._from_client(conn, request):
            code = self.faults.take_error(key)
            if code is not None:
                if request.expects_response:
                    self._respond(conn_id, request, injected_answer(key, request.body, code))
                else:  # acks=0: a failed produce closes the connection
                    self._close_failed_without_answer(conn_id, out)
                return
        if self._cluster.serves(conn.listener):
            served = self._cluster.handle(request, now_ms)
            if isinstance(served, Message):
                self._respond(conn_id, request, served)
            else:
                if not request.expects_response:
                    conn.silent_held += 1
                self._held.append(Held(conn_id, request, served))
            return
        if key in GROUP_APIS:
            assert self._group is not None
            self._group_answers(self._group.handle(conn_id, request, conn.host, now_ms))
            return
        if key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            # Only reached without a SASL gate: Kafka refuses SASL on a plaintext listener.
            refusal: Message = (
                messages.SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)
                if key == ApiKey.SASL_HANDSHAKE
                else messages.SaslAuthenticateResponse(
                    error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message="SASL is not enabled"
                )
            )
            self._respond(conn_id, request, refusal)
            return
        ctx = Context(
            state=self.state,
            effects=self._effects,
            conn_id=conn_id,
            request=request,
            now_ms=now_ms,
            principal=conn.principal,
            client_host=conn.host,
            listener=conn.listener,
        )
        result = HANDLERS[key](ctx, request.body)
        if not isinstance(result, Message | Spliced) and self._cluster.pump(now_ms):
            # Asked of this node's own controller (a single node's admin request): answered
            # in-process, often at once, and then the connection need not pause.
            ready = result.poll(now_ms)
            if ready is not None:
                result = ready
        self._topics_deleted(now_ms)
        if failed_without_answer(request, result):
            self._close_failed_without_answer(conn_id, out)
            return
        if isinstance(result, Message | Spliced):
            self._respond(conn_id, request, result)
        else:
            if not request.expects_response:
                conn.silent_held += 1
            self._held.append(Held(conn_id, request, result))

    def _topics_deleted(self, now_ms: int) -> None:
        """The committed offsets of topics the metadata deleted go too, as in Kafka."""
        if self.state.deleted_topics:
            assert self._group is not None
            deleted, self.state.deleted_topics = self.state.deleted_topics, []
            self._group_answers(self._group.topics_deleted(deleted, now_ms))

    def _respond(self, conn_id: int, request: Request, body: Message | Spliced) -> None:
        """Answer ``request``: built now, sent once the writes of this call have succeeded (or,
        with an injected latency, at a later tick)."""
        conn = self._conns.get(conn_id)
        if conn is not None and request.expects_response:
            if self.faults.armed and self._from_client(conn, request):
                until = self.faults.held_until(request.api_key, self._now_ms)
                if until is not None:
                    self._delayed_seq += 1
                    self._delayed[self._delayed_seq] = Answer(conn_id, request, body)
                    self._timer_queue.schedule((_FAULT_TIMERS, self._delayed_seq), until)
                    return
            conn.unreleased += 1
            self._answers.append(Answer(conn_id, request, body))

    def _release(self, answers: list[Answer], out: list[Effect]) -> None:
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
                self.faults.armed
                and self._from_client(conn, request)
                and self.faults.take_close(request.api_key)
            ):
                self._cut(answer.conn_id, conn, ready, out)
                continue
            self._send(answer.conn_id, ready, out)
        for conn_id in sorted(self._close_after_answers):
            conn = self._conns.get(conn_id)
            if conn is None:
                self._close_after_answers.discard(conn_id)
            elif not conn.unreleased:
                self._close_after_answers.discard(conn_id)
                self._close(conn_id, conn, out)

    def _poll_held(self, now_ms: int, out: list[Effect]) -> None:
        """Answer the held requests that are ready (after the node served what was asked of its
        own controller), and continue the jobs in progress as far as the call's work budget
        allows."""
        self._cluster.pump(now_ms)
        if self._group is not None:
            self._topics_deleted(now_ms)
            for partition, led in self._cluster.take_coordinator_changes():
                change = self._group.partition_led if led else self._group.partition_lost
                self._group_answers(change(partition, now_ms))
            self._group_answers(self._group.poll(now_ms))  # writes whose replication settled
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
            self._answered(held.conn_id)
        self._held = still
        for conn_id in failed_silently:
            self._close_failed_without_answer(conn_id, out)

    def _release_delayed(self, now_ms: int) -> None:
        """Answers whose injected latency is over: answered now (the connection is read again)."""
        while (due := self._timer_queue.pop_due(now_ms, _FAULT_TIMERS)) is not None:
            answer = self._delayed.pop(int(due.key[1]))  # type: ignore[call-overload]  # keys are (owner, int)
            conn = self._conns.get(answer.conn_id)
            if conn is not None:
                conn.unreleased += 1
                self._answers.append(answer)
                self._answered(answer.conn_id)

    def _from_client(self, conn: Channel, request: Request) -> bool:
        """Whether faults apply: not on a controller listener, not a follower's Fetch."""
        if self._cluster.serves(conn.listener):
            return False
        body = request.body
        return not isinstance(body, messages.FetchRequest) or (
            body.replica_id < 0 and body.replica_state.replica_id < 0
        )

    def _group_answers(self, answers: list[GroupAnswer]) -> None:
        for conn_id, request, body in answers:
            self._respond(conn_id, request, body)
            self._answered(conn_id)

    def _held_count(self) -> int:
        """Requests held unanswered (counted against ``queued.max.requests``)."""
        return len(self._held) + (self._group.waiting if self._group is not None else 0)

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
            if conn is not None and not conn.paused:
                self._timers.active(conn_id, self._now_ms)

    def _close(self, conn_id: int, conn: Channel, out: list[Effect]) -> None:
        self._send(conn_id, conn.server.data_to_send(), out)
        out.append(CloseConnection(conn_id))
        if self._conns.pop(conn_id, None) is not None:
            self._forget(conn_id, conn)

    def _cut(self, conn_id: int, conn: Channel, ready: bytes | list[object], out: list[Effect]) -> None:
        """An injected fault: send the first half of the response frame, then close."""
        parts = [ready] if isinstance(ready, bytes) else list(ready)
        parts += conn.server.parts_to_send()
        total = sum(
            len(p) if isinstance(p, bytes) else p.size if isinstance(p, FileRegion) else 0 for p in parts
        )
        leading = b"".join(itertools.takewhile(lambda p: isinstance(p, bytes), parts))  # type: ignore[arg-type]  # bytes only, by the predicate
        cut = leading[: max(1, min(len(leading), total // 2))]
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
                self._close_after_answers.add(conn_id)
                self._pause(conn_id, conn, out)
            else:
                self._close(conn_id, conn, out)

    def _forget(self, conn_id: int, conn: Channel) -> None:
        """Drop what the engine keeps for a connection that is gone."""
        self._admission.closed(conn.host)
        self._close_after_answers.discard(conn_id)
        self._timers.forget(conn_id)
        self._queue_blocked.pop(conn_id, None)
        self._call_blocked.pop(conn_id, None)
        # Admin jobs run to their end (their answer is dropped); the rest goes with the connection.
        self._held = [
            h
            for h in self._held
            if h.conn_id != conn_id or (isinstance(h.waiting, Job) and h.waiting.survives_disconnect)
        ]
        if self._group is not None:
            self._group.forget(conn_id)
        for seq in [n for n, answer in self._delayed.items() if answer.conn_id == conn_id]:
            del self._delayed[seq]
            self._timer_queue.cancel((_FAULT_TIMERS, seq))

    def _flush(self, out: list[Effect]) -> list[Effect]:
        """End a call: its storage effects (its batch), then its network effects. Its answers and
        messages to other nodes go out now when the writes they depend on are applied, else once
        the driver reports them applied (``kafka_wire.broker.storage_pipeline``)."""
        if self._state is not None:
            self._maintenance.arm(self._state)
            self._state.collect_effects(self._effects)
        node = self._cluster.take_network_effects()
        storage = self._effects.take()
        answers, self._answers = self._answers, []
        ready, node = self._pipeline.end_call(storage, answers, node)
        out += node
        self._release(ready, out)
        return [*storage, *out]
