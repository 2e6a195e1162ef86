"""``Broker``: the engine, composed. Connection bytes and time in; effects out.

Inputs: ``start``, ``connection_opened`` (and ``connection_authenticated`` after a TLS
handshake), ``receive_data``, ``connection_closed``, ``tick`` (at
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
  (KAFKA_STORAGE_ERROR; NOT_COORDINATOR for group and transaction APIs), every connection is closed and
  ``StopBroker`` follows. Nothing more is written, so no state in memory is ever served ahead of
  the disk; the next start recovers the logs from what the disk holds.

The broker composes parts that own their state: the contract's states
(``driver_contract.py``), the writes in flight and what waits for them (``storage_pipeline.py``),
the client connections, their requests and answers (``client_connections.py``, muted by
``muting.py``), the group and transaction coordinators (``coordinators.py``), the log maintenance and the cluster node.

Each call does bounded work (``kafka_wire.broker.work``): a request whose cost grows with its input
runs as a job that yields when the call's budget is spent and goes on at the next ``tick``
(``next_deadline_ms()`` is then the current time); like any held request it keeps its connection
from being read meanwhile.

In a replicated cluster (``BrokerConfig.cluster``), a :class:`ClusterNode` (``kafka_wire.broker.node``)
is given at construction and the broker hands it what is not a client's: requests arriving on a
controller listener (``connection_opened(..., listener=...)``), the bytes and events of outbound
connections (negative ids: ``connection_established``, ``receive_data``, ``connection_closed``),
and every ``tick``. Its network effects (``OpenConnection``, and ``Send`` / ``CloseConnection`` of
its links) leave with the call's, once every batch handed out up to that call is applied. Given
no cluster node, the broker builds its own: a single node is a one-voter cluster.

No clock, socket, file or ambient randomness is used: the same inputs give the same effects.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.apis import GROUP_APIS
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.channels import Answer
from kafka_wire.broker.clean_shutdown import CleanShutdown
from kafka_wire.broker.client_connections import ClientConnections
from kafka_wire.broker.cluster_node import ClusterNode
from kafka_wire.broker.config import BrokerConfig, standalone
from kafka_wire.broker.coordinators import Coordinators
from kafka_wire.broker.data_dir import DataDir, may_hold_legacy_data
from kafka_wire.broker.driver_contract import DriverContract
from kafka_wire.broker.driving import StorageFailure
from kafka_wire.broker.effects import CloseConnection, Effect, EffectSink, StopBroker, WriteProgress
from kafka_wire.broker.failed_answers import failed_answer
from kafka_wire.broker.faults import FaultInjector
from kafka_wire.broker.fetch_sessions import FetchSessionCache
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.maintenance import LogMaintenance
from kafka_wire.broker.node import Node
from kafka_wire.broker.quotas.manager import QuotaManager
from kafka_wire.broker.sasl import oauth_key_sets, scram_lookup, server_sasl
from kafka_wire.broker.share.coordinator import ShareStateStore
from kafka_wire.broker.share.manager import ShareConfig, ShareManager
from kafka_wire.broker.share.persister import StatePersister
from kafka_wire.broker.state import BrokerState, Spliced
from kafka_wire.broker.storage import StorageReader
from kafka_wire.broker.storage_pipeline import StoragePipeline
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.token_auth import token_lookup
from kafka_wire.broker.txn.coordinator import TXN_API_KEYS
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:  # the coordinator loads on first use (kafka_wire.broker.group_link)
    from kafka_wire.broker.group.service import GroupCoordinator
    from kafka_wire.broker.legacy_import import LegacyImport

__all__ = ["Broker", "ClusterNode"]

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
        hooks: Hooks = OFF,
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
        self._hooks = hooks  # the simulator's BUGGIFY hooks (``buggify``), for the parts built at start
        self._member_id_factory = member_id_factory
        self._state: BrokerState | None = None
        #: The group and transaction coordinators (``kafka_wire.broker.coordinators``).
        self._group: Coordinators | None = None
        #: Every deadline of the engine: connections, logs, groups (``kafka_wire.broker.timers``).
        self._timer_queue = TimerQueue()
        #: The storage effects of the call in progress (``kafka_wire.broker.effects.EffectSink``).
        progress = WriteProgress()
        self._effects = EffectSink(progress)
        #: The driver contract's state (``driver_contract.py``), and why the broker stopped.
        self._driver = DriverContract(self._log)
        #: The writes in flight and what waits for them.
        self._pipeline = StoragePipeline(progress, self._driver)
        self._maintenance = LogMaintenance(self._timer_queue, config.retention_check_interval_ms)
        #: Faults a test asks for (``kafka_wire.broker.faults``); none by default.
        self.faults = FaultInjector()
        nonces = nonce_factory or (lambda: f"{rng.getrandbits(192):048x}")
        #: The JWKS of the listeners that validate signed OAUTHBEARER tokens, by URL: the driver
        #: fetches them and calls ``update`` (None: no such listener).
        self.oauth_key_sets = oauth_key_sets(config.sasl_listeners)
        self._clients = ClientConnections(
            config,
            cluster=cluster,
            pipeline=self._pipeline,
            effects=self._effects,
            timer_queue=self._timer_queue,
            faults=self.faults,
            sasl=server_sasl(
                config.sasl_listeners,
                scram_lookup(cluster.view),
                nonces,
                config.sasl_users,
                tokens=token_lookup(cluster.view, config.delegation_token_secret_key),
                now_ms=lambda: self._clients.now_ms,
                key_sets=self.oauth_key_sets,
                logger=self._log,
            ),
            logger=self._log,
        )

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
        return self._group.group.coordinator

    @property
    def coordinators(self) -> Coordinators:
        """The group and transaction coordinators (for read-only views)."""
        if self._group is None:
            raise LocalProtocolError("the broker has not been started")
        return self._group

    def start(self, now_ms: int) -> list[Effect]:
        """Check the data directory, open (and recover) every log, load group state; effects create
        missing files. A data directory that cannot be served raises
        :class:`~kafka_wire.broker.data_dir.DataDirError`, whose message says what to do."""
        if self._state is not None:
            raise LocalProtocolError("the broker is already started")
        self._driver.start()
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
        clean_shutdown = CleanShutdown.load(self._storage)
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
            hooks=self._hooks,
            clean_shutdown=clean_shutdown,
            quotas=QuotaManager(
                window_num=config.quota_window_num,
                window_size_seconds=config.quota_window_size_seconds,
                mutation_windows=(
                    config.controller_quota_window_num,
                    config.controller_quota_window_size_seconds,
                ),
            ),
        )
        share_store = ShareStateStore(state, self._log)
        state.share = ShareManager(
            ShareConfig(
                lock_duration_ms=config.group_share_record_lock_duration_ms,
                delivery_limit=config.group_share_delivery_count_limit,
                max_in_flight=config.group_share_partition_max_record_locks,
                max_sessions=config.max_share_session_cache_size,
                lock_duration_bounds=(
                    config.group_share_min_record_lock_duration_ms,
                    config.group_share_max_record_lock_duration_ms,
                ),
                delivery_limit_bounds=(
                    config.group_share_min_delivery_count_limit,
                    config.group_share_max_delivery_count_limit,
                ),
                max_in_flight_bounds=(
                    config.group_share_min_partition_max_record_locks,
                    config.group_share_max_partition_max_record_locks,
                ),
            ),
            self._timer_queue,
            configs_of=lambda group_id: state.group_configs.get(group_id, {}),
            store=share_store,
            hooks=self._hooks,
            persister=StatePersister(state.cluster, share_store.locate, self._log),
            leader_epoch_of=state.leader_epoch_of,
        )
        self._state = state
        state.may_slice = lambda: self._pipeline.jobs_may_step
        self._pipeline.topic_name = lambda topic_id: (
            topic.name if (topic := state.topic_with_id(topic_id)) else None
        )
        self._effects.extend(opened.effects)
        self._effects.extend(clean_shutdown.start_effects())
        legacy: LegacyImport | None = None
        # A cluster of its own: the node may hold an old single node's directory (the import
        # loads only then).
        if sole_voter and may_hold_legacy_data(self._storage):
            from kafka_wire.broker.legacy_import import LegacyImport

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
        self._group = Coordinators(
            config,
            state,
            self._effects,
            self._timer_queue,
            self._log,
            member_id_factory=self._member_id_factory,
            take_changes=self._cluster.take_coordinator_changes,
        )
        self._cluster.set_loopback(self._group.loopback)
        self._clients.start(state, self._group)
        self._maintenance.start(now_ms)
        return self._flush([])

    def shutdown(self, now_ms: int) -> list[Effect]:
        """Close every connection and make every log durable (nothing is written once stopped).

        Jobs in progress stop where they are: the next start opens the partitions of a topic
        whose creation was cut short, and moves aside the directories of one whose deletion was."""
        if self._driver.stopped is not None:
            return []
        self._driver.shutdown()
        out: list[Effect] = [CloseConnection(conn_id) for conn_id in self._clients]
        self._cluster.shutdown(clean=True)
        out += self._cluster.take_network_effects()
        self._clients.clear()
        if self._group is not None:
            self._group.clear()
        return self._flush(out)

    # -- connections ----------------------------------------------------------------------------

    def connection_opened(
        self, conn_id: int, now_ms: int, *, host: str = "", listener: str = "PLAINTEXT"
    ) -> list[Effect]:
        """A client connected from ``host`` (its address) to ``listener`` (its name in
        ``listeners``). Over a connection limit, or after ``shutdown``, the answer is
        ``CloseConnection``: the engine forgets the connection at once (the driver need not report
        its close). On a TLS listener the driver reports the connection when it is accepted,
        before its handshake (so that the limits count it), and its principal once the handshake
        is done (:meth:`connection_authenticated`)."""
        if self._driver.stopped is not None:
            return [CloseConnection(conn_id)]
        self._driver.take_input()
        self._clients.now_ms = now_ms
        if not self._clients.open(conn_id, host, listener, now_ms):
            return [CloseConnection(conn_id)]
        return []

    def connection_authenticated(self, conn_id: int, principal: str, now_ms: int) -> list[Effect]:
        """The transport of a client connection authenticated it as ``principal`` (the name of
        Kafka's ``User:`` principal): its TLS handshake is done, the client certificate's subject
        mapped by ``ssl.principal.mapping.rules`` (``ANONYMOUS`` without one). SASL on the
        connection replaces it."""
        if self._driver.stopped is not None:
            return [CloseConnection(conn_id)]
        self._driver.take_input()
        self._clients.now_ms = now_ms
        self._clients.authenticated(conn_id, principal)
        return []

    def connection_established(self, conn_id: int, now_ms: int) -> list[Effect]:
        """An outbound connection the cluster node asked for (``OpenConnection``) is open."""
        if self._driver.stopped is not None:
            return [CloseConnection(conn_id)]
        self._driver.take_input()
        self._clients.now_ms = now_ms
        self._begin_call(jobs=False)
        self._cluster.connection_established(conn_id, now_ms)
        return self._flush([])

    def _node_input(self, now_ms: int) -> list[Effect]:
        """After the cluster node took an input: what it made ready, answered."""
        out: list[Effect] = []
        self._clients.poll_held(now_ms, out)
        self._clients.resume(now_ms, out)
        return self._flush(out)

    def connection_closed(self, conn_id: int, now_ms: int) -> list[Effect]:
        if self._driver.stopped is not None:
            self._clients.drop(conn_id)
            return []
        self._driver.take_input()
        self._clients.now_ms = now_ms
        self._begin_call(jobs=False)
        if self._cluster.owns(conn_id):
            self._cluster.connection_closed(conn_id, now_ms)
            return self._node_input(now_ms)
        out: list[Effect] = []
        if self._clients.closed(conn_id):
            self._clients.resume(now_ms, out)  # its held request no longer counts against the queue
        return self._flush(out)

    def receive_data(self, conn_id: int, data: bytes, now_ms: int) -> list[Effect]:
        if self._driver.stopped is not None:
            return [CloseConnection(conn_id)]
        self._driver.take_input()
        if conn_id < 0 and conn_id not in self._clients:
            if not self._cluster.owns(conn_id):
                return []  # a link the node gave up (its close is on the way): bytes dropped
            self._clients.now_ms = now_ms
            self._begin_call(jobs=False)
            self._cluster.receive_data(conn_id, data, now_ms)
            return self._node_input(now_ms)
        self._clients.now_ms = now_ms
        out: list[Effect] = []
        if not self._clients.reads(conn_id):
            return self._flush(out)
        self._begin_call()
        self._clients.receive(conn_id, data, now_ms, out)
        self._cluster.pump(now_ms)  # what the requests asked of the node's own controller
        self._end_jobs()  # the jobs in progress go on at the next tick, not in this call
        self._clients.poll_held(now_ms, out)
        self._clients.resume(now_ms, out)
        return self._flush(out)

    def request_time(self, conn_id: int, time_ns: int, now_ms: int) -> None:
        """The driver measured ``time_ns`` handling a client connection's requests (the calls made
        for its bytes): it counts against the ``request_percentage`` quota of its client
        (KIP-124), so the next answers carry the throttle time; the engine reads no clock. No
        effects; an unknown or closed connection is ignored."""
        if self._driver.stopped is None and conn_id >= 0:
            self._clients.spent(conn_id, time_ns, now_ms)

    def tick(self, now_ms: int) -> list[Effect]:
        if self._driver.stopped is not None:
            return []
        self._driver.take_input()
        self._clients.now_ms = now_ms
        out: list[Effect] = []
        self._begin_call(jobs=self._pipeline.jobs_may_step, leftovers=True)
        assert self._group is not None
        self._clients.expire(now_ms, out)
        self._clients.group_answers(self._group.tick(now_ms))
        self._cluster.tick(now_ms)
        self._maintenance.run_due(self.state, now_ms)
        if self.state.share is not None:
            self.state.share.run_due(now_ms)  # acquisition locks that ran out
        self._clients.release_delayed(now_ms)
        self._clients.release_throttled(now_ms)
        self._clients.poll_held(now_ms, out)
        self._clients.resume(now_ms, out)
        return self._flush(out)

    def next_deadline_ms(self) -> int | None:
        if self._driver.stopped is not None:
            return None
        if self._clients.muting.call_blocked:
            return self._clients.now_ms  # requests left over from an earlier call: at once
        if self._pipeline.jobs_may_step and (job := self._clients.job_deadline_ms()) is not None:
            # A job's deadline is the time of its last slice, so now: nothing else can come sooner.
            return job
        # Jobs wait for the writes in flight: the driver's report wakes them.
        deadlines = [
            deadline
            for deadline in (
                self._clients.held_deadline_ms(),
                self._timer_queue.next_deadline_ms(),
                # Before its first call, or with loaded members to arm: at once.
                self._group.next_deadline_ms() if self._group is not None else None,
                self._cluster.next_deadline_ms(),
            )
            if deadline is not None
        ]
        return min(deadlines) if deadlines else None

    # -- storage outcomes -----------------------------------------------------------------------

    @property
    def awaiting_storage(self) -> bool:
        """True while batches handed out wait for their outcome to be reported."""
        return self._pipeline.in_flight > 0

    @property
    def stopped(self) -> str | None:
        """Why the broker stopped serving (a failed write, or ``shutdown``), or None."""
        return self._driver.stopped

    def begin_controlled_shutdown(self, now_ms: int) -> list[Effect]:
        """Start a controlled shutdown (a cluster's broker asks the controller to move its
        leaderships away); the driver calls ``shutdown`` once :attr:`may_stop`, or at its bound."""
        if self._driver.stopped is not None:
            return []
        self._driver.take_input()
        self._clients.now_ms = now_ms
        self._begin_call(jobs=False)
        self._cluster.begin_shutdown(now_ms)
        return self._flush([])

    @property
    def may_stop(self) -> bool:
        """Whether ``shutdown`` may come now (always, but during a cluster's controlled shutdown)."""
        return self._driver.stopped is not None or self._cluster.may_stop

    def storage_applied(self, now_ms: int) -> list[Effect]:
        """Every storage effect of the oldest batch in flight succeeded: what waited for it goes
        out, and the connections whose answers it held are read again (their next requests are
        handled in this call, which may hand out another batch)."""
        answers, out = self._pipeline.applied()
        self._clients.release(answers, out)
        if self._driver.stopped is not None:
            return out
        self._clients.now_ms = now_ms
        self._begin_call(jobs=self._pipeline.jobs_may_step)
        for conn_id in dict.fromkeys(answer.conn_id for answer in answers):
            self._clients.answered(conn_id)
        self._clients.resume(now_ms, out)
        return self._flush(out)

    def storage_failed(self, failure: StorageFailure, now_ms: int) -> list[Effect]:
        """A storage effect of the oldest batch in flight failed (the driver applies nothing more).

        The data directory goes offline, and with it the broker: the answers still waiting report
        the failure, every connection closes after what it was sent, and ``StopBroker`` ends the
        list.
        """
        starting = self._driver.starting
        reason = f"log directory failed: {failure}"
        answers = self._pipeline.failed(reason)
        if not starting:  # a failed start is the driver's to report
            self._log.error("%s; the broker stops (its only log directory is offline)", reason)
        out: list[Effect] = []
        self._cluster.shutdown()
        out += [e for e in self._cluster.take_network_effects() if isinstance(e, CloseConnection)]
        for answer in answers:
            body = answer.body.body if isinstance(answer.body, Spliced) else answer.body
            code = (
                ErrorCode.NOT_COORDINATOR
                if answer.request.api_key in GROUP_APIS or answer.request.api_key in TXN_API_KEYS
                else ErrorCode.KAFKA_STORAGE_ERROR
            )
            self._clients.release(
                [Answer(answer.conn_id, answer.request, failed_answer(body, code, reason))], out
            )
        self._clients.close_all(out)
        out.append(StopBroker(reason))
        return out

    # -- calls ----------------------------------------------------------------------------------

    def _begin_call(self, *, jobs: bool = True, leftovers: bool = False) -> None:
        """A fresh work budget for this call (none with ``jobs=False``); the connections muted
        when an earlier call's requests were spent read on only with ``leftovers`` (a tick)."""
        self._clients.muting.begin_call(leftovers=leftovers)
        if self._state is not None:
            self._state.begin_call()
            if not jobs:
                self._end_jobs()

    def _end_jobs(self) -> None:
        """No more job steps in this call: they go on at the next tick."""
        if self._state is not None:
            self._state.budget.left = 0

    def _flush(self, out: list[Effect]) -> list[Effect]:
        """End a call: its storage effects (its batch), then its network effects. Its answers and
        messages to other nodes go out now when the writes they depend on are applied, else once
        the driver reports them applied (``kafka_wire.broker.storage_pipeline``)."""
        if self._state is not None:
            self._maintenance.arm(self._state)
            self._state.collect_effects(self._effects)
        node = self._cluster.take_network_effects()
        storage = self._effects.take()
        ready, node = self._pipeline.end_call(storage, self._clients.take_answers(), node)
        out += node
        self._clients.release(ready, out)
        return [*storage, *out]
