"""The ACL checks of the group and transaction coordinators' APIs, made before a request reaches
them (``Coordinators.handle``), where Kafka's ``KafkaApis`` makes them.

:func:`gate` returns a :class:`Gate`: the answer when the whole request is refused, else the
request to hand on (without the items refused, which must not be carried out) and a ``patch``
that puts the refused items back into the coordinator's answer. What each API needs:

- JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat, ShareGroupHeartbeat: READ
  on the group (GROUP_AUTHORIZATION_FAILED); the last two also DESCRIBE on each subscribed topic
  (TOPIC_AUTHORIZATION_FAILED);
- OffsetCommit: READ on the group, READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED,
  the others committed); OffsetDelete: DELETE on the group, READ on each topic; TxnOffsetCommit:
  WRITE on the transactional id, READ on the group and on each topic;
- OffsetFetch: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED) and on each topic (a topic
  named gets TOPIC_AUTHORIZATION_FAILED, one listed because all were asked for is left out);
- DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe: DESCRIBE on each group;
  DeleteGroups: DELETE on each group; ListGroups: DESCRIBE on the cluster, else only the groups
  it may DESCRIBE;
- InitProducerId (with a transactional id), AddOffsetsToTxn, EndTxn, AddPartitionsToTxn up to v3:
  WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); AddOffsetsToTxn also READ
  on the group; AddPartitionsToTxn also WRITE on each topic (TOPIC_AUTHORIZATION_FAILED, the other
  partitions OPERATION_NOT_ATTEMPTED); DescribeTransactions: DESCRIBE on each transactional id;
  ListTransactions lists only those it may DESCRIBE.

AddPartitionsToTxn v4+ (brokers verifying a transaction for each other) needs CLUSTER_ACTION on
the cluster (CLUSTER_AUTHORIZATION_FAILED). The requests of this node's coordinators' loopback are
the node's own and are not checked (``Coordinators.handle``).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_wire import messages
from kafka_wire.broker.faults import injected_answer
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType, principal_of
from kafka_wire.broker.security.authorizer import OPERATIONS_OF
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.state import BrokerState

Op = AclOperation
Rt = ResourceType
GAF = ErrorCode.GROUP_AUTHORIZATION_FAILED
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
TIAF = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


@dataclass(frozen=True, slots=True)
class Gate:
    """What to do with a coordinator request: answer it at once (``answer``), or hand ``body`` on
    and ``patch`` the coordinator's answer."""

    body: Message | None = None
    answer: Message | None = None
    patch: Callable[[Message], Message] | None = None


