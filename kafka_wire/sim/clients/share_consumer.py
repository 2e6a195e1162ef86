"""A simulated member of a KIP-932 share group.

It sets the group's configs (IncrementalAlterConfigs, resource type GROUP), waits
:data:`CONFIG_SETTLE_MS`, then heartbeats (ShareGroupHeartbeat: epoch 0 to join, its member epoch
after, -1 to leave); UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH rejoin at epoch 0, coordinator
errors find the coordinator again; a restart leaves and joins as a new member id.

Records come from one share session per leader (ShareFetch: epoch 0 opens it with the assigned
partitions that node leads, then 1, 2, ...; -1 closes it when the member leaves); a session error
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, ...) or a lost connection opens a new one.
Each acquired record is decided at once, from the client's generator: accept (most), release,
reject, or "slow" (never acknowledged: its lock runs out); the acknowledgement goes with the next
ShareFetch to its leader or, one time in three, alone in a ShareAcknowledge.

History: ``assign`` on each new assignment (without the group: see ``_on_beat``); ``acquire``
per acquired range (delivery count, node, member, the ShareFetch's send time, the lock duration
answered: the lock's deadline is at most the answer's time plus it); ``ack`` invoke / ok / fail /
info per partition's acknowledgements of one type; ``session`` when a session with a node opens,
closes or is lost (each may release what the member holds there). See ``sim/checker/shares.py`` for what the checker makes of them.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    IncrementalAlterConfigsResponse,
    ShareAcknowledgeResponse,
    ShareFetchResponse,
    ShareFetchResponseAcquiredRecords,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafka_wire.sim.clients.base import REQUEST_TIMEOUT_MS, RETRY_BACKOFF_MS, Address, ClientBase
from kafka_wire.sim.clients.producer import error_name
from kafka_wire.sim.clients.share_acks import SLOW, AckBook
from kafka_wire.sim.clients.share_requests import (
    ACCEPT,
    REJECT,
    RELEASE,
    SHARE_FETCH_MAX_WAIT_MS,
    Acks,
    Key,
    group_config_request,
    lost_fetch,
    record_values,
    share_acknowledge_request,
    share_fetch_request,
)
from kafka_wire.sim.history import Op, OpKind, OpType, share_unsettled

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

#: How long a member waits after its group configs were set before it joins.
CONFIG_SETTLE_MS: Final = 1_000
HEARTBEAT_INTERVAL_MS: Final = 1_000
_COORDINATOR_ERRORS: Final = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)
_REJOIN: Final = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
#: Errors of a whole ShareFetch / ShareAcknowledge that mean nothing in it was applied.
_SESSION_ERRORS: Final = frozenset(
    {
        ErrorCode.SHARE_SESSION_NOT_FOUND,
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        ErrorCode.SHARE_SESSION_LIMIT_REACHED,
    }
)

#: A partition's error after which records may have been acquired (the write to the share
#: coordinator timed out: it may land later).
_UNKNOWN_OUTCOME: Final = frozenset({ErrorCode.REQUEST_TIMED_OUT})


@dataclass(slots=True)
class _Session:
    #: The epoch the next request carries (0: open a new session).
    epoch: int = 0
    in_flight: bool = False
    partitions: set[Key] = field(default_factory=set)


class ShareConsumer(ClientBase):
    """One member of share group ``group``; see the module docstring."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        topics: list[str],
        group: str,
        *,
        group_configs: dict[str, str],
        restart_every_ms: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(name, history, rng, bootstrap, topics)
        self.group = group
        self.group_configs = dict(group_configs)
        self.restart_every_ms = restart_every_ms
        self.incarnation = 1
        self.member_id = f"{name}-1"
        self.epoch = 0
        self.leaving = False
        self.configured_at_ms: int | None = None
        self.coordinator: Address | None = None
        self.group_in_flight = False
        self.group_retry_at_ms = 0
        self.heartbeat_at_ms = 0
        self.restart_at_ms: int | None = None
        self.assignment: set[Key] = set()
        #: The last assignment the coordinator sent, by topic id (a heartbeat answer names it only
        #: when it changes): the partitions of topics whose names are not known yet are taken once
        #: metadata names them, as Kafka's consumers resolve an assignment's topic ids.
        self.assigned_ids: list[tuple[uuid.UUID, list[int]]] = []
        #: The topic ids of :attr:`assigned_ids` metadata has not named yet.
        self.unresolved: set[uuid.UUID] = set()
        self.sessions: dict[Address, _Session] = {}
        self.retry_at_ms: dict[Address, int] = {}
        #: What the member holds and the acknowledgements it sent.
        self.acks = AckBook(name, group, self.record, self._node_of)

    # -- the SimClient surface ---------------------------------------------------------------------

    def idle(self) -> bool:
        """Quiescing, holding nothing, and every acks=all write to its topics settled."""
        if not self.quiescing or self.acks.busy:
            return False
        limit = int(self.group_configs.get("share.delivery.count.limit", "5"))
        return not share_unsettled(self.history, limit, frozenset(self.topics))[0]

    # -- the loop ----------------------------------------------------------------------------------

    def pump(self, now_ms: int) -> None:
        super().pump(now_ms)
        if self.unresolved and not self.unresolved.isdisjoint(self.topic_ids.values()):
            self._resolve(now_ms)
        self._group(now_ms)
        if self.epoch > 0 and not self.leaving:
            self._fetch_all(now_ms)

    def _group(self, now_ms: int) -> None:
        if self.group_in_flight:
            return
        if now_ms < self.group_retry_at_ms:
            self.wake_at(self.group_retry_at_ms)
            return
        if self.configured_at_ms is None:
            self._configure()
            return
        if now_ms < self.configured_at_ms + CONFIG_SETTLE_MS:
            self.wake_at(self.configured_at_ms + CONFIG_SETTLE_MS)
            return
        if self.coordinator is None:
            self._send_group(
                self.any_address(), FindCoordinatorRequest(key=self.group, key_type=0), self._on_coordinator
            )
            return
        if self.restart_every_ms is not None and not self.quiescing and self.epoch > 0:
            if self.restart_at_ms is None:
                self.restart_at_ms = now_ms + self.rng.randint(*self.restart_every_ms)
            if now_ms >= self.restart_at_ms:
                self.leaving = True
        if self.leaving:
            self._leave(now_ms)
            return
        if self.epoch == 0 or now_ms >= self.heartbeat_at_ms:
            self._heartbeat()
        else:
            self.wake_at(self.heartbeat_at_ms)

    def _send_group(
        self, address: Address, request: Message, handler: Callable[[Message, int], None]
    ) -> None:
        self.group_in_flight = True

        def answered(body: Message | None, now_ms: int) -> None:
            self.group_in_flight = False
            if body is None:
                self.coordinator = None
                self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS
                return
            handler(body, now_ms)

        self.request(address, request, answered)

    def _configure(self) -> None:
        self._send_group(
            self.any_address(), group_config_request(self.group, self.group_configs), self._on_configured
        )

    def _on_configured(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, IncrementalAlterConfigsResponse)
        if all(r.error_code == ErrorCode.NONE for r in body.responses):
            self.configured_at_ms = now_ms
        else:
            self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS

    def _on_coordinator(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, FindCoordinatorResponse)
        if body.error_code != ErrorCode.NONE or body.node_id < 0:
            self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self.coordinator = (body.host, body.port)

    def _heartbeat(self) -> None:
        request = ShareGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            rack_id=None,
            subscribed_topic_names=list(self.topics) if self.epoch == 0 else None,
        )
        assert self.coordinator is not None
        self._send_group(self.coordinator, request, self._on_beat)

    def _on_beat(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, ShareGroupHeartbeatResponse)
        if body.error_code != ErrorCode.NONE:
            if body.error_code in _COORDINATOR_ERRORS:
                self.coordinator = None
            elif body.error_code in _REJOIN:
                self.epoch = 0
                self._drop_assignment()
            self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self.epoch = body.member_epoch
        self.heartbeat_at_ms = now_ms + min(body.heartbeat_interval_ms, HEARTBEAT_INTERVAL_MS)
        if body.assignment is not None:
            self.assigned_ids = [
                (tp.topic_id, list(tp.partitions)) for tp in body.assignment.topic_partitions
            ]
            self._resolve(now_ms)

    def _resolve(self, now_ms: int) -> None:
        """Take the partitions of :attr:`assigned_ids` whose topics have known names (metadata
        is asked for the others) and note the assignment."""
        names = {topic_id: name for name, topic_id in self.topic_ids.items()}
        self.assignment = {
            (names[i], p) for i, partitions in self.assigned_ids if i in names for p in partitions
        }
        self.unresolved = {i for i, _ in self.assigned_ids if i not in names}
        if self.unresolved:
            self.want_metadata()
        self.record(
            Op(
                now_ms,
                self.name,
                OpType.OK,
                OpKind.ASSIGN,
                value=",".join(f"{t}:{p}" for t, p in sorted(self.assignment)),
                # no group: a share group's partition has several owners at once, so the
                # group checks of classic and consumer groups do not apply
                generation=self.epoch,
                member=self.member_id,
            )
        )

    def _drop_assignment(self) -> None:
        self.assignment = set()
        self.assigned_ids = []
        self.unresolved = set()

    def _leave(self, now_ms: int) -> None:
        """Close every share session (epoch -1), then leave the group (epoch -1), then join again
        as a new member."""
        open_sessions = [a for a, s in self.sessions.items() if s.epoch > 0]
        if any(s.in_flight for s in self.sessions.values()):
            return
        if open_sessions:
            for address in open_sessions:
                self._share_fetch(address, self.sessions[address], now_ms, closing=True)
            return
        request = ShareGroupHeartbeatRequest(
            group_id=self.group, member_id=self.member_id, member_epoch=-1, rack_id=None
        )
        assert self.coordinator is not None

        def left(body: Message, now_ms: int) -> None:
            assert isinstance(body, ShareGroupHeartbeatResponse)
            if body.error_code in _COORDINATOR_ERRORS:
                self.coordinator = None
                return
            self.leaving = False
            self.restart_at_ms = None
            self.incarnation += 1
            self.member_id = f"{self.name}-{self.incarnation}"
            self.epoch = 0
            self._drop_assignment()
            self.sessions = {}
            self.acks.drop_all()

        self._send_group(self.coordinator, request, left)

    # -- share fetching ----------------------------------------------------------------------------

    def _fetch_all(self, now_ms: int) -> None:
        wanted: dict[Address, set[Key]] = {}
        for key in sorted(self.assignment):
            address = self.leader_address(*key)
            if address is None:
                self.want_metadata()
                continue
            wanted.setdefault(address, set()).add(key)
        for address in sorted(set(wanted) | set(self.sessions)):
            session = self.sessions.setdefault(address, _Session())
            if session.in_flight:
                continue
            retry = self.retry_at_ms.get(address, 0)
            if now_ms < retry:
                self.wake_at(retry)
                continue
            keys = wanted.get(address, set())
            if not keys and not session.partitions and not self._due_acks(address, now_ms):
                continue
            if session.epoch > 0 and self.rng.random() < 1 / 3:
                acks = self._due_acks(address, now_ms)
                if acks:
                    self._acknowledge(address, session, acks, now_ms)
                    continue
            self._share_fetch(address, session, now_ms, keys=keys)
        due_ms = self.acks.next_due_ms()
        if due_ms is not None:
            self.wake_at(max(due_ms, now_ms + 1))

    def _due_acks(self, address: Address, now_ms: int) -> Acks:
        return self.acks.due(address, now_ms, self.leader_address, self.quiescing)

    def _node_of(self, address: Address) -> int:
        return next((n for n, a in self.brokers.items() if a == address), -1)

    def _session_op(self, outcome: OpType, what: str, address: Address, now_ms: int) -> None:
        self.record(
            Op(
                now_ms,
                self.name,
                outcome,
                OpKind.SESSION,
                value=what,
                group=self.group,
                member=self.member_id,
                node=self._node_of(address),
            )
        )

    def _share_fetch(
        self,
        address: Address,
        session: _Session,
        now_ms: int,
        *,
        keys: set[Key] | None = None,
        closing: bool = False,
    ) -> None:
        epoch = -1 if closing else session.epoch
        acks = {} if epoch == 0 else self._due_acks(address, now_ms)
        wanted = set(session.partitions) if keys is None else keys
        if epoch == 0:
            self._session_op(OpType.INVOKE, "open", address, now_ms)
        elif closing:
            self._session_op(OpType.INVOKE, "close", address, now_ms)
        forgotten = session.partitions - wanted - set(acks) if epoch > 0 else set()
        request = share_fetch_request(
            self.group, self.member_id, epoch, self.topic_ids, wanted, acks, forgotten
        )
        ops = self.acks.take(acks, address, self.member_id, now_ms)
        session.in_flight = True
        if epoch >= 0:
            session.partitions = (session.partitions | wanted) - forgotten
        sent_ms = now_ms
        member = self.member_id

        def answered(body: Message | None, now_ms: int) -> None:
            if not isinstance(body, ShareFetchResponse):  # it may have acquired records, unseen
                for op in lost_fetch(self.name, member, self._node_of(address), wanted, sent_ms, now_ms):
                    self.record(op)
            self._on_share_fetch(address, session, epoch, ops, sent_ms, member, body, now_ms)

        self.request(address, request, answered, timeout_ms=REQUEST_TIMEOUT_MS + SHARE_FETCH_MAX_WAIT_MS)

    def connection_lost(self, address: Address, now_ms: int) -> None:
        """A share session ends with its connection, idle ones too: the broker releases what the
        member held there, so the loss is recorded (a request in flight recorded it already)."""
        session = self.sessions.get(address)
        if session is not None and not session.in_flight and (session.epoch > 0 or session.partitions):
            self._lost(address, session, now_ms)

    def _lost(self, address: Address, session: _Session, now_ms: int) -> None:
        self._session_op(OpType.INFO, "lost", address, now_ms)
        session.epoch = 0
        session.partitions = set()
        self.want_metadata()
        self.retry_at_ms[address] = now_ms + RETRY_BACKOFF_MS

    def _on_share_fetch(
        self,
        address: Address,
        session: _Session,
        epoch: int,
        ops: list[Op],
        sent_ms: int,
        member: str,
        body: Message | None,
        now_ms: int,
    ) -> None:
        session.in_flight = False
        if not isinstance(body, ShareFetchResponse):
            self.acks.settle(ops, OpType.INFO, now_ms, "no answer")
            self._lost(address, session, now_ms)
            return
        if body.error_code != ErrorCode.NONE:
            error = error_name(body.error_code)
            self.acks.settle(
                ops, OpType.FAIL if body.error_code in _SESSION_ERRORS else OpType.INFO, now_ms, error
            )
            session.epoch = 0
            session.partitions = set()
            self.retry_at_ms[address] = now_ms + RETRY_BACKOFF_MS
            return
        session.epoch = 0 if epoch == -1 else epoch + 1
        if epoch == -1:
            session.partitions = set()
        names = {topic_id: name for name, topic_id in self.topic_ids.items()}
        outcomes: dict[Key, int] = {}
        refresh = False
        for topic in body.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                key = (name, part.partition_index)
                outcomes[key] = part.acknowledge_error_code
                if part.error_code != ErrorCode.NONE:
                    refresh = True
                    if part.error_code in _UNKNOWN_OUTCOME:  # the acquisition's write timed out
                        node = self._node_of(address)
                        for op in lost_fetch(self.name, member, node, {key}, sent_ms, now_ms):
                            self.record(op)
                    continue
                self._acquired(
                    key,
                    part.records,
                    part.acquired_records,
                    body.acquisition_lock_timeout_ms,
                    address,
                    sent_ms,
                    member,
                    epoch,
                    now_ms,
                )
        self.acks.settle_by_partition(ops, outcomes, now_ms)
        if refresh:
            self.want_metadata()
            self.retry_at_ms[address] = now_ms + RETRY_BACKOFF_MS

    def _acquired(
        self,
        key: Key,
        raw: bytes | memoryview | None,
        ranges: list[ShareFetchResponseAcquiredRecords],
        lock_ms: int,
        address: Address,
        sent_ms: int,
        member: str,
        epoch: int,
        now_ms: int,
    ) -> None:
        if not ranges:
            return
        values = record_values(raw)
        node = self._node_of(address)
        for got in ranges:
            records = tuple((o, values.get(o, "")) for o in range(got.first_offset, got.last_offset + 1))
            self.record(
                Op(
                    now_ms,
                    self.name,
                    OpType.OK,
                    OpKind.ACQUIRE,
                    topic=key[0],
                    partition=key[1],
                    records=records,
                    group=self.group,
                    member=member,
                    node=node,
                    delivery_count=got.delivery_count,
                    lock_ms=lock_ms,
                    invoked_ms=sent_ms,
                )
            )
            if epoch == -1 or member != self.member_id:
                continue  # acquired by a closing session: released with it
            for offset, value in records:
                decision = self._decide()
                due = now_ms + (lock_ms if decision == SLOW else self.rng.randint(0, 300))
                self.acks.hold(key, offset, value, decision, due)

    def _decide(self) -> int:
        roll = self.rng.random()
        if self.quiescing:
            return ACCEPT if roll < 0.9 else RELEASE
        if roll < 0.7:
            return ACCEPT
        if roll < 0.8:
            return RELEASE
        if roll < 0.87:
            return REJECT
        return SLOW

    # -- standalone acknowledgements ---------------------------------------------------------------

    def _acknowledge(self, address: Address, session: _Session, acks: Acks, now_ms: int) -> None:
        request = share_acknowledge_request(self.group, self.member_id, session.epoch, self.topic_ids, acks)
        ops = self.acks.take(acks, address, self.member_id, now_ms)
        session.in_flight = True
        epoch = session.epoch

        def answered(body: Message | None, now_ms: int) -> None:
            session.in_flight = False
            if not isinstance(body, ShareAcknowledgeResponse):
                self.acks.settle(ops, OpType.INFO, now_ms, "no answer")
                self._lost(address, session, now_ms)
                return
            if body.error_code != ErrorCode.NONE:
                failed = body.error_code in _SESSION_ERRORS
                self.acks.settle(
                    ops, OpType.FAIL if failed else OpType.INFO, now_ms, error_name(body.error_code)
                )
                session.epoch = 0
                session.partitions = set()
                self.retry_at_ms[address] = now_ms + RETRY_BACKOFF_MS
                return
            session.epoch = epoch + 1
            names = {topic_id: name for name, topic_id in self.topic_ids.items()}
            codes = {
                (names.get(t.topic_id, ""), p.partition_index): p.error_code
                for t in body.responses
                for p in t.partitions
            }
            self.acks.settle_by_partition(ops, codes, now_ms)

        self.request(address, request, answered)
