"""The active controller of a KRaft cluster (Kafka's ``QuorumController``), as a pure state machine.

The controller is active only while the local raft replica leads the metadata quorum. It answers
the controller APIs by proposing metadata records (``MetadataLog.append``) and holds each answer
(a :class:`~kafka_wire.broker.state.Waiting`) until the records it proposed are committed; a
request that changes nothing is answered at once. Committed batches come back through
:meth:`QuorumController.replay` on every controller, active or not, and build the committed
:class:`~kafka_wire.broker.controller.image.MetadataImage`. The active controller also applies
its own proposals at once to a working image (so the next request sees them), which it rebuilds
from the committed image whenever it becomes active.

APIs (Kafka's error codes): BrokerRegistration, BrokerHeartbeat, AlterPartition, CreateTopics,
DeleteTopics, CreatePartitions, IncrementalAlterConfigs, ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments, AllocateProducerIds. A request reaching a
controller that is not active is answered NOT_CONTROLLER, as is a held request whose controller
lost its leadership before its records were committed; a held request that is not committed by
its deadline gets REQUEST_TIMED_OUT.

Periodic work (:meth:`QuorumController.tick`): brokers whose heartbeats stopped for
``broker.session.timeout.ms`` are fenced (their leaderships move, they leave every ISR); every
``leader.imbalance.check.interval.seconds`` with ``auto.leader.rebalance.enable``, partitions not
led by their preferred (first) replica get a preferred election when that replica is eligible
(KRaft does not use ``leader.imbalance.per.broker.percentage``). Every
``metadata.log.max.record.bytes.between.snapshots`` committed bytes, the committed image is
written as a snapshot (``MetadataLog.write_snapshot``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from kafka_wire.broker import buggify
from kafka_wire.broker.cluster_view import PartitionState
from kafka_wire.broker.controller import brokers, configs, partitions, topics
from kafka_wire.broker.controller.elections import Election, build_partition_change
from kafka_wire.broker.controller.image import (
    NO_LEADER,
    ConfigResourceType,
    MetadataDelta,
    MetadataImage,
)
from kafka_wire.broker.controller.records import decode_record, encode_record
from kafka_wire.broker.controller.settings import (
    DEFAULT_COMMIT_TIMEOUT_MS,
    MAX_ELECTIONS_PER_IMBALANCE,
    METADATA_VERSION_FEATURE,
    METADATA_VERSION_LEVEL,
    ControllerConfig,
)
from kafka_wire.broker.error_answers import ERROR_ANSWERS, failure_answer
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AllocateProducerIdsResponse,
    AlterPartitionResponse,
    ApiKey,
    BrokerHeartbeatResponse,
    BrokerRegistrationResponse,
    ErrorCode,
    FeatureLevelRecord,
    PartitionChangeRecord,
)


class MetadataLog(Protocol):
    """The local raft replica of ``__cluster_metadata``, as the controller uses it."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def epoch(self) -> int: ...

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        ...

    def append(self, records: list[bytes], now_ms: int) -> int | None:
        """Append one batch (leader only); the offset of its last record, or None if refused."""
        ...

    def write_snapshot(self, offset: int, records: list[bytes], now_ms: int) -> None:
        """Write a snapshot of the image at ``offset`` (the last record it includes)."""
        ...


@dataclass(slots=True)
class _Held:
    """An answer held until the records its request proposed are committed."""

    controller: QuorumController
    epoch: int
    offset: int
    deadline_ms: int
    answer: Callable[[], Message]
    fail: Callable[[int], Message]

    def poll(self, now_ms: int) -> Message | None:
        c = self.controller
        if not c.active or c.raft.epoch != self.epoch:
            return self.fail(ErrorCode.NOT_CONTROLLER)
        if c.committed_offset >= self.offset:
            return self.answer()
        if now_ms >= self.deadline_ms:
            return self.fail(ErrorCode.REQUEST_TIMED_OUT)
        return None


