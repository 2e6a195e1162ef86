"""MetadataImage: records in, ClusterView queries and deltas out; snapshots rebuild the image."""

from __future__ import annotations

import uuid

from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, LeaderRecoveryState
from kafka_wire.broker.controller.image import MetadataImage
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

TID = uuid.UUID(int=42)


def register(broker: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker,
        broker_epoch=epoch,
        incarnation_id=uuid.UUID(int=broker),
        end_points=[RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="h", port=9000 + broker)],
        rack="r1",
        fenced=True,
    )


def base() -> list[Message]:
    return [
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        register(1, 1),
        register(2, 2),
        UnfenceBrokerRecord(id=1, epoch=1),
        BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=2, fenced=-1),
        TopicRecord(name="t", topic_id=TID),
        ConfigRecord(resource_type=2, resource_name="t", name="min.insync.replicas", value="2"),
        PartitionRecord(
            partition_id=0,
            topic_id=TID,
            replicas=[1, 2],
            isr=[1, 2],
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        ),
        PartitionRecord(
            partition_id=1,
            topic_id=TID,
            replicas=[2, 1],
            isr=[2, 1],
            leader=2,
            leader_epoch=0,
            partition_epoch=0,
        ),
        ProducerIdsRecord(broker_id=1, broker_epoch=1, next_producer_id=1000),
    ]


def test_records_in_queries_out() -> None:
    image = MetadataImage()
    delta = image.apply_batch(9, base())
    assert image.broker(1) == BrokerInfo(1, 1, (Endpoint("PLAINTEXT", "h", 9001),), rack="r1", fenced=False)
    assert [b.node_id for b in image.brokers()] == [1, 2] and not image.brokers()[1].fenced
    p0 = image.partition("t", 0)
    assert p0 is not None and (p0.replicas, p0.isr, p0.leader, p0.topic_id) == ((1, 2), (1, 2), 1, TID)
    assert [p.partition for p in image.partitions_of("t")] == [0, 1]
    assert image.partition("t", 2) is None and image.partitions_of("nope") == []
    assert image.topic_configs("t") == {"min.insync.replicas": "2"}
    assert (image.features, image.next_producer_id, image.offset) == ({"metadata.version": 21}, 1000, 9)
    assert [(p.topic, p.partition) for p in delta.partitions] == [("t", 0), ("t", 1)]
    assert delta.brokers == (1, 2) and delta.configs == ((2, "t"),)


def test_partition_change_delta_and_epochs() -> None:
    image = MetadataImage()
    image.apply_batch(9, base())
    delta = image.apply_batch(10, [PartitionChangeRecord(topic_id=TID, partition_id=0, leader=2, isr=[2])])
    p0 = image.partition("t", 0)
    assert p0 is not None and (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (2, (2,), 1, 1)
    assert delta.partitions == (p0,) and not delta.removed_topics and not delta.brokers
    image.apply_batch(
        11, [PartitionChangeRecord(topic_id=TID, partition_id=0, isr=[2, 1], leader_recovery_state=1)]
    )
    p0 = image.partition("t", 0)
    assert p0 is not None and (p0.leader_epoch, p0.partition_epoch) == (1, 2)
    assert p0.leader_recovery_state is LeaderRecoveryState.RECOVERING


def test_fencing_stale_epochs_and_unregistration() -> None:
    image = MetadataImage()
    image.apply_batch(9, base())
    image.apply_batch(10, [FenceBrokerRecord(id=1, epoch=99)])  # another registration's epoch: ignored
    assert image.broker(1) is not None and not image.broker(1).fenced  # type: ignore[union-attr]
    image.apply_batch(
        11, [BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=1, in_controlled_shutdown=1)]
    )
    assert image.broker(1).in_controlled_shutdown  # type: ignore[union-attr]
    image.apply_batch(12, [FenceBrokerRecord(id=1, epoch=1)])
    info = image.broker(1)
    assert info is not None and info.fenced and not info.in_controlled_shutdown
    delta = image.apply_batch(13, [UnregisterBrokerRecord(broker_id=2, broker_epoch=2)])
    assert image.broker(2) is None and delta.brokers == (2,)


def test_remove_topic_delta_and_config_delete() -> None:
    image = MetadataImage()
    image.apply_batch(9, base())
    delta = image.apply_batch(
        10,
        [
            ConfigRecord(resource_type=4, resource_name="", name="x", value="1"),
            RemoveTopicRecord(topic_id=TID),
        ],
    )
    assert "t" not in image.topics and image.topic_configs("t") == {}
    assert delta.removed_topics == (("t", TID),) and (2, "t") in delta.configs
    image.apply_batch(11, [ConfigRecord(resource_type=4, resource_name="", name="x", value=None)])
    assert (4, "") not in image.configs


def test_snapshot_records_rebuild_the_same_image() -> None:
    image = MetadataImage()
    image.apply_batch(9, base())
    image.apply_batch(
        10,
        [
            PartitionChangeRecord(
                topic_id=TID, partition_id=0, leader=2, isr=[2], eligible_leader_replicas=[1]
            )
        ],
    )
    copy = MetadataImage()
    other = MetadataImage()
    other.apply_batch(3, [TopicRecord(name="gone", topic_id=uuid.UUID(int=5))])
    delta = other.load_snapshot(10, image.snapshot_records())
    copy.load_snapshot(10, image.snapshot_records())
    for rebuilt in (copy, other):
        assert list(rebuilt.all_partitions()) == list(image.all_partitions())
        assert rebuilt.brokers() == image.brokers()
        assert (rebuilt.configs, rebuilt.features, rebuilt.next_producer_id, rebuilt.offset) == (
            image.configs,
            image.features,
            image.next_producer_id,
            10,
        )
        assert rebuilt.registration(1) == image.registration(1)
    assert delta.removed_topics == (("gone", uuid.UUID(int=5)),)
    assert len(delta.partitions) == 2
