""":class:`ReplicaState`, the base of :class:`~kafka_wire.broker.raft.replica.KRaftReplica`: its fields,
their read-only views, the cache of where each epoch starts in the log, and the checks every
request answer shares.

``KRaftReplica`` is built in layers, each a class adding one concern to the one below:
:class:`ReplicaState` (this module), ``LeaderFetch`` (:mod:`.leader_fetch`),
``QuorumTransitions`` (:mod:`.transitions`), ``RequestHandlers`` (:mod:`.handlers`),
``OutboundRequests`` (:mod:`.outbound`), ``KRaftReplica`` (:mod:`.replica`)."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import field

from kafka_wire.broker.cluster_settings import Voter
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.log.log import PartitionLog
from kafka_wire.broker.raft.committed import CommittedBatch, SnapshotLoad
from kafka_wire.broker.raft.config import RaftConfig
from kafka_wire.broker.raft.quorum_state import NO_NODE
from kafka_wire.broker.raft.snapshots import SnapshotId
from kafka_wire.broker.raft.states import QuorumRole
from kafka_wire.broker.storage import StorageReader
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.protocol.machine import TransitionLogger
from kafka_wire.quick_dataclass import dataclass


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of one replica (DescribeQuorum's numbers)."""

    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    #: The leader's end offset at that replica's previous fetch (Kafka's ``lastFetchLeaderLogEndOffset``).
    leader_end_at_last_fetch: int = -1


@dataclass(slots=True)
class SnapshotFetch:
    """A snapshot a follower is fetching from its leader (FetchSnapshot), and the bytes so far."""

    snapshot_id: SnapshotId
    data: bytearray = field(default_factory=bytearray)


