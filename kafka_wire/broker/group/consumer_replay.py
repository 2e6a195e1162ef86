"""The replay of KIP-848 consumer group records into memory (Kafka's ``GroupMetadataManager.replay``
for the ``ConsumerGroup*`` records): the one path by which a consumer group changes, whether the
records come from the log at load or from a heartbeat handing them out."""

from __future__ import annotations

from kafka_wire.broker.group.consumer_model import ConsumerGroup, ConsumerMember, MemberState
from kafka_wire.broker.group.consumer_records import (
    CURRENT_MEMBER_KEY,
    GROUP_KEY,
    MEMBER_KEY,
    TARGET_MEMBER_KEY,
    ConsumerKey,
    ConsumerValue,
    CurrentMemberValue,
    GroupEpochValue,
    MemberMetadataValue,
    TargetEpochValue,
    TargetMemberValue,
)
from kafka_wire.broker.group.model import Group


def apply_record(
    groups: dict[str, Group], key: ConsumerKey, value: ConsumerValue | None, now_ms: int
) -> bool:
    """Apply one record to ``groups`` (Kafka's ``replay``); True when it removed a member."""
    gid = key.group
    group = groups.get(gid)
    if value is None:
        consumer = None if group is None else group.consumer
        if consumer is None or group is None:
            return False
        if key.version == GROUP_KEY:
            group.consumer = None
            if not group.offsets and group.protocol_type is None:
                del groups[gid]
        elif key.version == MEMBER_KEY:
            return consumer.remove_member(key.member) is not None
        elif key.version == TARGET_MEMBER_KEY:
            consumer.target.pop(key.member, None)
        elif key.version == CURRENT_MEMBER_KEY and key.member in consumer.members:
            member = consumer.members[key.member]
            member.member_epoch = member.previous_member_epoch = 0
            member.assigned, member.pending_revocation = {}, {}
            member.state = MemberState.STABLE
        return False
    if group is None:
        group = groups[gid] = Group(gid, state_timestamp_ms=now_ms)
    if group.consumer is None:
        group.consumer = ConsumerGroup(gid)
        group.protocol_type = None
    consumer = group.consumer
    match value:
        case GroupEpochValue():
            consumer.epoch, consumer.metadata_hash = value.epoch, value.metadata_hash
        case TargetEpochValue():
            consumer.assignment_epoch = value.assignment_epoch
        case TargetMemberValue():
            consumer.target[key.member] = value.partitions
        case MemberMetadataValue():
            member = consumer.members.get(key.member) or ConsumerMember(key.member)
            member.instance_id = value.instance_id
            member.rack_id = value.rack_id
            member.client_id = value.client_id
            member.client_host = value.client_host
            member.subscribed_topic_names = value.subscribed_topic_names
            member.subscribed_topic_regex = value.subscribed_topic_regex
            member.rebalance_timeout_ms = value.rebalance_timeout_ms
            member.server_assignor = value.server_assignor
            consumer.put_member(member)
        case CurrentMemberValue():
            member = consumer.members.get(key.member) or ConsumerMember(key.member)
            member.member_epoch = value.member_epoch
            member.previous_member_epoch = value.previous_member_epoch
            member.state = MemberState(value.state) if value.state in (0, 1, 2) else MemberState.UNKNOWN
            member.assigned = dict(value.assigned)
            member.pending_revocation = dict(value.pending_revocation)
            consumer.put_member(member)
    return False
