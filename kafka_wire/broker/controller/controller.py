"""The active controller of a KRaft cluster (Kafka's ``QuorumController``), as a pure state machine.

The controller is composed of parts, each owning its share of the metadata and its ``replay``, as
Kafka splits its controller: the cluster part (:class:`.cluster_control.ClusterControl`: broker
registrations, heartbeats, fencing), the replication part
(:class:`.replication_control.ReplicationControl`: topics, partitions, elections,
reassignments), the configuration part (:class:`.configuration_control.ConfigurationControl`), the
feature part (:class:`.feature_control.FeatureControl`), the producer-id part
(:class:`.producer_id_control.ProducerIdControl`), the ACL part (:class:`.acl_control.AclControl`),
the quota part (:class:`.quota_control.QuotaControl`) and the SCRAM part
(:class:`.scram_control.ScramControl`). Each API goes to the part that owns it
(:meth:`QuorumController.handle`); a part decides the records to write and the answer
(:class:`.result.ControllerResult`), and the controller does the rest:

The controller is active only while the local raft replica leads the metadata quorum. It proposes
the records a request decided (``MetadataLog.append``), applies them to its parts at once (so the
next request sees them) and holds the answer (a :class:`~kafka_wire.broker.state.Waiting`) until
they are committed; a request that changes nothing is answered at once. Committed batches come
back through :meth:`QuorumController.replay` on every controller, active or not: they build the
committed :class:`~kafka_wire.broker.controller.image.MetadataImage` (the node's image) and,
unless this controller proposed them, go to the parts. On a new leadership the parts are rebuilt
from the committed image.

APIs (Kafka's error codes): BrokerRegistration, BrokerHeartbeat, AlterPartition, CreateTopics,
DeleteTopics, CreatePartitions, IncrementalAlterConfigs, AlterConfigs, ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments, AllocateProducerIds, CreateAcls,
DeleteAcls, AlterClientQuotas,
AlterUserScramCredentials, Create/Renew/ExpireDelegationToken (which carry the client's
principal: :meth:`QuorumController.handle`'s ``principal``). A request reaching a
controller that is not active is answered NOT_CONTROLLER, as is a held request whose controller
lost its leadership before its records were committed; a held request that is not committed by
its deadline gets REQUEST_TIMED_OUT.

Periodic work (:meth:`QuorumController.tick`): brokers whose heartbeats stopped for
``broker.session.timeout.ms`` are fenced (their leaderships move, they leave every ISR); every
``leader.imbalance.check.interval.seconds`` with ``auto.leader.rebalance.enable``, partitions not
led by their preferred (first) replica get a preferred election when that replica is eligible
(KRaft does not use ``leader.imbalance.per.broker.percentage``). Every
``metadata.log.max.record.bytes.between.snapshots`` committed bytes, the committed image is
written as a snapshot (``MetadataLog.write_snapshot``).
"""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.controller.acl_control import AclControl
from kafka_wire.broker.controller.cluster_control import ClusterControl
from kafka_wire.broker.controller.configuration_control import ConfigurationControl
from kafka_wire.broker.controller.delta import DeltaBuilder, MetadataDelta
from kafka_wire.broker.controller.feature_control import FeatureControl
from kafka_wire.broker.controller.image import MetadataImage, route
from kafka_wire.broker.controller.producer_id_control import ProducerIdControl
from kafka_wire.broker.controller.quota_control import QuotaControl
from kafka_wire.broker.controller.records import decode_record, encode_record
from kafka_wire.broker.controller.replication_control import ReplicationControl
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.scram_control import ScramControl
from kafka_wire.broker.controller.settings import DEFAULT_COMMIT_TIMEOUT_MS, ControllerConfig
from kafka_wire.broker.controller.token_control import DelegationTokenControl
from kafka_wire.broker.controller.tokens_image import Principal
from kafka_wire.broker.error_answers import ERROR_ANSWERS, failure_answer
from kafka_wire.broker.state import Waiting
from kafka_wire.broker.work import Stepping, Steps, WorkBudget, chunks, run_steps, unlimited
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.quick_dataclass import dataclass