class ReplicaState:
    """The state of one node's replica of ``__cluster_metadata`` (see :mod:`.replica`)."""

    _log: PartitionLog

    def __init__(
        self,
        config: RaftConfig,
        storage: StorageReader,
        effects: EffectSink,
        rng: random.Random,
        *,
        logger: TransitionLogger | None = None,
    ) -> None:
        self.config = config
        self.node_id = config.node_id
        self._storage = storage
        self._effects = effects
        self._rng = rng
        self._logger = logger
        self._voters: tuple[int, ...] = config.voter_ids
        self._endpoints = {v.node_id: v for v in config.voters}
        self.is_voter = config.node_id in self._voters
        self._bootstrap = config.bootstrap_ids or self._voters
        self.role = QuorumRole.UNATTACHED
        self.epoch = 0
        self.leader_id = NO_NODE
        self.voted_id = NO_NODE
        self._started = False
        self._generation = 0
        self._now_ms = 0
        # log
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset)
        self._snapshot: SnapshotId | None = None
        self._hw = 0
        #: The leader's high watermark as its last Fetch answer gave it (-1: none yet).
        self._leader_hw = -1
        self._taken = 0
        self._pending_load: SnapshotLoad | None = None
        #: Batches this replica appended as leader and has not handed out yet, oldest first:
        #: (base offset, next offset, the batch; None for a control batch). What a call appends
        #: cannot be read back from the log until the driver has written it, and a lone voter
        #: commits it at once: :meth:`take_committed` hands these out from memory.
        self._appended: deque[tuple[int, int, CommittedBatch | None]] = deque()
        # timers
        self._election_deadline: int | None = None
        self._fetch_deadline: int | None = None
        self._check_quorum_deadline: int | None = None
        # requests
        self._inflight: set[tuple[ApiKey, int]] = set()
        self._retry_at: dict[tuple[ApiKey, int], int] = {}
        # prospective and candidate: the (pre-)votes granted and rejected in this round
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        self._election_retries = 0
        # leader
        self._epoch_start_offset = 0
        self._progress: dict[int, ReplicaProgress] = {}
        self._acked: set[int] = set()  # BeginQuorumEpoch (leader) / EndQuorumEpoch (resigned)
        self._quorum_fetched: set[int] = set()
        self._preferred: list[int] = []
        # follower
        self._snapshot_fetch: SnapshotFetch | None = None
        #: A Fetch (or FetchSnapshot) answer came from the leader since this replica began
        #: following it: it rejects pre-votes then (Kafka's ``FollowerState.hasFetchedFromLeader``).
        self._fetched_from_leader = False

    # -- reading the state ------------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        return self.role is QuorumRole.LEADER

    @property
    def high_watermark(self) -> int:
        """Offsets below it are committed."""
        return self._hw

    @property
    def caught_up(self) -> bool:
        """This replica has everything the quorum had committed when its leader last answered
        (a leader: always). A restarted node publishes its metadata once it gets there."""
        return self.is_leader or 0 <= self._leader_hw <= self._hw

    @property
    def leader_ready(self) -> bool:
        """Leader, and everything before its epoch is committed (its LeaderChangeMessage is)."""
        return self.is_leader and self._hw > self._epoch_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def latest_snapshot(self) -> SnapshotId | None:
        return self._snapshot

    @property
    def log(self) -> PartitionLog:
        """The metadata log (read-only use: inspection and tests)."""
        return self._log

    def last_epoch(self) -> int:
        """The epoch of the last batch in the log (or of the snapshot when the log is empty)."""
        if self._epochs:
            return self._epochs[-1][0]
        return self._snapshot.epoch if self._snapshot is not None else 0

    def epoch_of(self, offset: int) -> int:
        """The epoch of the batch holding ``offset`` (the snapshot's epoch below the log start):
        what :meth:`create_snapshot` takes for a snapshot ending after ``offset``."""
        epoch = self._snapshot.epoch if self._snapshot is not None else 0
        for cached, start in self._epochs:
            if start > offset:
                break
            epoch = cached
        return epoch

    def progress(self) -> dict[int, ReplicaProgress]:
        """The leader's view of the replicas that fetch from it (empty unless leader)."""
        return dict(self._progress)

    # -- where each epoch starts in the log -------------------------------------------------------
    def _end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``(largest epoch <= epoch, its end offset)``; ``(-1, log start)`` when none is."""
        found = -1
        for i, (cached, _) in enumerate(self._epochs):
            if cached <= epoch:
                found = i
        if found < 0:
            snapshot = self._snapshot
            if snapshot is not None and snapshot.epoch <= epoch:
                return snapshot.epoch, snapshot.end_offset
            return -1, self._log.log_start_offset
        end = self._epochs[found + 1][1] if found + 1 < len(self._epochs) else self._log.log_end_offset
        return self._epochs[found][0], end

    def _remember(self, base_offset: int, batch: CommittedBatch | None) -> None:
        """A batch this leader just appended (None: a control batch), up to the log end."""
        self._appended.append((base_offset, self._log.log_end_offset, batch))

    def _note_epoch(self, epoch: int, start_offset: int) -> None:
        if not self._epochs or epoch > self._epochs[-1][0]:
            self._epochs.append((epoch, start_offset))

    def _reset_log(self, offset: int) -> None:
        # PartitionLog has no public "empty the log and start at offset" yet (the replication
        # follower needs the same on OFFSET_OUT_OF_RANGE); use its own helper until it does.
        self._log.truncate_fully_and_start_at(offset, self._now_ms)

    # -- shared by the answers to requests --------------------------------------------------------
    def _cluster_ok(self, cluster_id: str | None) -> bool:
        return cluster_id is None or self.config.cluster_id is None or cluster_id == self.config.cluster_id

    def _leader_only_error(self, remote_epoch: int) -> int:
        if remote_epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if remote_epoch > self.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        if self.role is not QuorumRole.LEADER:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.NONE

    def _leader_endpoint(self) -> Voter | None:
        return self._endpoints.get(self.leader_id) if self.leader_id >= 0 else None

    # -- effects ----------------------------------------------------------------------------------
    def _flush(self) -> None:
        if self._started:
            self._effects.extend(self._log.take_effects())
