"""``KRaftReplica``: one node's replica of the ``__cluster_metadata`` log, a voter or an observer.

Pure, as every engine part: time comes in as ``now_ms``, election jitter from the injected
``random.Random``, storage is read through a :class:`StorageReader` and written as effects into
the :class:`EffectSink` the replica was given. Requests from other nodes come to :meth:`handle`;
requests for other nodes leave through :meth:`poll_outbound` as :class:`Outbound` values whose
``on_reply`` (a bound method of a small call record) brings the answer back.

The rules are Kafka's KRaft (``KafkaRaftClient``, ``QuorumState``, ``LeaderState``):

- Epochs only grow. A higher epoch seen anywhere moves the replica there (as a follower when the
  leader is named, else unattached). The epoch, the leader and this voter's vote are persisted in
  ``quorum-state`` before anything that depends on them leaves.
- A voter grants one vote per epoch, to a candidate whose log is at least as up to date as its own
  (last epoch, then end offset). A voter that hears from no leader for the election timeout (plus
  jitter), or from its leader for the fetch timeout, stands for election in the next epoch.
- A new leader writes a LeaderChangeMessage control batch, tells the voters with
  BeginQuorumEpoch, and serves Fetch: followers and observers fetch from their end offset with the
  epoch of their last batch; a mismatch answers DivergingEpoch (the follower truncates and fetches
  again), an offset below the log start answers the latest snapshot's id (the follower fetches it
  with FetchSnapshot). The high watermark is the end offset a majority of voters have reached,
  once that is past the start of the leader's epoch. A fetch with nothing to return waits (long
  poll) up to its max wait, until data arrives or the high watermark moves.
- A leader that stops hearing from a majority for 1.5 fetch timeouts resigns (check quorum);
  :meth:`resign` steps down gracefully with EndQuorumEpoch naming the preferred successors.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.effects import Delete, EffectSink
from kafka_wire.broker.log.config import LONG_MAX, LogConfig
from kafka_wire.broker.log.log import PartitionLog
from kafka_wire.broker.raft.quorum_state import NO_NODE, ElectionState, read_quorum_state, write_quorum_state
from kafka_wire.broker.raft.snapshots import (
    PARTIAL_SUFFIX,
    SnapshotId,
    decode_snapshot,
    encode_snapshot,
    parse_snapshot_name,
    write_snapshot,
)
from kafka_wire.broker.raft.states import QUORUM_TRANSITIONS, QuorumInput, QuorumRole
from kafka_wire.broker.raft.voters import Voter
from kafka_wire.broker.state import Waiting
from kafka_wire.broker.storage import StorageReader
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, InvalidValueError, LocalProtocolError
from kafka_wire.messages import (
    ApiKey,
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestLeaderEndpoint,
    BeginQuorumEpochRequestPartitionData,
    BeginQuorumEpochRequestTopicData,
    BeginQuorumEpochResponse,
    BeginQuorumEpochResponseNodeEndpoint,
    BeginQuorumEpochResponsePartitionData,
    BeginQuorumEpochResponseTopicData,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartitionData,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopicData,
    EndQuorumEpochRequest,
    EndQuorumEpochRequestLeaderEndpoint,
    EndQuorumEpochRequestPartitionData,
    EndQuorumEpochRequestReplicaInfo,
    EndQuorumEpochRequestTopicData,
    EndQuorumEpochResponse,
    EndQuorumEpochResponseNodeEndpoint,
    EndQuorumEpochResponsePartitionData,
    EndQuorumEpochResponseTopicData,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseEpochEndOffset,
    FetchResponseFetchableTopicResponse,
    FetchResponseLeaderIdAndEpoch,
    FetchResponseNodeEndpoint,
    FetchResponsePartitionData,
    FetchResponseSnapshotId,
    FetchSnapshotRequest,
    FetchSnapshotRequestPartitionSnapshot,
    FetchSnapshotRequestSnapshotId,
    FetchSnapshotRequestTopicSnapshot,
    FetchSnapshotResponse,
    FetchSnapshotResponseLeaderIdAndEpoch,
    FetchSnapshotResponsePartitionSnapshot,
    FetchSnapshotResponseSnapshotId,
    FetchSnapshotResponseTopicSnapshot,
    LeaderChangeMessage,
    LeaderChangeMessageVoter,
    VoteRequest,
    VoteRequestPartitionData,
    VoteRequestTopicData,
    VoteResponse,
    VoteResponseNodeEndpoint,
    VoteResponsePartitionData,
    VoteResponseTopicData,
)
from kafka_wire.protocol.machine import TransitionLogger, step
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.builder import build_batch
from kafka_wire.records.control import ControlRecordType, build_control_batch
from kafka_wire.records.reader import read_batches

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_TOPIC_ID: Final = uuid.UUID("00000000-0000-0000-0000-000000000001")
METADATA_PARTITION: Final = 0
METADATA_DIRECTORY: Final = f"{METADATA_TOPIC}-{METADATA_PARTITION}"

#: Bytes read per step when handing out committed batches.
_READ_CHUNK_BYTES: Final = 1 << 20
#: The largest batch the metadata log takes (Kafka's KRaft batches are at most 8 MiB).
DEFAULT_MAX_BATCH_BYTES: Final = 8 * 1024 * 1024

METADATA_LOG_CONFIG: Final = LogConfig(
    flush_messages=1,
    retention_ms=-1,
    retention_bytes=-1,
    max_message_bytes=DEFAULT_MAX_BATCH_BYTES + 1024,
    message_timestamp_after_max_ms=LONG_MAX,
    segment_bytes=8 * 1024 * 1024,
)
"""The metadata log: every append fsynced, nothing deleted but below a snapshot."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RaftConfig:
    """One replica's settings (Kafka's ``controller.quorum.*`` names in the comments)."""

    node_id: int
    #: ``controller.quorum.voters``.
    voters: tuple[Voter, ...]
    #: ``cluster.id``; requests naming another cluster get INCONSISTENT_CLUSTER_ID. None: not checked.
    cluster_id: str | None = None
    #: The controller listener requests go out on (``controller.listener.names``, first).
    listener: str = "CONTROLLER"
    #: Node ids an observer asks for the leader (``controller.quorum.bootstrap.servers``); () = the voters.
    bootstrap_ids: tuple[int, ...] = ()
    #: ``controller.quorum.election.timeout.ms``; each wait adds a random jitter up to as much again.
    election_timeout_ms: int = 1000
    #: ``controller.quorum.election.backoff.max.ms``.
    election_backoff_max_ms: int = 1000
    #: ``controller.quorum.fetch.timeout.ms``.
    fetch_timeout_ms: int = 2000
    #: ``controller.quorum.request.timeout.ms``.
    request_timeout_ms: int = 2000
    #: ``controller.quorum.retry.backoff.ms``.
    retry_backoff_ms: int = 20
    #: How long a follower's Fetch may wait at the leader for data (Kafka's KRaft uses 500).
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = DEFAULT_MAX_BATCH_BYTES
    directory: str = METADATA_DIRECTORY
    log_config: LogConfig = METADATA_LOG_CONFIG

    def __post_init__(self) -> None:
        if not self.voters:
            raise ValueError("a KRaft quorum needs at least one voter")
        for name in ("election_timeout_ms", "fetch_timeout_ms", "request_timeout_ms", "fetch_max_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(sorted(v.node_id for v in self.voters))


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """Committed records of one batch (control batches are not handed out)."""

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    records: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class SnapshotLoad:
    """Replace the state built so far by a snapshot's (at start, or after FetchSnapshot)."""

    snapshot_id: SnapshotId
    records: tuple[bytes, ...]


Committed = CommittedBatch | SnapshotLoad


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of one replica (DescribeQuorum's numbers)."""

    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    #: The leader's end offset at that replica's previous fetch (Kafka's ``lastFetchLeaderLogEndOffset``).
    leader_end_at_last_fetch: int = -1


@dataclass(slots=True)
class _Call:
    """One request in flight; ``on_reply`` is what :class:`Outbound` calls back."""

    replica: KRaftReplica
    api: ApiKey
    destination: int
    epoch: int
    generation: int

    def on_reply(self, body: Message | None, now_ms: int) -> None:
        self.replica._on_reply(self, body, now_ms)


@dataclass(slots=True)
class _SnapshotFetch:
    snapshot_id: SnapshotId
    data: bytearray = field(default_factory=bytearray)


class _FetchWait:
    """A leader's Fetch with nothing to return yet (long poll): answered when data arrives, the
    high watermark moves, leadership changes, or its max wait ends."""

    __slots__ = ("deadline_ms", "epoch", "fetch_offset", "high_watermark", "replica", "request", "version")

    def __init__(
        self, replica: KRaftReplica, request: FetchRequest, version: int, fetch_offset: int, deadline_ms: int
    ) -> None:
        self.replica = replica
        self.request = request
        self.version = version
        self.fetch_offset = fetch_offset
        self.deadline_ms = deadline_ms
        self.epoch = replica.epoch
        self.high_watermark = replica.high_watermark

    def poll(self, now_ms: int) -> Message | None:
        replica = self.replica
        if (
            now_ms >= self.deadline_ms
            or replica.role is not QuorumRole.LEADER
            or replica.epoch != self.epoch
            or replica.high_watermark != self.high_watermark
            or replica.log_end_offset > self.fetch_offset
        ):
            return replica._answer_fetch(self.request, self.version, now_ms)
        return None


class KRaftReplica:
    """One node's replica of ``__cluster_metadata`` (see the module docstring)."""

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
        # timers
        self._election_deadline: int | None = None
        self._fetch_deadline: int | None = None
        self._check_quorum_deadline: int | None = None
        # requests
        self._inflight: set[tuple[ApiKey, int]] = set()
        self._retry_at: dict[tuple[ApiKey, int], int] = {}
        # candidate
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
        self._snapshot_fetch: _SnapshotFetch | None = None

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

    # -- starting and stopping --------------------------------------------------------------------
    def start(self, now_ms: int) -> None:
        """Open the log, load the latest snapshot and the quorum state; a lone voter elects itself."""
        if self._started:
            raise LocalProtocolError("the raft replica is already started")
        self._started = True
        self._now_ms = now_ms
        config = self.config
        self._log = PartitionLog.open(config.directory, config.log_config, self._storage, now_ms)
        self._load_snapshot()
        self._rebuild_epochs()
        stored = read_quorum_state(self._storage, config.directory)
        if stored is None:
            stored = ElectionState()
            write_quorum_state(self._effects, config.directory, stored, self._voters)
        self.epoch, self.leader_id, self.voted_id = stored.epoch, stored.leader_id, stored.voted_id
        if stored.leader_id == self.node_id and self.is_voter:
            self.role = QuorumRole.RESIGNED
            self._election_deadline = now_ms + self._random_timeout()
        elif stored.leader_id >= 0:
            self.role = QuorumRole.FOLLOWER
            self._fetch_deadline = now_ms + config.fetch_timeout_ms
        elif stored.voted_id >= 0 and self.is_voter:
            self.role = QuorumRole.VOTED
            self._election_deadline = now_ms + self._random_timeout()
        else:
            self.role = QuorumRole.UNATTACHED
            if self.is_voter:
                self._election_deadline = now_ms + self._random_timeout()
        if self._voters == (self.node_id,):
            self._become_candidate(now_ms)
        self._flush()

    def _load_snapshot(self) -> None:
        directory = self.config.directory
        snapshots: list[SnapshotId] = []
        for name in self._storage.list_dir(directory):
            if name.endswith(PARTIAL_SUFFIX):
                self._effects.emit(Delete(f"{directory}/{name}"))
                continue
            found = parse_snapshot_name(name)
            if found is not None:
                snapshots.append(found)
        log = self._log
        self._hw = self._taken = log.log_start_offset
        if not snapshots:
            return
        latest = max(snapshots)
        path = f"{directory}/{latest.file_name}"
        size = self._storage.size(path) or 0
        records = decode_snapshot(self._storage.read(path, 0, size))
        self._snapshot = latest
        if latest.end_offset > log.log_end_offset:
            self._reset_log(latest.end_offset)
        elif latest.end_offset > log.log_start_offset:
            log.delete_records_before(latest.end_offset)
        self._hw = self._taken = max(log.log_start_offset, latest.end_offset)
        self._pending_load = SnapshotLoad(latest, tuple(records))

    def _reset_log(self, offset: int) -> None:
        # PartitionLog has no public "empty the log and start at offset" yet (the replication
        # follower needs the same on OFFSET_OUT_OF_RANGE); use its own helper until it does.
        self._log.truncate_fully_and_start_at(offset, self._now_ms)

    def _rebuild_epochs(self) -> None:
        self._epochs = []
        log = self._log
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            result = log.read(offset, _READ_CHUNK_BYTES)
            data = log.read_bytes(result)
            if result.error_code or not data:
                break
            for batch in read_batches(data):
                self._note_epoch(
                    batch.partition_leader_epoch if isinstance(batch, RecordBatch) else 0, offset
                )
                offset = batch.next_offset

    def _note_epoch(self, epoch: int, start_offset: int) -> None:
        if not self._epochs or epoch > self._epochs[-1][0]:
            self._epochs.append((epoch, start_offset))

    def resign(self, now_ms: int) -> None:
        """Step down gracefully (shutdown): EndQuorumEpoch to the voters, preferring the most
        caught-up ones as successors. Does nothing unless leader."""
        self._now_ms = now_ms
        if self.role is QuorumRole.LEADER:
            others = [v for v in self._voters if v != self.node_id]
            others.sort(key=lambda v: (-self._progress_of(v).end_offset, v))
            self._resign(now_ms, others)
        self._flush()

    # -- appending and committing -----------------------------------------------------------------
    def append(self, records: Sequence[bytes], now_ms: int) -> int | None:
        """Append ``records`` (values) as one batch of the current epoch; the last offset, or None
        when this replica is not the leader (or ``records`` is empty)."""
        self._now_ms = now_ms
        if self.role is not QuorumRole.LEADER or not records:
            return None
        batch = build_batch(
            [(None, bytes(value), (), now_ms) for value in records], partition_leader_epoch=self.epoch
        )
        result = self._log.append(batch, now_ms, leader_epoch=self.epoch, origin="coordinator")
        if result.error_code:
            self._flush()
            return None
        self._update_leader_progress(now_ms)
        self._flush()
        return result.last_offset

    def take_committed(self) -> list[Committed]:
        """What became committed since the last call: a snapshot to load first (when one was
        loaded), then batches below the high watermark, in offset order."""
        out: list[Committed] = []
        if self._pending_load is not None:
            out.append(self._pending_load)
            self._pending_load = None
        log = self._log
        # below the log start is a snapshot the caller made from what it had taken already
        self._taken = max(self._taken, log.log_start_offset)
        while self._taken < self._hw:
            result = log.read(self._taken, _READ_CHUNK_BYTES, max_offset=self._hw)
            data = log.read_bytes(result)
            if result.error_code or not data:
                break
            for batch in read_batches(data):
                if isinstance(batch, RecordBatch) and not batch.is_control:
                    out.append(
                        CommittedBatch(
                            batch.base_offset,
                            batch.last_offset,
                            batch.partition_leader_epoch,
                            batch.max_timestamp,
                            tuple(b"" if r.value is None else bytes(r.value) for r in batch.records()),
                        )
                    )
                self._taken = batch.next_offset
        return out

    def create_snapshot(self, offset: int, epoch: int, records: Sequence[bytes], now_ms: int) -> SnapshotId:
        """Store a snapshot of the state below ``offset`` (``epoch``: that of the record before
        it) and move the log start up to it. ``offset`` must be committed."""
        self._now_ms = now_ms
        if offset > self._hw or offset <= 0:
            raise LocalProtocolError(f"snapshot end offset {offset} is not committed (HW {self._hw})")
        snapshot_id = SnapshotId(offset, epoch)
        directory = self.config.directory
        write_snapshot(self._effects, directory, snapshot_id, encode_snapshot(snapshot_id, records, now_ms))
        previous = self._snapshot
        if previous is None or snapshot_id > previous:
            self._snapshot = snapshot_id
            if previous is not None:
                self._effects.emit(Delete(f"{directory}/{previous.file_name}"))
            if offset > self._log.log_start_offset:
                self._log.delete_records_before(offset)
                self._trim_epochs_below(offset)
        self._flush()
        return snapshot_id

    def _trim_epochs_below(self, offset: int) -> None:
        while len(self._epochs) > 1 and self._epochs[1][1] <= offset:
            self._epochs.pop(0)
        if self._epochs and self._epochs[0][1] < offset:
            self._epochs[0] = (self._epochs[0][0], offset)

    # -- timers -----------------------------------------------------------------------------------
    def next_deadline_ms(self) -> int | None:
        deadlines = [
            d
            for d in (
                self._election_deadline,
                self._fetch_deadline,
                self._check_quorum_deadline,
                self._log.next_deadline_ms() if self._started else None,
                *self._retry_at.values(),
            )
            if d is not None
        ]
        return min(deadlines) if deadlines else None

    def tick(self, now_ms: int) -> None:
        """Run what is due: elections, fetch timeouts, the leader's quorum check, log upkeep."""
        self._now_ms = now_ms
        for key, due in list(self._retry_at.items()):
            if due <= now_ms:
                del self._retry_at[key]
        role = self.role
        if role is QuorumRole.FOLLOWER:
            if self._fetch_deadline is not None and now_ms >= self._fetch_deadline:
                if self.is_voter:
                    self._become_candidate(now_ms)
                else:
                    self._become_unattached(self.epoch, now_ms)
        elif role is QuorumRole.LEADER:
            if self._check_quorum_deadline is not None and now_ms >= self._check_quorum_deadline:
                self._resign(now_ms, [])
        elif self.is_voter and self._election_deadline is not None and now_ms >= self._election_deadline:
            self._become_candidate(now_ms)
        self._log.maintain(now_ms, high_watermark=self._hw)
        self._flush()

    def _random_timeout(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self._rng.randrange(timeout)

    # -- transitions ------------------------------------------------------------------------------
    def _move(self, move: QuorumInput) -> None:
        self.role = step(
            QUORUM_TRANSITIONS, self.role, move, machine=f"raft node {self.node_id}", logger=self._logger
        )
        self._generation += 1
        self._inflight.clear()
        self._retry_at.clear()
        self._election_deadline = self._fetch_deadline = self._check_quorum_deadline = None
        self._snapshot_fetch = None

    def _persist(self) -> None:
        write_quorum_state(
            self._effects,
            self.config.directory,
            ElectionState(self.epoch, self.leader_id, self.voted_id),
            self._voters,
        )

    def _become_unattached(self, epoch: int, now_ms: int) -> None:
        self._move(QuorumInput.NEW_EPOCH)
        if epoch != self.epoch:
            self.voted_id = NO_NODE
        self.epoch, self.leader_id = epoch, NO_NODE
        self._persist()
        if self.is_voter:
            self._election_deadline = now_ms + self._random_timeout()

    def _become_voted(self, candidate: int, now_ms: int) -> None:
        self._move(QuorumInput.GRANT_VOTE)
        self.voted_id = candidate
        self._persist()
        self._election_deadline = now_ms + self._random_timeout()

    def _become_candidate(self, now_ms: int) -> None:
        retries = self._election_retries + 1 if self.role is QuorumRole.CANDIDATE else 1
        self._move(QuorumInput.ELECTION_TIMEOUT)
        self._election_retries = retries
        self.epoch += 1
        self.leader_id, self.voted_id = NO_NODE, self.node_id
        self._persist()
        self._granted, self._rejected = {self.node_id}, set()
        self._election_deadline = now_ms + self._random_timeout()
        self._maybe_elected(now_ms)

    def _maybe_elected(self, now_ms: int) -> None:
        if self.role is QuorumRole.CANDIDATE and len(self._granted) * 2 > len(self._voters):
            self._become_leader(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        self._move(QuorumInput.ELECTED)
        self.leader_id = self.node_id
        self._persist()
        log = self._log
        self._epoch_start_offset = log.log_end_offset
        message = LeaderChangeMessage(
            version=0,
            leader_id=self.node_id,
            voters=[LeaderChangeMessageVoter(voter_id=v) for v in self._voters],
            granting_voters=[LeaderChangeMessageVoter(voter_id=v) for v in sorted(self._granted)],
        )
        control = build_control_batch(
            ControlRecordType.LEADER_CHANGE,
            message.encode(0),
            timestamp=now_ms,
            partition_leader_epoch=self.epoch,
        )
        result = log.append(control, now_ms, leader_epoch=self.epoch, origin="coordinator")
        if result.error_code:
            raise LocalProtocolError(
                f"the metadata log refused the LeaderChangeMessage ({result.error_code})"
            )
        self._note_epoch(self.epoch, self._epoch_start_offset)
        self._progress = {v: ReplicaProgress() for v in self._voters}
        self._acked = {self.node_id}
        self._quorum_fetched = {self.node_id}
        self._check_quorum_deadline = now_ms + self.config.fetch_timeout_ms * 3 // 2
        self._update_leader_progress(now_ms)

    def _become_follower(self, leader_id: int, epoch: int, now_ms: int) -> None:
        if self.role is QuorumRole.LEADER and epoch == self.epoch:
            raise LocalProtocolError(f"node {leader_id} claims epoch {epoch}, which this node leads")
        self._move(QuorumInput.LEADER_KNOWN)
        if epoch != self.epoch:
            self.voted_id = NO_NODE
        self.epoch, self.leader_id = epoch, leader_id
        self._persist()
        self._progress = {}
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms

    def _resign(self, now_ms: int, preferred: list[int]) -> None:
        self._move(QuorumInput.RESIGN)
        self._preferred = preferred
        self._acked = {self.node_id}
        self._progress = {}
        self._election_deadline = now_ms + self._random_timeout()

    def _maybe_transition(self, leader_id: int, epoch: int, now_ms: int) -> None:
        """React to another node's view of the epoch and its leader (Kafka's ``maybeTransition``)."""
        if epoch < self.epoch or leader_id == self.node_id:
            return
        if epoch > self.epoch:
            if leader_id >= 0:
                self._become_follower(leader_id, epoch, now_ms)
            else:
                self._become_unattached(epoch, now_ms)
        elif leader_id >= 0 and self.leader_id != leader_id and self.role is not QuorumRole.LEADER:
            self._become_follower(leader_id, epoch, now_ms)

    # -- the leader's bookkeeping -----------------------------------------------------------------
    def _progress_of(self, node_id: int) -> ReplicaProgress:
        return self._progress.get(node_id) or ReplicaProgress()

    def _update_leader_progress(self, now_ms: int) -> None:
        mine = self._progress.setdefault(self.node_id, ReplicaProgress())
        mine.end_offset = self._log.log_end_offset
        mine.last_fetch_ms = mine.last_caught_up_ms = now_ms
        self._update_high_watermark()

    def _record_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        progress = self._progress.setdefault(replica_id, ReplicaProgress())
        leader_end = self._log.log_end_offset
        if fetch_offset >= leader_end:
            progress.last_caught_up_ms = now_ms
        elif progress.leader_end_at_last_fetch >= 0 and fetch_offset >= progress.leader_end_at_last_fetch:
            progress.last_caught_up_ms = progress.last_fetch_ms
        progress.end_offset = fetch_offset
        progress.last_fetch_ms = now_ms
        progress.leader_end_at_last_fetch = leader_end
        if replica_id in self._voters:
            self._acked.add(replica_id)
            self._quorum_fetched.add(replica_id)
            if len(self._quorum_fetched) * 2 > len(self._voters):
                self._quorum_fetched = {self.node_id}
                self._check_quorum_deadline = now_ms + self.config.fetch_timeout_ms * 3 // 2
            self._update_high_watermark()

    def _update_high_watermark(self) -> None:
        ends = sorted((self._progress_of(v).end_offset for v in self._voters), reverse=True)
        candidate = ends[len(self._voters) // 2]
        if candidate > self._epoch_start_offset and candidate > self._hw:
            self._hw = candidate

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

    # -- answering requests -----------------------------------------------------------------------
    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        """Answer Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch (of ``__cluster_metadata``),
        FetchSnapshot or DescribeQuorum; a Fetch with nothing to return yet waits (long poll)."""
        self._now_ms = now_ms
        try:
            if api_key == ApiKey.VOTE and isinstance(body, VoteRequest):
                return self._handle_vote(body, api_version, now_ms)
            if api_key == ApiKey.BEGIN_QUORUM_EPOCH and isinstance(body, BeginQuorumEpochRequest):
                return self._handle_begin_epoch(body, api_version, now_ms)
            if api_key == ApiKey.END_QUORUM_EPOCH and isinstance(body, EndQuorumEpochRequest):
                return self._handle_end_epoch(body, api_version, now_ms)
            if api_key == ApiKey.FETCH and isinstance(body, FetchRequest):
                return self._handle_fetch(body, api_version, now_ms)
            if api_key == ApiKey.FETCH_SNAPSHOT and isinstance(body, FetchSnapshotRequest):
                return self._handle_fetch_snapshot(body, api_version, now_ms)
            if api_key == ApiKey.DESCRIBE_QUORUM and isinstance(body, DescribeQuorumRequest):
                return self._handle_describe_quorum(body, api_version, now_ms)
            raise LocalProtocolError(
                f"the raft replica does not answer api key {api_key} ({type(body).__name__})"
            )
        finally:
            self._flush()

    def _cluster_ok(self, cluster_id: str | None) -> bool:
        return cluster_id is None or self.config.cluster_id is None or cluster_id == self.config.cluster_id

    def _voter_only_error(self, remote_id: int, remote_epoch: int) -> int:
        if remote_epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if remote_id < 0:
            return ErrorCode.INVALID_REQUEST
        if not self.is_voter or remote_id not in self._voters:
            return ErrorCode.INCONSISTENT_VOTER_SET
        return ErrorCode.NONE

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

    def _handle_vote(self, request: VoteRequest, version: int, now_ms: int) -> VoteResponse:
        if not self._cluster_ok(request.cluster_id):
            return VoteResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if (
            len(request.topics) != 1
            or request.topics[0].topic_name != METADATA_TOPIC
            or len(request.topics[0].partitions) != 1
            or request.topics[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return VoteResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = request.topics[0].partitions[0]
        candidate, candidate_epoch = part.replica_id, part.replica_epoch
        if part.last_offset < 0 or part.last_offset_epoch < 0 or part.last_offset_epoch >= candidate_epoch:
            return self._vote_response(version, ErrorCode.INVALID_REQUEST, False)
        error = self._voter_only_error(candidate, candidate_epoch)
        if error:
            return self._vote_response(version, error, False)
        if candidate_epoch > self.epoch:
            # Raft's rule: a vote request moves this voter to the new epoch, but only a granted
            # vote restarts its election timer; else a candidate whose log is behind (and can never
            # win) would keep every voter from standing.
            running = (
                self._election_deadline if self.role is not QuorumRole.FOLLOWER else self._fetch_deadline
            )
            self._become_unattached(candidate_epoch, now_ms)
            if running is not None and self.role is QuorumRole.UNATTACHED:
                self._election_deadline = running
        up_to_date = (part.last_offset_epoch, part.last_offset) >= (
            self.last_epoch(),
            self._log.log_end_offset,
        )
        role = self.role
        if role is QuorumRole.UNATTACHED:
            granted = up_to_date
        elif role is QuorumRole.VOTED:
            granted = self.voted_id == candidate
        else:
            granted = False
        if granted and role is QuorumRole.UNATTACHED:
            self._become_voted(candidate, now_ms)
        return self._vote_response(version, ErrorCode.NONE, granted)

    def _vote_response(self, version: int, error: int, granted: bool) -> VoteResponse:
        endpoint = self._leader_endpoint()
        return VoteResponse(
            error_code=ErrorCode.NONE,
            topics=[
                VoteResponseTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        VoteResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            leader_id=self.leader_id,
                            leader_epoch=self.epoch,
                            vote_granted=granted,
                        )
                    ],
                )
            ],
            node_endpoints=[
                VoteResponseNodeEndpoint(node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port)
            ]
            if endpoint is not None and version >= 1
            else [],
        )

    def _handle_begin_epoch(
        self, request: BeginQuorumEpochRequest, version: int, now_ms: int
    ) -> BeginQuorumEpochResponse:
        if not self._cluster_ok(request.cluster_id):
            return BeginQuorumEpochResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if (
            len(request.topics) != 1
            or request.topics[0].topic_name != METADATA_TOPIC
            or len(request.topics[0].partitions) != 1
            or request.topics[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return BeginQuorumEpochResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = request.topics[0].partitions[0]
        error = self._voter_only_error(part.leader_id, part.leader_epoch)
        if not error:
            self._maybe_transition(part.leader_id, part.leader_epoch, now_ms)
            if self.role is QuorumRole.FOLLOWER and self.leader_id == part.leader_id:
                self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        endpoint = self._leader_endpoint()
        return BeginQuorumEpochResponse(
            error_code=ErrorCode.NONE,
            topics=[
                BeginQuorumEpochResponseTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        BeginQuorumEpochResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            leader_id=self.leader_id,
                            leader_epoch=self.epoch,
                        )
                    ],
                )
            ],
            node_endpoints=[
                BeginQuorumEpochResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port
                )
            ]
            if endpoint is not None and version >= 1
            else [],
        )

    def _handle_end_epoch(
        self, request: EndQuorumEpochRequest, version: int, now_ms: int
    ) -> EndQuorumEpochResponse:
        if not self._cluster_ok(request.cluster_id):
            return EndQuorumEpochResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if (
            len(request.topics) != 1
            or request.topics[0].topic_name != METADATA_TOPIC
            or len(request.topics[0].partitions) != 1
            or request.topics[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return EndQuorumEpochResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = request.topics[0].partitions[0]
        error = self._voter_only_error(part.leader_id, part.leader_epoch)
        if not error:
            self._maybe_transition(part.leader_id, part.leader_epoch, now_ms)
            if (
                self.role is QuorumRole.FOLLOWER
                and self.leader_id == part.leader_id
                and self.epoch == part.leader_epoch
            ):
                successors = (
                    [c.candidate_id for c in part.preferred_candidates]
                    if version >= 1
                    else list(part.preferred_successors)
                )
                position = successors.index(self.node_id) if self.node_id in successors else -1
                self._fetch_deadline = now_ms + self._successor_backoff(position, len(successors))
        endpoint = self._leader_endpoint()
        return EndQuorumEpochResponse(
            error_code=ErrorCode.NONE,
            topics=[
                EndQuorumEpochResponseTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        EndQuorumEpochResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            leader_id=self.leader_id,
                            leader_epoch=self.epoch,
                        )
                    ],
                )
            ],
            node_endpoints=[
                EndQuorumEpochResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port
                )
            ]
            if endpoint is not None and version >= 1
            else [],
        )

    def _successor_backoff(self, position: int, count: int) -> int:
        """How long a follower of a resigned leader waits before standing (Kafka's strict
        exponential backoff by position among the preferred successors)."""
        backoff_max = self.config.election_backoff_max_ms
        if position == 0:
            return 0
        if position < 0 or position >= count:
            return backoff_max
        base = backoff_max >> (count - 1)
        return min(backoff_max, base << (position - 1))

    # Fetch (leader side)
    def _handle_fetch(self, request: FetchRequest, version: int, now_ms: int) -> Message | Waiting:
        if not self._cluster_ok(request.cluster_id):
            return FetchResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        topics = request.topics
        if (
            len(topics) != 1
            or len(topics[0].partitions) != 1
            or topics[0].partitions[0].partition != METADATA_PARTITION
            or (
                topics[0].topic_id != METADATA_TOPIC_ID
                if version >= 13
                else topics[0].topic != METADATA_TOPIC
            )
        ):
            return FetchResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = topics[0].partitions[0]
        if (
            request.max_wait_ms < 0
            or part.fetch_offset < 0
            or part.last_fetched_epoch < 0
            or part.last_fetched_epoch > part.current_leader_epoch
        ):
            return self._fetch_response(version, ErrorCode.INVALID_REQUEST)
        response = self._answer_fetch(request, version, now_ms)
        data = response.responses[0].partitions[0]
        if (
            data.error_code
            or data.records
            or request.max_wait_ms == 0
            or data.diverging_epoch.epoch >= 0
            or data.snapshot_id.epoch >= 0
        ):
            return response
        return _FetchWait(self, request, version, part.fetch_offset, now_ms + request.max_wait_ms)

    def _answer_fetch(self, request: FetchRequest, version: int, now_ms: int) -> FetchResponse:
        part = request.topics[0].partitions[0]
        error = self._leader_only_error(part.current_leader_epoch)
        if error:
            return self._fetch_response(version, error)
        replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
        offset, epoch = part.fetch_offset, part.last_fetched_epoch
        log = self._log
        snapshot = self._snapshot
        if snapshot is not None and (
            offset < log.log_start_offset or (offset == 0 and snapshot.end_offset > 0)
        ):
            return self._fetch_response(version, ErrorCode.NONE, snapshot=snapshot)
        if not (
            offset == 0 or (snapshot is not None and (offset, epoch) == (snapshot.end_offset, snapshot.epoch))
        ):
            found_epoch, end = self._end_offset_for_epoch(epoch)
            if found_epoch < 0 and snapshot is not None:
                return self._fetch_response(version, ErrorCode.NONE, snapshot=snapshot)
            if found_epoch != epoch or end < offset:
                return self._fetch_response(version, ErrorCode.NONE, diverging=(max(found_epoch, 0), end))
        result = log.read(offset, max(1, min(request.max_bytes, part.partition_max_bytes) or 1))
        if result.error_code:
            return self._fetch_response(version, result.error_code)
        if replica_id >= 0:
            self._record_fetch(replica_id, offset, now_ms)
        return self._fetch_response(version, ErrorCode.NONE, records=log.read_bytes(result))

    def _fetch_response(
        self,
        version: int,
        error: int,
        *,
        records: bytes = b"",
        diverging: tuple[int, int] | None = None,
        snapshot: SnapshotId | None = None,
    ) -> FetchResponse:
        endpoint = self._leader_endpoint()
        return FetchResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            session_id=0,
            responses=[
                FetchResponseFetchableTopicResponse(
                    topic_id=METADATA_TOPIC_ID,
                    topic=METADATA_TOPIC,
                    partitions=[
                        FetchResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            high_watermark=self._hw if not error else -1,
                            last_stable_offset=self._hw if not error else -1,
                            log_start_offset=self._log.log_start_offset if not error else -1,
                            diverging_epoch=FetchResponseEpochEndOffset(
                                epoch=diverging[0] if diverging else -1,
                                end_offset=diverging[1] if diverging else -1,
                            ),
                            current_leader=FetchResponseLeaderIdAndEpoch(
                                leader_id=self.leader_id, leader_epoch=self.epoch
                            ),
                            snapshot_id=FetchResponseSnapshotId(
                                end_offset=snapshot.end_offset if snapshot else -1,
                                epoch=snapshot.epoch if snapshot else -1,
                            ),
                            aborted_transactions=None,
                            preferred_read_replica=-1,
                            records=records,
                        )
                    ],
                )
            ],
            node_endpoints=[
                FetchResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port, rack=None
                )
            ]
            if endpoint is not None and version >= 16
            else [],
        )

    def _handle_fetch_snapshot(
        self, request: FetchSnapshotRequest, version: int, now_ms: int
    ) -> FetchSnapshotResponse:
        if not self._cluster_ok(request.cluster_id):
            return FetchSnapshotResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if len(request.topics) != 1 or len(request.topics[0].partitions) != 1:
            return FetchSnapshotResponse(error_code=ErrorCode.INVALID_REQUEST)
        topic = request.topics[0]
        part = topic.partitions[0]
        if topic.name != METADATA_TOPIC or part.partition != METADATA_PARTITION:
            return self._snapshot_response(topic.name, part.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        error = self._leader_only_error(part.current_leader_epoch)
        if error:
            return self._snapshot_response(topic.name, part.partition, error)
        wanted = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
        if self._snapshot != wanted:
            return self._snapshot_response(topic.name, part.partition, ErrorCode.SNAPSHOT_NOT_FOUND)
        path = f"{self.config.directory}/{wanted.file_name}"
        size = self._storage.size(path) or 0
        if part.position < 0 or part.position >= size:
            return self._snapshot_response(topic.name, part.partition, ErrorCode.POSITION_OUT_OF_RANGE)
        chunk = self._storage.read(path, part.position, max(1, request.max_bytes))
        if request.replica_id in self._voters:
            progress = self._progress.setdefault(request.replica_id, ReplicaProgress())
            progress.last_fetch_ms = now_ms
        return self._snapshot_response(
            topic.name,
            part.partition,
            ErrorCode.NONE,
            snapshot=wanted,
            size=size,
            position=part.position,
            data=chunk,
        )

    def _snapshot_response(
        self,
        topic: str,
        partition: int,
        error: int,
        *,
        snapshot: SnapshotId | None = None,
        size: int = 0,
        position: int = 0,
        data: bytes = b"",
    ) -> FetchSnapshotResponse:
        return FetchSnapshotResponse(
            error_code=ErrorCode.NONE,
            topics=[
                FetchSnapshotResponseTopicSnapshot(
                    name=topic,
                    partitions=[
                        FetchSnapshotResponsePartitionSnapshot(
                            index=partition,
                            error_code=error,
                            snapshot_id=FetchSnapshotResponseSnapshotId(
                                end_offset=snapshot.end_offset if snapshot else -1,
                                epoch=snapshot.epoch if snapshot else -1,
                            ),
                            current_leader=FetchSnapshotResponseLeaderIdAndEpoch(
                                leader_id=self.leader_id, leader_epoch=self.epoch
                            ),
                            size=size,
                            position=position,
                            unaligned_records=data,
                        )
                    ],
                )
            ],
        )

    def _handle_describe_quorum(
        self, request: DescribeQuorumRequest, version: int, now_ms: int
    ) -> DescribeQuorumResponse:
        valid = (
            len(request.topics) == 1
            and request.topics[0].topic_name == METADATA_TOPIC
            and len(request.topics[0].partitions) == 1
            and request.topics[0].partitions[0].partition_index == METADATA_PARTITION
        )
        if not valid:
            return DescribeQuorumResponse(
                error_code=ErrorCode.NONE,
                error_message=None,
                topics=[
                    DescribeQuorumResponseTopicData(
                        topic_name=t.topic_name,
                        partitions=[
                            DescribeQuorumResponsePartitionData(
                                partition_index=p.partition_index,
                                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                error_message=None,
                                leader_id=NO_NODE,
                                leader_epoch=-1,
                                high_watermark=-1,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ],
            )
        if self.role is not QuorumRole.LEADER:
            partition = DescribeQuorumResponsePartitionData(
                partition_index=METADATA_PARTITION,
                error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                error_message=None,
                leader_id=self.leader_id,
                leader_epoch=self.epoch,
                high_watermark=-1,
            )
        else:
            self._update_leader_progress(now_ms)

            def state(node_id: int) -> DescribeQuorumResponseReplicaState:
                progress = self._progress_of(node_id)
                return DescribeQuorumResponseReplicaState(
                    replica_id=node_id,
                    log_end_offset=progress.end_offset,
                    last_fetch_timestamp=progress.last_fetch_ms,
                    last_caught_up_timestamp=progress.last_caught_up_ms,
                )

            partition = DescribeQuorumResponsePartitionData(
                partition_index=METADATA_PARTITION,
                error_code=ErrorCode.NONE,
                error_message=None,
                leader_id=self.node_id,
                leader_epoch=self.epoch,
                high_watermark=self._hw,
                current_voters=[state(v) for v in self._voters],
                observers=[state(o) for o in sorted(self._progress) if o not in self._voters],
            )
        return DescribeQuorumResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            topics=[DescribeQuorumResponseTopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
            nodes=[
                DescribeQuorumResponseNode(
                    node_id=v.node_id,
                    listeners=[
                        DescribeQuorumResponseListener(name=self.config.listener, host=v.host, port=v.port)
                    ],
                )
                for v in sorted(self.config.voters, key=lambda v: v.node_id)
            ]
            if version >= 2
            else [],
        )

    # -- requests to other nodes ------------------------------------------------------------------
    def poll_outbound(self, now_ms: int) -> list[Outbound]:
        """The requests this replica wants sent now (each once; a lost one is sent again later)."""
        self._now_ms = now_ms
        out: list[Outbound] = []
        role = self.role
        others = [v for v in self._voters if v != self.node_id]
        if role is QuorumRole.CANDIDATE:
            for voter in others:
                if voter not in self._granted and voter not in self._rejected:
                    self._send(out, ApiKey.VOTE, voter, self._vote_request(voter), now_ms)
        elif role is QuorumRole.LEADER:
            for voter in others:
                if voter not in self._acked:
                    self._send(out, ApiKey.BEGIN_QUORUM_EPOCH, voter, self._begin_request(voter), now_ms)
        elif role is QuorumRole.RESIGNED:
            for voter in others:
                if voter not in self._acked:
                    self._send(out, ApiKey.END_QUORUM_EPOCH, voter, self._end_request(), now_ms)
        elif role is QuorumRole.FOLLOWER:
            fetching = self._snapshot_fetch
            if fetching is not None:
                self._send(
                    out, ApiKey.FETCH_SNAPSHOT, self.leader_id, self._fetch_snapshot_request(fetching), now_ms
                )
            else:
                self._send(out, ApiKey.FETCH, self.leader_id, self._fetch_request(), now_ms)
        elif not self.is_voter and self._bootstrap:
            waiting = any(key[0] == ApiKey.FETCH for key in self._inflight) or any(
                key[0] == ApiKey.FETCH and due > now_ms for key, due in self._retry_at.items()
            )
            if not waiting:
                target = self._bootstrap[self._rng.randrange(len(self._bootstrap))]
                self._send(out, ApiKey.FETCH, target, self._fetch_request(), now_ms)
        return out

    def _send(self, out: list[Outbound], api: ApiKey, destination: int, body: Message, now_ms: int) -> None:
        key = (api, destination)
        retry_at = self._retry_at.get(key)
        if key in self._inflight or (retry_at is not None and retry_at > now_ms):
            return
        self._retry_at.pop(key, None)
        self._inflight.add(key)
        call = _Call(self, api, destination, self.epoch, self._generation)
        timeout = self.config.request_timeout_ms
        if api == ApiKey.FETCH:
            timeout = max(timeout, self.config.fetch_max_wait_ms + timeout)
        out.append(Outbound(destination, self.config.listener, body, call.on_reply, timeout))

    def _vote_request(self, voter: int) -> VoteRequest:
        return VoteRequest(
            cluster_id=self.config.cluster_id,
            voter_id=voter,
            topics=[
                VoteRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        VoteRequestPartitionData(
                            partition_index=METADATA_PARTITION,
                            replica_epoch=self.epoch,
                            replica_id=self.node_id,
                            last_offset_epoch=self.last_epoch(),
                            last_offset=self._log.log_end_offset,
                        )
                    ],
                )
            ],
        )

    def _my_endpoint(self) -> Voter | None:
        return self._endpoints.get(self.node_id)

    def _begin_request(self, voter: int) -> BeginQuorumEpochRequest:
        me = self._my_endpoint()
        return BeginQuorumEpochRequest(
            cluster_id=self.config.cluster_id,
            voter_id=voter,
            topics=[
                BeginQuorumEpochRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        BeginQuorumEpochRequestPartitionData(
                            partition_index=METADATA_PARTITION,
                            leader_id=self.node_id,
                            leader_epoch=self.epoch,
                        )
                    ],
                )
            ],
            leader_endpoints=[
                BeginQuorumEpochRequestLeaderEndpoint(name=self.config.listener, host=me.host, port=me.port)
            ]
            if me is not None
            else [],
        )

    def _end_request(self) -> EndQuorumEpochRequest:
        me = self._my_endpoint()
        return EndQuorumEpochRequest(
            cluster_id=self.config.cluster_id,
            topics=[
                EndQuorumEpochRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        EndQuorumEpochRequestPartitionData(
                            partition_index=METADATA_PARTITION,
                            leader_id=self.node_id,
                            leader_epoch=self.epoch,
                            preferred_successors=list(self._preferred),
                            preferred_candidates=[
                                EndQuorumEpochRequestReplicaInfo(candidate_id=c) for c in self._preferred
                            ],
                        )
                    ],
                )
            ],
            leader_endpoints=[
                EndQuorumEpochRequestLeaderEndpoint(name=self.config.listener, host=me.host, port=me.port)
            ]
            if me is not None
            else [],
        )

    def _fetch_request(self) -> FetchRequest:
        config = self.config
        return FetchRequest(
            cluster_id=config.cluster_id,
            replica_state=FetchRequestReplicaState(replica_id=self.node_id, replica_epoch=-1),
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=0,
            max_bytes=config.fetch_max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequestTopic(
                    topic_id=METADATA_TOPIC_ID,
                    topic=METADATA_TOPIC,
                    partitions=[
                        FetchRequestPartition(
                            partition=METADATA_PARTITION,
                            current_leader_epoch=self.epoch,
                            fetch_offset=self._log.log_end_offset,
                            last_fetched_epoch=self.last_epoch(),
                            log_start_offset=self._log.log_start_offset,
                            partition_max_bytes=config.fetch_max_bytes,
                        )
                    ],
                )
            ],
        )

    def _fetch_snapshot_request(self, fetching: _SnapshotFetch) -> FetchSnapshotRequest:
        return FetchSnapshotRequest(
            cluster_id=self.config.cluster_id,
            replica_id=self.node_id,
            max_bytes=self.config.fetch_max_bytes,
            topics=[
                FetchSnapshotRequestTopicSnapshot(
                    name=METADATA_TOPIC,
                    partitions=[
                        FetchSnapshotRequestPartitionSnapshot(
                            partition=METADATA_PARTITION,
                            current_leader_epoch=self.epoch,
                            snapshot_id=FetchSnapshotRequestSnapshotId(
                                end_offset=fetching.snapshot_id.end_offset, epoch=fetching.snapshot_id.epoch
                            ),
                            position=len(fetching.data),
                        )
                    ],
                )
            ],
        )

    # -- replies ----------------------------------------------------------------------------------
    def _on_reply(self, call: _Call, body: Message | None, now_ms: int) -> None:
        self._now_ms = now_ms
        try:
            current = call.generation == self._generation
            key = (call.api, call.destination)
            if current:
                self._inflight.discard(key)
            if body is None:
                if current:
                    self._retry_at[key] = now_ms + self.config.retry_backoff_ms
                return
            ok = self._dispatch_reply(call, body, current, now_ms)
            if not ok and call.generation == self._generation:
                self._retry_at[key] = now_ms + self.config.retry_backoff_ms
        finally:
            self._flush()

    def _dispatch_reply(self, call: _Call, body: Message, current: bool, now_ms: int) -> bool:
        """Handle one answer; False asks for a retry after the backoff."""
        if isinstance(body, VoteResponse):
            if body.error_code or not body.topics or not body.topics[0].partitions:
                return False
            vote = body.topics[0].partitions[0]
            if self._common(vote.error_code, vote.leader_id, vote.leader_epoch, now_ms) or not current:
                return True
            if vote.error_code:
                return False
            if self.role is QuorumRole.CANDIDATE:
                if vote.vote_granted:
                    self._granted.add(call.destination)
                    self._maybe_elected(now_ms)
                else:
                    self._rejected.add(call.destination)
                    if len(self._rejected) * 2 >= len(self._voters):
                        self._election_deadline = now_ms + self._election_backoff()
            return True
        if isinstance(body, BeginQuorumEpochResponse | EndQuorumEpochResponse):
            if body.error_code or not body.topics or not body.topics[0].partitions:
                return False
            part = body.topics[0].partitions[0]
            if self._common(part.error_code, part.leader_id, part.leader_epoch, now_ms) or not current:
                return True
            if part.error_code:
                return False
            if self.role in (QuorumRole.LEADER, QuorumRole.RESIGNED):
                self._acked.add(call.destination)
            return True
        if isinstance(body, FetchResponse):
            return self._on_fetch_reply(body, current, now_ms)
        if isinstance(body, FetchSnapshotResponse):
            return self._on_fetch_snapshot_reply(body, current, now_ms)
        return False

    def _election_backoff(self) -> int:
        retries = max(1, self._election_retries)
        spread = 2 << min(20, retries - 1)
        return min(
            self.config.retry_backoff_ms * self._rng.randrange(1, spread), self.config.election_backoff_max_ms
        )

    def _common(self, error: int, leader_id: int, epoch: int, now_ms: int) -> bool:
        """Kafka's ``maybeHandleCommonResponse``: True when the answer changed or outdated what
        this replica knows and needs nothing more."""
        if epoch < self.epoch:
            return True
        if epoch > self.epoch or (
            leader_id >= 0
            and leader_id != self.leader_id
            and error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE)
        ):
            before = (self.epoch, self.leader_id)
            self._maybe_transition(leader_id, epoch, now_ms)
            return (self.epoch, self.leader_id) != before
        return False

    def _on_fetch_reply(self, body: FetchResponse, current: bool, now_ms: int) -> bool:
        if body.error_code or len(body.responses) != 1 or len(body.responses[0].partitions) != 1:
            return False
        part = body.responses[0].partitions[0]
        leader = part.current_leader
        if self._common(part.error_code, leader.leader_id, leader.leader_epoch, now_ms) or not current:
            return True
        if part.error_code or self.role is not QuorumRole.FOLLOWER:
            return False
        diverging = part.diverging_epoch
        if diverging.epoch >= 0:
            _, local_end = self._end_offset_for_epoch(diverging.epoch)
            target = min(local_end, diverging.end_offset)
            if target < self._hw:
                return False
            self._truncate(target)
        elif part.snapshot_id.epoch >= 0 and part.snapshot_id.end_offset >= 0:
            wanted = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
            if self._snapshot != wanted:
                self._snapshot_fetch = _SnapshotFetch(wanted)
        else:
            records = part.records
            if records:
                if not self._append_as_follower(bytes(records), now_ms):
                    return False
            if part.high_watermark >= 0:
                self._leader_hw = part.high_watermark
                new_hw = min(part.high_watermark, self._log.log_end_offset)
                if new_hw > self._hw:
                    self._hw = new_hw
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        return True

    def _append_as_follower(self, records: bytes, now_ms: int) -> bool:
        epochs: list[tuple[int, int]] = []
        try:
            for batch in read_batches(records):
                if batch.base_offset < self._log.log_end_offset:
                    return False
                epochs.append(
                    (batch.partition_leader_epoch if isinstance(batch, RecordBatch) else 0, batch.base_offset)
                )
        except DecodeError:
            return False
        result = self._log.append(records, now_ms, assign_offsets=False, origin="replication")
        if result.error_code:
            return False
        for epoch, start in epochs:
            self._note_epoch(epoch, start)
        return True

    def _truncate(self, offset: int) -> None:
        self._log.truncate_to(offset)
        while self._epochs and self._epochs[-1][1] >= self._log.log_end_offset:
            self._epochs.pop()

    def _on_fetch_snapshot_reply(self, body: FetchSnapshotResponse, current: bool, now_ms: int) -> bool:
        if body.error_code or len(body.topics) != 1 or len(body.topics[0].partitions) != 1:
            return False
        part = body.topics[0].partitions[0]
        leader = part.current_leader
        if self._common(part.error_code, leader.leader_id, leader.leader_epoch, now_ms) or not current:
            return True
        fetching = self._snapshot_fetch
        if fetching is None or self.role is not QuorumRole.FOLLOWER:
            return True
        if part.error_code in (ErrorCode.SNAPSHOT_NOT_FOUND, ErrorCode.POSITION_OUT_OF_RANGE):
            self._snapshot_fetch = None  # fetch again: the leader names its current snapshot
            return True
        if part.error_code:
            return False
        got = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
        if got != fetching.snapshot_id or part.position != len(fetching.data):
            self._snapshot_fetch = None
            return True
        fetching.data += part.unaligned_records
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        if len(fetching.data) >= part.size:
            self._snapshot_fetch = None
            self._install_snapshot(fetching.snapshot_id, bytes(fetching.data))
        return True

    def _install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        try:
            records = decode_snapshot(data)
        except (DecodeError, InvalidValueError):
            return
        directory = self.config.directory
        write_snapshot(self._effects, directory, snapshot_id, data)
        previous = self._snapshot
        if previous is not None and previous != snapshot_id:
            self._effects.emit(Delete(f"{directory}/{previous.file_name}"))
        self._snapshot = snapshot_id
        self._reset_log(snapshot_id.end_offset)
        self._epochs = []
        self._hw = max(self._hw, snapshot_id.end_offset)
        self._taken = snapshot_id.end_offset
        self._pending_load = SnapshotLoad(snapshot_id, tuple(records))

    # -- effects ----------------------------------------------------------------------------------
    def _flush(self) -> None:
        if self._started:
            self._effects.extend(self._log.take_effects())