class _Checker:
    def __init__(self, state: BrokerState, user: str, host: str) -> None:
        self.state = state
        self.principal = principal_of(user)
        self.host = host

    def ok(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        authorizer = self.state.authorizer
        return authorizer is None or authorizer.authorize(self.principal, self.host, op, rtype, name)

    def topic_name(self, name: str, topic_id: object) -> str:
        if name:
            return name
        topic = self.state.topic_with_id(topic_id) if isinstance(topic_id, uuid.UUID) else None
        return "" if topic is None else topic.name


def gate(state: BrokerState, api_key: int, api_version: int, body: Message, user: str, host: str) -> Gate:
    """The ACL decision on one coordinator request (see the module docstring)."""
    if state.authorizer is None:
        return Gate(body)
    c = _Checker(state, user, host)
    check = _CHECKS.get(api_key)
    return Gate(body) if check is None else check(c, api_version, body)


def _refuse(api_key: int, body: Message, code: int) -> Gate:
    answer = injected_answer(api_key, body, code)
    if hasattr(answer, "error_message"):
        answer.error_message = None
    return Gate(answer=answer)


def _group_read(api_key: int) -> Callable[[_Checker, int, Any], Gate]:
    def check(c: _Checker, version: int, body: Any) -> Gate:
        if not c.ok(Op.READ, Rt.GROUP, body.group_id):
            return _refuse(api_key, body, GAF)
        return Gate(body)

    return check


def _member_heartbeat(api_key: int, response: str) -> Callable[[_Checker, int, Any], Gate]:
    """ConsumerGroupHeartbeat and ShareGroupHeartbeat (its ``response`` class, by name: looked up
    when needed)."""

    def check(c: _Checker, version: int, body: Any) -> Gate:
        if not c.ok(Op.READ, Rt.GROUP, body.group_id):
            return _refuse(api_key, body, GAF)
        denied = [t for t in body.subscribed_topic_names or () if not c.ok(Op.DESCRIBE, Rt.TOPIC, t)]
        if denied:
            answer = getattr(messages, response)(
                error_code=TAF, error_message=f"The following topics are not authorized: {sorted(denied)}"
            )
            return Gate(answer=answer)
        return Gate(body)

    return check


def _topic_shapes(api_key: int) -> tuple[type[Message], Any, Any]:
    """Per API with topics of partitions: its response class, topic class and partition class
    (looked up when needed: a start loads no message module of an API not asked for)."""
    if api_key == ApiKey.OFFSET_COMMIT:
        return (
            messages.OffsetCommitResponse,
            messages.OffsetCommitResponseTopic,
            messages.OffsetCommitResponsePartition,
        )
    if api_key == ApiKey.TXN_OFFSET_COMMIT:
        return (
            messages.TxnOffsetCommitResponse,
            messages.TxnOffsetCommitResponseTopic,
            messages.TxnOffsetCommitResponsePartition,
        )
    return (
        messages.OffsetDeleteResponse,
        messages.OffsetDeleteResponseTopic,
        messages.OffsetDeleteResponsePartition,
    )


def _topics_split(api_key: int, c: _Checker, body: Any, op: AclOperation) -> Gate:
    """Hand on the topics the connection may ``op``; the others answer TOPIC_AUTHORIZATION_FAILED."""
    response_class, topic_class, partition_class = _topic_shapes(api_key)
    kept, refused = [], []
    for t in body.topics:
        if c.ok(op, Rt.TOPIC, c.topic_name(t.name, getattr(t, "topic_id", None))):
            kept.append(t)
        else:
            fields = {"name": t.name} | ({"topic_id": t.topic_id} if hasattr(t, "topic_id") else {})
            refused.append(
                topic_class(
                    **fields,
                    partitions=[
                        partition_class(partition_index=p.partition_index, error_code=TAF)
                        for p in t.partitions
                    ],
                )
            )
    if not refused:
        return Gate(body)
    if not kept:
        return Gate(answer=response_class(topics=refused))  # type: ignore[call-arg]  # each has topics
    rest = copy.copy(body)
    rest.topics = kept

    def patch(answer: Message) -> Message:
        if hasattr(answer, "topics") and not getattr(answer, "error_code", 0):
            answer.topics = refused + list(answer.topics)
        return answer

    return Gate(rest, patch=patch)


def _offset_commit(c: _Checker, version: int, body: Any) -> Gate:
    if not c.ok(Op.READ, Rt.GROUP, body.group_id):
        return _refuse(ApiKey.OFFSET_COMMIT, body, GAF)
    return _topics_split(ApiKey.OFFSET_COMMIT, c, body, Op.READ)


def _offset_delete(c: _Checker, version: int, body: Any) -> Gate:
    if not c.ok(Op.DELETE, Rt.GROUP, body.group_id):
        return Gate(answer=messages.OffsetDeleteResponse(error_code=GAF))
    return _topics_split(ApiKey.OFFSET_DELETE, c, body, Op.READ)


def _txn_offset_commit(c: _Checker, version: int, body: Any) -> Gate:
    if not c.ok(Op.WRITE, Rt.TRANSACTIONAL_ID, body.transactional_id):
        return _all_partitions(body, TIAF)
    if not c.ok(Op.READ, Rt.GROUP, body.group_id):
        return _all_partitions(body, GAF)
    return _topics_split(ApiKey.TXN_OFFSET_COMMIT, c, body, Op.READ)


def _all_partitions(body: Any, code: int) -> Gate:
    return Gate(
        answer=messages.TxnOffsetCommitResponse(
            topics=[
                messages.TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        messages.TxnOffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=code
                        )
                        for p in t.partitions
                    ],
                )
                for t in body.topics
            ]
        )
    )


