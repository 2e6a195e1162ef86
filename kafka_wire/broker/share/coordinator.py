"""The share coordinator's state on this node (Kafka's ``ShareCoordinatorShard``): the
share-partitions' state kept in the ``__share_group_state`` partitions this node leads, loaded
when it becomes their leader, read and written by the partition leaders through the
*ShareGroupState RPCs (``kafka_wire.broker.apis.share_group_state``; the leaders' side is
``share.persister``).

The node tells it which partitions it leads (:meth:`ShareStateStore.partition_led`, from the
metadata, as for ``__consumer_offsets``): a led partition is replayed from its log start
(``offsets_topic.PartitionLoad``, as far as each call's work budget allows) and then served; a
partition lost is dropped. A key whose partition is not served here is NOT_COORDINATOR
(COORDINATOR_LOAD_IN_PROGRESS while it loads, COORDINATOR_NOT_AVAILABLE while the topic does not
exist). The operations check as Kafka's shard does: a leader epoch below the one kept is
FENCED_LEADER_EPOCH (reads and writes), a state epoch below the one kept FENCED_STATE_EPOCH
(writes, initializations), a topic or partition the metadata does not have
UNKNOWN_TOPIC_OR_PARTITION. A read with a newer leader epoch writes it (a zombie leader is fenced
from then on); a write merges the batches sent into the kept ones (Kafka's batch combiner) and
appends the result as one ``ShareSnapshot`` (Kafka writes updates between snapshots; a snapshot
alone is a valid log of the same state). Each operation gives the offset its answer waits for:
the partition's log end once it is done, so an answer never reports state that is not replicated
(:func:`~kafka_wire.broker.offsets_topic.replication_outcome`).
"""

from __future__ import annotations

import logging
from typing import Final

from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC
from kafka_wire.broker.offsets_topic import PartitionLoad, append_records, step_loads
from kafka_wire.broker.share.state_records import (
    SNAPSHOT,
    UPDATE,
    ShareState,
    ShareStateKey,
    StateBatch,
    decode_key,
    decode_value,
    encode_key,
    encode_snapshot,
    merge_batches,
    state_partition,
)
from kafka_wire.broker.state import BrokerState
from kafka_wire.errors import InvalidValueError
from kafka_wire.messages import ErrorCode

#: How the share-partition state is compressed (Kafka's
#: ``share.coordinator.state.topic.compression.codec`` default).
_CODEC: Final = "none"


