"""The broker's side of its transaction coordinator: transaction requests in, answers out.

:class:`TxnLink` builds the :class:`~kafka_wire.broker.txn.coordinator.TxnCoordinator` from the
broker's configuration (its timers in the engine's queue), hands it the requests with a token
each, appends each of its ``TxnPersist`` writes to ``__transaction_state`` (emitting to the
call's :class:`~kafka_wire.broker.effects.EffectSink`) and reports the outcome once replicated,
gives its ``SendMarkers`` to the :class:`~kafka_wire.broker.txn.markers.MarkerChannel`, and turns
its ``Respond`` effects back into answers.

As the group coordinator serves the groups of the ``__consumer_offsets`` partitions led here, the
transaction coordinator serves the transactional ids of the ``__transaction_state`` partitions
led here (on a single node, all of them); the node tells the link when that changes:
:meth:`TxnLink.partition_led` replays the partition (its coordinator epoch is the partition's
leader epoch) and then serves it, ending the transactions it finds half ended;
:meth:`TxnLink.partition_lost` drops it. A write is an acks=-1 append: refused while the ISR is
below ``min.insync.replicas`` (the coordinator answers COORDINATOR_NOT_AVAILABLE), reported once
the high watermark passes it, or failed after ``offsets.commit.timeout.ms``... as the group link
does it (Kafka's coordinator waits up to the transaction's timeout; a write not replicated in
5 s is failed here, which the client retries).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.coordinator_keys import partition_for_group
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.group_link import GroupAnswer
from kafka_wire.broker.internal_topics import TRANSACTION_STATE_TOPIC
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.offsets_topic import PartitionLoad, append_records, replication_outcome, step_loads
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.txn.config import TxnConfig
from kafka_wire.broker.txn.coordinator import TxnCoordinator
from kafka_wire.broker.txn.effects import Respond, SendMarkers, TxnEffect, TxnPersist
from kafka_wire.broker.txn.markers import MarkerChannel
from kafka_wire.broker.txn.metadata import TopicPartition, TxnVersion
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Request
from kafka_wire.quick_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class _Replicating:
    append_id: int
    partition: int
    end_offset: int
    deadline_ms: int


class _Load:
    """Feeds one ``__transaction_state`` partition's records to the coordinator."""

    def __init__(self, coordinator: TxnCoordinator, partition: int) -> None:
        self._coordinator = coordinator
        self._partition = partition

    def replay(self, key: bytes, value: bytes | None) -> None:
        self._coordinator.replay(self._partition, key, value)

    def replay_transactional(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        self.replay(key, value)  # no producer writes to ``__transaction_state`` transactionally

    def replay_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """``__transaction_state`` has no markers."""


class TxnLink:
    """The transaction coordinator as the broker drives it (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        state: BrokerState,
        effects: EffectSink,
        timers: TimerQueue,
        log: logging.Logger,
        new_producer_id: Callable[[int], int | None],
    ) -> None:
        self._state = state
        self._effects = effects
        self._log = log
        self._commit_timeout_ms = config.offsets_commit_timeout_ms
        self._waiting: dict[tuple[int, int], Request] = {}
        self._loads: dict[int, PartitionLoad] = {}
        self._replicating: list[_Replicating] = []
        self._now_ms = 0
        topic = state.topic_named(TRANSACTION_STATE_TOPIC)

        def offsets_partition_of(group_id: str) -> int:
            offsets = state.topic_named(OFFSETS_TOPIC)
            count = offsets.partitions if offsets is not None else config.offsets_topic_num_partitions
            return partition_for_group(group_id, count)

        self.coordinator = TxnCoordinator(
            TxnConfig(
                max_timeout_ms=config.transaction_max_timeout_ms,
                transactional_id_expiration_ms=config.transactional_id_expiration_ms,
                abort_timed_out_interval_ms=config.transaction_abort_timed_out_interval_ms,
                remove_expired_interval_ms=config.transaction_remove_expired_interval_ms,
                num_partitions=topic.partitions
                if topic is not None
                else config.transaction_state_log_num_partitions,
            ),
            timers,
            finalized_version=self.finalized_version,
            new_producer_id=new_producer_id,
            partition_exists=lambda t, p: (
                (info := state.topic_named(t)) is not None and 0 <= p < info.partitions
            ),
            offsets_partition_of=offsets_partition_of,
        )
        self.markers = MarkerChannel(
            state.cluster,
            written=self._markers_written,
            abandoned=self.coordinator.markers_abandoned,
            wanted=self.coordinator.markers_wanted,
            log=log,
        )
        #: Answers made by the marker channel's reports (between polls).
        self._pending_answers: list[GroupAnswer] = []

    def finalized_version(self) -> TxnVersion:
        _, features = self._state.cluster.finalized_features()
        return TxnVersion.of(features.get("transaction.version", 0))

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    # -- requests ------------------------------------------------------------------------------

    def handle(self, conn_id: int, request: Request, now_ms: int) -> list[GroupAnswer]:
        self._now_ms = max(self._now_ms, now_ms)
        token = (conn_id, request.correlation_id)
        self._waiting[token] = request
        return self._apply(self.coordinator.handle(token, request.body, request.api_version, now_ms), now_ms)

    def tick(self, now_ms: int) -> list[GroupAnswer]:
        answers = self.poll(now_ms)
        return answers + self._apply(self.coordinator.tick(now_ms), now_ms)

    def forget(self, conn_id: int) -> None:
        if self._waiting:
            self._waiting = {token: r for token, r in self._waiting.items() if token[0] != conn_id}

    def clear(self) -> None:
        self._waiting.clear()

    def next_deadline_ms(self) -> int | None:
        deadlines = [w.deadline_ms for w in self._replicating]
        if self._loads or self._pending_answers:
            deadlines.append(self._now_ms)
        if (markers := self.markers.next_deadline_ms()) is not None:
            deadlines.append(markers)
        return min(deadlines) if deadlines else None

    # -- the partitions led here ------------------------------------------------------------------

    def partition_led(self, partition: int, now_ms: int) -> list[GroupAnswer]:
        """This node now leads ``__transaction_state-<partition>``: load it, then serve it."""
        self._now_ms = max(self._now_ms, now_ms)
        coordinator = self.coordinator
        if partition in coordinator.served_partitions or partition in self._loads:
            return []
        replica = self._state.replica(TRANSACTION_STATE_TOPIC, partition)
        topic = self._state.topic_named(TRANSACTION_STATE_TOPIC)
        if replica is None or topic is None:
            self._log.warning("%s-%d is led here but has no replica here", TRANSACTION_STATE_TOPIC, partition)
            return []
        if not coordinator.served_partitions and not self._loads:
            coordinator.use_partition_count(topic.partitions)
        coordinator.partition_loading(partition, replica.leader_epoch)
        self._loads[partition] = PartitionLoad(
            replica, _Load(coordinator, partition), self._log, TRANSACTION_STATE_TOPIC
        )
        return self._continue_loads(now_ms)

    def partition_lost(self, partition: int, now_ms: int) -> list[GroupAnswer]:
        self._now_ms = max(self._now_ms, now_ms)
        self._loads.pop(partition, None)
        coordinator = self.coordinator
        self._replicating = [w for w in self._replicating if w.partition != partition]
        answers = self._apply(coordinator.partition_lost(partition, now_ms), now_ms)
        self.markers.forget_partition(lambda tid: coordinator.rt.partition_of(tid) == partition)
        return answers

    def poll(self, now_ms: int) -> list[GroupAnswer]:
        """Report the writes whose replication settled, go on with loads, settle and send markers."""
        self._now_ms = max(self._now_ms, now_ms)
        answers, self._pending_answers = self._pending_answers, []
        if self._replicating:
            still: list[_Replicating] = []
            settled: list[tuple[_Replicating, int]] = []
            for write in self._replicating:
                outcome = self._outcome(write, now_ms)
                if outcome is None:
                    still.append(write)
                else:
                    settled.append((write, outcome))
            self._replicating = still
            for write, outcome in settled:
                answers += self._apply(self.coordinator.persisted(write.append_id, outcome, now_ms), now_ms)
        if self._loads:
            answers += self._continue_loads(now_ms)
        self.markers.poll(now_ms)
        answers, self._pending_answers = answers + self._pending_answers, []
        return answers

    def _outcome(self, write: _Replicating, now_ms: int) -> int | None:
        outcome = replication_outcome(self._state, write.partition, write.end_offset, TRANSACTION_STATE_TOPIC)
        if outcome is None and now_ms >= write.deadline_ms:
            return ErrorCode.REQUEST_TIMED_OUT
        return outcome

    def _continue_loads(self, now_ms: int) -> list[GroupAnswer]:
        answers: list[GroupAnswer] = []
        for partition in step_loads(self._loads, self._state.budget):
            self._log.info("%s-%d loaded", TRANSACTION_STATE_TOPIC, partition)
            answers += self._apply(self.coordinator.partition_loaded(partition, now_ms), now_ms)
        return answers

    def _markers_written(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        partitions: frozenset[TopicPartition],
        now_ms: int,
    ) -> None:
        effects = self.coordinator.markers_written(transactional_id, coordinator_epoch, partitions, now_ms)
        self._pending_answers += self._apply(effects, now_ms)

    # -- effects --------------------------------------------------------------------------------

    def _apply(self, effects: list[TxnEffect], now_ms: int) -> list[GroupAnswer]:
        answers: list[GroupAnswer] = []
        pending = list(effects)
        while pending:
            effect = pending.pop(0)
            if isinstance(effect, TxnPersist):
                error = self._persist(effect, now_ms)
                if error is not None:
                    pending[:0] = self.coordinator.persisted(effect.append_id, error, now_ms)
            elif isinstance(effect, SendMarkers):
                self.markers.add(effect, now_ms)
            elif isinstance(effect, Respond):
                token = effect.token
                assert isinstance(token, tuple)
                request = self._waiting.pop(token, None)
                if request is not None:
                    answers.append((token[0], request, effect.body))
        return answers

    def _persist(self, write: TxnPersist, now_ms: int) -> int | None:
        if write.partition not in self.coordinator.served_partitions:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        appended = append_records(
            self._state,
            TRANSACTION_STATE_TOPIC,
            write.partition,
            [(write.key, write.value)],
            "none",
            now_ms,
            self._log,
            f"transaction {write.transactional_id}",
        )
        if appended.error_code:
            return appended.error_code
        if self._state.hooks.planted("marker-before-prepare"):  # planted bug: durable at once
            return ErrorCode.NONE
        waiting = _Replicating(
            write.append_id, write.partition, appended.end_offset, now_ms + self._commit_timeout_ms
        )
        outcome = self._outcome(waiting, now_ms)
        if outcome is None:
            self._replicating.append(waiting)
        return outcome
