"""A follower's fetcher: one per leader node, fetching every partition this node follows there.

Each round is one Fetch at the newest version (``replica_state`` with this broker's epoch; per partition
the fetch offset = the log end offset, ``last_fetched_epoch`` = the epoch of the last local
batch, the current leader epoch, its high watermark (v18, so the leader answers when its own
moves ahead); ``replica.fetch.wait.max.ms``, min bytes 1,
``replica.fetch.max.bytes`` per partition) sent with ``ClusterView.send``; the next round starts
when the answer is applied. Per partition the answer is applied as Kafka's
``AbstractFetcherThread`` does:

- records: appended as they are (``PartitionReplica.append_as_follower``), then HW =
  min(leader HW, LEO) and the log start follows the leader's;
- DivergingEpoch: truncate to the end of that epoch in this log (KIP-279: if this log does not
  have that epoch, to the end of its largest epoch below, and the next fetch asks again);
- OFFSET_OUT_OF_RANGE: truncate fully and start at the leader's log start (or, when this log
  is ahead of the leader's high watermark, truncate to it);
- NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_*: the partition waits for new
  metadata (the replica manager re-adds it);
- any other error, or no answer: the partition (or every one, for a failed request) backs off
  ``replica.fetch.backoff.ms``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.partition.replica import PartitionReplica
    from kafka_wire.messages import (
        FetchRequestTopic,
        FetchResponsePartitionData,
    )

DEFAULT_FETCH_WAIT_MAX_MS: Final = 500
DEFAULT_FETCH_MAX_BYTES: Final = 1024 * 1024
DEFAULT_FETCH_RESPONSE_MAX_BYTES: Final = 10 * 1024 * 1024
DEFAULT_FETCH_BACKOFF_MS: Final = 1000
#: How long a fetch may take beyond its wait before it counts as failed.
REQUEST_TIMEOUT_MS: Final = 30_000
#: The leader has a newer epoch than this follower: fetching waits for the metadata that says so
#: (Kafka's ``onPartitionFenced``). Other errors (NOT_LEADER_OR_FOLLOWER and UNKNOWN_TOPIC_* from a
#: leader that has not applied its own registration yet, among them) are retried after the backoff.
WAIT_FOR_METADATA: Final = frozenset({ErrorCode.FENCED_LEADER_EPOCH})


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    wait_max_ms: int = DEFAULT_FETCH_WAIT_MAX_MS
    max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    response_max_bytes: int = DEFAULT_FETCH_RESPONSE_MAX_BYTES
    backoff_ms: int = DEFAULT_FETCH_BACKOFF_MS


@dataclass(slots=True)
class FetchedPartition:
    replica: PartitionReplica
    #: No fetching before this time (backoff).
    ready_at_ms: int = 0
    #: Stopped until the metadata says who leads.
    stalled: bool = False
    #: The (leader epoch, fetch offset) of the request in flight for it, if any: an answer is
    #: applied only while both still hold (the partition may have been re-added, given a new
    #: epoch or truncated meanwhile), as Kafka's ``processFetchRequest`` checks.
    requested: tuple[int, int] | None = None


class ReplicaFetcher:
    """Fetches from ``leader_id`` for the partitions :meth:`add` gave it."""

    def __init__(
        self,
        leader_id: int,
        cluster: ClusterView,
        config: FetcherConfig,
        touch: Callable[[PartitionReplica], None],
        hooks: Hooks = OFF,
    ) -> None:
        self.leader_id = leader_id
        self.hooks = hooks
        self.cluster = cluster
        self.config = config
        self.touch = touch
        self.partitions: dict[tuple[str, int], FetchedPartition] = {}
        self.in_flight = False
        #: Bumped when the set of partitions changes: a reply to an older round is ignored for
        #: partitions no longer fetched.
        self._round = 0

    def add(self, replica: PartitionReplica) -> None:
        self.partitions[replica.topic, replica.partition] = FetchedPartition(replica)

    def remove(self, topic: str, partition: int) -> None:
        self.partitions.pop((topic, partition), None)

    def __len__(self) -> int:
        return len(self.partitions)

    # -- sending ----------------------------------------------------------------------------------
    def _ready(self, now_ms: int) -> list[FetchedPartition]:
        return [p for p in self.partitions.values() if not p.stalled and p.ready_at_ms <= now_ms]

    def maybe_send(self, now_ms: int) -> bool:
        """Send the next round if none is in flight and a partition is ready (True: sent)."""
        if self.in_flight:
            return False
        ready = self._ready(now_ms)
        if not ready:
            return False
        if self.hooks.fire("replica.delay_fetch"):
            # A rare legal path: this round waits a backoff (as after a failed fetch).
            for item in ready:
                item.ready_at_ms = now_ms + self.config.backoff_ms
            return False
        # Planted bug: without the last fetched epoch the leader never answers DivergingEpoch.
        ask_diverging = not self.hooks.planted("skip-truncation")
        me = self.cluster.broker(self.cluster.node_id)
        epoch = me.epoch if me is not None else -1
        topics: dict[str, FetchRequestTopic] = {}
        for item in ready:
            replica = item.replica
            item.requested = (replica.leader_epoch, replica.log_end_offset)
            topic = topics.get(replica.topic)
            if topic is None:
                topic = topics[replica.topic] = messages.FetchRequestTopic(topic_id=replica.topic_id)
            topic.partitions.append(
                messages.FetchRequestPartition(
                    partition=replica.partition,
                    current_leader_epoch=replica.leader_epoch,
                    fetch_offset=replica.log_end_offset,
                    last_fetched_epoch=replica.epoch_cache.latest_epoch if ask_diverging else -1,
                    log_start_offset=replica.log_start_offset,
                    partition_max_bytes=self.config.max_bytes,
                    high_watermark=replica.high_watermark,
                )
            )
        body = messages.FetchRequest(
            replica_state=messages.FetchRequestReplicaState(
                replica_id=self.cluster.node_id, replica_epoch=epoch
            ),
            max_wait_ms=self.config.wait_max_ms,
            min_bytes=1,
            max_bytes=self.config.response_max_bytes,
            session_id=0,
            session_epoch=-1,
            topics=list(topics.values()),
        )
        self.in_flight = True
        round_ = self._round = self._round + 1

        def on_reply(reply: Message | None, at_ms: int) -> None:
            self._on_reply(round_, reply, at_ms)

        self.cluster.send(
            Outbound(
                self.leader_id,
                self.cluster.inter_broker_listener,
                body,
                on_reply,
                timeout_ms=self.config.wait_max_ms + REQUEST_TIMEOUT_MS,
            )
        )
        return True

    # -- applying ---------------------------------------------------------------------------------
    def _on_reply(self, round_: int, reply: Message | None, now_ms: int) -> None:
        if round_ != self._round:
            return
        self.in_flight = False
        if not isinstance(reply, messages.FetchResponse) or reply.error_code:
            for waiting in self.partitions.values():
                waiting.ready_at_ms = now_ms + self.config.backoff_ms
            return
        by_id = {str(p.replica.topic_id): p for p in self.partitions.values()}
        for topic in reply.responses:
            for data in topic.partitions:
                item: FetchedPartition | None = self.partitions.get((topic.topic, data.partition_index))
                if item is None and str(topic.topic_id) in by_id:
                    candidate = by_id[str(topic.topic_id)]
                    item = self.partitions.get((candidate.replica.topic, data.partition_index))
                if item is not None:
                    self._apply(item, data, now_ms)
        self.maybe_send(now_ms)

    def _apply(self, item: FetchedPartition, data: FetchResponsePartitionData, now_ms: int) -> None:
        replica = item.replica
        requested, item.requested = item.requested, None
        if requested != (replica.leader_epoch, replica.log_end_offset):
            return  # asked for another state of the partition: the next round asks afresh
        self.touch(replica)
        if data.error_code == ErrorCode.NONE:
            diverging = data.diverging_epoch
            if diverging.end_offset >= 0:
                replica.truncate_to(self._truncation_offset(replica, diverging.epoch, diverging.end_offset))
                return
            records = bytes(data.records or b"")
            if records:
                result = replica.append_as_follower(records, now_ms)
                if result.error_code:
                    item.ready_at_ms = now_ms + self.config.backoff_ms
                    return
            replica.follow_leader_offsets(data.high_watermark, data.log_start_offset)
        elif data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            leo = replica.log_end_offset
            if data.high_watermark >= 0 and leo > data.high_watermark >= replica.log_start_offset:
                replica.truncate_to(data.high_watermark)
            else:
                replica.truncate_fully_and_start_at(max(data.log_start_offset, 0), now_ms)
        elif data.error_code in WAIT_FOR_METADATA:
            item.stalled = True
        else:
            item.ready_at_ms = now_ms + self.config.backoff_ms

    @staticmethod
    def _truncation_offset(replica: PartitionReplica, leader_epoch: int, leader_end: int) -> int:
        """Kafka's ``getOffsetTruncationState`` for the leader's ``(epoch, end offset)``."""
        leo = replica.log_end_offset
        epoch, end = replica.epoch_cache.end_offset_for(leader_epoch, leo)
        if epoch < 0 or end < 0:
            return min(leader_end, leo)
        if epoch != leader_epoch:
            return min(end, leo)  # not this epoch here: cut to ours below it, and ask again
        return min(leader_end, end, leo)

    def next_deadline_ms(self) -> int | None:
        if self.in_flight:
            return None
        waiting = [p.ready_at_ms for p in self.partitions.values() if not p.stalled]
        return min(waiting) if waiting else None
