"""The replica manager: turns the metadata's partition registrations into local replica roles.

``apply`` takes the registrations that changed (a metadata delta) and the partitions removed:
a removed partition leaves service at once; a registration of a partition this broker has no
replica of yet waits in a queue, in order with the removed partitions' directory deletions, and
the queue is worked through as far as each engine call's work budget allows
(:data:`~kafka_wire.broker.work.PARTITION_WORK_BYTES` a partition, at least one per call; the
rest at the next ``tick``, due at once): a metadata delta of thousands of partitions does not
stall the broker. ``take_applied`` hands out the registrations applied since (the group
coordinator follows the leadership of ``__consumer_offsets`` by them). Applying a registration
opens a missing log (loading the epoch cache and the checkpointed high watermark), moves each
local replica to leader (a new epoch is recorded at the log end offset, followers' fetch state
starts afresh, and a RECOVERING leader asks the controller to mark it RECOVERED), follower (it
stops serving clients and fetches from the leader, one :class:`ReplicaFetcher` per leader node)
or offline (no leader, or no longer a replica). ``tick`` checks the ISRs for laggards every
``replica.lag.time.max.ms`` / 2, resends AlterPartition after failures, starts fetch rounds
after backoffs and writes the offset checkpoints every
``replica.high.watermark.checkpoint.interval.ms``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Final, Literal

from kafka_wire.broker.cluster_view import ClusterView, LeaderRecoveryState, PartitionState
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.partition.followers import DEFAULT_REPLICA_LAG_TIME_MAX_MS
from kafka_wire.broker.replication.alter_partition import DEFAULT_RETRY_BACKOFF_MS, AlterPartitionSender
from kafka_wire.broker.replication.checkpoints import (
    DEFAULT_CHECKPOINT_INTERVAL_MS,
    OffsetCheckpoints,
    write_checkpoints,
)
from kafka_wire.broker.replication.fetcher import FetcherConfig, ReplicaFetcher
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.work import PARTITION_WORK_BYTES
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:  # replicas load with the first partition opened (BrokerState.open_partition)
    from kafka_wire.broker.partition.replica import PartitionReplica

#: Queued work: a replica to open (its latest registration), or a removed one's directory to delete.
_Key = tuple[Literal["open", "delete"], str, int]

NO_LEADER: Final = -1


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    """Kafka's replication settings (same names with dots)."""

    replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS
    replica_high_watermark_checkpoint_interval_ms: int = DEFAULT_CHECKPOINT_INTERVAL_MS
    alter_partition_retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    fetcher: FetcherConfig = field(default_factory=FetcherConfig)


