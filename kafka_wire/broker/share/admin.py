"""The group coordinator's share-partition state operations (Kafka's ``GroupCoordinatorService``
share paths and its persister): AlterShareGroupOffsets, DeleteShareGroupOffsets,
DescribeShareGroupOffsets (``describe.py``), the state deletion of a DeleteGroups, and the
initialization of the share-partitions a share group's heartbeat marked initializing. Each asks
the share-partitions' share coordinators (and, for a lag, the partitions' leaders), and keeps the
group's state metadata (key 15 of ``__consumer_offsets``, ``group/share_groups.py``) as Kafka does.

Behaviour, as Kafka 4.4 answers:

* an empty group id is INVALID_GROUP_ID; a group not served here NOT_COORDINATOR (or
  COORDINATOR_LOAD_IN_PROGRESS); a group id held by a classic or consumer group GROUP_ID_NOT_FOUND;
  a share group with members NON_EMPTY_GROUP ("The group is not empty."), all for the whole
  request. Alter makes a group that does not exist (its state metadata); Delete answers it
  GROUP_ID_NOT_FOUND ("Group X not found.");
* Alter: per partition, UNKNOWN_TOPIC_OR_PARTITION for a topic (answered with the zero topic id)
  or a partition the metadata does not have; the others are marked initializing, and each
  share-partition's state is initialized at the start offset asked (Kafka takes any value,
  negative ones too) with a state epoch one above the one kept (ReadShareGroupStateSummary, then
  InitializeShareGroupState), which fences the partition leader's writes of the older state: it
  reads the new state before it acquires again. Those initialized are marked initialized;
* Delete: per topic, UNKNOWN_TOPIC_OR_PARTITION for a topic the metadata does not have, or
  ("There is no offset information to delete.", zero topic id) one whose state the group neither
  initialized nor is deleting; else the topic moves to deleting and its initialized
  share-partitions' state is deleted (all its partitions' when it was being deleted already),
  DeleteShareGroupState, the topic's error the first failed partition's; the topics deleted leave
  deleting. The answer lists the topics deleted first, then the others;
* DeleteGroups of a share group (:meth:`ShareAdmin.hold_deleted_groups`): once the group
  coordinator deleted it, the state of the share-partitions its metadata lists (initialized,
  initializing, and every partition of a topic being deleted) is deleted too, and the answer
  leaves then (a deletion that failed is the group's error);
* a heartbeat's initialization: each share-partition marked initializing is initialized
  (InitializeShareGroupState) at the group epoch with start offset -1 (its leader starts it by
  ``share.auto.offset.reset``; a state a leader started already is kept: ``coordinator.py``).
  Those done are marked initialized, those that failed no longer initializing (the next
  heartbeat asks again);
* ACLs (with an authorizer), as Kafka's ``KafkaApis`` checks them: Alter needs READ on the group,
  Delete DELETE on it (GROUP_AUTHORIZATION_FAILED for the whole request); both READ on each topic
  (TOPIC_AUTHORIZATION_FAILED: Alter's partitions, Delete's topic).

The RPCs (``admin_rpcs.py``) go over the node's links (the loopback for this node's own
partitions); NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
UNKNOWN_TOPIC_OR_PARTITION and no answer are retried after ``persister.RETRY_BACKOFF_MS``; what is
not done within :data:`ADMIN_TIMEOUT_MS` answers REQUEST_TIMED_OUT. Answers are handed out by
:meth:`ShareAdmin.poll` (the coordinators' poll, after every engine call).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed_for
from kafka_wire.broker.share import describe
from kafka_wire.broker.share.admin_rpcs import (
    LEADER_RETRIABLE,
    Call,
    Phase,
    latest_result,
    request_for,
    state_result,
)
from kafka_wire.broker.share.persister import REQUEST_TIMEOUT_MS, RETRIABLE, RETRY_BACKOFF_MS
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Request
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.group.share_groups import Partitions
    from kafka_wire.broker.group_link import GroupLink
    from kafka_wire.broker.state import BrokerState

#: How long an operation may wait for the share coordinators.
ADMIN_TIMEOUT_MS: Final = 30_000
#: Kafka's message for a topic DeleteShareGroupOffsets finds no state of.
NO_OFFSETS: Final = "There is no offset information to delete."

#: Kafka's messages for the errors these answers carry.
_MESSAGES: Final[dict[int, str]] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.INVALID_GROUP_ID: "The group id is invalid.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
}

#: (connection id, the request, the answer), as the coordinators hand answers out.
Answer = tuple[int, Request, Message]


def message_of(code: int) -> str | None:
    return None if not code else _MESSAGES.get(code)


@dataclass(slots=True)
class Op:
    """One operation: its calls (each with what to do with its outcome), the answer they fill
    (None: the coordinator's own, a heartbeat's initialization), and what runs once they are all
    done, before the answer leaves (its answers: the group coordinator's writes may answer others)."""

    conn_id: int
    request: Request | None
    answer: Message | None
    deadline_ms: int
    calls: list[tuple[Call, Callable[[Call], None]]] = field(default_factory=list)
    done: Callable[[int], list[Answer]] | None = None


class ShareAdmin:
    """See the module docstring."""

    def __init__(self, state: BrokerState, groups: GroupLink, *, now_ms: int = 0) -> None:
        self._state = state
        self._groups = groups
        self._ops: list[Op] = []
        self._replies: list[tuple[Call, int, Message | None]] = []
        #: The latest time it was given (``now_ms``: the latest poll's before it was built).
        self._now_ms = now_ms

    # -- requests ----------------------------------------------------------------------------------

    def handle(self, conn_id: int, request: Request, principal: str, host: str, now_ms: int) -> list[Answer]:
        self._now_ms = max(self._now_ms, now_ms)
        body = request.body
        if isinstance(body, messages.DescribeShareGroupOffsetsRequest):
            op = Op(conn_id, request, None, now_ms + ADMIN_TIMEOUT_MS)
            coordinator = self._groups.coordinator
            describe.build(
                op,
                body,
                self._state,
                coordinator,
                lambda o, t, n: self._allowed(principal, host, o, t, n),
                message_of,
            )
            return self._start(op, now_ms)
        assert isinstance(
            body, messages.AlterShareGroupOffsetsRequest | messages.DeleteShareGroupOffsetsRequest
        )
        alter = isinstance(body, messages.AlterShareGroupOffsetsRequest)
        answer = (
            messages.AlterShareGroupOffsetsResponse() if alter else messages.DeleteShareGroupOffsetsResponse()
        )
        error, message = self._refusal(body, principal, host)
        if error:
            answer.error_code, answer.error_message = error, message
            return [(conn_id, request, answer)]
        op = Op(conn_id, request, answer, now_ms + ADMIN_TIMEOUT_MS)
        if isinstance(body, messages.AlterShareGroupOffsetsRequest):
            answers = self._alter(op, body, principal, host, now_ms)
        else:
            answers = self._delete(op, body, principal, host, now_ms)
        return answers + self._start(op, now_ms)

    def _start(self, op: Op, now_ms: int) -> list[Answer]:
        self._ops.append(op)
        self._send_due(now_ms)
        return self._finished(now_ms)

    def _allowed(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return allowed_for(self._state, principal, host, op, rtype, name)

    def _refusal(
        self,
        body: messages.AlterShareGroupOffsetsRequest | messages.DeleteShareGroupOffsetsRequest,
        principal: str,
        host: str,
    ) -> tuple[int, str | None]:
        group_id = body.group_id
        alter = isinstance(body, messages.AlterShareGroupOffsetsRequest)
        needed = AclOperation.READ if alter else AclOperation.DELETE
        error: int = ErrorCode.NONE
        if not self._allowed(principal, host, needed, ResourceType.GROUP, group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif not group_id:
            error = ErrorCode.INVALID_GROUP_ID
        else:
            coordinator = self._groups.coordinator
            refused = coordinator.refusal(group_id)
            share = coordinator.share_group_view(group_id) if refused is None else None
            if refused is not None:
                error = refused
            elif share is None and coordinator.group(group_id) is not None:
                return (
                    ErrorCode.GROUP_ID_NOT_FOUND,
                    None if alter else f"Group {group_id} is not a share group.",
                )
            elif share is None and not alter:
                return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
            elif share is not None and share.members:
                error = ErrorCode.NON_EMPTY_GROUP
        return error, message_of(error)

    def _alter(
        self, op: Op, body: messages.AlterShareGroupOffsetsRequest, principal: str, host: str, now_ms: int
    ) -> list[Answer]:
        answer = op.answer
        assert isinstance(answer, messages.AlterShareGroupOffsetsResponse)
        wanted: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        for topic in body.topics:
            info = self._state.topic_named(topic.topic_name)
            answered = messages.AlterShareGroupOffsetsResponseTopic(
                topic_name=topic.topic_name, topic_id=ZERO_UUID if info is None else info.topic_id
            )
            answer.responses.append(answered)
            allowed = self._allowed(principal, host, AclOperation.READ, ResourceType.TOPIC, topic.topic_name)
            for p in topic.partitions:
                part = messages.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index)
                answered.partitions.append(part)
                if not allowed:
                    error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif info is None or not 0 <= p.partition_index < info.partitions:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    key = ShareStateKey(body.group_id, info.topic_id, p.partition_index)
                    call = Call(key, Phase.SUMMARY, start_offset=p.start_offset)
                    op.calls.append((call, _setter(part)))
                    name, partitions = wanted.get(info.topic_id, (info.name, frozenset[int]()))
                    wanted[info.topic_id] = (name, partitions | {p.partition_index})
                    continue
                part.error_code, part.error_message = error, message_of(error)
        group_id = body.group_id
        _, answers = self._groups.share_write(lambda share: share.begin_alter(group_id, wanted), now_ms)
        op.done = lambda at_ms: self._settle_state(group_id, op.calls, at_ms, initializing=False)
        return answers

    def _delete(
        self, op: Op, body: messages.DeleteShareGroupOffsetsRequest, principal: str, host: str, now_ms: int
    ) -> list[Answer]:
        answer = op.answer
        assert isinstance(answer, messages.DeleteShareGroupOffsetsResponse)
        asked: dict[uuid.UUID, tuple[str, int]] = {}
        found: list[tuple[messages.DeleteShareGroupOffsetsResponseTopic, uuid.UUID]] = []
        for topic in body.topics:
            info = self._state.topic_named(topic.topic_name)
            answered = messages.DeleteShareGroupOffsetsResponseTopic(
                topic_name=topic.topic_name, topic_id=ZERO_UUID
            )
            answer.responses.append(answered)
            if not self._allowed(principal, host, AclOperation.READ, ResourceType.TOPIC, topic.topic_name):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                asked[info.topic_id] = (info.name, info.partitions)
                found.append((answered, info.topic_id))
                continue
            answered.error_code, answered.error_message = error, message_of(error)
        group_id = body.group_id
        parts, answers = self._groups.share_write(
            lambda share: share.begin_offsets_delete(group_id, asked), now_ms
        )
        for answered, topic_id in found:
            if topic_id not in parts:
                answered.error_code, answered.error_message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSETS
                continue
            answered.topic_id = topic_id
            setter = _setter(answered)
            for index in sorted(parts[topic_id]):
                op.calls.append((Call(ShareStateKey(group_id, topic_id, index), Phase.DELETE), setter))

        def done(at_ms: int) -> list[Answer]:
            failed = {c.key.topic_id for c, _ in op.calls if c.error}
            deleted = {c.key.topic_id for c, _ in op.calls} - failed
            answer.responses.sort(key=lambda t: t.error_code != ErrorCode.NONE or t.topic_id not in deleted)
            return self._groups.share_write(lambda share: share.offsets_deleted(group_id, deleted), at_ms)[1]

        op.done = done
        return answers

    def hold_deleted_groups(
        self,
        conn_id: int,
        request: Request,
        answer: Message,
        share_groups: dict[str, Partitions],
        now_ms: int,
    ) -> list[Answer]:
        """A DeleteGroups answer: held until the state of the share groups it deleted is deleted
        too (``share_groups``: the share-partitions their metadata listed; see the module
        docstring)."""
        self._now_ms = max(self._now_ms, now_ms)
        if not isinstance(answer, messages.DeleteGroupsResponse):
            return [(conn_id, request, answer)]
        op = Op(conn_id, request, answer, now_ms + ADMIN_TIMEOUT_MS)
        for result in answer.results:
            if result.error_code or result.group_id not in share_groups:
                continue
            setter = _setter(result)
            for topic_id, partitions in sorted(share_groups[result.group_id].items()):
                for index in sorted(partitions):
                    key = ShareStateKey(result.group_id, topic_id, index)
                    op.calls.append((Call(key, Phase.DELETE), setter))
        if not op.calls:
            return [(conn_id, request, answer)]
        return self._start(op, now_ms)

    # -- a heartbeat's initializations ---------------------------------------------------------

    def _initialize(self, now_ms: int) -> None:
        """Start the initializations whose marking the group coordinator stored."""
        for group_id, group_epoch, parts in self._groups.take_share_initializations():
            op = Op(-1, None, None, now_ms + ADMIN_TIMEOUT_MS)
            for topic_id, partitions in sorted(parts.items()):
                for index in sorted(partitions):
                    call = Call(
                        ShareStateKey(group_id, topic_id, index), Phase.INITIALIZE, state_epoch=group_epoch
                    )
                    op.calls.append((call, _ignore))
            op.done = lambda at_ms, op=op, group_id=group_id: self._settle_state(
                group_id, op.calls, at_ms, initializing=True
            )
            self._ops.append(op)

    def _settle_state(
        self,
        group_id: str,
        calls: list[tuple[Call, Callable[[Call], None]]],
        now_ms: int,
        *,
        initializing: bool,
    ) -> list[Answer]:
        """Mark the share-partitions initialized whose calls succeeded; with ``initializing`` (a
        heartbeat's) those that failed are no longer initializing (an Alter's stay: Kafka keeps
        them)."""
        done: dict[uuid.UUID, frozenset[int]] = {}
        failed: dict[uuid.UUID, frozenset[int]] = {}
        for call, _ in calls:
            into = failed if call.error else done
            key = call.key
            into[key.topic_id] = into.get(key.topic_id, frozenset()) | {key.partition}
        answers = self._groups.share_write(lambda share: share.initialized(group_id, done), now_ms)[1]
        if initializing and failed:
            answers += self._groups.share_write(lambda share: share.uninitialized(group_id, failed), now_ms)[
                1
            ]
        return answers

    # -- driving -----------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> list[Answer]:
        """Start the initializations asked for, settle the answers, send what is due; the
        answers finished."""
        self._now_ms = max(self._now_ms, now_ms)
        self._initialize(now_ms)
        if not self._ops:
            return []
        replies, self._replies = self._replies, []
        for call, attempt, body in replies:
            if call.attempt == attempt and call.error is None:
                self._settle(call, body, now_ms)
        for op in self._ops:
            if now_ms >= op.deadline_ms:
                for call, _ in op.calls:
                    if call.error is None:
                        call.error = ErrorCode.REQUEST_TIMED_OUT
        self._send_due(now_ms)
        return self._finished(now_ms)

    def next_deadline_ms(self) -> int | None:
        if self._replies:
            return self._now_ms
        due = [c.due_ms for op in self._ops for c, _ in op.calls if c.error is None and c.due_ms is not None]
        due += [op.deadline_ms for op in self._ops]
        return min(due, default=None)

    def forget(self, conn_id: int) -> None:
        self._ops = [op for op in self._ops if op.conn_id != conn_id or op.request is None]

    def _finished(self, now_ms: int) -> list[Answer]:
        out: list[Answer] = []
        still: list[Op] = []
        for op in self._ops:
            if all(call.error is not None for call, _ in op.calls):
                for call, settle in op.calls:
                    settle(call)
                if op.done is not None:
                    out += op.done(now_ms)
                if op.request is not None and op.answer is not None:
                    out.append((op.conn_id, op.request, op.answer))
            else:
                still.append(op)
        self._ops = still
        return out

    def _send_due(self, now_ms: int) -> None:
        for op in self._ops:
            for call, _ in op.calls:
                if call.error is None and call.due_ms is not None and call.due_ms <= now_ms:
                    self._send(call, now_ms)

    def _send(self, call: Call, now_ms: int) -> None:
        state = self._state
        topic = state.topic_with_id(call.key.topic_id)
        if call.phase is Phase.LATEST:
            registration = None if topic is None else state.cluster.partition(topic.name, call.key.partition)
        else:
            store = None if state.share is None else state.share.store
            partition = None if store is None else store.locate(call.key, now_ms)
            registration = (
                None if partition is None else state.cluster.partition(SHARE_GROUP_STATE_TOPIC, partition)
            )
        if registration is None or registration.leader < 0:
            call.due_ms = now_ms + RETRY_BACKOFF_MS
            return
        call.due_ms = None
        call.attempt += 1
        attempt = call.attempt

        def on_reply(reply: Message | None, reply_ms: int) -> None:
            self._replies.append((call, attempt, reply))
            self._now_ms = max(self._now_ms, reply_ms)

        cluster = state.cluster
        body = request_for(call, "" if topic is None else topic.name)
        cluster.send(
            Outbound(registration.leader, cluster.inter_broker_listener, body, on_reply, REQUEST_TIMEOUT_MS)
        )

    def _settle(self, call: Call, body: Message | None, now_ms: int) -> None:
        if call.phase is Phase.LATEST:
            latest = latest_result(body, call.key.partition)
            if latest is None or latest[0] in LEADER_RETRIABLE:
                call.due_ms = now_ms + RETRY_BACKOFF_MS
            else:
                call.error, call.latest_offset = latest
            return
        found = state_result(body, call.key)
        error = None if found is None else found.error_code
        if error is None or error in RETRIABLE:
            call.due_ms = now_ms + RETRY_BACKOFF_MS
            return
        if error:
            call.error = error
            return
        if isinstance(found, messages.ReadShareGroupStateSummaryResponsePartitionResult):
            if call.phase is Phase.DESCRIBE:
                complete = found.delivery_complete_count
                call.described = (found.start_offset, found.leader_epoch, complete)
                if found.start_offset == -1 or complete == -1:
                    call.error = ErrorCode.NONE
                    return
                call.phase = Phase.LATEST
            else:
                call.phase, call.state_epoch = Phase.INITIALIZE, max(found.state_epoch, 0) + 1
            call.due_ms = now_ms
            self._send(call, now_ms)
            return
        call.error = ErrorCode.NONE


def _ignore(call: Call) -> None:
    return None


def _setter(
    target: messages.AlterShareGroupOffsetsResponsePartition
    | messages.DeleteShareGroupOffsetsResponseTopic
    | messages.DeleteGroupsResponseDeletableGroupResult,
) -> Callable[[Call], None]:
    def set_error(call: Call) -> None:
        error = call.error
        if error and not target.error_code:
            target.error_code, target.error_message = error, message_of(error)

    return set_error
