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
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.elections import Election, build_partition_change
from kafka_wire.broker.controller.heartbeats import BrokerState, HeartbeatInput, next_state
from kafka_wire.broker.controller.image import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    UNFENCE,
    ConfigResourceType,
    MetadataDelta,
    MetadataImage,
    merge_partition_change,
)
from kafka_wire.broker.controller.placement import assign_replicas
from kafka_wire.broker.controller.records import decode_record, encode_record
from kafka_wire.broker.internal_topics import RESERVED_TOPICS
from kafka_wire.broker.log.config import ConfigError, LogConfig
from kafka_wire.broker.metadata import random_uuid, topic_name_problem
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseReassignablePartitionResponse,
    AlterPartitionReassignmentsResponseReassignableTopicResponse,
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationChangeRecord,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConfigRecord,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
    ErrorCode,
    FeatureLevelRecord,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponseOngoingPartitionReassignment,
    ListPartitionReassignmentsResponseOngoingTopicReassignment,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
    RemoveTopicRecord,
    TopicRecord,
)

#: The ``metadata.version`` feature and the level this controller finalizes: 3.9-IV0.
METADATA_VERSION_FEATURE: Final = "metadata.version"
METADATA_VERSION_LEVEL: Final = 21
#: ``ProducerIdManager``'s block size (``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``).
PRODUCER_ID_BLOCK_SIZE: Final = 1000
#: Most preferred elections one rebalance run proposes (Kafka's ``maxElectionsPerImbalance``).
MAX_ELECTIONS_PER_IMBALANCE: Final = 1000
#: How long a held controller answer waits for its records to commit when the request names no
#: timeout (Kafka's ``request.timeout.ms`` default).
DEFAULT_COMMIT_TIMEOUT_MS: Final = 30_000