class QuorumController:
    """Answers the controller APIs while the local raft replica leads."""

    def __init__(self, config: ControllerConfig, raft: MetadataLog, rng: random.Random) -> None:
        self.config = config
        self.raft = raft
        self.rng = rng
        #: The committed image (replayed batches only).
        self.committed = MetadataImage()
        #: The committed image plus this controller's uncommitted proposals.
        self.image = MetadataImage()
        self.committed_offset = -1
        self._active_epoch: int | None = None
        self._last_proposed = -1
        #: Last offsets of the batches proposed in this leadership and not yet replayed.
        self._proposed: set[int] = set()
        self.contact_ms: dict[int, int] = {}
        self.reported_offset: dict[int, int] = {}
        self.shutdown_offset: dict[int, int] = {}
        self._next_rebalance_ms: int | None = None
        self._bytes_since_snapshot = 0
        self._last_snapshot_offset = -1

    # -- leadership ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.raft.is_leader and self._active_epoch == self.raft.epoch

    def _refresh(self, now_ms: int) -> bool:
        """Become active on a new raft leadership (rebuilding the working image from the
        committed one, giving every broker a fresh session), or inactive; True if active."""
        if not self.raft.is_leader:
            self._active_epoch = None
            return False
        if self._active_epoch == self.raft.epoch:
            return True
        self._active_epoch = self.raft.epoch
        self.image = MetadataImage()
        self.image.load_snapshot(self.committed.offset, self.committed.snapshot_records())
        self._last_proposed = -1
        self._proposed.clear()
        self.contact_ms = {b.node_id: now_ms for b in self.image.brokers()}
        self.shutdown_offset.clear()
        self._next_rebalance_ms = (
            now_ms + self.config.leader_imbalance_check_interval_ms
            if self.config.auto_leader_rebalance_enable
            else None
        )
        if METADATA_VERSION_FEATURE not in self.image.features:
            self.propose(
                [FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=METADATA_VERSION_LEVEL)],
                now_ms,
            )
        return True

    # -- the committed log -----------------------------------------------------------------------

    def replay(self, offset: int, records: Sequence[bytes], now_ms: int = 0) -> MetadataDelta:
        """Apply a committed batch (its last record at ``offset``); ``DecodeError`` on bytes that
        are no metadata record."""
        decoded = [decode_record(r) for r in records]
        delta = self.committed.apply_batch(offset, decoded)
        if offset in self._proposed:
            self._proposed.discard(offset)  # applied to the working image when proposed
        else:
            self.image.apply_batch(offset, decoded)
        self.committed_offset = max(self.committed_offset, offset)
        self._bytes_since_snapshot += sum(len(r) for r in records)
        if self._bytes_since_snapshot >= self.config.snapshot_max_bytes:
            self._bytes_since_snapshot = 0
            self._last_snapshot_offset = offset
            self.raft.write_snapshot(
                offset, [encode_record(r) for r in self.committed.snapshot_records()], now_ms
            )
        return delta

    def load_snapshot(self, offset: int, records: Sequence[bytes]) -> MetadataDelta:
        """Replace the committed image by a snapshot taken at ``offset``."""
        decoded = [decode_record(r) for r in records]
        delta = self.committed.load_snapshot(offset, decoded)
        self.image.load_snapshot(offset, decoded)
        self.committed_offset = offset
        self._bytes_since_snapshot = 0
        return delta

    def propose(self, records: list[Message], now_ms: int) -> int | None:
        if not records:
            return self._last_proposed
        last = self.raft.append([encode_record(r) for r in records], now_ms)
        if last is None:
            return None
        self.image.apply_batch(last, records)
        self._last_proposed = last
        self._proposed.add(last)
        return last

    def answer_when_committed(
        self,
        records: list[Message],
        answer: Callable[[], Message],
        fail: Callable[[int], Message],
        now_ms: int,
        timeout_ms: int = DEFAULT_COMMIT_TIMEOUT_MS,
    ) -> Message | Waiting:
        """Propose ``records`` and answer once they (and everything before them) are committed."""
        if not records and self._last_proposed <= self.committed_offset:
            return answer()
        last = self.propose(records, now_ms)
        if last is None:
            return fail(ErrorCode.NOT_CONTROLLER)
        assert self._active_epoch is not None
        deadline = now_ms + (timeout_ms if timeout_ms > 0 else DEFAULT_COMMIT_TIMEOUT_MS)
        return _Held(self, self._active_epoch, last, deadline, answer, fail)

    # -- requests --------------------------------------------------------------------------------

    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        """Answer one controller request (NOT_CONTROLLER unless this controller is active)."""
        handler = _HANDLERS.get(api_key)
        if handler is None:
            raise ValueError(f"api {api_key} is not a controller API")
        if not self._refresh(now_ms):
            return error_response(api_key, api_version, body, ErrorCode.NOT_CONTROLLER)
        return handler(self, api_version, body, now_ms)

    def acceptable(self, broker: int) -> bool:
        info = self.image.broker(broker)
        return info is not None and not info.fenced and not info.in_controlled_shutdown

    def _topic_setting(self, topic: str, key: str) -> str | None:
        """A topic config: the topic's, else the cluster-wide dynamic default (broker "")."""
        value = self.image.topic_configs(topic).get(key)
        if value is None:
            value = self.image.configs.get((ConfigResourceType.BROKER, ""), {}).get(key)
        return value

    def min_isr(self, topic: str) -> int:
        value = self._topic_setting(topic, "min.insync.replicas")
        return int(value) if value is not None and value.isdigit() else self.config.min_insync_replicas

    def unclean(self, topic: str) -> bool:
        value = self._topic_setting(topic, "unclean.leader.election.enable")
        return self.config.unclean_leader_election_enable if value is None else value.lower() == "true"

    def change(
        self,
        p: PartitionState,
        records: list[Message],
        acceptable: Callable[[int], bool] | None = None,
        **kw: object,
    ) -> PartitionChangeRecord | None:
        """Build one partition change by Kafka's rules, add it to ``records``, apply it to a copy."""
        election = kw.pop("election", Election.UNCLEAN if self.unclean(p.topic) else Election.ONLINE)
        record = build_partition_change(
            p,
            acceptable or self.acceptable,
            election=election,  # type: ignore[arg-type]
            min_isr=self.min_isr(p.topic),
            elr_enabled=self.config.elr_enabled,
            **kw,  # type: ignore[arg-type]
        )
        if record is not None:
            records.append(record)
        return record

    def leader_and_isr_updates(
        self,
        records: list[Message],
        remove: int = NO_LEADER,
        add: int = NO_LEADER,
        unclean_shutdown: int = NO_LEADER,
    ) -> None:
        """Kafka's ``generateLeaderAndIsrUpdates``: ``remove`` leaves every ISR it is in and every
        leadership; ``add`` (just unfenced) may take leaderless partitions."""

        def acceptable(r: int) -> bool:
            return r not in (remove, unclean_shutdown) and (r == add or self.acceptable(r))

        gone = {remove, unclean_shutdown} - {NO_LEADER}
        for p in list(self.image.all_partitions()):
            if add != NO_LEADER:
                if p.leader != NO_LEADER:
                    continue
            elif not (gone & set(p.isr) or gone & set(p.elr) or p.leader in gone):
                continue
            target = tuple(r for r in p.isr if r not in gone)
            self.change(
                p,
                records,
                acceptable,
                target_isr=target,
                unclean_shutdown_replicas=tuple(gone) if unclean_shutdown != NO_LEADER else (),
            )

    def has_session(self, broker: int, now_ms: int) -> bool:
        contact = self.contact_ms.get(broker)
        return contact is not None and now_ms - contact < self.config.session_timeout_ms

    # periodic work ----------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        if self._active_epoch is None:
            return None
        deadlines = [
            contact + self.config.session_timeout_ms
            for broker, contact in self.contact_ms.items()
            if (info := self.image.broker(broker)) is not None and not info.fenced
        ]
        if self._next_rebalance_ms is not None:
            deadlines.append(self._next_rebalance_ms)
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> None:
        """Fence brokers whose sessions expired; rebalance leaders when it is time."""
        if not self._refresh(now_ms):
            return
        records: list[Message] = []
        for broker in self._stale_brokers(now_ms):
            self._fence_now(broker, now_ms)
        if self._next_rebalance_ms is not None and (
            now_ms >= self._next_rebalance_ms or buggify.hooks.fire("controller.early_rebalance")
        ):
            self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
            for p in self._imbalanced():
                if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
                    break
                self.change(p, records, election=Election.PREFERRED)
            self.propose(records, now_ms)

    def _stale_brokers(self, now_ms: int) -> list[int]:
        """The unfenced brokers whose sessions expired, the longest silent first (Kafka's
        ``BrokerHeartbeatManager`` keeps its unfenced brokers sorted by last contact and fences
        them one at a time from the oldest). The order matters when several expire at once (the
        controller's clock jumped, or it stalled): a fenced broker leaves every ISR but the last
        member standing, so the broker that has been silent longest (a dead incarnation still
        registered) must go first, never be the one left."""
        stale = [
            (self.contact_ms.get(info.node_id, -1), info.node_id)
            for info in self.image.brokers()
            if not info.fenced and not self.has_session(info.node_id, now_ms)
        ]
        return [broker for _, broker in sorted(stale)]

    def _fence_now(self, broker: int, now_ms: int) -> None:
        records: list[Message] = []
        brokers.fence(self, broker, records)
        self.propose(records, now_ms)

    def _imbalanced(self) -> Iterable[PartitionState]:
        for p in self.image.all_partitions():
            if (
                p.replicas
                and p.leader != p.replicas[0]
                and p.replicas[0] in p.isr
                and self.acceptable(p.replicas[0])
            ):
                yield p


