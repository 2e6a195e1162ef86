"""Configuration of the group coordinator: one frozen dataclass, Kafka's property names beside each field."""

from __future__ import annotations

from typing import Final

from kafka_wire.errors import KafkaWireError
from kafka_wire.quick_dataclass import dataclass

#: Java's ``Integer.MAX_VALUE``: Kafka's default ``group.max.size`` (no limit).
INT32_MAX: Final = 2**31 - 1
#: The server-side assignors of KIP-848 groups (``group.consumer.assignors``).
CONSUMER_ASSIGNORS: Final = ("uniform", "range")
#: ``group.consumer.migration.policy`` values.
MIGRATION_POLICIES: Final = ("bidirectional", "upgrade", "downgrade", "disabled")


class GroupConfigError(KafkaWireError):
    """A group coordinator setting is invalid; ``key`` is Kafka's property name."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    """Every field has Kafka's default; :data:`PROPERTY_NAMES` maps fields to Kafka's keys."""

    #: ``group.initial.rebalance.delay.ms``: how long the first rebalance of an empty group waits
    #: for more members (extended by the same delay while members keep arriving, up to the
    #: rebalance timeout). Tests use 0.
    initial_rebalance_delay_ms: int = 3000
    #: ``group.min.session.timeout.ms`` / ``group.max.session.timeout.ms``: JoinGroup outside the
    #: range gets INVALID_SESSION_TIMEOUT.
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    #: ``group.max.size``: joins beyond it get GROUP_MAX_SIZE_REACHED.
    max_group_size: int = INT32_MAX
    #: Kafka's ``GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`` (5 minutes, not a
    #: broker property): a member added during a rebalance that never completes its join is removed
    #: after this long.
    new_member_join_timeout_ms: int = 300_000
    #: ``offset.metadata.max.bytes``: longer commit metadata gets OFFSET_METADATA_TOO_LARGE.
    offset_metadata_max_bytes: int = 4096
    #: ``offsets.retention.minutes`` (7 days) in ms: committed offsets of an empty group expire this
    #: long after the group became empty (or after the commit, for simple groups).
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    #: ``offsets.retention.check.interval.ms``: how often expired offsets and groups are removed.
    offsets_retention_check_interval_ms: int = 600_000
    #: ``offsets.topic.num.partitions``: sizes :attr:`Persist.partition`.
    offsets_topic_num_partitions: int = 50
    #: ``group.consumer.session.timeout.ms``: a KIP-848 member not heard from this long is fenced.
    consumer_session_timeout_ms: int = 45_000
    #: ``group.consumer.heartbeat.interval.ms``: how often KIP-848 members are told to heartbeat.
    consumer_heartbeat_interval_ms: int = 5_000
    #: ``group.consumer.assignors``: the server-side assignors, the first being the default.
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    #: ``group.consumer.max.size``: members beyond it get GROUP_MAX_SIZE_REACHED.
    consumer_max_size: int = INT32_MAX
    #: ``group.consumer.migration.policy``: ``bidirectional``, ``upgrade``, ``downgrade`` or
    #: ``disabled``; whether an empty classic group becomes a consumer group on a
    #: ConsumerGroupHeartbeat (upgrade) and an empty consumer group a classic one on a JoinGroup
    #: (downgrade).
    consumer_migration_policy: str = "bidirectional"
    #: ``group.share.session.timeout.ms``: a share group member not heard from this long is fenced.
    share_session_timeout_ms: int = 45_000
    #: ``group.share.heartbeat.interval.ms``: how often share group members are told to heartbeat.
    share_heartbeat_interval_ms: int = 5_000
    #: ``group.share.max.size``: members of one share group beyond it get GROUP_MAX_SIZE_REACHED.
    share_max_size: int = 200

    def __post_init__(self) -> None:
        for name in (
            "initial_rebalance_delay_ms",
            "min_session_timeout_ms",
            "new_member_join_timeout_ms",
            "offset_metadata_max_bytes",
        ):
            if getattr(self, name) < 0:
                raise GroupConfigError(PROPERTY_NAMES[name], "must not be negative")
        for name in ("max_group_size", "offsets_retention_ms", "offsets_retention_check_interval_ms"):
            if getattr(self, name) < 1:
                raise GroupConfigError(PROPERTY_NAMES[name], "must be at least 1")
        if not 1 <= self.offsets_topic_num_partitions <= INT32_MAX:
            raise GroupConfigError(PROPERTY_NAMES["offsets_topic_num_partitions"], "must be at least 1")
        for name in (
            "consumer_session_timeout_ms",
            "consumer_heartbeat_interval_ms",
            "consumer_max_size",
            "share_session_timeout_ms",
            "share_heartbeat_interval_ms",
            "share_max_size",
        ):
            if getattr(self, name) < 1:
                raise GroupConfigError(PROPERTY_NAMES[name], "must be at least 1")
        if not self.consumer_assignors or any(a not in CONSUMER_ASSIGNORS for a in self.consumer_assignors):
            raise GroupConfigError(
                PROPERTY_NAMES["consumer_assignors"], f"known assignors: {', '.join(CONSUMER_ASSIGNORS)}"
            )
        if self.consumer_migration_policy not in MIGRATION_POLICIES:
            raise GroupConfigError(
                PROPERTY_NAMES["consumer_migration_policy"], f"one of {', '.join(MIGRATION_POLICIES)}"
            )
        if self.max_session_timeout_ms < self.min_session_timeout_ms:
            raise GroupConfigError(PROPERTY_NAMES["max_session_timeout_ms"], "must not be below the minimum")


#: Kafka's property name of every :class:`GroupConfig` field.
PROPERTY_NAMES: Final[dict[str, str]] = {
    "initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
    "min_session_timeout_ms": "group.min.session.timeout.ms",
    "max_session_timeout_ms": "group.max.session.timeout.ms",
    "max_group_size": "group.max.size",
    "new_member_join_timeout_ms": "group.classic.new.member.join.timeout.ms",  # internal in Kafka
    "offset_metadata_max_bytes": "offset.metadata.max.bytes",
    "offsets_retention_ms": "offsets.retention.minutes",  # Kafka's value times 60_000
    "offsets_retention_check_interval_ms": "offsets.retention.check.interval.ms",
    "offsets_topic_num_partitions": "offsets.topic.num.partitions",
    "consumer_session_timeout_ms": "group.consumer.session.timeout.ms",
    "consumer_heartbeat_interval_ms": "group.consumer.heartbeat.interval.ms",
    "consumer_assignors": "group.consumer.assignors",
    "consumer_max_size": "group.consumer.max.size",
    "consumer_migration_policy": "group.consumer.migration.policy",
    "share_session_timeout_ms": "group.share.session.timeout.ms",
    "share_heartbeat_interval_ms": "group.share.heartbeat.interval.ms",
    "share_max_size": "group.share.max.size",
}
