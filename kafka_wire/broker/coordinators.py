"""The broker's coordinators, composed: the group coordinator (:mod:`.group_link`), the transaction
coordinator (:mod:`.txn_link`), and the loopback that serves this node's requests to itself.

``Broker`` hands every request of a coordinator API to :meth:`Coordinators.handle` and takes
their answers from every call that may produce some (``handle``, ``tick``, ``poll``).
:meth:`Coordinators.poll` runs after every engine call: it follows the leadership changes of
``__consumer_offsets`` and ``__transaction_state`` the node applied, reports the writes whose
replication settled, goes on with loads, tells the group coordinator of deleted topics and of the
transaction markers ``__consumer_offsets`` partitions took, lets the marker channel send, and
serves the loopback and settles the share-partitions' state replies (``share.persister``) until
nothing moves.

The loopback (:class:`~kafka_wire.broker.local_link.LocalLink` over :meth:`_serve`): requests the
broker's parts send to this very node (a transaction coordinator's markers for partitions it
leads, a leader's verification with a coordinator it is) are served in-process, as Kafka serves
them over a connection to itself: a coordinator API by the coordinators (their answer is kept
for the request under the :data:`LOOPBACK_CONN` pseudo connection), another API by its handler.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.apis import GROUP_APIS, HANDLERS, SHARE_ADMIN_APIS
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.group_link import GroupAnswer, GroupLink
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from kafka_wire.broker.local_link import LocalLink
from kafka_wire.broker.state import BrokerState, Context, Spliced, Waiting
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.txn.coordinator import TXN_API_KEYS
from kafka_wire.broker.txn.verifier import TxnVerifier
from kafka_wire.broker.txn_link import TxnLink
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey
from kafka_wire.protocol.events import Request

if TYPE_CHECKING:
    from kafka_wire.broker.group.share_groups import Partitions
    from kafka_wire.broker.share.admin import ShareAdmin

#: The connection id the loopback's requests are answered on (no real connection has it).
LOOPBACK_CONN: Final = -(2**62)
#: The most rounds one poll serves the loopback (a round's answers may send more).
_MAX_ROUNDS: Final = 16


def is_coordinator_request(request: Request) -> bool:
    """Whether the coordinators answer ``request`` (InitProducerId only with a transactional id:
    without one any broker hands out a producer id)."""
    key = request.api_key
    if key == ApiKey.INIT_PRODUCER_ID:
        body = request.body
        return isinstance(body, messages.InitProducerIdRequest) and body.transactional_id is not None
    return key in GROUP_APIS or key in TXN_API_KEYS or key in SHARE_ADMIN_APIS


class _LoopbackAnswer:
    """A coordinator's answer to a loopback request, once it comes."""

    def __init__(self, answers: dict[int, Message], correlation_id: int, now_ms: int) -> None:
        self._answers = answers
        self._correlation_id = correlation_id
        self.deadline_ms = now_ms + 30_000

    def poll(self, now_ms: int) -> Message | None:
        return self._answers.pop(self._correlation_id, None)


