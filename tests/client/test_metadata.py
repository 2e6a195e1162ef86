"""kafka_wire.client.cluster.metadata_from: what a Metadata response says, each partition's leader
kept at the newest epoch seen (as Kafka's clients keep it, KIP-320)."""

from __future__ import annotations

import uuid

from kafka_wire.client.cluster import Leadership, metadata_from
from kafka_wire.client.types import TopicPartition
from kafka_wire.messages import (
    ErrorCode,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

TP = TopicPartition("t", 0)


def _answer(topic_id: uuid.UUID, leader: int, epoch: int) -> MetadataResponse:
    partitions = [
        MetadataResponsePartition(partition_index=0, leader_id=leader, leader_epoch=epoch),
        MetadataResponsePartition(partition_index=1, leader_id=2, leader_epoch=0),
    ]
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9090 + n) for n in (1, 2)],
        topics=[
            MetadataResponseTopic(name="t", topic_id=topic_id, partitions=partitions),
            MetadataResponseTopic(name="gone", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ],
    )


def test_a_partition_keeps_the_leader_of_the_newest_epoch_seen() -> None:
    topic_id = uuid.uuid4()
    newest: dict[TopicPartition, Leadership] = {}
    meta = metadata_from(_answer(topic_id, 1, 0), newest)
    assert meta.brokers == {1: ("127.0.0.1", 9091), 2: ("127.0.0.1", 9092)}
    assert meta.partitions == {"t": 2}  # the topic in error is left out
    assert (meta.leader(TP), meta.epoch(TP)) == (1, 0)
    assert metadata_from(_answer(topic_id, 2, 1), newest).leader(TP) == 2
    # A broker behind on the metadata log still names node 1 at epoch 0: node 2 stays the leader.
    behind = metadata_from(_answer(topic_id, 1, 0), newest)
    assert (behind.leader(TP), behind.epoch(TP)) == (2, 1)
    assert metadata_from(_answer(topic_id, 1, 2), newest).leader(TP) == 1


def test_a_topic_created_again_starts_from_its_own_epochs() -> None:
    newest: dict[TopicPartition, Leadership] = {}
    metadata_from(_answer(uuid.uuid4(), 2, 5), newest)
    again = metadata_from(_answer(uuid.uuid4(), 1, 0), newest)
    assert (again.leader(TP), again.epoch(TP)) == (1, 0)