def _offset_fetch(c: _Checker, version: int, body: Any) -> Gate:
    if version < 8:
        if not c.ok(Op.DESCRIBE, Rt.GROUP, body.group_id):
            return _refuse(ApiKey.OFFSET_FETCH, body, GAF)
        named = body.topics is not None

        def patch_single(answer: Message) -> Message:
            assert isinstance(answer, messages.OffsetFetchResponse)
            answer.topics = _fetched_topics(c, answer.topics, named)
            return answer

        return Gate(body, patch=patch_single)
    denied = {g.group_id for g in body.groups if not c.ok(Op.DESCRIBE, Rt.GROUP, g.group_id)}
    named_by_group = {g.group_id: g.topics is not None for g in body.groups}
    rest = body
    if denied:
        rest = copy.copy(body)
        rest.groups = [g for g in body.groups if g.group_id not in denied]
        if not rest.groups:
            return Gate(
                answer=messages.OffsetFetchResponse(
                    groups=[
                        messages.OffsetFetchResponseGroup(group_id=g.group_id, error_code=GAF)
                        for g in body.groups
                    ]
                )
            )

    def patch(answer: Message) -> Message:
        assert isinstance(answer, messages.OffsetFetchResponse)
        for group in answer.groups:
            group.topics = _fetched_topics(c, group.topics, named_by_group.get(group.group_id, True))
        answer.groups = [
            messages.OffsetFetchResponseGroup(group_id=g, error_code=GAF) for g in denied
        ] + answer.groups
        return answer

    return Gate(rest, patch=patch)


def _fetched_topics(c: _Checker, topics: list[Any], named: bool) -> list[Any]:
    """OffsetFetch's topics: those it may not DESCRIBE answered TOPIC_AUTHORIZATION_FAILED when
    named, left out when all were asked for."""
    out = []
    for t in topics:
        if c.ok(Op.DESCRIBE, Rt.TOPIC, c.topic_name(t.name, getattr(t, "topic_id", None))):
            out.append(t)
        elif named:
            for p in t.partitions:
                p.error_code, p.committed_offset, p.metadata = TAF, -1, ""
            out.append(t)
    return out


def _describe_groups(c: _Checker, version: int, body: Any) -> Gate:
    def patch(answer: Message) -> Message:
        assert isinstance(answer, messages.DescribeGroupsResponse)
        groups = []
        for g in answer.groups:
            if not c.ok(Op.DESCRIBE, Rt.GROUP, g.group_id):
                g = messages.DescribeGroupsResponseDescribedGroup(group_id=g.group_id, error_code=GAF)
            elif body.include_authorized_operations:
                g.authorized_operations = _group_operations(c, g.group_id)
            groups.append(g)
        answer.groups = groups
        return answer

    return Gate(body, patch=patch)


def _member_groups_describe(described: str) -> Callable[[_Checker, int, Any], Gate]:
    """ConsumerGroupDescribe and ShareGroupDescribe (the ``described`` group class, by name)."""

    def check(c: _Checker, version: int, body: Any) -> Gate:
        def patch(answer: Any) -> Message:
            groups = []
            for g in answer.groups:
                if not c.ok(Op.DESCRIBE, Rt.GROUP, g.group_id):
                    g = getattr(messages, described)(group_id=g.group_id, error_code=GAF)
                elif body.include_authorized_operations:
                    g.authorized_operations = _group_operations(c, g.group_id)
                groups.append(g)
            answer.groups = groups
            result: Message = answer
            return result

        return Gate(body, patch=patch)

    return check


def _group_operations(c: _Checker, group: str) -> int:
    bits = 0
    for op in OPERATIONS_OF[Rt.GROUP]:
        if c.ok(op, Rt.GROUP, group):
            bits |= 1 << op
    return bits


def _delete_groups(c: _Checker, version: int, body: Any) -> Gate:
    denied = [g for g in body.groups_names if not c.ok(Op.DELETE, Rt.GROUP, g)]
    if not denied:
        return Gate(body)
    refused = [messages.DeleteGroupsResponseDeletableGroupResult(group_id=g, error_code=GAF) for g in denied]
    kept = [g for g in body.groups_names if g not in denied]
    if not kept:
        return Gate(answer=messages.DeleteGroupsResponse(results=refused))

    def patch(answer: Message) -> Message:
        assert isinstance(answer, messages.DeleteGroupsResponse)
        answer.results = refused + answer.results
        return answer

    return Gate(messages.DeleteGroupsRequest(groups_names=kept), patch=patch)


def _list_groups(c: _Checker, version: int, body: Any) -> Gate:
    if c.ok(Op.DESCRIBE, Rt.CLUSTER, CLUSTER_NAME):
        return Gate(body)

    def patch(answer: Message) -> Message:
        assert isinstance(answer, messages.ListGroupsResponse)
        answer.groups = [g for g in answer.groups if c.ok(Op.DESCRIBE, Rt.GROUP, g.group_id)]
        return answer

    return Gate(body, patch=patch)


