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
  jitter), or from its leader for the fetch timeout, first asks the voters for pre-votes in its
  current epoch (KIP-996); only with a majority of them does it stand for election in the next.
- A new leader writes a LeaderChangeMessage control batch, tells the voters with
  BeginQuorumEpoch, and serves Fetch: followers and observers fetch from their end offset with the
  epoch of their last batch; a mismatch answers DivergingEpoch (the follower truncates and fetches
  again), an offset below the log start answers the latest snapshot's id (the follower fetches it
  with FetchSnapshot). The high watermark is the end offset a majority of voters have reached,
  once that is past the start of the leader's epoch. A fetch with nothing to return waits (long
  poll) up to its max wait, until data arrives or the high watermark moves.
- A leader that stops hearing from a majority for 1.5 fetch timeouts resigns (check quorum; a
  lone voter is its own majority and never does);
  :meth:`resign` steps down gracefully with EndQuorumEpoch naming the preferred successors.

The class is built in layers (see :mod:`.replica_state`); this module holds the top one:
starting, stopping, appending, handing out what is committed, snapshots and timers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_wire.broker.effects import Delete
from kafka_wire.broker.log.log import PartitionLog
from kafka_wire.broker.raft.committed import Committed, CommittedBatch, SnapshotLoad
from kafka_wire.broker.raft.outbound import OutboundRequests
from kafka_wire.broker.raft.quorum_state import ElectionState, read_quorum_state, write_quorum_state
from kafka_wire.broker.raft.snapshots import (
    PARTIAL_SUFFIX,
    SnapshotId,
    decode_snapshot,
    encode_snapshot,
    parse_snapshot_name,
    write_snapshot,
)
from kafka_wire.broker.raft.states import QuorumRole
from kafka_wire.errors import LocalProtocolError
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.builder import build_batch
from kafka_wire.records.reader import read_batches

#: Bytes read per step when handing out committed batches.
_READ_CHUNK_BYTES: Final = 1 << 20


class KRaftReplica(OutboundRequests):
    """One node's replica of ``__cluster_metadata`` (see the module docstring)."""

    # -- starting and stopping --------------------------------------------------------------------
    def start(self, now_ms: int) -> None:
        """Open the log, load the latest snapshot and the quorum state; a lone voter elects itself."""
        if self._started:
            raise LocalProtocolError("the raft replica is already started")
        self._started = True
        self._now_ms = now_ms
        config = self.config
        self._log = PartitionLog.open(
            config.directory, config.log_config, self._storage, now_ms, progress=self._effects.progress
        )
        self._load_snapshot()
        self._rebuild_epochs()
        stored = read_quorum_state(self._storage, config.directory)
        lone = self._voters == (self.node_id,)
        if stored is None:
            stored = ElectionState()
            if not lone:  # a lone voter writes its state once, as the leader it becomes below
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
        if lone:  # its own majority: the pre-vote and the vote are won at once
            self._become_prospective(now_ms)
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
        values = tuple(bytes(value) for value in records)
        batch = build_batch(
            [(None, value, (), now_ms) for value in values], partition_leader_epoch=self.epoch
        )
        base = self._log.log_end_offset
        result = self._log.append(batch, now_ms, leader_epoch=self.epoch, origin="coordinator")
        if result.error_code:
            self._flush()
            return None
        self._remember(base, CommittedBatch(base, result.last_offset, self.epoch, now_ms, values))
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
        appended = self._appended
        while self._taken < self._hw:
            while appended and appended[0][0] < self._taken:
                appended.popleft()
            if appended and appended[0][0] == self._taken:
                if appended[0][1] > self._hw:
                    break
                _, self._taken, mine = appended.popleft()
                if mine is not None:
                    out.append(mine)
                continue
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
        best = self._log.next_deadline_ms() if self._started else None
        for d in (self._election_deadline, self._fetch_deadline, self._check_quorum_deadline):
            if d is not None and (best is None or d < best):
                best = d
        for d in self._retry_at.values():
            if best is None or d < best:
                best = d
        return best

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
                    self._become_prospective(now_ms)
                else:
                    self._become_unattached(self.epoch, now_ms)
        elif role is QuorumRole.LEADER:
            if self._check_quorum_deadline is not None and now_ms >= self._check_quorum_deadline:
                self._resign(now_ms, [])
        elif self.is_voter and self._election_deadline is not None and now_ms >= self._election_deadline:
            if role is QuorumRole.PROSPECTIVE:
                self._lose_pre_vote(now_ms)
            else:
                self._become_prospective(now_ms)
        self._log.maintain(now_ms, high_watermark=self._hw)
        self._flush()
