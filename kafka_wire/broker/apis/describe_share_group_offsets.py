"""DescribeShareGroupOffsets (v0-v1, KIP-932; the Admin client's ``listShareGroupOffsets``).

Behaviour: for each group, each asked partition's share-partition start offset, from the
share-partition this broker serves (its start offset, SPSO) or else from the state kept in
``__share_group_state``; -1 for a partition without either, and for a topic that does not exist
(its topic id then all zeros), as Kafka 4.4 answers. Without topics (null), every partition of
each topic the group has share-partition state for. The group need not exist (Kafka answers an
unknown group with no topics, or with -1 offsets for the asked ones). v1's lag is the high
watermark less the start offset and the records past it already done with (acknowledged or
archived); -1 when unknown.
Version notes: ``lag`` from v1 (-1 before).
Differences: the share-partitions are this broker's (a single node's, or the ones led here and
kept in the ``__share_group_state`` partitions led here); Kafka's group coordinator asks the share
coordinator. Kafka reports the start offset it last wrote, which may lag behind the records its
leader already passed; the start offset here is the leader's.
"""

from __future__ import annotations

import uuid

from kafka_wire.broker.apis.share_fetch import share_manager
from kafka_wire.broker.group.share_partition import RecordState
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)

_DONE = (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED))


def handle(ctx: Context, request: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse:
    state = ctx.state
    return DescribeShareGroupOffsetsResponse(
        groups=[
            DescribeShareGroupOffsetsResponseGroup(
                group_id=group.group_id,
                topics=_topics(state, group.group_id, [(t.topic_name, t.partitions) for t in group.topics])
                if group.topics is not None
                else _topics(state, group.group_id, _kept_topics(state, group.group_id)),
            )
            for group in request.groups
        ]
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
    live = share.partitions.get((group_id, topic_id, index))
    if live is not None:
        answer.start_offset = live.start_offset
        done = sum(1 for r in live.records.values() if int(r.state) in _DONE)
    else:
        kept = None if share.store is None else share.store.read(ShareStateKey(group_id, topic_id, index))
        if kept is None or kept.start_offset < 0:
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