class Coordinators:
    """See the module docstring."""

    def __init__(
        self,
        config: BrokerConfig,
        state: BrokerState,
        effects: EffectSink,
        timers: TimerQueue,
        log: logging.Logger,
        *,
        member_id_factory: Callable[[str], str] | None,
        take_changes: Callable[[], list[tuple[str, int, bool]]],
    ) -> None:
        self._state = state
        self._effects = effects
        self._take_changes = take_changes
        self.group = GroupLink(config, state, effects, timers, log, member_id_factory=member_id_factory)
        producer_ids = state.producer_ids
        self.txn = TxnLink(
            config,
            state,
            effects,
            timers,
            log,
            new_producer_id=lambda now: None if producer_ids is None else producer_ids.next_id(now),
        )
        state.txn_verifier = TxnVerifier(state.cluster)
        #: The share groups' admin (``share.admin``), built on first use: a share-group offsets
        #: request, a DeleteGroups of share groups, or once the group coordinator is built (its
        #: heartbeats ask for share-partition initializations). Until then it would have no
        #: operation, no deadline and nothing to answer; ``_share_polled_ms`` is the time it
        #: would have been polled at last.
        self._share_admin: ShareAdmin | None = None
        self._share_polled_ms = 0
        self.loopback = LocalLink(self._serve)
        self._loopback_answers: dict[int, Message] = {}
        #: Answers for the broker's connections made while the loopback was served.
        self._stray: list[GroupAnswer] = []
        self._correlation = 0
        #: What the ACL checks put back into an answer (``security/coordinator_checks.py``), by
        #: connection and correlation id.
        self._patches: dict[tuple[int, int], Callable[[Message], Message]] = {}
        #: The share groups a DeleteGroups deletes and the share-partitions whose state their
        #: metadata lists, by connection and correlation id.
        self._share_deletes: dict[tuple[int, int], dict[str, Partitions]] = {}
        #: The time of the latest poll.
        self._now_ms = 0

    @property
    def share_admin(self) -> ShareAdmin:
        if self._share_admin is None:
            from kafka_wire.broker.share.admin import ShareAdmin

            self._share_admin = ShareAdmin(self._state, self.group, now_ms=self._share_polled_ms)
        return self._share_admin

    @property
    def waiting(self) -> int:
        """Requests held unanswered (counted against ``queued.max.requests``)."""
        return self.group.waiting + self.txn.waiting

    def handle(
        self, conn_id: int, request: Request, client_host: str, now_ms: int, principal: str = ""
    ) -> list[GroupAnswer]:
        # The ACL checks load with the first coordinator request, not at start.
        from kafka_wire.broker.security.coordinator_checks import Gate, gate

        # The loopback's requests are this node's own (Kafka's inter-broker principal: a super user).
        checked = (
            Gate(request.body)
            if conn_id == LOOPBACK_CONN
            else gate(self._state, request.api_key, request.api_version, request.body, principal, client_host)
        )
        if checked.answer is not None:
            return [(conn_id, request, checked.answer)]
        if checked.body is not request.body:
            assert checked.body is not None
            request = dataclasses.replace(request, body=checked.body)
        if checked.patch is not None:
            self._patches[conn_id, request.correlation_id] = checked.patch
        if request.api_key in GROUP_APIS:
            if isinstance(request.body, messages.DeleteGroupsRequest):
                coordinator = self.group.coordinator
                shares = {
                    g: coordinator.share_groups.state_partitions(g, initialized_only=False)
                    for g in request.body.groups_names
                    if g in coordinator.share_groups.groups
                }
                if shares:  # their share-partitions' state is deleted before the answer leaves
                    self._share_deletes[conn_id, request.correlation_id] = shares
            return self._route(self.group.handle(conn_id, request, client_host, now_ms))
        if request.api_key in SHARE_ADMIN_APIS:
            return self._route(self.share_admin.handle(conn_id, request, principal, client_host, now_ms))
        return self._route(self.txn.handle(conn_id, request, now_ms))

    def tick(self, now_ms: int) -> list[GroupAnswer]:
        return self._route(self.group.tick(now_ms) + self.txn.tick(now_ms))

    def poll(self, now_ms: int) -> list[GroupAnswer]:
        """Everything that moves after an engine call (see the module docstring)."""
        group, txn, state = self.group, self.txn, self._state
        answers: list[GroupAnswer] = []
        if state.deleted_topics:
            deleted, state.deleted_topics = state.deleted_topics, []
            answers += group.topics_deleted(deleted, now_ms)
        self._now_ms = now_ms
        share = state.share.store if state.share is not None else None
        for topic, partition, led in self._take_changes():
            if topic == SHARE_GROUP_STATE_TOPIC:
                if share is not None:
                    share.partition_led(partition) if led else share.partition_lost(partition)
            elif topic == TRANSACTION_STATE_TOPIC:
                answers += (
                    txn.partition_led(partition, now_ms) if led else txn.partition_lost(partition, now_ms)
                )
            else:
                answers += (
                    group.partition_led(partition, now_ms) if led else group.partition_lost(partition, now_ms)
                )
        for _ in range(_MAX_ROUNDS):
            if state.txn_offsets_ended:
                ended, state.txn_offsets_ended = state.txn_offsets_ended, []
                answers += group.transactions_ended(ended, now_ms)
            answers += group.poll(now_ms) + txn.poll(now_ms)
            pumped = self.loopback.pump(now_ms)
            # the share-partitions' state replies (those of the loopback just given among them)
            shared = state.share is not None and state.share.poll(now_ms)
            if self._share_admin is not None or group.built:
                answers += self.share_admin.poll(now_ms)
            else:
                self._share_polled_ms = max(self._share_polled_ms, now_ms)
            if not pumped and not shared and not state.txn_offsets_ended:
                break
        if share is not None:
            share.poll()  # loads of __share_group_state partitions led here
        answers, self._stray = self._stray + answers, []
        return self._route(answers)

    def next_deadline_ms(self) -> int | None:
        if self._stray:
            return 0
        share = self._state.share.store if self._state.share is not None else None
        if share is not None and share.loading:
            return self._now_ms  # a load goes on at the next call
        deadlines = [
            d
            for d in (
                self.group.next_deadline_ms(),
                self.txn.next_deadline_ms(),
                self.loopback.next_deadline_ms(),
                self._state.share.next_persist_deadline_ms() if self._state.share is not None else None,
                self._share_admin.next_deadline_ms() if self._share_admin is not None else None,
            )
            if d is not None
        ]
        return min(deadlines) if deadlines else None

    def forget(self, conn_id: int) -> None:
        for key in [k for k in self._patches if k[0] == conn_id]:
            del self._patches[key]
        for key in [k for k in self._share_deletes if k[0] == conn_id]:
            del self._share_deletes[key]
        self.group.forget(conn_id)
        self.txn.forget(conn_id)
        if self._share_admin is not None:
            self._share_admin.forget(conn_id)

    def clear(self) -> None:
        self.group.clear()
        self.txn.clear()
        self.loopback.close()

    # -- the loopback ------------------------------------------------------------------------------

    def _serve(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        self._correlation += 1
        header = messages.RequestHeader(
            request_api_key=api_key,
            request_api_version=api_version,
            correlation_id=self._correlation,
            client_id="kafka-wire-loopback",
        )
        request = Request(header=header, body=body)
        if is_coordinator_request(request):
            self._stray += self.handle(LOOPBACK_CONN, request, "", now_ms)
            return _LoopbackAnswer(self._loopback_answers, self._correlation, now_ms)
        ctx = Context(
            state=self._state,
            effects=self._effects,
            conn_id=LOOPBACK_CONN,
            request=request,
            now_ms=now_ms,
            internal=True,
        )
        result = HANDLERS[api_key](ctx, body)
        if isinstance(result, Spliced):
            return result.body
        answer: Message | Waiting = result
        return answer

    def _route(self, answers: list[GroupAnswer]) -> list[GroupAnswer]:
        """Keep the loopback's answers; the rest are for the broker's connections (a DeleteGroups
        that deleted share groups once their state is deleted too)."""
        out = []
        if self._share_deletes:
            held = []
            for answer in answers:
                shares = self._share_deletes.pop((answer[0], answer[1].correlation_id), None)
                held += (
                    [answer]
                    if shares is None
                    else self.share_admin.hold_deleted_groups(*answer, shares, self._now_ms)
                )
            answers = held
        for answer in answers:
            if answer[0] == LOOPBACK_CONN:
                self._loopback_answers[answer[1].correlation_id] = answer[2]
            else:
                patch = (
                    self._patches.pop((answer[0], answer[1].correlation_id), None) if self._patches else None
                )
                out.append(answer if patch is None else (answer[0], answer[1], patch(answer[2])))
        return out