class MetadataLog(Protocol):
    """The local raft replica of ``__cluster_metadata``, as the controller uses it."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def epoch(self) -> int: ...

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        ...

    def append(self, records: list[bytes], now_ms: int) -> int | None:
        """Append one batch (leader only); the offset of its last record, or None if refused."""
        ...

    def write_snapshot(self, offset: int, records: list[bytes], now_ms: int) -> None:
        """Write a snapshot of the image at ``offset`` (the last record it includes)."""
        ...


@dataclass(slots=True)
class _Held:
    """An answer held until the records its request proposed are committed."""

    controller: QuorumController
    epoch: int
    offset: int
    deadline_ms: int
    answer: Callable[[], Message]
    fail: Callable[[int], Message]

    def poll(self, now_ms: int) -> Message | None:
        c = self.controller
        if not c.active or c.raft.epoch != self.epoch:
            return self.fail(ErrorCode.NOT_CONTROLLER)
        if c.committed_offset >= self.offset:
            return self.answer()
        if now_ms >= self.deadline_ms:
            return self.fail(ErrorCode.REQUEST_TIMED_OUT)
        return None


@dataclass(slots=True)
class _Pending:
    """A request the controller takes in turn: queued behind a proposal in progress, or whose own
    records are being proposed in steps; then its answer (or the held answer)."""

    controller: QuorumController
    api_key: int
    api_version: int
    body: Message
    deadline_ms: int
    #: None until the request was handled and its records (if any) proposed.
    answer: Message | Waiting | None = None
    #: The client's principal, for the APIs that need it (the delegation tokens').
    principal: Principal = ("User", "ANONYMOUS")

    def poll(self, now_ms: int) -> Message | None:
        self.controller.advance(now_ms)
        answer = self.answer
        if answer is None:
            # At once; while the writes of earlier slices are in flight, their report wakes the
            # controller (its next deadline is then now) and every held request is polled.
            waits = not self.controller.may_step()
            self.deadline_ms = now_ms + DEFAULT_COMMIT_TIMEOUT_MS if waits else now_ms
            return None
        if isinstance(answer, Message):
            return answer
        self.deadline_ms = answer.deadline_ms
        body = answer.poll(now_ms)
        assert body is None or isinstance(body, Message)
        return body


@dataclass(slots=True)
class _Proposal:
    """A request's records being proposed in steps (:meth:`QuorumController.propose_steps`)."""

    pending: _Pending
    result: ControllerResult
    stepping: Stepping[int | None]


