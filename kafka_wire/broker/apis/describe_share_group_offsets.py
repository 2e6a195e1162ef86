"""DescribeShareGroupOffsets (v0-v1, KIP-932; the Admin client's ``listShareGroupOffsets``).

Behaviour: for each group, each asked partition's share-partition start offset, from the state
kept in ``__share_group_state`` (the partition leaders write every change there before they
answer), else from a share-partition this broker serves that has none kept yet; -1 for a
partition without either, and for a topic that does not exist (its topic id then all zeros), as
Kafka 4.4 answers. Without topics (null), every partition of
each topic the group has share-partition state for. The group need not exist (Kafka answers an
unknown group with no topics, or with -1 offsets for the asked ones). v1's lag is the high
watermark less the start offset and the records past it already done with (acknowledged or
archived); -1 when unknown.
Authorization (with an authorizer), as Kafka's ``KafkaApis``: DESCRIBE on each group (else the
group's GROUP_AUTHORIZATION_FAILED, no topics), DESCRIBE on each topic (else its partitions
TOPIC_AUTHORIZATION_FAILED; topics listed because all were asked for are left out).
Version notes: ``lag`` from v1 (-1 before).
Differences: the state read is this broker's (a single node's, or the one kept in the
``__share_group_state`` partitions led here); Kafka's group coordinator asks each share-partition's
share coordinator (ReadShareGroupStateSummary).
"""

from __future__ import annotations

import uuid

from kafka_wire.broker.apis.share_fetch import share_manager
from kafka_wire.broker.group.share_partition import RecordState
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
    ErrorCode,
)

_DONE = (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED))


def handle(ctx: Context, request: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse:
    state = ctx.state
    groups = []
    for group in request.groups:
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
            groups.append(
                DescribeShareGroupOffsetsResponseGroup(
                    group_id=group.group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
                )
            )
            continue
        if group.topics is None:
            asked = [
                (name, partitions)
                for name, partitions in _kept_topics(state, group.group_id)
                if allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
            ]
            topics = _topics(state, group.group_id, asked)
        else:
            topics = []
            for t in group.topics:
                if allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic_name):
                    topics += _topics(state, group.group_id, [(t.topic_name, t.partitions)])
                else:
                    topics.append(_refused(state, t.topic_name, t.partitions))
        groups.append(DescribeShareGroupOffsetsResponseGroup(group_id=group.group_id, topics=topics))
    return DescribeShareGroupOffsetsResponse(groups=groups)


def _refused(state: BrokerState, name: str, partitions: list[int]) -> DescribeShareGroupOffsetsResponseTopic:
    topic = state.topic_named(name)
    return DescribeShareGroupOffsetsResponseTopic(
        topic_name=name,
        topic_id=ZERO_UUID if topic is None else topic.topic_id,
        partitions=[
            DescribeShareGroupOffsetsResponsePartition(
                partition_index=p,
                start_offset=-1,
                lag=-1,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            )
            for p in partitions
        ],
    )


def _kept_topics(state: BrokerState, group_id: str) -> list[tuple[str, list[int]]]:
    """Every partition of the topics ``group_id`` has share-partition state for, by topic name."""
    share = share_manager(state)
    topic_ids = {topic_id for g, topic_id, _ in share.partitions if g == group_id}
    if share.store is not None:
        topic_ids |= {key.topic_id for key in share.store.states if key.group_id == group_id}
    out = []
    for topic_id in topic_ids:
        topic = state.topic_with_id(topic_id)
        if topic is not None:
            out.append((topic.name, list(range(topic.partitions))))
    return sorted(out)


def _topics(
    state: BrokerState, group_id: str, asked: list[tuple[str, list[int]]]
) -> list[DescribeShareGroupOffsetsResponseTopic]:
    out = []
    for name, partitions in asked:
        topic = state.topic_named(name)
        topic_id = topic.topic_id if topic is not None else ZERO_UUID
        out.append(
            DescribeShareGroupOffsetsResponseTopic(
                topic_name=name,
                topic_id=topic_id,
                partitions=[_partition(state, group_id, name, topic_id, p) for p in partitions],
            )
        )
    return out


def _partition(
    state: BrokerState, group_id: str, name: str, topic_id: uuid.UUID, index: int
) -> DescribeShareGroupOffsetsResponsePartition:
    answer = DescribeShareGroupOffsetsResponsePartition(partition_index=index, start_offset=-1, lag=-1)
    if topic_id == ZERO_UUID:
        return answer
    share = share_manager(state)
    replica = state.replica(name, index)
    high_watermark = replica.high_watermark if replica is not None and replica.is_leader else -1
    kept = None if share.store is None else share.store.read(ShareStateKey(group_id, topic_id, index))
    live = share.partitions.get((group_id, topic_id, index))
    if kept is None and live is not None:
        answer.start_offset = live.start_offset
        done = sum(1 for r in live.records.values() if int(r.state) in _DONE)
    else:
        if kept is None:
            return answer
        answer.start_offset, answer.leader_epoch = kept.start_offset, max(kept.leader_epoch, 0)
        done = sum(
            last - max(first, kept.start_offset) + 1
            for first, last, kind, _ in kept.batches
            if kind in _DONE and last >= kept.start_offset
        )
    if high_watermark >= 0:
        answer.lag = max(high_watermark - answer.start_offset - done, 0)
    return answer
