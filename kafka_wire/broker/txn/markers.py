"""The marker channel: the coordinator's COMMIT and ABORT markers on their way to the partition
leaders (Kafka's ``TransactionMarkerChannelManager`` and its completion handler).

Each :class:`~kafka_wire.broker.txn.effects.SendMarkers` is split by the current leader of each
partition; at every :meth:`MarkerChannel.poll` the partitions ready go out as one WriteTxnMarkers
request per leader (the node itself included: it answers its own request in-process), through
the cluster view's ``send``. A partition the metadata no longer has is done (Kafka: "likely
deleted"); one without a leader (or whose leader has no endpoint) waits for one. Replies, per
partition:

- NONE, and UNSUPPORTED_FOR_MESSAGE_FORMAT / UNSUPPORTED_VERSION (the producer could not have
  written there): written;
- UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
  REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, no reply at all, and any other error: sent again after
  :data:`RETRY_BACKOFF_MS`, to the leader of then;
- INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: the transaction is given up (a newer
  producer or coordinator owns it).

Written partitions are reported with ``written(transactional_id, coordinator_epoch, partitions,
now_ms)``; nothing is sent or retried for a transaction the coordinator no longer wants
(``wanted``: another coordinator epoch, the partition lost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import field
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.broker.txn.effects import SendMarkers
from kafka_wire.broker.txn.metadata import TopicPartition
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: kafka_wire's: the wait before a partition whose marker failed is sent again (Kafka retries at
#: its sender thread's next round, after its network client's backoff).
RETRY_BACKOFF_MS: Final = 50
#: Kafka's ``request.timeout.ms``: a WriteTxnMarkers request not answered by then is retried.
REQUEST_TIMEOUT_MS: Final = 30_000

_WRITTEN: Final = frozenset(
    {ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION}
)
_FENCED: Final = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})

#: Reports partitions whose markers are written: (transactional id, coordinator epoch, partitions, now).
Written = Callable[[str, int, frozenset[TopicPartition], int], None]


@dataclass(slots=True)
class _Txn:
    markers: SendMarkers
    #: Partitions to send (not in flight), and when they may go.
    ready: set[TopicPartition] = field(default_factory=set)
    ready_at_ms: int = 0
    in_flight: set[TopicPartition] = field(default_factory=set)


class MarkerChannel:
    """Markers on their way to the partition leaders (see the module docstring)."""

    def __init__(
        self,
        cluster: ClusterView,
        *,
        written: Written,
        abandoned: Callable[[str, int], None],
        wanted: Callable[[str, int], bool],
        log: logging.Logger,
    ) -> None:
        self._cluster = cluster
        self._written = written
        self._abandoned = abandoned
        self._wanted = wanted
        self._log = log
        self._txns: dict[tuple[str, int], _Txn] = {}
        #: Replies received since the last poll: (transactional id, coordinator epoch, the
        #: partitions asked, their error codes or None for no reply).
        self._replies: list[
            tuple[tuple[str, int], frozenset[TopicPartition], dict[TopicPartition, int] | None]
        ] = []
        self._now_ms = 0

    @property
    def pending(self) -> int:
        """Transactions with markers still to write."""
        return len(self._txns)

    def add(self, markers: SendMarkers, now_ms: int) -> None:
        key = (markers.transactional_id, markers.coordinator_epoch)
        self._txns[key] = _Txn(markers, set(markers.partitions), now_ms)

    def forget_partition(self, is_of_partition: Callable[[str], bool]) -> None:
        """Drop the transactions of a ``__transaction_state`` partition no longer led here."""
        self._txns = {k: t for k, t in self._txns.items() if not is_of_partition(k[0])}

    def next_deadline_ms(self) -> int | None:
        if self._replies:
            return self._now_ms
        waits = [t.ready_at_ms for t in self._txns.values() if t.ready]
        return min(waits) if waits else None

    def poll(self, now_ms: int) -> None:
        """Settle the replies received, then send what is ready."""
        self._now_ms = max(self._now_ms, now_ms)
        replies, self._replies = self._replies, []
        for key, asked, errors in replies:
            self._settle(key, asked, errors, now_ms)
        by_leader: dict[int, list[tuple[_Txn, set[TopicPartition]]]] = {}
        for key, txn in list(self._txns.items()):
            if not txn.ready or txn.ready_at_ms > now_ms:
                continue
            if not self._wanted(*key):
                del self._txns[key]
                continue
            gone: set[TopicPartition] = set()
            leading: dict[int, set[TopicPartition]] = {}
            for tp in sorted(txn.ready):
                registration = self._cluster.partition(*tp)
                if registration is None:
                    gone.add(tp)
                elif registration.leader >= 0:
                    leading.setdefault(registration.leader, set()).add(tp)
            for leader, parts in leading.items():
                by_leader.setdefault(leader, []).append((txn, parts))
                txn.ready -= parts
                txn.in_flight |= parts
            txn.ready -= gone
            if txn.ready:  # no leader yet: look again later
                txn.ready_at_ms = now_ms + RETRY_BACKOFF_MS
            if gone:
                self._report(key, txn, frozenset(gone), now_ms)
        for leader, entries in sorted(by_leader.items()):
            self._send(leader, entries)

    def _send(self, leader: int, entries: list[tuple[_Txn, set[TopicPartition]]]) -> None:
        markers = []
        asked: list[tuple[tuple[str, int], int, frozenset[TopicPartition]]] = []
        for txn, parts in entries:
            m = txn.markers
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(parts):
                by_topic.setdefault(topic, []).append(partition)
            markers.append(
                messages.WriteTxnMarkersRequestWritableTxnMarker(
                    producer_id=m.producer_id,
                    producer_epoch=m.producer_epoch,
                    transaction_result=m.commit,
                    coordinator_epoch=m.coordinator_epoch,
                    transaction_version=m.transaction_version,
                    topics=[
                        messages.WriteTxnMarkersRequestWritableTxnMarkerTopic(name=t, partition_indexes=p)
                        for t, p in by_topic.items()
                    ],
                )
            )
            asked.append(((m.transactional_id, m.coordinator_epoch), m.producer_id, frozenset(parts)))

        def on_reply(reply: Message | None, reply_ms: int) -> None:
            results = _results(reply)
            for key, producer_id, parts in asked:
                errors = None if results is None else results.get(producer_id)
                found = (
                    None
                    if errors is None
                    else {tp: errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in parts}
                )
                self._replies.append((key, parts, found))
            self._now_ms = max(self._now_ms, reply_ms)

        cluster = self._cluster
        cluster.send(
            Outbound(
                leader,
                cluster.inter_broker_listener,
                messages.WriteTxnMarkersRequest(markers=markers),
                on_reply,
                REQUEST_TIMEOUT_MS,
            )
        )

    def _settle(
        self,
        key: tuple[str, int],
        asked: frozenset[TopicPartition],
        errors: dict[TopicPartition, int] | None,
        now_ms: int,
    ) -> None:
        txn = self._txns.get(key)
        if txn is None:
            return
        txn.in_flight -= asked
        if not self._wanted(*key):
            del self._txns[key]
            return
        if errors is None:
            self._retry(txn, asked, now_ms)
            return
        if any(code in _FENCED for code in errors.values()):
            self._log.info(
                "transaction %s: a marker was fenced (%s); its markers are given up", key[0], errors
            )
            del self._txns[key]
            self._abandoned(*key)
            return
        done = frozenset(tp for tp, code in errors.items() if code in _WRITTEN)
        self._retry(txn, asked - done, now_ms)
        if done:
            self._report(key, txn, done, now_ms)

    def _retry(self, txn: _Txn, parts: frozenset[TopicPartition], now_ms: int) -> None:
        if parts:
            txn.ready |= parts
            txn.ready_at_ms = now_ms + RETRY_BACKOFF_MS

    def _report(self, key: tuple[str, int], txn: _Txn, parts: frozenset[TopicPartition], now_ms: int) -> None:
        if not txn.ready and not txn.in_flight:
            self._txns.pop(key, None)
        self._written(key[0], key[1], parts, now_ms)


def _results(reply: Message | None) -> dict[int, dict[TopicPartition, int]] | None:
    if not isinstance(reply, messages.WriteTxnMarkersResponse):
        return None
    out: dict[int, dict[TopicPartition, int]] = {}
    for marker in reply.markers:
        errors = out.setdefault(marker.producer_id, {})
        for topic in marker.topics:
            for partition in topic.partitions:
                errors[(topic.name, partition.partition_index)] = partition.error_code
    return out
