"""AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932's offset reset and delete, the Admin
client's ``alterShareGroupOffsets`` / ``deleteShareGroupOffsets``): answered by the group's
coordinator, which asks each share-partition's share coordinator (Kafka's
``GroupCoordinatorService`` and its persister).

Behaviour, as Kafka 4.4 answers:

* an empty group id is INVALID_GROUP_ID; a group not served here NOT_COORDINATOR (or
  COORDINATOR_LOAD_IN_PROGRESS); a group id held by a classic or consumer group GROUP_ID_NOT_FOUND;
  a share group with members NON_EMPTY_GROUP ("The group is not empty."), all for the whole
  request. A group that does not exist is altered (or deleted) as an empty one;
* Alter: per partition, UNKNOWN_TOPIC_OR_PARTITION for a topic (answered with the zero topic id)
  or a partition the metadata does not have; else the share-partition's state is initialized at
  the start offset asked (Kafka takes any value, negative ones too) with a state epoch one above
  the one kept (ReadShareGroupStateSummary, then InitializeShareGroupState), which fences the
  partition leader's writes of the older state: it reads the new state before it acquires again;
* Delete: per topic, UNKNOWN_TOPIC_OR_PARTITION for a topic the metadata does not have; else
  every partition's state is deleted (DeleteShareGroupState), the topic's error the first
  partition's;
* DeleteGroups of a share group (:meth:`ShareAdmin.hold_deleted_groups`): once the group
  coordinator deleted it, the state of each share-partition it may have (every partition of every
  topic but the internal ones: the group does not record which it initialized) is deleted too, and
  the answer leaves then (a deletion that failed is the group's error);
* ACLs (with an authorizer), as Kafka's ``KafkaApis`` checks them: Alter needs READ on the group,
  Delete DELETE on it (GROUP_AUTHORIZATION_FAILED for the whole request); both READ on each topic
  (TOPIC_AUTHORIZATION_FAILED: Alter's partitions, Delete's topic).

The share coordinators' RPCs go over the node's links (the loopback for this node's own
partitions); NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
UNKNOWN_TOPIC_OR_PARTITION and no answer are retried after ``persister.RETRY_BACKOFF_MS``; what is
not done within :data:`ADMIN_TIMEOUT_MS` answers REQUEST_TIMED_OUT. Answers are handed out by
:meth:`ShareAdmin.poll` (the coordinators' poll, after every engine call).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed_for
from kafka_wire.broker.share.persister import REQUEST_TIMEOUT_MS, RETRIABLE, RETRY_BACKOFF_MS
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Request
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.group.service import GroupCoordinator
    from kafka_wire.broker.state import BrokerState

#: How long an Alter or Delete may wait for the share coordinators.
ADMIN_TIMEOUT_MS: Final = 30_000

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


class _Phase(enum.Enum):
    SUMMARY = "summary"
    INITIALIZE = "initialize"
    DELETE = "delete"


@dataclass(slots=True)
class _Call:
    """One share-partition's part of an Alter or Delete."""

    key: ShareStateKey
    phase: _Phase
    start_offset: int = -1
    state_epoch: int = 0
    due_ms: int | None = 0
    #: The outcome once done.
    error: int | None = None
    #: Bumped at each send: an answer to an older send is ignored.
    attempt: int = 0


@dataclass(slots=True)
class _Op:
    conn_id: int
    request: Request
    answer: Message
    deadline_ms: int
    #: Each call and what to do with its outcome in the answer.
    calls: list[tuple[_Call, Callable[[int], None]]] = field(default_factory=list)