def _txn_write(api_key: int) -> Callable[[_Checker, int, Any], Gate]:
    def check(c: _Checker, version: int, body: Any) -> Gate:
        if not c.ok(Op.WRITE, Rt.TRANSACTIONAL_ID, body.transactional_id or ""):
            return _refuse(api_key, body, TIAF)
        if api_key == ApiKey.ADD_OFFSETS_TO_TXN and not c.ok(Op.READ, Rt.GROUP, body.group_id):
            return _refuse(api_key, body, GAF)
        return Gate(body)

    return check


def _add_partitions_to_txn(c: _Checker, version: int, body: Any) -> Gate:
    if version >= 4:  # brokers verifying transactions for each other: CLUSTER_ACTION
        if c.ok(Op.CLUSTER_ACTION, Rt.CLUSTER, CLUSTER_NAME):
            return Gate(body)
        return Gate(
            answer=messages.AddPartitionsToTxnResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        )
    txn_ok = c.ok(Op.WRITE, Rt.TRANSACTIONAL_ID, body.v3_and_below_transactional_id)
    denied = {t.name for t in body.v3_and_below_topics if not c.ok(Op.WRITE, Rt.TOPIC, t.name)}
    if txn_ok and not denied:
        return Gate(body)
    results = []
    for t in body.v3_and_below_topics:
        code = TIAF if not txn_ok else TAF if t.name in denied else ErrorCode.OPERATION_NOT_ATTEMPTED
        results.append(
            messages.AddPartitionsToTxnResponseTopicResult(
                name=t.name,
                results_by_partition=[
                    messages.AddPartitionsToTxnResponsePartitionResult(
                        partition_index=p, partition_error_code=code
                    )
                    for p in t.partitions
                ],
            )
        )
    return Gate(answer=messages.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results))


def _describe_transactions(c: _Checker, version: int, body: Any) -> Gate:
    def patch(answer: Message) -> Message:
        assert isinstance(answer, messages.DescribeTransactionsResponse)
        answer.transaction_states = [
            s
            if c.ok(Op.DESCRIBE, Rt.TRANSACTIONAL_ID, s.transactional_id)
            else messages.DescribeTransactionsResponseTransactionState(
                transactional_id=s.transactional_id, error_code=TIAF
            )
            for s in answer.transaction_states
        ]
        return answer

    return Gate(body, patch=patch)


def _list_transactions(c: _Checker, version: int, body: Any) -> Gate:
    def patch(answer: Message) -> Message:
        assert isinstance(answer, messages.ListTransactionsResponse)
        answer.transaction_states = [
            s for s in answer.transaction_states if c.ok(Op.DESCRIBE, Rt.TRANSACTIONAL_ID, s.transactional_id)
        ]
        return answer

    return Gate(body, patch=patch)


_CHECKS: dict[int, Callable[[_Checker, int, Any], Gate]] = {
    ApiKey.JOIN_GROUP: _group_read(ApiKey.JOIN_GROUP),
    ApiKey.SYNC_GROUP: _group_read(ApiKey.SYNC_GROUP),
    ApiKey.HEARTBEAT: _group_read(ApiKey.HEARTBEAT),
    ApiKey.LEAVE_GROUP: _group_read(ApiKey.LEAVE_GROUP),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _member_heartbeat(
        ApiKey.CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupHeartbeatResponse"
    ),
    ApiKey.SHARE_GROUP_HEARTBEAT: _member_heartbeat(
        ApiKey.SHARE_GROUP_HEARTBEAT, "ShareGroupHeartbeatResponse"
    ),
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _member_groups_describe("ConsumerGroupDescribeResponseDescribedGroup"),
    ApiKey.SHARE_GROUP_DESCRIBE: _member_groups_describe("ShareGroupDescribeResponseDescribedGroup"),
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.INIT_PRODUCER_ID: _txn_write(ApiKey.INIT_PRODUCER_ID),
    ApiKey.ADD_OFFSETS_TO_TXN: _txn_write(ApiKey.ADD_OFFSETS_TO_TXN),
    ApiKey.END_TXN: _txn_write(ApiKey.END_TXN),
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
}
