"""The requests a simulated share group member sends (``share_consumer.py``), and what it makes
of the records and acknowledgement ops it gets back, as pure functions."""

from __future__ import annotations

import uuid
from typing import Final

from kafka_wire.messages import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestAcknowledgementBatch,
    ShareAcknowledgeRequestAcknowledgePartition,
    ShareAcknowledgeRequestAcknowledgeTopic,
    ShareFetchRequest,
    ShareFetchRequestAcknowledgementBatch,
    ShareFetchRequestFetchPartition,
    ShareFetchRequestFetchTopic,
    ShareFetchRequestForgottenTopic,
)
from kafka_wire.records import read_batches
from kafka_wire.sim.history import Op, OpKind, OpType

#: Resource type of group configs (KIP-848/932), IncrementalAlterConfigs' SET.
GROUP_RESOURCE: Final = 32
_SET: Final = 0
SHARE_FETCH_MAX_WAIT_MS: Final = 500
MAX_RECORDS: Final = 20
#: Acknowledge types (ShareFetch / ShareAcknowledge).
ACCEPT, RELEASE, REJECT = 1, 2, 3
ACK_NAMES: Final = {ACCEPT: "accept", RELEASE: "release", REJECT: "reject"}

Key = tuple[str, int]
#: (topic, partition) -> [(offset, acknowledge type)].
Acks = dict[Key, list[tuple[int, int]]]


def group_config_request(group: str, configs: dict[str, str]) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequestAlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name=group,
                configs=[
                    IncrementalAlterConfigsRequestAlterableConfig(name=k, config_operation=_SET, value=v)
                    for k, v in sorted(configs.items())
                ],
            )
        ],
        validate_only=False,
    )


def share_fetch_request(
    group: str,
    member: str,
    epoch: int,
    topic_ids: dict[str, uuid.UUID],
    partitions: set[Key],
    acks: Acks,
    forgotten: set[Key],
) -> ShareFetchRequest:
    """A ShareFetch of ``partitions`` carrying ``acks`` (one batch per offset), forgetting
    ``forgotten``; it waits only when it acknowledges nothing and keeps its session open."""
    by_topic: dict[str, list[ShareFetchRequestFetchPartition]] = {}
    for topic, partition in sorted(partitions | set(acks)):
        if topic not in topic_ids:
            continue
        batches = [
            ShareFetchRequestAcknowledgementBatch(first_offset=o, last_offset=o, acknowledge_types=[k])
            for o, k in acks.get((topic, partition), [])
        ]
        by_topic.setdefault(topic, []).append(
            ShareFetchRequestFetchPartition(partition_index=partition, acknowledgement_batches=batches)
        )
    dropped: dict[str, list[int]] = {}
    for topic, partition in sorted(forgotten):
        if topic in topic_ids:
            dropped.setdefault(topic, []).append(partition)
    return ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=0 if epoch == -1 or acks else SHARE_FETCH_MAX_WAIT_MS,
        min_bytes=1,
        max_bytes=1 << 22,
        max_records=MAX_RECORDS,
        batch_size=MAX_RECORDS,
        topics=[
            ShareFetchRequestFetchTopic(topic_id=topic_ids[t], partitions=ps) for t, ps in by_topic.items()
        ],
        forgotten_topics_data=[
            ShareFetchRequestForgottenTopic(topic_id=topic_ids[t], partitions=ps) for t, ps in dropped.items()
        ],
    )


def share_acknowledge_request(
    group: str, member: str, epoch: int, topic_ids: dict[str, uuid.UUID], acks: Acks
) -> ShareAcknowledgeRequest:
    by_topic: dict[str, list[ShareAcknowledgeRequestAcknowledgePartition]] = {}
    for (topic, partition), items in sorted(acks.items()):
        by_topic.setdefault(topic, []).append(
            ShareAcknowledgeRequestAcknowledgePartition(
                partition_index=partition,
                acknowledgement_batches=[
                    ShareAcknowledgeRequestAcknowledgementBatch(
                        first_offset=o, last_offset=o, acknowledge_types=[k]
                    )
                    for o, k in items
                ],
            )
        )
    return ShareAcknowledgeRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        topics=[
            ShareAcknowledgeRequestAcknowledgeTopic(topic_id=topic_ids[t], partitions=ps)
            for t, ps in by_topic.items()
        ],
    )


def record_values(raw: bytes | memoryview | None) -> dict[int, str]:
    """Offset -> value of the data records in a partition's ``records``."""
    values: dict[int, str] = {}
    for batch in read_batches(raw or b""):
        if batch.magic == 2 and batch.is_control:
            continue
        for r in batch.records():
            values[r.offset] = "" if r.value is None else bytes(r.value).decode("utf-8", "replace")
    return values


def completed(op: Op, outcome: OpType, now_ms: int, error: str = "") -> Op:
    """The completion of the ``ack`` invoke ``op``."""
    return Op(
        now_ms,
        op.process,
        outcome,
        OpKind.ACK,
        topic=op.topic,
        partition=op.partition,
        value=op.value,
        records=op.records,
        group=op.group,
        member=op.member,
        node=op.node,
        error=error,
        invoked_ms=op.time_ms,
    )


def lost_fetch(
    process: str, member: str, node: int, partitions: set[Key], sent_ms: int, now_ms: int
) -> list[Op]:
    """``acquire`` info ops: a ShareFetch of ``partitions`` got no answer, so it may have acquired
    records (their delivery counts moved) that the member never saw."""
    return [
        Op(
            now_ms,
            process,
            OpType.INFO,
            OpKind.ACQUIRE,
            topic=topic,
            partition=partition,
            member=member,
            node=node,
            invoked_ms=sent_ms,
            error="no answer",
        )
        for topic, partition in sorted(partitions)
    ]