class ShareAdmin:
    """See the module docstring."""

    def __init__(self, state: BrokerState, coordinator: Callable[[], GroupCoordinator]) -> None:
        self._state = state
        self._coordinator = coordinator
        self._ops: list[_Op] = []
        self._replies: list[tuple[_Call, int, Message | None]] = []
        self._now_ms = 0

    # -- requests ----------------------------------------------------------------------------------

    def handle(self, conn_id: int, request: Request, principal: str, host: str, now_ms: int) -> list[Answer]:
        self._now_ms = max(self._now_ms, now_ms)
        body = request.body
        assert isinstance(
            body, messages.AlterShareGroupOffsetsRequest | messages.DeleteShareGroupOffsetsRequest
        )
        alter = isinstance(body, messages.AlterShareGroupOffsetsRequest)
        answer = (
            messages.AlterShareGroupOffsetsResponse() if alter else messages.DeleteShareGroupOffsetsResponse()
        )
        error = self._refusal(body, principal, host)
        if error:
            answer.error_code, answer.error_message = error, message_of(error)
            return [(conn_id, request, answer)]
        op = _Op(conn_id, request, answer, now_ms + ADMIN_TIMEOUT_MS)
        if isinstance(body, messages.AlterShareGroupOffsetsRequest):
            self._alter(op, body, principal, host)
        else:
            self._delete(op, body, principal, host)
        self._ops.append(op)
        self._send_due(now_ms)
        return self._finished()

    def _allowed(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return allowed_for(self._state, principal, host, op, rtype, name)

    def _refusal(
        self,
        body: messages.AlterShareGroupOffsetsRequest | messages.DeleteShareGroupOffsetsRequest,
        principal: str,
        host: str,
    ) -> int:
        group_id = body.group_id
        needed = (
            AclOperation.READ
            if isinstance(body, messages.AlterShareGroupOffsetsRequest)
            else AclOperation.DELETE
        )
        if not self._allowed(principal, host, needed, ResourceType.GROUP, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        coordinator = self._coordinator()
        refused = coordinator.refusal(group_id)
        if refused is not None:
            return refused
        share = coordinator.share_group_view(group_id)
        if share is None:
            return ErrorCode.GROUP_ID_NOT_FOUND if coordinator.group(group_id) is not None else ErrorCode.NONE
        return ErrorCode.NON_EMPTY_GROUP if share.members else ErrorCode.NONE

    def _alter(
        self, op: _Op, body: messages.AlterShareGroupOffsetsRequest, principal: str, host: str
    ) -> None:
        answer = op.answer
        assert isinstance(answer, messages.AlterShareGroupOffsetsResponse)
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
                    op.calls.append((_Call(key, _Phase.SUMMARY, start_offset=p.start_offset), _setter(part)))
                    continue
                part.error_code, part.error_message = error, message_of(error)

    def _delete(
        self, op: _Op, body: messages.DeleteShareGroupOffsetsRequest, principal: str, host: str
    ) -> None:
        answer = op.answer
        assert isinstance(answer, messages.DeleteShareGroupOffsetsResponse)
        for topic in body.topics:
            info = self._state.topic_named(topic.topic_name)
            answered = messages.DeleteShareGroupOffsetsResponseTopic(
                topic_name=topic.topic_name, topic_id=ZERO_UUID if info is None else info.topic_id
            )
            answer.responses.append(answered)
            if not self._allowed(principal, host, AclOperation.READ, ResourceType.TOPIC, topic.topic_name):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                setter = _setter(answered)
                for index in range(info.partitions):
                    key = ShareStateKey(body.group_id, info.topic_id, index)
                    op.calls.append((_Call(key, _Phase.DELETE), setter))
                continue
            answered.error_code, answered.error_message = error, message_of(error)

    def hold_deleted_groups(
        self, conn_id: int, request: Request, answer: Message, share_groups: set[str], now_ms: int
    ) -> list[Answer]:
        """A DeleteGroups answer: held until the state of the share groups it deleted is deleted
        too (see the module docstring)."""
        self._now_ms = max(self._now_ms, now_ms)
        if not isinstance(answer, messages.DeleteGroupsResponse):
            return [(conn_id, request, answer)]
        op = _Op(conn_id, request, answer, now_ms + ADMIN_TIMEOUT_MS)
        topics = [t for name, t in self._state.metadata.topics.items() if not name.startswith("__")]
        for result in answer.results:
            if result.error_code or result.group_id not in share_groups:
                continue
            setter = _setter(result)
            for topic in topics:
                for index in range(topic.partitions):
                    key = ShareStateKey(result.group_id, topic.topic_id, index)
                    op.calls.append((_Call(key, _Phase.DELETE), setter))
        if not op.calls:
            return [(conn_id, request, answer)]
        self._ops.append(op)
        self._send_due(now_ms)
        return self._finished()

    # -- driving -----------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> list[Answer]:
        """Settle the share coordinators' answers, send what is due; the answers finished."""
        self._now_ms = max(self._now_ms, now_ms)
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
        return self._finished()

    def next_deadline_ms(self) -> int | None:
        if self._replies:
            return self._now_ms
        due = [c.due_ms for op in self._ops for c, _ in op.calls if c.error is None and c.due_ms is not None]
        due += [op.deadline_ms for op in self._ops]
        return min(due, default=None)

    def forget(self, conn_id: int) -> None:
        self._ops = [op for op in self._ops if op.conn_id != conn_id]

    def _finished(self) -> list[Answer]:
        out: list[Answer] = []
        still: list[_Op] = []
        for op in self._ops:
            if all(call.error is not None for call, _ in op.calls):
                for call, set_error in op.calls:
                    assert call.error is not None
                    set_error(call.error)
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

    def _send(self, call: _Call, now_ms: int) -> None:
        state = self._state
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
        key, attempt = call.key, call.attempt
        body: Message
        if call.phase is _Phase.SUMMARY:
            body = messages.ReadShareGroupStateSummaryRequest(
                group_id=key.group_id,
                topics=[
                    messages.ReadShareGroupStateSummaryRequestReadStateSummaryData(
                        topic_id=key.topic_id,
                        partitions=[
                            messages.ReadShareGroupStateSummaryRequestPartitionData(
                                partition=key.partition, leader_epoch=-1
                            )
                        ],
                    )
                ],
            )
        elif call.phase is _Phase.INITIALIZE:
            body = messages.InitializeShareGroupStateRequest(
                group_id=key.group_id,
                topics=[
                    messages.InitializeShareGroupStateRequestInitializeStateData(
                        topic_id=key.topic_id,
                        partitions=[
                            messages.InitializeShareGroupStateRequestPartitionData(
                                partition=key.partition,
                                state_epoch=call.state_epoch,
                                start_offset=call.start_offset,
                            )
                        ],
                    )
                ],
            )
        else:
            body = messages.DeleteShareGroupStateRequest(
                group_id=key.group_id,
                topics=[
                    messages.DeleteShareGroupStateRequestDeleteStateData(
                        topic_id=key.topic_id,
                        partitions=[
                            messages.DeleteShareGroupStateRequestPartitionData(partition=key.partition)
                        ],
                    )
                ],
            )

        def on_reply(reply: Message | None, reply_ms: int) -> None:
            self._replies.append((call, attempt, reply))
            self._now_ms = max(self._now_ms, reply_ms)

        cluster = state.cluster
        cluster.send(
            Outbound(registration.leader, cluster.inter_broker_listener, body, on_reply, REQUEST_TIMEOUT_MS)
        )

    def _settle(self, call: _Call, body: Message | None, now_ms: int) -> None:
        found = _partition_result(body, call.key)
        error = None if found is None else found.error_code
        if error is None or error in RETRIABLE:
            call.due_ms = now_ms + RETRY_BACKOFF_MS
            return
        if error:
            call.error = error
            return
        if call.phase is _Phase.SUMMARY:
            assert isinstance(found, messages.ReadShareGroupStateSummaryResponsePartitionResult)
            call.phase, call.state_epoch = _Phase.INITIALIZE, max(found.state_epoch, 0) + 1
            call.due_ms = now_ms
            self._send(call, now_ms)
            return
        call.error = ErrorCode.NONE


def _setter(
    target: messages.AlterShareGroupOffsetsResponsePartition
    | messages.DeleteShareGroupOffsetsResponseTopic
    | messages.DeleteGroupsResponseDeletableGroupResult,
) -> Callable[[int], None]:
    def set_error(error: int) -> None:
        if error and not target.error_code:
            target.error_code, target.error_message = error, message_of(error)

    return set_error


if TYPE_CHECKING:  # their message modules load on the first share admin request, not at start
    _Result = (
        messages.ReadShareGroupStateSummaryResponsePartitionResult
        | messages.InitializeShareGroupStateResponsePartitionResult
        | messages.DeleteShareGroupStateResponsePartitionResult
    )


def _partition_result(body: Message | None, key: ShareStateKey) -> _Result | None:
    if not isinstance(
        body,
        messages.ReadShareGroupStateSummaryResponse
        | messages.InitializeShareGroupStateResponse
        | messages.DeleteShareGroupStateResponse,
    ):
        return None
    for topic in body.results:
        if topic.topic_id == key.topic_id:
            for p in topic.partitions:
                if p.partition == key.partition:
                    return p
    return None