class QuorumController:
    """Answers the controller APIs while the local raft replica leads."""

    def __init__(
        self,
        config: ControllerConfig,
        raft: MetadataLog,
        rng: random.Random,
        *,
        bootstrap: Sequence[Message] = (),
        budget: WorkBudget | None = None,
        may_step: Callable[[], bool] = lambda: True,
        hooks: Hooks = OFF,
    ) -> None:
        self.config = config
        #: The engine call's work budget (``kafka_wire.broker.work``): a large request's records
        #: are proposed in steps, and a large committed batch replayed in steps, so that the
        #: engine serves other connections between them. None: all at once.
        self.budget = budget or unlimited()
        #: Whether steps may go on (not while the writes of earlier slices are in flight).
        self.may_step = may_step
        self.raft = raft
        self.rng = rng
        #: The simulator's BUGGIFY hooks (``buggify.OFF`` outside it).
        self.hooks = hooks
        #: Records a new metadata log starts with, after ``metadata.version`` (an imported old
        #: single node's topics, ``kafka_wire.broker.legacy_import``).
        self._bootstrap = list(bootstrap)
        #: The committed image (replayed batches only): the node's image.
        self.committed = MetadataImage(hooks)
        self.committed_offset = -1
        #: The offset of the last record applied to the parts (proposed, or replayed).
        self.applied_offset = -1
        self.features = FeatureControl(config.bootstrap_transaction_version)
        self.cluster = ClusterControl(config, self, self.features)
        self.configuration = ConfigurationControl(config, lambda name: self.replication.topic_exists(name))
        self.replication = ReplicationControl(config, self.cluster, self.configuration, rng, hooks)
        self.cluster.moves = self.replication
        self.producer_ids = ProducerIdControl(self.cluster.epoch_ok)
        self.acls = AclControl(rng)
        self.quotas = QuotaControl()
        self.scram = ScramControl()
        self.tokens = DelegationTokenControl(config, rng)
        #: The APIs whose part needs the client's principal.
        self._principal_handlers: dict[int, Callable[[int, Message, int, Principal], Decision]] = {
            ApiKey.CREATE_DELEGATION_TOKEN: self.tokens.create,  # type: ignore[dict-item]
            ApiKey.RENEW_DELEGATION_TOKEN: self.tokens.renew,  # type: ignore[dict-item]
            ApiKey.EXPIRE_DELEGATION_TOKEN: self.tokens.expire,  # type: ignore[dict-item]
        }
        self._handlers: dict[int, Callable[[int, Message, int], Decision]] = {
            ApiKey.BROKER_REGISTRATION: self.cluster.broker_registration,  # type: ignore[dict-item]
            ApiKey.BROKER_HEARTBEAT: self.cluster.broker_heartbeat,  # type: ignore[dict-item]
            ApiKey.ALTER_PARTITION: self.replication.alter_partition,  # type: ignore[dict-item]
            ApiKey.CREATE_TOPICS: self.replication.create_topics,  # type: ignore[dict-item]
            ApiKey.DELETE_TOPICS: self.replication.delete_topics,  # type: ignore[dict-item]
            ApiKey.CREATE_PARTITIONS: self.replication.create_partitions,  # type: ignore[dict-item]
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.configuration.incremental_alter_configs,  # type: ignore[dict-item]
            ApiKey.ALTER_CONFIGS: self.configuration.alter_configs,  # type: ignore[dict-item]
            ApiKey.ELECT_LEADERS: self.replication.elect_leaders,  # type: ignore[dict-item]
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self.replication.alter_partition_reassignments,  # type: ignore[dict-item]
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.replication.list_partition_reassignments,  # type: ignore[dict-item]
            ApiKey.ALLOCATE_PRODUCER_IDS: self.producer_ids.allocate_producer_ids,  # type: ignore[dict-item]
            ApiKey.CREATE_ACLS: self.acls.create_acls,  # type: ignore[dict-item]
            ApiKey.DELETE_ACLS: self.acls.delete_acls,  # type: ignore[dict-item]
            ApiKey.ALTER_CLIENT_QUOTAS: self.quotas.alter_client_quotas,  # type: ignore[dict-item]
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.scram.alter_user_scram_credentials,  # type: ignore[dict-item]
        }
        self._active_epoch: int | None = None
        self._last_proposed = -1
        #: The batches proposed in this leadership and not yet replayed, by last offset, with
        #: their bytes: a replay of the same bytes needs no decoding.
        self._proposed: dict[int, tuple[list[Message], list[bytes]]] = {}
        self._next_rebalance_ms: int | None = None
        self._next_token_sweep_ms: int | None = None
        self._bytes_since_snapshot = 0
        #: Requests in arrival order, each handled once the one before is proposed whole.
        self._queue: deque[_Pending] = deque()
        self._proposal: _Proposal | None = None
        self._now_ms = 0

    # -- the parts -------------------------------------------------------------------------------

    @property
    def next_write_offset(self) -> int:
        return self.raft.log_end_offset

    def _apply_to_parts(self, records: Sequence[Message]) -> None:
        run_steps(self._apply_to_parts_steps(records))

    def _apply_to_parts_steps(self, records: Sequence[Message]) -> Steps[None]:
        delta = DeltaBuilder()
        for chunk in chunks(records):
            for record in chunk:
                route(
                    record,
                    delta,
                    cluster=self.cluster,
                    topics=self.replication,
                    configs=self.configuration,
                    features=self.features,
                    producer_ids=self.producer_ids,
                    acls=self.acls,
                    quotas=self.quotas,
                    scram=self.scram,
                    tokens=self.tokens,
                )
            yield len(chunk)

    def _rebuild_parts(self) -> None:
        """The parts hold the committed image (a new leadership drops what was not committed)."""
        parts = (
            self.cluster,
            self.replication,
            self.configuration,
            self.features,
            self.producer_ids,
            self.acls,
            self.quotas,
            self.scram,
            self.tokens,
        )
        for part in parts:
            part.reset()
        self._apply_to_parts(self.committed.snapshot_records())
        self.applied_offset = self.committed.offset

    # -- leadership ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.raft.is_leader and self._active_epoch == self.raft.epoch

    def _refresh(self, now_ms: int) -> bool:
        """Become active on a new raft leadership (rebuilding the parts from the committed image,
        giving every broker a fresh session), or inactive; True if active."""
        if not self.raft.is_leader:
            self._active_epoch = None
            return False
        if self._active_epoch == self.raft.epoch:
            return True
        self._active_epoch = self.raft.epoch
        self._rebuild_parts()
        self._last_proposed = -1
        self._proposed.clear()
        self.cluster.activate(now_ms)
        self._next_rebalance_ms = (
            now_ms + self.config.leader_imbalance_check_interval_ms
            if self.config.auto_leader_rebalance_enable
            else None
        )
        self._next_token_sweep_ms = now_ms + self.tokens.check_interval_ms if self.tokens.enabled else None
        first = self.features.bootstrap_records()
        self.propose(first + self._bootstrap if first else first, now_ms)
        return True

    # -- the committed log -----------------------------------------------------------------------

    def replay(self, offset: int, records: Sequence[bytes], now_ms: int = 0) -> MetadataDelta:
        """Apply a committed batch (its last record at ``offset``); ``DecodeError`` on bytes that
        are no metadata record."""
        return run_steps(self.replay_steps(offset, records, now_ms))

    def replay_steps(self, offset: int, records: Sequence[bytes], now_ms: int = 0) -> Steps[MetadataDelta]:
        """:meth:`replay` in steps (the committed image holds part of the batch until the last)."""
        proposed = self._proposed.pop(offset, None)
        if proposed is not None and proposed[1] != list(records):
            proposed = None  # another leader's batch at that offset: ours was truncated
        if proposed is not None:
            decoded = proposed[0]
        else:
            decoded = []
            for chunk in chunks(records):
                decoded += [decode_record(r) for r in chunk]
                yield len(chunk)
        delta = yield from self.committed.apply_steps(offset, decoded)
        if proposed is None:
            yield from self._apply_to_parts_steps(decoded)
            self.applied_offset = max(self.applied_offset, offset)
        self.committed_offset = max(self.committed_offset, offset)
        self._bytes_since_snapshot += sum(len(r) for r in records)
        if self._bytes_since_snapshot >= self.config.snapshot_max_bytes:
            self._bytes_since_snapshot = 0
            self.raft.write_snapshot(
                offset, [encode_record(r) for r in self.committed.snapshot_records()], now_ms
            )
        return delta

    def load_snapshot(self, offset: int, records: Sequence[bytes]) -> MetadataDelta:
        """Replace the committed image by a snapshot taken at ``offset``."""
        decoded = [decode_record(r) for r in records]
        delta = self.committed.load_snapshot(offset, decoded)
        self._rebuild_parts()
        self.committed_offset = offset
        self._bytes_since_snapshot = 0
        return delta

    def propose(self, records: list[Message], now_ms: int) -> int | None:
        return run_steps(self.propose_steps(records, now_ms))

    def propose_steps(self, records: list[Message], now_ms: int) -> Steps[int | None]:
        """Propose ``records`` as one batch (Kafka's atomic append: all of them are committed, or
        none), in steps: encoded, appended to the raft log, applied to the parts; the offset of
        the last record (None: not the leader)."""
        if not records:
            return self._last_proposed
        encoded: list[bytes] = []
        for chunk in chunks(records):
            encoded += [encode_record(r) for r in chunk]
            yield len(chunk)
        last = self.raft.append(encoded, now_ms)
        if last is None:
            return None
        self._last_proposed = last
        self._proposed[last] = (records, encoded)
        yield len(records) // 4  # the batch built and checked once by the log
        yield from self._apply_to_parts_steps(records)
        self.applied_offset = max(self.applied_offset, last)
        return last

    def _held(self, result: ControllerResult, last: int | None, now_ms: int) -> Message | Waiting:
        """The answer to a result whose records were proposed up to ``last``: held until they (and
        everything before them) are committed."""
        if last is None:
            return result.fail(ErrorCode.NOT_CONTROLLER)
        if not result.records and last <= self.committed_offset:
            return result.answer()
        if result.proposed is not None:
            result.proposed(last)
        assert self._active_epoch is not None
        timeout_ms = result.timeout_ms if result.timeout_ms > 0 else DEFAULT_COMMIT_TIMEOUT_MS
        return _Held(self, self._active_epoch, last, now_ms + timeout_ms, result.answer, result.fail)

    # -- work in turn ----------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A proposal is in progress or requests wait for their turn."""
        return self._proposal is not None or bool(self._queue)

    def advance(self, now_ms: int) -> None:
        """Go on with the proposal in progress while the work budget lasts, then with the
        requests that wait, in order, each proposed whole before the next is handled (the
        parts, applied in steps, are only read by the request proposing)."""
        self._now_ms = now_ms
        while True:
            proposal = self._proposal
            if proposal is not None:
                if not self.may_step() or not proposal.stepping.take(self.budget):
                    return
                self._proposal = None
                proposal.pending.answer = self._held(proposal.result, proposal.stepping.result, now_ms)
            if not self._queue:
                return
            self._start(self._queue.popleft(), now_ms)

    def _start(self, pending: _Pending, now_ms: int) -> None:
        if not self._refresh(now_ms):
            pending.answer = error_response(
                pending.api_key, pending.api_version, pending.body, ErrorCode.NOT_CONTROLLER
            )
            return
        key = pending.api_key
        if key in self._principal_handlers:
            decision = self._principal_handlers[key](
                pending.api_version, pending.body, now_ms, pending.principal
            )
        else:
            decision = self._handlers[key](pending.api_version, pending.body, now_ms)
        if not isinstance(decision, ControllerResult):
            pending.answer = decision
        elif decision.steps is None and not decision.records and self._last_proposed <= self.committed_offset:
            pending.answer = decision.answer()
        else:
            self._proposal = _Proposal(
                pending, decision, Stepping(self._decide_and_propose(decision, now_ms))
            )

    def _decide_and_propose(self, result: ControllerResult, now_ms: int) -> Steps[int | None]:
        """The rest of the decision (``ControllerResult.steps``), then its records proposed."""
        if result.steps is not None:
            yield from result.steps
        return (yield from self.propose_steps(result.records, now_ms))

    # -- requests --------------------------------------------------------------------------------

    def handle(
        self, api_key: int, api_version: int, body: Message, now_ms: int, principal: Principal | None = None
    ) -> Message | Waiting:
        """Answer one controller request (NOT_CONTROLLER unless this controller is active);
        ``principal``: the client's, as the broker's Envelope named it (an Envelope's request is
        answered inside an EnvelopeResponse)."""
        if api_key == ApiKey.ENVELOPE:
            # Imported on the first Envelope: its message modules are not loaded at start.
            from kafka_wire.broker.controller.envelope import serve_envelope

            assert isinstance(body, messages.EnvelopeRequest)
            return serve_envelope(
                body,
                self._principal_handlers.__contains__,
                lambda o: (
                    self.tokens.not_allowed(o.api_key, o.api_version, o.body, o.principal)
                    if o.token_authenticated
                    else self.handle(o.api_key, o.api_version, o.body, now_ms, o.principal)
                ),
            )
        if api_key in self._principal_handlers and principal is None:  # not from a broker
            return self.tokens.not_allowed(api_key, api_version, body, ("User", "ANONYMOUS"))
        if api_key not in self._handlers and api_key not in self._principal_handlers:
            raise ValueError(f"api {api_key} is not a controller API")
        pending = _Pending(self, api_key, api_version, body, now_ms)
        if principal is not None:
            pending.principal = principal
        self._queue.append(pending)
        self.advance(now_ms)
        return pending if pending.answer is None else pending.answer

    def local_broker(self, incarnation_id: uuid.UUID) -> None:
        """The incarnation of the broker in this controller's own process, when it is the
        quorum's only voter (a single node): its broker is then alive while the controller runs."""
        self.cluster.local_incarnation = incarnation_id

    # -- periodic work ---------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        if self.busy and self.may_step():
            return self._now_ms  # the proposal in progress goes on at once
        if self._active_epoch is None:
            return None
        deadlines = [
            d
            for d in (
                self.cluster.next_session_deadline_ms(),
                self._next_rebalance_ms,
                self._next_token_sweep_ms,
            )
            if d is not None
        ]
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> None:
        """Fence brokers whose sessions expired; rebalance leaders when it is time (once the
        proposal in progress and the requests waiting are done)."""
        self.advance(now_ms)
        if self.busy or not self._refresh(now_ms):
            return
        for broker in self.cluster.stale_brokers(now_ms):
            records: list[Message] = []
            self.cluster.fence(broker, records)
            self.propose(records, now_ms)
        if self._next_rebalance_ms is not None and (
            now_ms >= self._next_rebalance_ms or self.hooks.fire("controller.early_rebalance")
        ):
            self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
            self.propose(self.replication.preferred_elections(), now_ms)
        if self._next_token_sweep_ms is not None and now_ms >= self._next_token_sweep_ms:
            # Kafka's periodic sweep of the expired delegation tokens
            self._next_token_sweep_ms = now_ms + self.tokens.check_interval_ms
            self.propose(self.tokens.sweep(now_ms), now_ms)