class ReplicaManager:
    def __init__(
        self,
        state: BrokerState,
        cluster: ClusterView,
        effects: EffectSink,
        config: ReplicationConfig | None = None,
        *,
        now_ms: int = 0,
    ) -> None:
        self.state = state
        self.cluster = cluster
        self.effects = effects
        self.config = config or ReplicationConfig()
        self.alter = AlterPartitionSender(
            cluster, retry_backoff_ms=self.config.alter_partition_retry_backoff_ms, hooks=state.hooks
        )
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.checkpoints = OffsetCheckpoints.load(state.storage)
        self._next_isr_check_ms = now_ms + self._isr_check_interval
        self._next_checkpoint_ms = now_ms + self.config.replica_high_watermark_checkpoint_interval_ms
        #: Partitions to open and directories to delete, in the order the metadata asked.
        self._queue: dict[_Key, PartitionState | PartitionReplica | None] = {}
        #: Registrations applied since the last ``take_applied``.
        self._applied: list[PartitionState] = []
        self._now_ms = now_ms

    @property
    def _isr_check_interval(self) -> int:
        return max(self.config.replica_lag_time_max_ms // 2, 1)

    # -- metadata ---------------------------------------------------------------------------------
    def apply(
        self, states: Sequence[PartitionState], removed: Sequence[tuple[str, int]], now_ms: int
    ) -> None:
        """Follow a metadata delta: registrations that changed and partitions that are gone."""
        self._now_ms = now_ms
        me = self.cluster.node_id
        for topic, index in removed:
            self._drop(topic, index)
        for registration in states:
            key = (registration.topic, registration.partition)
            if me not in registration.replicas:
                self._queue.pop(("open", *key), None)
                if key in self.state.partitions:
                    self._drop(*key)
            elif key in self.state.partitions:
                self._apply_one(registration, now_ms)
            else:
                self._queue[("open", *key)] = registration
        self._work(now_ms)
        self._send_fetches(now_ms)

    def take_applied(self) -> list[PartitionState]:
        """The registrations applied since the last call, in order."""
        applied, self._applied = self._applied, []
        return applied

    def _work(self, now_ms: int) -> None:
        """Open and delete queued partitions while the call's budget lasts (at least one), unless
        the writes of the last slices are still in flight (a report of them wakes the queue)."""
        if not self.state.may_slice():
            return
        budget = self.state.budget
        stepped = False
        while self._queue and (not stepped or not budget.exhausted):
            stepped = True
            key = next(iter(self._queue))
            item = self._queue.pop(key)
            kind, topic, index = key
            if kind == "delete":
                assert not isinstance(item, PartitionState)
                self.state.delete_partition(topic, index, item, self.effects)
            else:
                assert isinstance(item, PartitionState)
                self._apply_one(item, now_ms)
            budget.spend(PARTITION_WORK_BYTES)

    def _apply_one(self, registration: PartitionState, now_ms: int) -> None:
        me = self.cluster.node_id
        key = (registration.topic, registration.partition)
        replica = self._replica(registration, now_ms)
        if registration.leader_epoch < max(replica.leader_epoch, replica.epoch_cache.latest_epoch):
            # Older than what this replica has seen (its log holds batches of a later epoch):
            # a stale registration, as Kafka's ReplicaManager ignores one; a newer one follows.
            return
        current = replica.registration
        if current is not None and registration.partition_epoch < current.partition_epoch:
            # An older state within what this replica knows (AlterPartition's answer tells a
            # leader its new partition epoch before the metadata does): Kafka's
            # Partition.makeLeader and makeFollower skip it too.
            return
        if registration.leader == me:
            self._stop_fetching(*key)
            if replica.make_leader(registration, now_ms) or replica.pending_isr is None:
                # A new epoch, or a state that settled the change in flight: a proposal made
                # on an older state is not sent again.
                self.alter.forget(*key)
            if registration.leader_recovery_state == LeaderRecoveryState.RECOVERING:
                # Nothing to recover in this broker's logs (no transaction state to rebuild):
                # Kafka's leader ends the state the same way, by AlterPartition.
                self.alter.propose(replica, tuple(registration.isr), LeaderRecoveryState.RECOVERED)
        elif registration.leader == NO_LEADER:
            self._stop_fetching(*key)
            self.alter.forget(*key)
            replica.make_offline(registration)
        else:
            self.alter.forget(*key)
            if replica.make_follower(registration) or not self._fetching(key, registration.leader):
                self._stop_fetching(*key)
                self._fetcher(registration.leader).add(replica)
        self.state.touch(replica)
        self._applied.append(registration)

    def _replica(self, registration: PartitionState, now_ms: int) -> PartitionReplica:
        key = (registration.topic, registration.partition)
        replica = self.state.partitions.get(key)
        if replica is None:
            topic = self.state.metadata.topics.get(registration.topic)
            if topic is None:
                count = max(
                    [p.partition + 1 for p in self.cluster.partitions_of(registration.topic)]
                    + [registration.partition + 1]
                )
                topic = TopicInfo(registration.topic, registration.topic_id, count)
                self.state.metadata.topics[topic.name] = topic
            start = self.state.clean_shutdown.opening(key, self.checkpoints.recovery_points)
            replica = self.state.open_partition(
                topic, registration.partition, now_ms, self.effects, start=start
            )
            self._adopt(replica)
        return replica

    def _adopt(self, replica: PartitionReplica) -> None:
        """A replica just opened joins the cluster: its persisted epoch cache, its checkpointed
        high watermark, offline until the registration says otherwise."""
        from kafka_wire.broker.partition.epoch_cache import EpochCache
        from kafka_wire.broker.partition.roles import Leadership, ReplicaRole

        key = (replica.topic, replica.partition)
        log = replica.log
        replica.cluster = self.cluster
        replica.followers.lag_max_ms = self.config.replica_lag_time_max_ms
        replica.propose_isr = self._propose
        cache = EpochCache.load(self.state.storage, log.directory, log.queue)
        cache.truncate_from_end(log.log_end_offset)
        replica.leadership = Leadership(self.cluster.node_id, role=ReplicaRole.OFFLINE, epoch=-1, cache=cache)
        checkpointed = self.checkpoints.high_watermarks.get(key, 0)
        replica.high_watermark = max(min(checkpointed, log.log_end_offset), log.log_start_offset)

    def _propose(self, replica: PartitionReplica, isr: tuple[int, ...]) -> None:
        self.alter.propose(replica, isr)

    def _drop(self, topic: str, index: int) -> None:
        """The partition leaves service now; its directory is deleted in queue order."""
        self._stop_fetching(topic, index)
        self.alter.forget(topic, index)
        self._queue.pop(("open", topic, index), None)
        replica = self.state.partitions.pop((topic, index), None)
        self.state.touched.pop((topic, index), None)
        if replica is not None:
            self._queue.pop(("delete", topic, index), None)  # the same directory, once
            self._queue[("delete", topic, index)] = replica

    # -- fetchers ---------------------------------------------------------------------------------
    def _fetcher(self, leader: int) -> ReplicaFetcher:
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = ReplicaFetcher(
                leader, self.cluster, self.config.fetcher, self.state.touch, self.state.hooks
            )
        return fetcher

    def _fetching(self, key: tuple[str, int], leader: int) -> bool:
        fetcher = self.fetchers.get(leader)
        return fetcher is not None and key in fetcher.partitions and not fetcher.partitions[key].stalled

    def _stop_fetching(self, topic: str, index: int) -> None:
        for leader, fetcher in list(self.fetchers.items()):
            fetcher.remove(topic, index)
            if not len(fetcher) and not fetcher.in_flight:
                del self.fetchers[leader]

    def _send_fetches(self, now_ms: int) -> None:
        for fetcher in self.fetchers.values():
            fetcher.maybe_send(now_ms)

    # -- time -------------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> None:
        self._now_ms = now_ms
        self._work(now_ms)
        if now_ms >= self._next_isr_check_ms:
            self._next_isr_check_ms = now_ms + self._isr_check_interval
            for replica in self.state.partitions.values():
                if replica.is_leader and replica.registration is not None:
                    replica.maybe_shrink_isr(now_ms)
        self.alter.tick(now_ms)
        self._send_fetches(now_ms)
        if now_ms >= self._next_checkpoint_ms:
            self._next_checkpoint_ms = now_ms + self.config.replica_high_watermark_checkpoint_interval_ms
            self.write_checkpoints()

    def write_checkpoints(self) -> None:
        """The three offset checkpoints, after what the logs queued (the fsyncs a recovery point
        counts on come first)."""
        for replica in self.state.partitions.values():
            if replica.registration is not None:  # retention may have moved the log start
                replica.epoch_cache.truncate_from_start(replica.log_start_offset)
                self.state.touch(replica)
        self.state.collect_effects(self.effects)
        write_checkpoints(
            [r for r in self.state.partitions.values() if r.registration is not None], self.effects
        )

    def close(self, broker_epoch: int) -> None:
        """A clean stop (Kafka's ``LogManager.shutdown``): every log flushed and closed, the
        checkpoints written, then the clean-shutdown marker (see :mod:`kafka_wire.broker.clean_shutdown`)."""
        for replica in self.state.partitions.values():
            self.effects.extend(replica.close())
        self.write_checkpoints()
        self.state.collect_effects(self.effects)
        self.effects.extend(
            self.state.clean_shutdown.stop_effects(
                self.state.storage, self.state.partitions.keys(), broker_epoch
            )
        )

    def next_deadline_ms(self) -> int | None:
        if self._queue and self.state.may_slice():
            return self._now_ms  # the queue goes on at once
        deadlines = [self._next_isr_check_ms, self._next_checkpoint_ms]
        if (alter := self.alter.next_deadline_ms()) is not None:
            deadlines.append(alter)
        for fetcher in self.fetchers.values():
            if (due := fetcher.next_deadline_ms()) is not None:
                deadlines.append(due)
        return min(deadlines)
