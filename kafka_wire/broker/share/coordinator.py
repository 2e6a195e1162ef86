"""The share coordinator's state on this node (Kafka's ``ShareCoordinatorShard``): the
share-partitions' state kept in the ``__share_group_state`` partitions this node leads, loaded
when it becomes their leader and written as share-partitions change.

The node tells it which partitions it leads (:meth:`ShareStateStore.partition_led`, from the
metadata, as for ``__consumer_offsets``): a led partition is replayed from its log start
(``offsets_topic.PartitionLoad``, as far as each call's work budget allows) and then served; a
partition lost is dropped. A write (:meth:`ShareStateStore.write`) takes the share-partition's
in-flight records as its state and appends it as one ``ShareSnapshot`` record (Kafka writes
updates between snapshots; a snapshot alone is a valid log of the same state) in the call that
changed it, so the answer that depends on it leaves only once the write is stored (the engine
holds every answer of a call until its writes succeed). A share-partition whose state partition
is not led here (in a cluster) is not persisted: see "Share groups" in
``docs/internals/group-coordinator.md``.
"""

from __future__ import annotations

import logging
from typing import Final

from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC
from kafka_wire.broker.offsets_topic import PartitionLoad, append_records, step_loads
from kafka_wire.broker.share.state_records import (
    SNAPSHOT,
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

    def ready(self, key: ShareStateKey, now_ms: int) -> bool:
        """Whether ``key``'s state is known now: its partition is served here; or the topic does
        not exist yet (nothing is kept: the controller is asked for it, and the share-partition's
        state is written once its partition is served); or it is led elsewhere (then the
        share-partition lives in memory only). False while this node loads it."""
        state = self._broker
        partition = self.partition_of(key)
        if partition is None:
            state.topic_creation.request(state.cluster, state.config, SHARE_GROUP_STATE_TOPIC, now_ms)
            return True
        if partition in self.served:
            return True
        registration = state.cluster.partition(SHARE_GROUP_STATE_TOPIC, partition)
        leader = -1 if registration is None else registration.leader
        return leader >= 0 and leader != state.config.node_id

    def read(self, key: ShareStateKey) -> ShareState | None:
        return self.states.get(key)

    def write(
        self,
        key: ShareStateKey,
        start_offset: int,
        batches: list[StateBatch],
        leader_epoch: int,
        now_ms: int,
    ) -> int:
        """Make ``batches`` (the share-partition's in-flight records, all of them) ``key``'s state and
        append it; the log's error code (0: appended; UNKNOWN_TOPIC_OR_PARTITION when not served
        here, nothing written)."""
        partition = self.partition_of(key)
        if partition is None or partition not in self.served:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        old = self.states.get(key)
        new = ShareState(
            state_epoch=old.state_epoch if old is not None else 0,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            snapshot_epoch=old.snapshot_epoch + 1 if old is not None else 0,
            create_timestamp_ms=old.create_timestamp_ms if old is not None else now_ms,
            write_timestamp_ms=now_ms,
            # The leader hands the whole in-flight window (from the start offset): it replaces
            # what was kept (an update of a few batches would be merged in: ``replay``).
            batches=[b for b in batches if b[1] >= start_offset],
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