#: The API keys :meth:`QuorumController.handle` answers.
CONTROLLER_APIS: Final = frozenset(
    {
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.ALTER_PARTITION,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.ENVELOPE,
    }
)


def error_response(api_key: int, api_version: int, body: Message, code: int) -> Message:
    """The answer to a controller request that failed whole with ``code`` (NOT_CONTROLLER)."""
    if api_key in ERROR_ANSWERS:  # the request's shape with a message, as Kafka's getErrorResponse
        return failure_answer(api_key, body, code)
    simple: dict[int, Callable[[], Message]] = {
        ApiKey.BROKER_REGISTRATION: lambda: messages.BrokerRegistrationResponse(
            error_code=code, broker_epoch=-1
        ),
        ApiKey.BROKER_HEARTBEAT: lambda: messages.BrokerHeartbeatResponse(error_code=code, is_fenced=True),
        ApiKey.ALTER_PARTITION: lambda: messages.AlterPartitionResponse(error_code=code),
        ApiKey.ALLOCATE_PRODUCER_IDS: lambda: messages.AllocateProducerIdsResponse(
            error_code=code, producer_id_start=-1, producer_id_len=0
        ),
    }
    return simple[api_key]()


__all__ = [
    "CONTROLLER_APIS",
    "ControllerConfig",
    "MetadataLog",
    "QuorumController",
    "error_response",
]