Handler = Callable[[QuorumController, int, Message, int], Message | Waiting]

_HANDLERS: Final[dict[int, Handler]] = {
    ApiKey.BROKER_REGISTRATION: brokers.broker_registration,  # type: ignore[dict-item]
    ApiKey.BROKER_HEARTBEAT: brokers.broker_heartbeat,  # type: ignore[dict-item]
    ApiKey.ALTER_PARTITION: partitions.alter_partition,  # type: ignore[dict-item]
    ApiKey.CREATE_TOPICS: topics.create_topics,  # type: ignore[dict-item]
    ApiKey.DELETE_TOPICS: topics.delete_topics,  # type: ignore[dict-item]
    ApiKey.CREATE_PARTITIONS: topics.create_partitions,  # type: ignore[dict-item]
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,  # type: ignore[dict-item]
    ApiKey.ELECT_LEADERS: partitions.elect_leaders,  # type: ignore[dict-item]
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: partitions.alter_partition_reassignments,  # type: ignore[dict-item]
    ApiKey.LIST_PARTITION_REASSIGNMENTS: partitions.list_partition_reassignments,  # type: ignore[dict-item]
    ApiKey.ALLOCATE_PRODUCER_IDS: brokers.allocate_producer_ids,  # type: ignore[dict-item]
}

#: The API keys :meth:`QuorumController.handle` answers.
CONTROLLER_APIS: Final = frozenset(_HANDLERS)


def error_response(api_key: int, api_version: int, body: Message, code: int) -> Message:
    """The answer to a controller request that failed whole with ``code`` (NOT_CONTROLLER)."""
    if api_key in ERROR_ANSWERS:  # the request's shape with a message, as Kafka's getErrorResponse
        return failure_answer(api_key, body, code)
    simple: dict[int, Callable[[], Message]] = {
        ApiKey.BROKER_REGISTRATION: lambda: BrokerRegistrationResponse(error_code=code, broker_epoch=-1),
        ApiKey.BROKER_HEARTBEAT: lambda: BrokerHeartbeatResponse(error_code=code, is_fenced=True),
        ApiKey.ALTER_PARTITION: lambda: AlterPartitionResponse(error_code=code),
        ApiKey.ALLOCATE_PRODUCER_IDS: lambda: AllocateProducerIdsResponse(
            error_code=code, producer_id_start=-1, producer_id_len=0
        ),
    }
    return simple[api_key]()


__all__ = [
    "CONTROLLER_APIS",
    "ControllerConfig",
    "MetadataLog",
    "QuorumController",
    "error_response",
]
