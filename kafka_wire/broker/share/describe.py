"""DescribeShareGroupOffsets (v0-v1, KIP-932; the Admin client's ``listShareGroupOffsets``), as
Kafka 4.4's group coordinator answers it: the answer's calls, run by ``admin.ShareAdmin``.

Behaviour: for each group, each asked share-partition's start offset as its share coordinator
keeps it (ReadShareGroupStateSummary to the leader of its ``__share_group_state`` partition,
wherever that is in the cluster); -1 (leader epoch 0) for a share-partition with no state, or
whose share coordinator answered an error, and for a topic that does not exist (its topic id then
all zeros, listed first) or a partition it does not have. Without topics (null), the share-partitions
the group's state metadata lists as initialized (key 15 of ``__consumer_offsets``), which needs
the group's coordinator (else NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for the group); a
group that does not exist has none. v1's lag is the partition's latest offset (ListOffsets to its
leader) less the start offset and the records past it already done with (the summary's delivery
complete count); -1 when either is unknown.
Authorization (with an authorizer), as Kafka's ``KafkaApis``: DESCRIBE on each group (else the
group's GROUP_AUTHORIZATION_FAILED, no topics), DESCRIBE on each topic (else its partitions
TOPIC_AUTHORIZATION_FAILED; topics listed because all were asked for are left out).
Version notes: ``lag`` from v1 (-1 before).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.share.admin_rpcs import Call, Phase
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.broker.group.service import GroupCoordinator
    from kafka_wire.broker.share.admin import Op
    from kafka_wire.broker.state import BrokerState

#: Whether the asker may do an operation on a resource: (operation, resource type, name).
Allowed = Callable[[AclOperation, ResourceType, str], bool]


def build(
    op: Op,
    request: messages.DescribeShareGroupOffsetsRequest,
    state: BrokerState,
    coordinator: GroupCoordinator,
    allowed: Allowed,
    message_of: Callable[[int], str | None],
) -> None:
    """Set ``op``'s answer and its calls (one per share-partition asked about)."""
    answer = messages.DescribeShareGroupOffsetsResponse()
    op.answer = answer
    for group in request.groups:
        group_id = group.group_id
        described = messages.DescribeShareGroupOffsetsResponseGroup(group_id=group_id)
        answer.groups.append(described)
        if not allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            described.error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
            continue
        asked: list[tuple[str, list[int]]]
        if group.topics is None:
            refused = coordinator.refusal(group_id)
            if refused is not None:
                described.error_code, described.error_message = refused, message_of(refused)
                continue
            asked = []
            initialized = coordinator.share_groups.state_partitions(group_id, initialized_only=True)
            for topic_id, indexes in initialized.items():
                topic = state.topic_with_id(topic_id)
                if topic is not None and allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                    asked.append((topic.name, sorted(indexes)))
            asked.sort()
        else:
            asked = [(t.topic_name, list(t.partitions)) for t in group.topics]
        unknown = []
        for name, partitions in asked:
            topic = state.topic_named(name)
            if topic is None:
                unknown.append(
                    messages.DescribeShareGroupOffsetsResponseTopic(
                        topic_name=name, topic_id=ZERO_UUID, partitions=[_unknown(p) for p in partitions]
                    )
                )
                continue
            answered = messages.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=topic.topic_id
            )
            described.topics.append(answered)
            if not allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                answered.partitions = [
                    messages.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p,
                        start_offset=-1,
                        lag=-1,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                    for p in partitions
                ]
                continue
            for index in partitions:
                part = _unknown(index)
                answered.partitions.append(part)
                if 0 <= index < topic.partitions:
                    call = Call(ShareStateKey(group_id, topic.topic_id, index), Phase.DESCRIBE)
                    op.calls.append((call, _filler(part, message_of)))
        described.topics[:0] = unknown


def _unknown(index: int) -> messages.DescribeShareGroupOffsetsResponsePartition:
    return messages.DescribeShareGroupOffsetsResponsePartition(partition_index=index, start_offset=-1, lag=-1)


def _filler(
    part: messages.DescribeShareGroupOffsetsResponsePartition, message_of: Callable[[int], str | None]
) -> Callable[[Call], None]:
    def fill(call: Call) -> None:
        if call.described is None:  # no state summary: nothing known (Kafka's -1, not an error)
            return
        start, leader_epoch, complete = call.described
        part.start_offset, part.leader_epoch = start, max(leader_epoch, 0)
        if call.phase is not Phase.LATEST:
            return
        if call.error:
            part.error_code, part.error_message = call.error, message_of(call.error)
        else:
            part.lag = call.latest_offset - start - complete

    return fill