#: IncrementalAlterConfigs operations (``AlterConfigOp.OpType``).
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
#: ElectLeaders ``ElectionType``.
ELECTION_PREFERRED, ELECTION_UNCLEAN = 0, 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerConfig:
    """The controller's settings, by Kafka's property names."""

    node_id: int
    cluster_id: str
    #: ``broker.session.timeout.ms``.
    session_timeout_ms: int = 9_000
    #: ``num.partitions``.
    num_partitions: int = 1
    #: ``default.replication.factor``.
    default_replication_factor: int = 1
    #: ``min.insync.replicas`` (cluster default; a topic config overrides it).
    min_insync_replicas: int = 1
    #: ``unclean.leader.election.enable`` (cluster default; a topic config overrides it).
    unclean_leader_election_enable: bool = False
    #: ``auto.leader.rebalance.enable``.
    auto_leader_rebalance_enable: bool = True
    #: ``leader.imbalance.check.interval.seconds`` (300), in ms.
    leader_imbalance_check_interval_ms: int = 300_000
    #: ``metadata.log.max.record.bytes.between.snapshots`` (20 MiB).
    snapshot_max_bytes: int = 20 * 1024 * 1024
    #: Track eligible leader replicas (KIP-966).
    elr_enabled: bool = True

    def __post_init__(self) -> None:
        if self.session_timeout_ms <= 0 or self.leader_imbalance_check_interval_ms <= 0:
            raise ValueError("controller timeouts must be positive")
        if self.default_replication_factor < 1 or self.num_partitions < 1 or self.min_insync_replicas < 1:
            raise ValueError("num.partitions, default.replication.factor and min.insync.replicas must be >= 1")


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
        self._contact_ms: dict[int, int] = {}
        self._reported_offset: dict[int, int] = {}
        self._shutdown_offset: dict[int, int] = {}
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
        self._contact_ms = {b.node_id: now_ms for b in self.image.brokers()}
        self._shutdown_offset.clear()
        self._next_rebalance_ms = (
            now_ms + self.config.leader_imbalance_check_interval_ms if self.config.auto_leader_rebalance_enable else None
        )
        if METADATA_VERSION_FEATURE not in self.image.features:
            self._propose([FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=METADATA_VERSION_LEVEL)], now_ms)
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
            self.raft.write_snapshot(offset, [encode_record(r) for r in self.committed.snapshot_records()], now_ms)
        return delta

    def load_snapshot(self, offset: int, records: Sequence[bytes]) -> MetadataDelta:
        """Replace the committed image by a snapshot taken at ``offset``."""
        decoded = [decode_record(r) for r in records]
        delta = self.committed.load_snapshot(offset, decoded)
        self.image.load_snapshot(offset, decoded)
        self.committed_offset = offset
        self._bytes_since_snapshot = 0
        return delta

    def _propose(self, records: list[Message], now_ms: int) -> int | None:
        if not records:
            return self._last_proposed
        last = self.raft.append([encode_record(r) for r in records], now_ms)
        if last is None:
            return None
        self.image.apply_batch(last, records)
        self._last_proposed = last
        self._proposed.add(last)
        return last

    def _answer(
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
        last = self._propose(records, now_ms)
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

    def _acceptable(self, broker: int) -> bool:
        info = self.image.broker(broker)
        return info is not None and not info.fenced and not info.in_controlled_shutdown

    def _min_isr(self, topic: str) -> int:
        value = self.image.topic_configs(topic).get("min.insync.replicas")
        return int(value) if value is not None else self.config.min_insync_replicas

    def _unclean(self, topic: str) -> bool:
        value = self.image.topic_configs(topic).get("unclean.leader.election.enable")
        if value is None:
            value = self.image.configs.get((ConfigResourceType.BROKER, ""), {}).get("unclean.leader.election.enable")
        return self.config.unclean_leader_election_enable if value is None else value.lower() == "true"

    def _change(
        self, p: PartitionState, records: list[Message], acceptable: Callable[[int], bool] | None = None, **kw: object
    ) -> PartitionChangeRecord | None:
        """Build one partition change by Kafka's rules, add it to ``records``, apply it to a copy."""
        election = kw.pop("election", Election.UNCLEAN if self._unclean(p.topic) else Election.ONLINE)
        record = build_partition_change(
            p,
            acceptable or self._acceptable,
            election=election,  # type: ignore[arg-type]
            min_isr=self._min_isr(p.topic),
            elr_enabled=self.config.elr_enabled,
            **kw,  # type: ignore[arg-type]
        )
        if record is not None:
            records.append(record)
        return record

    def _leader_and_isr_updates(
        self, records: list[Message], remove: int = NO_LEADER, add: int = NO_LEADER, unclean_shutdown: int = NO_LEADER
    ) -> None:
        """Kafka's ``generateLeaderAndIsrUpdates``: ``remove`` leaves every ISR it is in and every
        leadership; ``add`` (just unfenced) may take leaderless partitions."""

        def acceptable(r: int) -> bool:
            return r not in (remove, unclean_shutdown) and (r == add or self._acceptable(r))

        gone = {remove, unclean_shutdown} - {NO_LEADER}
        for p in list(self.image.all_partitions()):
            if add != NO_LEADER:
                if p.leader != NO_LEADER:
                    continue
            elif not (gone & set(p.isr) or gone & set(p.elr) or p.leader in gone):
                continue
            target = tuple(r for r in p.isr if r not in gone)
            self._change(
                p,
                records,
                acceptable,
                target_isr=target,
                unclean_shutdown_replicas=tuple(gone) if unclean_shutdown != NO_LEADER else (),
            )

    # BrokerRegistration -----------------------------------------------------------------------------

    def _broker_registration(self, version: int, req: BrokerRegistrationRequest, now_ms: int) -> Message | Waiting:
        def fail(code: int) -> Message:
            return BrokerRegistrationResponse(error_code=code, broker_epoch=-1)

        if req.cluster_id != self.config.cluster_id:
            return fail(ErrorCode.INCONSISTENT_CLUSTER_ID)
        existing = self.image.registration(req.broker_id)
        if existing is not None and self._has_session(req.broker_id, now_ms):
            if existing.incarnation_id != req.incarnation_id:
                return fail(ErrorCode.DUPLICATE_BROKER_REGISTRATION)
        if req.is_migrating_zk_broker:
            return fail(ErrorCode.BROKER_ID_NOT_REGISTERED)
        if not req.log_dirs or len(set(req.log_dirs)) != len(req.log_dirs) or ZERO_UUID in req.log_dirs:
            return fail(ErrorCode.INVALID_REGISTRATION)
        features = [(f.name, f.min_supported_version, f.max_supported_version) for f in req.features]
        if all(name != METADATA_VERSION_FEATURE for name, _, _ in features):
            features.append((METADATA_VERSION_FEATURE, 1, 1))  # MINIMUM_KRAFT_VERSION, as Kafka assumes
        for name, low, high in features:
            level = self.image.features.get(name)
            if level is not None and not low <= level <= high:
                return fail(ErrorCode.UNSUPPORTED_VERSION)
        records: list[Message] = []
        amend = existing is not None and existing.incarnation_id == req.incarnation_id
        if amend and existing is not None:
            # The same incarnation again (a retry): epoch, fencing and shutdown state stay.
            epoch, fenced, shutdown = existing.info.epoch, existing.info.fenced, existing.info.in_controlled_shutdown
        else:
            # A new incarnation: Kafka's broker epoch is the offset of the first record written for
            # it. With ELR, the old incarnation may have lost data (an unclean shutdown): it leaves
            # every ISR and ELR first, and its leaderships move.
            epoch, fenced, shutdown = self.raft.log_end_offset, True, False
            if self.config.elr_enabled:
                self._leader_and_isr_updates(records, unclean_shutdown=req.broker_id)
        records.append(
            RegisterBrokerRecord(
                broker_id=req.broker_id,
                incarnation_id=req.incarnation_id,
                broker_epoch=epoch,
                end_points=[
                    RegisterBrokerRecordBrokerEndpoint(
                        name=lst.name, host=lst.host, port=lst.port, security_protocol=lst.security_protocol
                    )
                    for lst in req.listeners
                ],
                features=[
                    RegisterBrokerRecordBrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                    for n, lo, hi in features
                ],
                rack=req.rack,
                fenced=fenced,
                in_controlled_shutdown=shutdown,
                log_dirs=list(req.log_dirs),
            )
        )
        self._contact_ms[req.broker_id] = now_ms
        if not amend:
            self._shutdown_offset.pop(req.broker_id, None)
        return self._answer(records, lambda: BrokerRegistrationResponse(broker_epoch=epoch), fail, now_ms)

    def _has_session(self, broker: int, now_ms: int) -> bool:
        contact = self._contact_ms.get(broker)
        return contact is not None and now_ms - contact < self.config.session_timeout_ms

    # BrokerHeartbeat --------------------------------------------------------------------------------

    def _broker_state(self, broker: int) -> BrokerState:
        info = self.image.broker(broker)
        if info is None or info.fenced:
            return BrokerState.FENCED
        return BrokerState.CONTROLLED_SHUTDOWN if info.in_controlled_shutdown else BrokerState.UNFENCED

    def _broker_heartbeat(self, version: int, req: BrokerHeartbeatRequest, now_ms: int) -> Message | Waiting:
        def fail(code: int) -> Message:
            return BrokerHeartbeatResponse(error_code=code, is_fenced=True)

        reg = self.image.registration(req.broker_id)
        if reg is None or reg.info.epoch != req.broker_epoch:
            return fail(ErrorCode.STALE_BROKER_EPOCH)
        broker, epoch = req.broker_id, req.broker_epoch
        self._contact_ms[broker] = now_ms
        self._reported_offset[broker] = req.current_metadata_offset
        caught_up = req.current_metadata_offset >= epoch
        state = self._broker_state(broker)
        if req.want_fence:
            event = HeartbeatInput.WANT_FENCE
        elif state is BrokerState.CONTROLLED_SHUTDOWN and self._moves_done(broker):
            event = HeartbeatInput.MOVES_DONE
        elif req.want_shut_down:
            event = HeartbeatInput.WANT_SHUT_DOWN
        else:
            event = HeartbeatInput.CAUGHT_UP if caught_up else HeartbeatInput.BEHIND
        new = next_state(state, event)
        records: list[Message] = []
        if new is BrokerState.UNFENCED and state is BrokerState.FENCED:
            records.append(BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=epoch, fenced=UNFENCE))
            self._leader_and_isr_updates(records, add=broker)
        elif new is BrokerState.CONTROLLED_SHUTDOWN and state is not BrokerState.CONTROLLED_SHUTDOWN:
            records.append(BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=epoch, in_controlled_shutdown=1))
            self._leader_and_isr_updates(records, remove=broker)
        elif new in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW) and state is not BrokerState.FENCED:
            self._fence(broker, records)
        if new is BrokerState.CONTROLLED_SHUTDOWN and state is not BrokerState.CONTROLLED_SHUTDOWN:
            last = self._propose(records, now_ms)
            if last is None:
                return fail(ErrorCode.NOT_CONTROLLER)
            self._shutdown_offset[broker] = last
            records = []

        def answer() -> Message:
            return BrokerHeartbeatResponse(
                is_caught_up=caught_up,
                is_fenced=new in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW),
                should_shut_down=new is BrokerState.SHUTDOWN_NOW,
            )

        return self._answer(records, answer, fail, now_ms)

    def _moves_done(self, broker: int) -> bool:
        """Whether the leadership moves of ``broker``'s controlled shutdown are committed and
        every active broker has reported a metadata offset past them (Kafka: the controlled
        shutdown offset is at or below the lowest active offset)."""
        # After a controller failover the moves are whatever the image holds.
        offset = self._shutdown_offset.setdefault(broker, self.image.offset)
        if self.committed_offset < offset:
            return False
        if any(p.leader == broker for p in self.image.all_partitions()):
            return False
        for info in self.image.brokers():
            if info.node_id != broker and not info.fenced and not info.in_controlled_shutdown:
                if self._reported_offset.get(info.node_id, -1) < offset:
                    return False
        return True

    def _fence(self, broker: int, records: list[Message]) -> None:
        info = self.image.broker(broker)
        if info is None:
            return
        self._leader_and_isr_updates(records, remove=broker)
        records.append(BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=info.epoch, fenced=1))

    # AlterPartition ---------------------------------------------------------------------------------

    def _alter_partition(self, version: int, req: AlterPartitionRequest, now_ms: int) -> Message | Waiting:
        reg = self.image.registration(req.broker_id)
        if reg is None or reg.info.epoch != req.broker_epoch:
            return AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        response = AlterPartitionResponse()
        records: list[Message] = []
        for topic_data in req.topics:
            out = AlterPartitionResponseTopicData(topic_id=topic_data.topic_id, topic_name=topic_data.topic_name)
            response.topics.append(out)
            name = self.image.topic_name(topic_data.topic_id) if version > 1 else topic_data.topic_name
            if name is None or name not in self.image.topics:
                code = ErrorCode.UNKNOWN_TOPIC_ID if version > 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                out.partitions = [
                    AlterPartitionResponsePartitionData(partition_index=p.partition_index, error_code=code)
                    for p in topic_data.partitions
                ]
                continue
            for data in topic_data.partitions:
                out.partitions.append(self._alter_one(version, req.broker_id, name, data, records))
        return self._answer(records, lambda: response, lambda code: AlterPartitionResponse(error_code=code), now_ms)

    def _alter_one(
        self, version: int, broker: int, topic: str, data: AlterPartitionRequestPartitionData, records: list[Message]
    ) -> AlterPartitionResponsePartitionData:
        index = data.partition_index
        isr_with_epochs = (
            [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs]
            if version >= 3
            else [(b, -1) for b in data.new_isr]
        )
        p = self.image.partition(topic, index)
        code = self._check_alter(version, broker, p, data, isr_with_epochs)
        if code != ErrorCode.NONE or p is None:
            return AlterPartitionResponsePartitionData(partition_index=index, error_code=code)
        record = self._change(
            p,
            records,
            target_isr=[b for b, _ in isr_with_epochs],
            target_leader_recovery_state=LeaderRecoveryState(data.leader_recovery_state),
        )
        if record is not None:
            p = merge_partition_change(p, record)
            if record.leader not in (broker, NO_LEADER_CHANGE):
                code = ErrorCode.NEW_LEADER_ELECTED if version > 1 else ErrorCode.FENCED_LEADER_EPOCH
                return AlterPartitionResponsePartitionData(partition_index=index, error_code=code)
        return AlterPartitionResponsePartitionData(
            partition_index=index,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            isr=list(p.isr),
            leader_recovery_state=int(p.leader_recovery_state),
            partition_epoch=p.partition_epoch,
        )

    def _check_alter(
        self,
        version: int,
        broker: int,
        p: PartitionState | None,
        data: AlterPartitionRequestPartitionData,
        isr_with_epochs: list[tuple[int, int]],
    ) -> int:
        """Kafka's ``validateAlterPartitionData``, in its order."""
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if data.leader_epoch > p.leader_epoch or data.partition_epoch > p.partition_epoch:
            return ErrorCode.NOT_CONTROLLER  # the broker knows newer metadata than this controller
        if data.leader_epoch < p.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if broker != p.leader:
            return ErrorCode.INVALID_REQUEST
        if data.partition_epoch < p.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        new_isr = [b for b, _ in isr_with_epochs]
        if len(set(new_isr)) != len(new_isr) or any(b not in p.replicas for b in new_isr) or p.leader not in new_isr:
            return ErrorCode.INVALID_REQUEST
        recovering = data.leader_recovery_state == LeaderRecoveryState.RECOVERING
        if recovering and len(new_isr) > 1:
            return ErrorCode.INVALID_REQUEST
        if recovering and p.leader_recovery_state is LeaderRecoveryState.RECOVERED:
            return ErrorCode.INVALID_REQUEST
        for b, epoch in isr_with_epochs:
            info = self.image.broker(b)
            if info is None or info.fenced or info.in_controlled_shutdown or epoch not in (-1, info.epoch):
                return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
        return ErrorCode.NONE

    # CreateTopics -----------------------------------------------------------------------------------

    def _create_topics(self, version: int, req: CreateTopicsRequest, now_ms: int) -> Message | Waiting:
        counts: dict[str, int] = {}
        for t in req.topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        results: list[CreateTopicsResponseCreatableTopicResult] = []
        records: list[Message] = []
        for entry in req.topics:
            result = CreateTopicsResponseCreatableTopicResult(name=entry.name, num_partitions=-1, replication_factor=-1)
            results.append(result)
            if counts[entry.name] > 1:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = f"Found multiple entries for topic {entry.name}"
                continue
            topic_records = self._new_topic(entry, result)
            if topic_records is not None and not req.validate_only:
                records += topic_records
        response = CreateTopicsResponse(topics=results)

        def fail(code: int) -> Message:
            return CreateTopicsResponse(
                topics=[CreateTopicsResponseCreatableTopicResult(name=t.name, error_code=code) for t in req.topics]
            )

        return self._answer(records, lambda: response, fail, now_ms, req.timeout_ms)

    def _new_topic(
        self, entry: CreateTopicsRequestCreatableTopic, result: CreateTopicsResponseCreatableTopicResult
    ) -> list[Message] | None:
        def refuse(code: int, message: str) -> list[Message] | None:
            result.error_code, result.error_message = code, message
            return None

        name = entry.name
        if name in RESERVED_TOPICS:
            return refuse(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        problem = topic_name_problem(name)
        if problem is not None:
            return refuse(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name in self.image.topics:
            return refuse(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        active = [b.node_id for b in self.image.brokers() if not b.fenced and not b.in_controlled_shutdown]
        if entry.assignments:
            if entry.num_partitions != -1 or entry.replication_factor != -1:
                return refuse(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but numPartitions or replicationFactor was not set to -1.",
                )
            indexes = sorted(a.partition_index for a in entry.assignments)
            if indexes != list(range(len(indexes))):
                return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0 .. n-1.")
            by_index = {a.partition_index: list(a.broker_ids) for a in entry.assignments}
            assignment = [by_index[i] for i in indexes]
            problem = self._assignment_problem(assignment)
            if problem is not None:
                return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
        else:
            partitions = self.config.num_partitions if entry.num_partitions == -1 else entry.num_partitions
            replication = (
                self.config.default_replication_factor if entry.replication_factor == -1 else entry.replication_factor
            )
            if partitions < 1:
                return refuse(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
            if replication < 1:
                return refuse(
                    ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value."
                )
            if replication > len(active):
                return refuse(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {replication} time(s): The target replication factor of "
                    f"{replication} cannot be reached because only {len(active)} broker(s) are registered.",
                )
            assignment = assign_replicas(active, partitions, replication, self.rng)
        configs = {c.name: c.value for c in entry.configs if c.value is not None}
        try:
            LogConfig.from_properties(configs)
        except ConfigError as exc:
            return refuse(ErrorCode.INVALID_CONFIG, str(exc))
        topic_id = random_uuid(self.rng)
        records: list[Message] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [
            ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=name, name=k, value=v)
            for k, v in sorted(configs.items())
        ]
        for index, replicas in enumerate(assignment):
            isr = [r for r in replicas if self._acceptable(r)]
            if not isr:
                return refuse(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {len(replicas)} time(s): All brokers are currently fenced.",
                )
            records.append(
                PartitionRecord(
                    partition_id=index, topic_id=topic_id, replicas=replicas, isr=isr, leader=isr[0],
                    leader_epoch=0, partition_epoch=0,
                )
            )  # fmt: skip
        result.topic_id = topic_id
        result.num_partitions, result.replication_factor = len(assignment), len(assignment[0])
        return records

    def _assignment_problem(self, assignment: Sequence[Sequence[int]]) -> str | None:
        sizes = {len(replicas) for replicas in assignment}
        if len(sizes) != 1 or 0 in sizes:
            return "All partitions must have the same, non-zero number of replicas."
        for replicas in assignment:
            if len(set(replicas)) != len(replicas):
                return f"Duplicate broker ids in the replica assignment {list(replicas)}."
            for b in replicas:
                if self.image.broker(b) is None:
                    return f"The manual partition assignment includes broker {b}, but no such broker is registered."
        return None

    # DeleteTopics -----------------------------------------------------------------------------------

    def _delete_topics(self, version: int, req: DeleteTopicsRequest, now_ms: int) -> Message | Waiting:
        wanted: list[tuple[str | None, uuid.UUID]] = (
            [(t.name, t.topic_id) for t in req.topics] if version >= 6 else [(n, ZERO_UUID) for n in req.topic_names]
        )
        results: list[DeleteTopicsResponseDeletableTopicResult] = []
        records: list[Message] = []
        removed: set[uuid.UUID] = set()
        for name, topic_id in wanted:
            result = DeleteTopicsResponseDeletableTopicResult(name=name, topic_id=topic_id)
            results.append(result)
            if name is not None and topic_id == ZERO_UUID:
                topic = self.image.topics.get(name)
                if topic is None:
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
            else:
                found = self.image.topic_name(topic_id)
                if found is None:
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                topic = self.image.topics[found]
                result.name = found
            result.topic_id = topic.topic_id
            if topic.topic_id not in removed:
                removed.add(topic.topic_id)
                records.append(RemoveTopicRecord(topic_id=topic.topic_id))

        def fail(code: int) -> Message:
            return DeleteTopicsResponse(
                responses=[DeleteTopicsResponseDeletableTopicResult(name=n, topic_id=i, error_code=code) for n, i in wanted]
            )

        return self._answer(records, lambda: DeleteTopicsResponse(responses=results), fail, now_ms, req.timeout_ms)

    # CreatePartitions -------------------------------------------------------------------------------

    def _create_partitions(self, version: int, req: CreatePartitionsRequest, now_ms: int) -> Message | Waiting:
        results: list[CreatePartitionsResponseTopicResult] = []
        records: list[Message] = []
        for entry in req.topics:
            result = CreatePartitionsResponseTopicResult(name=entry.name)
            results.append(result)
            topic = self.image.topics.get(entry.name)
            if topic is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            current = len(topic.partitions)
            if entry.count <= current:
                result.error_code = ErrorCode.INVALID_PARTITIONS
                result.error_message = (
                    f"Topic currently has {current} partitions, which is higher than the requested {entry.count}."
                    if entry.count < current
                    else f"Topic already has {current} partition(s)."
                )
                continue
            replication = len(topic.partitions[0].replicas) if topic.partitions else 1
            active = [b.node_id for b in self.image.brokers() if not b.fenced and not b.in_controlled_shutdown]
            if entry.assignments:
                assignment = [list(a.broker_ids) for a in entry.assignments]
                problem = (
                    f"Attempted to add {entry.count - current} additional partition(s), but only "
                    f"{len(assignment)} assignment(s) were specified."
                    if len(assignment) != entry.count - current
                    else self._assignment_problem(assignment)
                )
                if problem is not None:
                    result.error_code, result.error_message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
                    continue
            elif replication > len(active):
                result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                result.error_message = (
                    f"Unable to replicate the partition {replication} time(s): The target replication factor of "
                    f"{replication} cannot be reached because only {len(active)} broker(s) are registered."
                )
                continue
            else:
                assignment = assign_replicas(active, entry.count - current, replication, self.rng, first_partition=current)
            new: list[Message] = []
            for offset, replicas in enumerate(assignment):
                isr = [r for r in replicas if self._acceptable(r)]
                if not isr:
                    result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                    result.error_message = "All brokers specified in the partition assignment are currently fenced."
                    break
                new.append(
                    PartitionRecord(
                        partition_id=current + offset, topic_id=topic.topic_id, replicas=replicas, isr=isr,
                        leader=isr[0], leader_epoch=0, partition_epoch=0,
                    )
                )  # fmt: skip
            else:
                if not req.validate_only:
                    records += new

        def fail(code: int) -> Message:
            return CreatePartitionsResponse(
                results=[CreatePartitionsResponseTopicResult(name=t.name, error_code=code) for t in req.topics]
            )

        return self._answer(records, lambda: CreatePartitionsResponse(results=results), fail, now_ms, req.timeout_ms)

    # IncrementalAlterConfigs -----------------------------------------------------------------------

    def _incremental_alter_configs(
        self, version: int, req: IncrementalAlterConfigsRequest, now_ms: int
    ) -> Message | Waiting:
        results: list[IncrementalAlterConfigsResponseAlterConfigsResourceResponse] = []
        records: list[Message] = []
        for resource in req.resources:
            result = IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                resource_type=resource.resource_type, resource_name=resource.resource_name
            )
            results.append(result)
            key = (resource.resource_type, resource.resource_name)
            if resource.resource_type == ConfigResourceType.TOPIC:
                if resource.resource_name not in self.image.topics:
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    result.error_message = f"Topic {resource.resource_name} does not exist."
                    continue
            elif resource.resource_type == ConfigResourceType.BROKER:
                if resource.resource_name and not resource.resource_name.isdigit():
                    result.error_code = ErrorCode.INVALID_REQUEST
                    result.error_message = f"Invalid broker name {resource.resource_name}"
                    continue
            else:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = f"Unsupported resource type {resource.resource_type}"
                continue
            old = dict(self.image.configs.get(key, {}))
            new = dict(old)
            problem = None
            for c in resource.configs:
                if c.config_operation == OP_SET:
                    if c.value is None:
                        problem = f"Null value not supported for {c.name}"
                        break
                    new[c.name] = c.value
                elif c.config_operation == OP_DELETE:
                    new.pop(c.name, None)
                elif c.config_operation in (OP_APPEND, OP_SUBTRACT):
                    items = [v for v in new.get(c.name, "").split(",") if v]
                    given = [v for v in (c.value or "").split(",") if v]
                    if c.config_operation == OP_APPEND:
                        items += [v for v in given if v not in items]
                    else:
                        items = [v for v in items if v not in given]
                    new[c.name] = ",".join(items)
                else:
                    problem = f"Unknown operation {c.config_operation}"
                    break
            if problem is None and resource.resource_type == ConfigResourceType.TOPIC:
                try:
                    LogConfig.from_properties(new)
                except ConfigError as exc:
                    problem = str(exc)
            if problem is not None:
                result.error_code, result.error_message = ErrorCode.INVALID_CONFIG, problem
                continue
            if req.validate_only:
                continue
            for name in sorted(set(old) | set(new)):
                if old.get(name) != new.get(name):
                    records.append(
                        ConfigRecord(
                            resource_type=resource.resource_type,
                            resource_name=resource.resource_name,
                            name=name,
                            value=new.get(name),
                        )
                    )

        def fail(code: int) -> Message:
            return IncrementalAlterConfigsResponse(
                responses=[
                    IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                        resource_type=r.resource_type, resource_name=r.resource_name, error_code=code
                    )
                    for r in req.resources
                ]
            )

        return self._answer(records, lambda: IncrementalAlterConfigsResponse(responses=results), fail, now_ms)

    # ElectLeaders -----------------------------------------------------------------------------------

    def _elect_leaders(self, version: int, req: ElectLeadersRequest, now_ms: int) -> Message | Waiting:
        unclean = version >= 1 and req.election_type == ELECTION_UNCLEAN
        everything = req.topic_partitions is None
        wanted: list[tuple[str, int]] = (
            [(p.topic, p.partition) for p in self.image.all_partitions()]
            if req.topic_partitions is None
            else [(t.topic, i) for t in req.topic_partitions for i in t.partitions]
        )
        by_topic: dict[str, list[ElectLeadersResponsePartitionResult]] = {}
        records: list[Message] = []
        for topic, index in wanted:
            code, message = self._elect_one(topic, index, unclean, records)
            if everything and code != ErrorCode.NONE:
                continue  # Kafka lists only the partitions it elected when asked for all
            by_topic.setdefault(topic, []).append(
                ElectLeadersResponsePartitionResult(partition_id=index, error_code=code, error_message=message)
            )
        response = ElectLeadersResponse(
            replica_election_results=[
                ElectLeadersResponseReplicaElectionResult(topic=t, partition_result=r) for t, r in by_topic.items()
            ]
        )
        return self._answer(
            records, lambda: response, lambda code: ElectLeadersResponse(error_code=code), now_ms, req.timeout_ms
        )

    def _elect_one(self, topic: str, index: int, unclean: bool, records: list[Message]) -> tuple[int, str | None]:
        p = self.image.partition(topic, index)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic-partition {topic}-{index}"
        if unclean:
            if p.leader != NO_LEADER:
                return ErrorCode.ELECTION_NOT_NEEDED, None
            record = self._change(p, records, election=Election.UNCLEAN)
            if record is None or record.leader == NO_LEADER:
                return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"Unable to find any eligible leader for {topic}-{index}"
            return ErrorCode.NONE, None
        if p.replicas and p.leader == p.replicas[0]:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        candidate: list[Message] = []
        record = self._change(p, candidate, election=Election.PREFERRED)
        if record is None or record.leader != p.replicas[0]:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, f"Failed to elect leader for {topic}-{index}"
        records += candidate
        return ErrorCode.NONE, None

    # Reassignments ----------------------------------------------------------------------------------

    def _alter_partition_reassignments(
        self, version: int, req: AlterPartitionReassignmentsRequest, now_ms: int
    ) -> Message | Waiting:
        records: list[Message] = []
        responses: list[AlterPartitionReassignmentsResponseReassignableTopicResponse] = []
        for topic in req.topics:
            out = AlterPartitionReassignmentsResponseReassignableTopicResponse(name=topic.name)
            responses.append(out)
            for part in topic.partitions:
                code, message = self._reassign_one(topic.name, part.partition_index, part.replicas, records)
                out.partitions.append(
                    AlterPartitionReassignmentsResponseReassignablePartitionResponse(
                        partition_index=part.partition_index, error_code=code, error_message=message
                    )
                )
        response = AlterPartitionReassignmentsResponse(responses=responses)
        return self._answer(
            records,
            lambda: response,
            lambda code: AlterPartitionReassignmentsResponse(error_code=code),
            now_ms,
            req.timeout_ms,
        )

    def _reassign_one(
        self, topic: str, index: int, target: list[int] | None, records: list[Message]
    ) -> tuple[int, str | None]:
        p = self.image.partition(topic, index)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if target is None:  # cancel: back to the original replicas
            if not p.adding_replicas and not p.removing_replicas:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
            original = [r for r in p.replicas if r not in p.adding_replicas]
            isr = [r for r in p.isr if r in original] or [r for r in original if self._acceptable(r)][:1]
            self._change(p, records, target_replicas=original, target_isr=isr, target_adding=[], target_removing=[])
            return ErrorCode.NONE, None
        if not target:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        problem = self._assignment_problem([target])
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
        original = [r for r in p.replicas if r not in p.adding_replicas]
        adding = [r for r in target if r not in original]
        removing = [r for r in original if r not in target]
        merged = list(target) + removing
        self._change(p, records, target_replicas=merged, target_adding=adding, target_removing=removing)
        return ErrorCode.NONE, None

    def _list_partition_reassignments(
        self, version: int, req: ListPartitionReassignmentsRequest, now_ms: int
    ) -> Message | Waiting:
        if req.topics is None:
            wanted = [p for p in self.image.all_partitions() if p.adding_replicas or p.removing_replicas]
        else:
            wanted = []
            for t in req.topics:
                for i in t.partition_indexes:
                    p = self.image.partition(t.name, i)
                    if p is not None and (p.adding_replicas or p.removing_replicas):
                        wanted.append(p)
        by_topic: dict[str, list[ListPartitionReassignmentsResponseOngoingPartitionReassignment]] = {}
        for p in wanted:
            by_topic.setdefault(p.topic, []).append(
                ListPartitionReassignmentsResponseOngoingPartitionReassignment(
                    partition_index=p.partition,
                    replicas=list(p.replicas),
                    adding_replicas=list(p.adding_replicas),
                    removing_replicas=list(p.removing_replicas),
                )
            )
        return ListPartitionReassignmentsResponse(
            topics=[ListPartitionReassignmentsResponseOngoingTopicReassignment(name=n, partitions=ps) for n, ps in by_topic.items()]
        )

    # AllocateProducerIds ----------------------------------------------------------------------------

    def _allocate_producer_ids(self, version: int, req: AllocateProducerIdsRequest, now_ms: int) -> Message | Waiting:
        def fail(code: int) -> Message:
            return AllocateProducerIdsResponse(error_code=code, producer_id_start=-1, producer_id_len=0)

        reg = self.image.registration(req.broker_id)
        if reg is None or reg.info.epoch != req.broker_epoch:
            return fail(ErrorCode.STALE_BROKER_EPOCH)
        start = self.image.next_producer_id
        record = ProducerIdsRecord(
            broker_id=req.broker_id, broker_epoch=req.broker_epoch, next_producer_id=start + PRODUCER_ID_BLOCK_SIZE
        )
        answer = AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE)
        return self._answer([record], lambda: answer, fail, now_ms)

    # periodic work ----------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        if self._active_epoch is None:
            return None
        deadlines = [
            contact + self.config.session_timeout_ms
            for broker, contact in self._contact_ms.items()
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
        for info in self.image.brokers():
            if not info.fenced and not self._has_session(info.node_id, now_ms):
                self._fence_now(info.node_id, now_ms)
        if self._next_rebalance_ms is not None and now_ms >= self._next_rebalance_ms:
            self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
            for p in self._imbalanced():
                if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
                    break
                self._change(p, records, election=Election.PREFERRED)
            self._propose(records, now_ms)

    def _fence_now(self, broker: int, now_ms: int) -> None:
        records: list[Message] = []
        self._fence(broker, records)
        self._propose(records, now_ms)

    def _imbalanced(self) -> Iterable[PartitionState]:
        for p in self.image.all_partitions():
            if p.replicas and p.leader != p.replicas[0] and p.replicas[0] in p.isr and self._acceptable(p.replicas[0]):
                yield p


Handler = Callable[[QuorumController, int, Message, int], Message | Waiting]

_HANDLERS: Final[dict[int, Handler]] = {
    ApiKey.BROKER_REGISTRATION: QuorumController._broker_registration,  # type: ignore[dict-item]
    ApiKey.BROKER_HEARTBEAT: QuorumController._broker_heartbeat,  # type: ignore[dict-item]
    ApiKey.ALTER_PARTITION: QuorumController._alter_partition,  # type: ignore[dict-item]
    ApiKey.CREATE_TOPICS: QuorumController._create_topics,  # type: ignore[dict-item]
    ApiKey.DELETE_TOPICS: QuorumController._delete_topics,  # type: ignore[dict-item]
    ApiKey.CREATE_PARTITIONS: QuorumController._create_partitions,  # type: ignore[dict-item]
    ApiKey.INCREMENTAL_ALTER_CONFIGS: QuorumController._incremental_alter_configs,  # type: ignore[dict-item]
    ApiKey.ELECT_LEADERS: QuorumController._elect_leaders,  # type: ignore[dict-item]
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: QuorumController._alter_partition_reassignments,  # type: ignore[dict-item]
    ApiKey.LIST_PARTITION_REASSIGNMENTS: QuorumController._list_partition_reassignments,  # type: ignore[dict-item]
    ApiKey.ALLOCATE_PRODUCER_IDS: QuorumController._allocate_producer_ids,  # type: ignore[dict-item]
}

#: The API keys :meth:`QuorumController.handle` answers.
CONTROLLER_APIS: Final = frozenset(_HANDLERS)


def error_response(api_key: int, api_version: int, body: Message, code: int) -> Message:
    """The answer to a controller request that failed whole with ``code`` (NOT_CONTROLLER)."""
    if isinstance(body, CreateTopicsRequest):
        return CreateTopicsResponse(
            topics=[CreateTopicsResponseCreatableTopicResult(name=t.name, error_code=code) for t in body.topics]
        )
    if isinstance(body, DeleteTopicsRequest):
        names: list[tuple[str | None, uuid.UUID]] = (
            [(t.name, t.topic_id) for t in body.topics] if api_version >= 6 else [(n, ZERO_UUID) for n in body.topic_names]
        )
        return DeleteTopicsResponse(
            responses=[DeleteTopicsResponseDeletableTopicResult(name=n, topic_id=i, error_code=code) for n, i in names]
        )
    if isinstance(body, CreatePartitionsRequest):
        return CreatePartitionsResponse(
            results=[CreatePartitionsResponseTopicResult(name=t.name, error_code=code) for t in body.topics]
        )
    if isinstance(body, IncrementalAlterConfigsRequest):
        return IncrementalAlterConfigsResponse(
            responses=[
                IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                    resource_type=r.resource_type, resource_name=r.resource_name, error_code=code
                )
                for r in body.resources
            ]
        )
    simple: dict[int, Callable[[], Message]] = {
        ApiKey.BROKER_REGISTRATION: lambda: BrokerRegistrationResponse(error_code=code, broker_epoch=-1),
        ApiKey.BROKER_HEARTBEAT: lambda: BrokerHeartbeatResponse(error_code=code, is_fenced=True),
        ApiKey.ALTER_PARTITION: lambda: AlterPartitionResponse(error_code=code),
        ApiKey.ELECT_LEADERS: lambda: ElectLeadersResponse(error_code=code),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: lambda: AlterPartitionReassignmentsResponse(error_code=code),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: lambda: ListPartitionReassignmentsResponse(error_code=code),
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
