"""One partition's replica: its log, leader epoch, ISR, high watermark and producer state.

A single-node broker (no ``registration``) leads every partition at epoch 0 with itself as the
ISR. In a cluster the replica follows its registration in the metadata (see
``kafka_wire.broker.replication.manager``): the role (``roles.Leadership``: leader, follower or
offline, with the leader epoch and its epoch cache) moves with each leader epoch.

As leader it keeps each follower's fetch state (``followers.Followers``, Kafka's ``Replica``s),
moves the high watermark by Kafka's rule (the smallest log end offset over the *maximal* ISR,
the committed ISR plus the additions an AlterPartition in flight proposes, and frozen while the
ISR is below the effective ``min.insync.replicas``), and proposes ISR changes (expansion when a
follower catches up, shrinking when one lags ``replica.lag.time.max.ms``) through
``propose_isr``, one at a time. As follower it appends the leader's batches as they are
(:meth:`PartitionReplica.append_as_follower`), truncates when its log diverged, and takes the
leader's high watermark and log start offset.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Final

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import ClusterView, LeaderRecoveryState, PartitionState
from kafka_wire.broker.effects import StorageEffect
from kafka_wire.broker.log.aborted import aborted_transactions
from kafka_wire.broker.log.log import AppendResult, PartitionLog, ReadResult
from kafka_wire.broker.log.validation import AppendOrigin
from kafka_wire.broker.partition.epoch_cache import EpochCache
from kafka_wire.broker.partition.followers import Followers, FollowerState
from kafka_wire.broker.partition.outcomes import FetchOutcome, ProduceOutcome
from kafka_wire.broker.partition.roles import Leadership, ReplicaRole
from kafka_wire.broker.partition.transactions import ProducerLog, index_abort, last_stable_offset
from kafka_wire.broker.txn.producers import ProducerStates
from kafka_wire.errors import DecodeError
from kafka_wire.messages import ErrorCode
from kafka_wire.records import RecordBatch, build_end_txn_marker, read_batches, validate_batch

#: Where the magic byte sits in a batch or legacy message set.
_MAGIC_AT: Final = 16
READ_UNCOMMITTED: Final = 0
READ_COMMITTED: Final = 1


#: Called with a leader replica and the ISR it wants; the AlterPartition sender owns the request.
IsrProposer = Callable[["PartitionReplica", tuple[int, ...]], None]


@dataclass(slots=True)
class PartitionReplica:
    topic: str
    partition: int
    topic_id: uuid.UUID
    log: PartitionLog
    node_id: int
    leadership: Leadership = field(init=False)
    producers: ProducerStates = field(default_factory=ProducerStates)
    #: The producer state's snapshots and replay (``partition/transactions.py``).
    producer_log: ProducerLog = field(default_factory=ProducerLog)
    high_watermark: int = 0
    #: The registration in the cluster metadata (None: the single-node broker).
    registration: PartitionState | None = None
    cluster: ClusterView | None = None
    #: Each follower's fetch state while this replica leads, and ``replica.lag.time.max.ms``.
    followers: Followers = field(init=False)
    #: The ISR an AlterPartition in flight proposes (None: none in flight).
    pending_isr: tuple[int, ...] | None = None
    #: Where ISR changes go (set by the replica manager in a cluster).
    propose_isr: IsrProposer | None = None
    #: The simulator's BUGGIFY points and planted bugs (``buggify.OFF`` outside it).
    hooks: Hooks = OFF

    def __post_init__(self) -> None:
        self.leadership = Leadership(self.node_id)
        self.followers = Followers(self.node_id)

    @property
    def leader_epoch(self) -> int:
        return self.leadership.epoch

    @property
    def is_leader(self) -> bool:
        return self.leadership.role is ReplicaRole.LEADER

    @property
    def is_follower(self) -> bool:
        return self.leadership.role is ReplicaRole.FOLLOWER

    @property
    def replicas(self) -> list[int]:
        if self.registration is None:
            return [self.node_id]
        return list(self.registration.replicas)

    @property
    def isr(self) -> list[int]:
        """The committed ISR (as the controller last confirmed it)."""
        if self.registration is None:
            return self.replicas
        return list(self.registration.isr)

    @property
    def maximal_isr(self) -> list[int]:
        """The committed ISR plus the replicas an AlterPartition in flight adds (KIP-497)."""
        isr = self.isr
        if self.pending_isr is not None:
            isr += [r for r in self.pending_isr if r not in isr]
        return isr

    @property
    def effective_min_isr(self) -> int:
        return min(self.log.config.min_insync_replicas, len(self.replicas))

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.effective_min_isr

    @property
    def recovering(self) -> bool:
        """Led after an unclean election and not yet recovered: no produce is accepted."""
        return (
            self.registration is not None
            and self.registration.leader_recovery_state == LeaderRecoveryState.RECOVERING
        )

    @property
    def epoch_cache(self) -> EpochCache:
        return self.leadership.cache

    @property
    def epoch_start_offset(self) -> int:
        """Where the current leader epoch starts in this log."""
        return self.epoch_cache.start_offset_of(self.leadership.epoch)

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_stable_offset(self) -> int:
        return last_stable_offset(self)

    def open(self) -> None:
        """Rebuild the producer state (from its snapshot and the log after it) and set the high
        watermark."""
        if not self.hooks.planted("forget-producer-state"):  # planted bug: a restart forgets
            self.producer_log.rebuild(self)
        self._advance_high_watermark()
        self.producers.on_high_watermark(self.high_watermark)

    def close(self) -> list[StorageEffect]:
        """A clean shutdown: the producer state is snapshotted at the log end, the log fsynced."""
        self.producer_log.take(self)
        return self.log.close()

    def _rebuild_producers(self) -> None:
        hw = self.high_watermark
        self.producer_log.prune(self.log)
        self.producer_log.rebuild(self)
        self._advance_high_watermark()
        self.high_watermark = min(hw, self.log.log_end_offset)
        self.producers.on_high_watermark(self.high_watermark)

    def _advance_high_watermark(self, now_ms: int = 0) -> bool:
        """Kafka's ``maybeIncrementLeaderHW``: True when the high watermark moved."""
        if not self.is_leader:
            return False
        new = self.log.log_end_offset
        if self.registration is not None and not self.hooks.planted("hw-without-isr"):
            if self.under_min_isr:
                return False
            new = self.followers.high_watermark_bound(new, self.maximal_isr, now_ms, self.isr_eligible)
        new = max(self.high_watermark, new, self.log.log_start_offset)
        if new != self.high_watermark:
            self.high_watermark = new
            self.producers.on_high_watermark(new)
            return True
        return False

    # -- roles (cluster) --------------------------------------------------------------------------
    def make_leader(self, registration: PartitionState, now_ms: int) -> bool:
        """Lead as ``registration`` says; True when this starts a new leader epoch (the epoch is
        recorded at the log end offset and every follower's fetch state starts afresh)."""
        new_epoch = not self.is_leader or registration.leader_epoch != self.leadership.epoch
        newer = self.registration is None or registration.partition_epoch > self.registration.partition_epoch
        self.registration = registration
        if self.pending_isr is not None and (newer or new_epoch or registration.isr == self.pending_isr):
            # A newer partition state settles the pending change, applied or not: a proposal
            # made on an older partition epoch can no longer be (Kafka's makeLeader commits the
            # metadata's ISR).
            self.pending_isr = None
        if new_epoch:
            self.leadership.become_leader(registration.leader_epoch, self.log.log_end_offset)
            self.followers.restart(registration.replicas, registration.isr, now_ms)
        else:
            self.followers.follow_assignment(registration.replicas)
        self._advance_high_watermark(now_ms)
        return new_epoch

    def make_follower(self, registration: PartitionState) -> bool:
        """Follow ``registration.leader``; True when the leader or its epoch changed."""
        changed = (
            not self.is_follower
            or registration.leader_epoch != self.leadership.epoch
            or registration.leader != self.leadership.leader_id
        )
        self.registration = registration
        self.pending_isr = None
        self.followers.clear()
        if changed:
            self.leadership.become_follower(registration.leader_epoch, registration.leader)
        return changed

    def make_offline(self, registration: PartitionState | None) -> None:
        if registration is not None:
            self.registration = registration
        self.pending_isr = None
        self.followers.clear()
        if self.leadership.role is not ReplicaRole.OFFLINE:
            self.leadership.go_offline()

    def isr_eligible(self, follower: FollowerState) -> bool:
        """Kafka's ``isReplicaIsrEligible``: registered, unfenced, not shutting down, and
        fetching with the broker epoch the metadata has (when it sent one)."""
        if self.cluster is None:
            return True
        broker = self.cluster.broker(follower.node_id)
        if broker is None or broker.fenced or broker.in_controlled_shutdown:
            return False
        return follower.broker_epoch in (-1, broker.epoch)

    def stale_follower_fetch(self, node_id: int, broker_epoch: int) -> bool:
        """Kafka's fence in ``Replica.updateFetchStateOrThrow``: a follower's fetch carrying a
        broker epoch older than the one the metadata has for that broker (sent by an earlier
        incarnation, delivered late) must not update its fetch state; it is answered
        NOT_LEADER_OR_FOLLOWER."""
        if broker_epoch == -1 or self.cluster is None:
            return False
        broker = self.cluster.broker(node_id)
        return broker is not None and broker.epoch > broker_epoch

    # -- leader: followers' fetches and the ISR ---------------------------------------------------
    def record_follower_fetch(
        self, node_id: int, fetch_offset: int, now_ms: int, *, log_start: int = -1, broker_epoch: int = -1
    ) -> bool:
        """A follower fetched from ``fetch_offset``: update its state, propose it for the ISR if
        it caught up, and move the high watermark (True when it moved)."""
        follower = self.followers.record_fetch(
            node_id, fetch_offset, log_start, now_ms, self.log.log_end_offset, broker_epoch
        )
        self.maybe_expand_isr(follower)
        return self._advance_high_watermark(now_ms)

    def maybe_expand_isr(self, follower: FollowerState) -> None:
        """Kafka's ``maybeExpandIsr``: a follower not in the ISR whose log reaches the high
        watermark and the current epoch's start joins it (once no other change is in flight)."""
        if self.registration is None or self.pending_isr is not None or self.propose_isr is None:
            return
        if follower.node_id in self.isr or follower.node_id not in self.replicas:
            return
        if follower.log_end_offset < self.high_watermark or follower.log_end_offset < self.epoch_start_offset:
            return
        if not self.isr_eligible(follower):
            return
        self.propose_isr(self, tuple([*self.isr, follower.node_id]))

    def out_of_sync(self, now_ms: int) -> list[int]:
        """ISR members (other than this leader) that lag more than ``replica.lag.time.max.ms``."""
        return self.followers.lagging(self.isr, self.log.log_end_offset, now_ms)

    def maybe_shrink_isr(self, now_ms: int) -> None:
        """Kafka's ``maybeShrinkIsr``: propose the ISR without its out-of-sync members."""
        if not self.is_leader or self.registration is None or self.pending_isr is not None:
            return
        if self.propose_isr is None:
            return
        lagging = self.out_of_sync(now_ms)
        if lagging:
            self.propose_isr(self, tuple(r for r in self.isr if r not in lagging))
        elif len(self.isr) > self.effective_min_isr and self.hooks.fire("replica.minimal_isr"):
            # A rare legal path: the smallest ISR min.insync.replicas allows (FDB's "minimal
            # quorum"); the members left out rejoin once they fetch again.
            rest = [r for r in self.isr if r != self.node_id]
            self.propose_isr(self, (self.node_id, *rest[: self.effective_min_isr - 1]))

    def isr_committed(
        self,
        isr: tuple[int, ...],
        partition_epoch: int,
        now_ms: int,
        recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
    ) -> None:
        """The controller accepted an ISR change (AlterPartition's answer)."""
        if self.registration is None:
            return
        if partition_epoch >= self.registration.partition_epoch:
            self.registration = replace(
                self.registration,
                isr=isr,
                partition_epoch=partition_epoch,
                leader_recovery_state=recovery_state,
            )
        self.pending_isr = None
        self._advance_high_watermark(now_ms)

    def low_watermark(self) -> int:
        """The smallest log start offset over this leader and its maximal ISR (DeleteRecords)."""
        return self.followers.low_watermark(self.log.log_start_offset, self.maximal_isr)

    # -- follower ---------------------------------------------------------------------------------
    def append_as_follower(self, records: bytes, now_ms: int) -> AppendResult:
        """Append the leader's batches as they are (offsets, epochs and timestamps kept); the
        epoch cache learns their epochs, the producer state their sequences."""
        batches = [b for b in read_batches(records, verify_crc=False) if isinstance(b, RecordBatch)]
        result = self.log.append(records, now_ms, assign_offsets=False, origin="replication")
        if result.error_code:
            return result
        self.producer_log.after_append(self)
        self.epoch_cache.assign_all((b.partition_leader_epoch, b.base_offset) for b in batches)
        for batch in batches:
            self.producer_log.replay(self, batch)
        return result

    def follow_leader_offsets(self, leader_high_watermark: int, leader_log_start: int) -> None:
        """A fetch answer's high watermark and log start: HW = min(leader's HW, LEO), and the
        log start follows the leader's (never above the HW)."""
        leo = self.log.log_end_offset
        self.high_watermark = max(min(leader_high_watermark, leo), self.log.log_start_offset)
        self.producers.on_high_watermark(self.high_watermark)
        if leader_log_start > self.log.log_start_offset:
            self._move_log_start(min(leader_log_start, self.high_watermark))

    def truncate_to(self, offset: int) -> None:
        """Drop the log from ``offset`` (a diverged follower); the epoch cache and producer state
        follow."""
        if offset >= self.log.log_end_offset:
            # Kafka's UnifiedLog.truncateTo: the cache is cut at the log end all the same. A
            # replica that led an epoch and appended nothing in it keeps that epoch's entry at its
            # log end; while it stays, every fetch names that epoch, the leader answers
            # DivergingEpoch at this very offset, and the follower never catches up.
            self.epoch_cache.truncate_from_end(self.log.log_end_offset)
            return
        self.log.truncate_to(offset)
        self.epoch_cache.truncate_from_end(self.log.log_end_offset)
        self._rebuild_producers()

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Empty the log and start it at ``offset`` (the follower fell below the leader's log start)."""
        self.log.truncate_fully_and_start_at(offset, now_ms)
        self.epoch_cache.clear()
        self.producers = ProducerStates()
        self.producer_log.prune(self.log)
        self.high_watermark = offset

    def _move_log_start(self, offset: int) -> None:
        if offset <= self.log.log_start_offset:
            return
        self.log.delete_records_before(offset)
        self.producers.truncate_before(self.log.log_start_offset)
        self.epoch_cache.truncate_from_start(self.log.log_start_offset)

    def append_as_leader(
        self,
        records: bytes,
        now_ms: int,
        *,
        require_verification: bool = False,
        guard: int | None = None,
        origin: AppendOrigin = "client",
    ) -> ProduceOutcome:
        """Validate, de-duplicate and append one produce request's records for this partition.

        A transactional batch starting a transaction here must show the ``guard`` of its
        verification with the coordinator (``require_verification``, KIP-890 part 1), else it is
        refused with INVALID_TXN_STATE. A coordinator's batch (``origin``) has no sequence: only
        its producer epoch is checked, as Kafka checks a ``COORDINATOR`` append."""
        if not self.is_leader:
            return ProduceOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if self.recovering:
            return ProduceOutcome(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                error_message="the leader is recovering after an unclean election",
            )
        producer = None
        try:
            header = validate_batch(records, verify_crc=False)
        except DecodeError:
            if len(records) > _MAGIC_AT and records[_MAGIC_AT] < 2:
                return ProduceOutcome(
                    ErrorCode.INVALID_RECORD,
                    error_message="Produce v3 and later carry record batches of magic 2 only",
                )
            header = None  # garbage: the log refuses it with its own error
        if header is not None:
            if header.size_in_bytes != len(records):
                return ProduceOutcome(
                    ErrorCode.INVALID_RECORD,
                    error_message="a produce request must hold exactly one record batch per partition",
                )
            if header.producer_id >= 0:
                verdict = self.producers.check(
                    header.producer_id,
                    header.producer_epoch,
                    header.base_sequence,
                    header.last_sequence,
                    transactional=header.is_transactional,
                    sequenced=origin == "client",
                )
                zombie = (  # planted bug: a fenced producer's transactional batch is appended
                    verdict.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
                    and header.is_transactional
                    and self.hooks.planted("zombie-produce-accepted")
                )
                if verdict.error_code and not zombie:
                    return ProduceOutcome(verdict.error_code, error_message=verdict.message)
                if verdict.duplicate is not None and not header.is_valid():
                    # Kafka validates a batch (its CRC first) before it looks for a duplicate.
                    return ProduceOutcome(ErrorCode.CORRUPT_MESSAGE, error_message="CRC-32C mismatch")
                if verdict.duplicate is not None:
                    # Kafka answers a duplicate with the retained batch's offsets and timestamp
                    # (as the log append time, whatever the topic's timestamp type).
                    return ProduceOutcome(
                        ErrorCode.NONE,
                        base_offset=verdict.duplicate.first_offset,
                        log_append_time_ms=verdict.duplicate.timestamp,
                        log_start_offset=self.log.log_start_offset,
                        next_offset=verdict.duplicate.last_offset + 1,
                    )
                if (
                    require_verification
                    and header.is_transactional
                    and not self.producers.has_open_transaction(header.producer_id, header.producer_epoch)
                    and not self.producers.verified(header.producer_id, guard)
                    and not zombie
                ):
                    return ProduceOutcome(
                        ErrorCode.INVALID_TXN_STATE,
                        error_message="Record was not part of an ongoing transaction",
                    )
                producer = header
        result: AppendResult = self.log.append(
            records, now_ms, leader_epoch=self.leadership.epoch, origin=origin
        )
        if result.error_code:
            return ProduceOutcome(
                result.error_code,
                error_message=result.error_message,
                record_errors=result.record_errors,
                work_bytes=result.work_bytes,
            )
        self.producer_log.after_append(self)
        if producer is not None:
            self.producers.observe(
                producer.producer_id,
                producer.producer_epoch,
                producer.base_sequence,
                producer.last_sequence,
                result.base_offset,
                result.last_offset,
                now_ms if result.log_append_time >= 0 else producer.max_timestamp,
                transactional=producer.is_transactional,
            )
        self._advance_high_watermark(now_ms)
        return ProduceOutcome(
            ErrorCode.NONE,
            base_offset=result.base_offset,
            log_append_time_ms=result.log_append_time,
            log_start_offset=self.log.log_start_offset,
            next_offset=result.last_offset + 1,
            work_bytes=result.work_bytes,
        )

    def append_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, now_ms: int
    ) -> ProduceOutcome:
        """Append a COMMIT or ABORT marker from the transaction coordinator (WriteTxnMarkers)."""
        if not self.is_leader:
            return ProduceOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        verdict = self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        if verdict.error_code:
            return ProduceOutcome(verdict.error_code, error_message=verdict.message)
        marker = build_end_txn_marker(
            commit,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms,
        )
        result = self.log.append(marker, now_ms, leader_epoch=self.leadership.epoch, origin="coordinator")
        if result.error_code:
            return ProduceOutcome(result.error_code, error_message=result.error_message)
        self.producer_log.after_append(self)
        completed = self.producers.observe_marker(
            producer_id, producer_epoch, coordinator_epoch, result.base_offset, now_ms, commit=commit
        )
        if completed is not None and completed.aborted:
            index_abort(self.log, self.producers, completed)
        self._advance_high_watermark(now_ms)
        return ProduceOutcome(
            ErrorCode.NONE,
            base_offset=result.base_offset,
            log_start_offset=self.log.log_start_offset,
            next_offset=result.last_offset + 1,
        )

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        isolation_level: int,
        min_one_batch: bool,
        zero_copy: bool = False,
        to_log_end: bool = False,
    ) -> FetchOutcome:
        """Records from ``fetch_offset`` up to the high watermark (or last stable offset; with
        ``to_log_end``, a follower's fetch, up to the log end offset): their bytes, or with
        ``zero_copy`` the file regions holding them."""
        if not self.is_leader:
            return FetchOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if to_log_end:
            limit = self.log.log_end_offset
        elif isolation_level == READ_COMMITTED:
            limit = self.last_stable_offset
        else:
            limit = self.high_watermark
        if not to_log_end and self.hooks.planted("serve-above-hw"):
            limit = self.log.log_end_offset  # planted bug: consumers read uncommitted records
        committed = isolation_level == READ_COMMITTED and not to_log_end
        base = FetchOutcome(
            ErrorCode.NONE,
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log.log_start_offset,
            aborted=() if committed else None,
        )
        if fetch_offset < self.log.log_start_offset or fetch_offset > self.log.log_end_offset:
            return FetchOutcome(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                high_watermark=base.high_watermark,
                last_stable_offset=base.last_stable_offset,
                log_start_offset=base.log_start_offset,
            )
        if fetch_offset >= limit or (max_bytes <= 0 and not min_one_batch):
            return base
        result: ReadResult = self.log.read(
            fetch_offset, max_bytes, max_offset=limit, min_one_batch=min_one_batch
        )
        if result.error_code:
            return FetchOutcome(
                result.error_code, base.high_watermark, base.last_stable_offset, base.log_start_offset
            )
        aborted = tuple(aborted_transactions(self.log, fetch_offset, result)) if committed else None
        if zero_copy:
            return replace(base, parts=result.parts, size=result.size, aborted=aborted)
        records = self.log.read_bytes(result)
        return replace(base, records=records, size=len(records), aborted=aborted)

    def delete_records_before(self, offset: int) -> tuple[int, int]:
        """(error code, low watermark) for DeleteRecords; -1 means up to the high watermark."""
        target = self.high_watermark if offset == -1 else offset
        if target < 0 or target > self.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        result = self.log.delete_records_before(target)
        if result.error_code:
            return result.error_code, -1
        self.producers.truncate_before(self.log.log_start_offset)
        self.producer_log.prune(self.log)
        if self.registration is not None:
            self.epoch_cache.truncate_from_start(self.log.log_start_offset)
        return ErrorCode.NONE, self.log.log_start_offset

    def diverging(self, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        """Kafka's check in ``Partition.readRecords``: a follower that last fetched
        ``last_fetched_epoch`` has diverged when that epoch ends here before ``fetch_offset`` or
        this log's largest epoch not above it is older; then ``(epoch, end offset)``."""
        if last_fetched_epoch < 0:
            return None
        epoch, end = self.epoch_cache.end_offset_for(last_fetched_epoch, self.log.log_end_offset)
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None