class ShareStateStore:
    """See the module docstring."""

    def __init__(self, state: BrokerState, log: logging.Logger | None = None) -> None:
        self._broker = state
        self._log = log or logging.getLogger(__name__)
        self.states: dict[ShareStateKey, ShareState] = {}
        #: Partitions served (loaded), and those being loaded.
        self.served: set[int] = set()
        self._loads: dict[int, PartitionLoad] = {}

    # -- where a key lives -------------------------------------------------------------------------

    def partition_of(self, key: ShareStateKey) -> int | None:
        """The ``__share_group_state`` partition of ``key`` (None: the topic does not exist yet)."""
        topic = self._broker.topic_named(SHARE_GROUP_STATE_TOPIC)
        return None if topic is None else state_partition(key, topic.partitions)

    def locate(self, key: ShareStateKey, now_ms: int) -> int | None:
        """:meth:`partition_of`, asking the controller for the topic when it does not exist."""
        partition = self.partition_of(key)
        if partition is None:
            state = self._broker
            state.topic_creation.request(state.cluster, state.config, SHARE_GROUP_STATE_TOPIC, now_ms)
        return partition

    def serving_error(self, key: ShareStateKey, now_ms: int) -> int:
        """0 when ``key``'s partition is served here, else the coordinator error (see the module
        docstring); a missing topic is asked of the controller."""
        state = self._broker
        partition = self.partition_of(key)
        if partition is None:
            state.topic_creation.request(state.cluster, state.config, SHARE_GROUP_STATE_TOPIC, now_ms)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if partition in self.served:
            return ErrorCode.NONE
        if partition in self._loads:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR

    def read(self, key: ShareStateKey) -> ShareState | None:
        return self.states.get(key)

    def _checked(self, key: ShareStateKey, now_ms: int, leader_epoch: int = -1, state_epoch: int = -1) -> int:
        error = self.serving_error(key, now_ms)
        if error:
            return error
        topic = self._broker.topic_with_id(key.topic_id)
        if topic is None or not 0 <= key.partition < topic.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        kept = self.states.get(key)
        if kept is not None and leader_epoch != -1 and kept.leader_epoch > leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if kept is not None and state_epoch != -1 and kept.state_epoch > state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        return ErrorCode.NONE

    def read_state(self, key: ShareStateKey, leader_epoch: int, now_ms: int) -> tuple[int, ShareState, int]:
        """ReadShareGroupState: (error, the state (start offset -1 when none is kept), the offset
        the answer waits for). A newer leader epoch is written first."""
        error = self._checked(key, now_ms, leader_epoch=leader_epoch)
        if error:
            return error, ShareState(), -1
        kept = self.states.get(key)
        if leader_epoch != -1 and (kept is None or kept.leader_epoch != leader_epoch):
            base = kept if kept is not None else ShareState(create_timestamp_ms=now_ms)
            error = self._append(key, base, leader_epoch, base.state_epoch, base.start_offset, [], now_ms)
            if error:
                return error, ShareState(), -1
        return ErrorCode.NONE, self.states.get(key) or ShareState(), self._end_offset(key)

    def write_state(
        self,
        key: ShareStateKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: list[StateBatch],
        now_ms: int,
    ) -> tuple[int, int]:
        """WriteShareGroupState: (error, the offset the answer waits for)."""
        error = self._checked(key, now_ms, leader_epoch=leader_epoch, state_epoch=state_epoch)
        if error:
            return error, -1
        base = self.states.get(key) or ShareState(create_timestamp_ms=now_ms)
        error = self._append(key, base, leader_epoch, state_epoch, start_offset, batches, now_ms)
        return error, -1 if error else self._end_offset(key)

    def initialize(
        self, key: ShareStateKey, state_epoch: int, start_offset: int, now_ms: int
    ) -> tuple[int, int]:
        """InitializeShareGroupState: a new state epoch and start offset, no in-flight records
        (what a leader of an older state epoch writes is fenced from then on). Start offset -1 (a
        group coordinator's first initialization) for a state a partition leader started already
        (it has a leader epoch or a start offset) keeps that state: kafka-wire's leaders start a
        share-partition with no state themselves, so that initialization may come after
        (Kafka's leaders wait for it)."""
        error = self._checked(key, now_ms, state_epoch=state_epoch)
        if error:
            return error, -1
        old = self.states.get(key)
        if start_offset == -1 and old is not None and (old.leader_epoch >= 0 or old.start_offset >= 0):
            return ErrorCode.NONE, self._end_offset(key)  # a partition leader started it already
        fresh = ShareState(create_timestamp_ms=now_ms)
        if old is not None:
            fresh.snapshot_epoch = old.snapshot_epoch
        self.states.pop(key, None)
        error = self._append(key, fresh, -1, state_epoch, start_offset, [], now_ms, replace=True)
        if error and old is not None:
            self.states[key] = old
        return error, -1 if error else self._end_offset(key)

    def delete(self, key: ShareStateKey, now_ms: int) -> tuple[int, int]:
        """DeleteShareGroupState: the state's records tombstoned (nothing kept: nothing written)."""
        error = self.serving_error(key, now_ms)
        if error:
            return error, -1
        if key not in self.states:
            return ErrorCode.NONE, self._end_offset(key)
        partition = self.partition_of(key)
        assert partition is not None
        appended = append_records(
            self._broker,
            SHARE_GROUP_STATE_TOPIC,
            partition,
            [(encode_key(key, SNAPSHOT), None), (encode_key(key, UPDATE), None)],
            _CODEC,
            now_ms,
            self._log,
            f"share-partition {key.coordinator_key()}",
        )
        if appended.error_code:
            return appended.error_code, -1
        del self.states[key]
        return ErrorCode.NONE, appended.end_offset

    def summary(self, key: ShareStateKey, now_ms: int) -> tuple[int, ShareState, int]:
        """ReadShareGroupStateSummary: the state kept (start offset -1: none), nothing written."""
        error = self._checked(key, now_ms)
        if error:
            return error, ShareState(), -1
        return ErrorCode.NONE, self.states.get(key) or ShareState(), self._end_offset(key)

    def _end_offset(self, key: ShareStateKey) -> int:
        partition = self.partition_of(key)
        replica = None if partition is None else self._broker.replica(SHARE_GROUP_STATE_TOPIC, partition)
        return -1 if replica is None else replica.log_end_offset

    def _append(
        self,
        key: ShareStateKey,
        base: ShareState,
        leader_epoch: int,
        state_epoch: int,
        start_offset: int,
        batches: list[StateBatch],
        now_ms: int,
        *,
        replace: bool = False,
    ) -> int:
        """Append ``base`` changed as a write says (-1: unchanged) as one snapshot; the log's
        error code (nothing kept changes when it is not 0)."""
        partition = self.partition_of(key)
        assert partition is not None
        start = base.start_offset if start_offset == -1 else start_offset
        new = ShareState(
            state_epoch=base.state_epoch if state_epoch == -1 else state_epoch,
            leader_epoch=base.leader_epoch if leader_epoch == -1 else leader_epoch,
            start_offset=start,
            snapshot_epoch=base.snapshot_epoch + 1 if key in self.states else base.snapshot_epoch,
            create_timestamp_ms=base.create_timestamp_ms,
            write_timestamp_ms=now_ms,
            batches=list(batches) if replace else merge_batches(base.batches, batches, start),
        )
        appended = append_records(
            self._broker,
            SHARE_GROUP_STATE_TOPIC,
            partition,
            [(encode_key(key, SNAPSHOT), encode_snapshot(new))],
            _CODEC,
            now_ms,
            self._log,
            f"share-partition {key.coordinator_key()}",
        )
        if not appended.error_code:
            self.states[key] = new
        return appended.error_code

    # -- leadership of __share_group_state ---------------------------------------------------------

    def partition_led(self, partition: int) -> None:
        replica = self._broker.replica(SHARE_GROUP_STATE_TOPIC, partition)
        self._drop(partition)
        if replica is not None:
            self._loads[partition] = PartitionLoad(replica, self, self._log, SHARE_GROUP_STATE_TOPIC)

    def partition_lost(self, partition: int) -> None:
        self._drop(partition)

    def _drop(self, partition: int) -> None:
        self.served.discard(partition)
        self._loads.pop(partition, None)
        for key in [k for k in self.states if self.partition_of(k) == partition]:
            del self.states[key]

    def poll(self) -> None:
        """Go on with the loads as far as the call's work budget allows."""
        if self._loads:
            self.served.update(step_loads(self._loads, self._broker.budget))

    @property
    def loading(self) -> bool:
        return bool(self._loads)

    # -- replay (offsets_topic.Replayer) -----------------------------------------------------------

    def replay(self, key: bytes, value: bytes | None) -> None:
        record_type, share_key = decode_key(key)
        if value is None:
            if record_type == SNAPSHOT:
                self.states.pop(share_key, None)
            return
        decoded = decode_value(record_type, value)
        old = self.states.get(share_key)
        if record_type == SNAPSHOT or old is None:
            self.states[share_key] = decoded
            return
        old.leader_epoch = decoded.leader_epoch
        if decoded.start_offset >= 0:
            old.start_offset = decoded.start_offset
        old.batches = merge_batches(old.batches, decoded.batches, old.start_offset)

    def replay_transactional(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        raise InvalidValueError("a transactional batch in __share_group_state", offset=0)

    def replay_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        return None
