"""WriteTxnMarkers (from a transaction coordinator, or an admin client aborting a hanging
transaction, KIP-664).

Behaviour: for each marker, each partition named gets a COMMIT or ABORT control batch (the
producer id and epoch, the coordinator epoch in its EndTxnMarker) appended by its leader as
Kafka's ``appendRecords`` with acks=-1 does it: a partition this broker has no replica of is
UNKNOWN_TOPIC_OR_PARTITION, one it does not lead NOT_LEADER_OR_FOLLOWER, one whose ISR is below
``min.insync.replicas`` NOT_ENOUGH_REPLICAS; the producer state refuses a marker of an older
producer epoch (INVALID_PRODUCER_EPOCH) or coordinator epoch (TRANSACTION_COORDINATOR_FENCED).
The answer waits until each appended marker is below the high watermark (REQUEST_TIMED_OUT after
30 s, Kafka's ``request.timeout.ms``). A marker written to a ``__consumer_offsets`` partition
also ends the producer's pending transactional offset commits there (the group coordinator
applies or drops them once the marker is replicated).
Version notes: v0 was removed in Kafka 4.0; v2 adds the transaction version (KIP-1228), which
changes nothing here.
Authorization (with an authorizer): CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED per partition); this node's own markers (the loopback) always may.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.partition.purgatory import PendingProduce
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    ProduceResponsePartitionProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseWritableTxnMarkerPartitionResult,
    WriteTxnMarkersResponseWritableTxnMarkerResult,
    WriteTxnMarkersResponseWritableTxnMarkerTopicResult,
)

#: Kafka's ``request.timeout.ms`` default: how long an appended marker waits for replication.
MARKER_TIMEOUT_MS = 30_000


def handle(ctx: Context, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse | DelayedMarkers:
    state = ctx.state
    response = WriteTxnMarkersResponse()
    may = cluster_allowed(ctx, AclOperation.CLUSTER_ACTION)
    waits: list[_Wait] = []
    for marker in request.markers:
        result = WriteTxnMarkersResponseWritableTxnMarkerResult(producer_id=marker.producer_id)
        for topic in marker.topics:
            topic_result = WriteTxnMarkersResponseWritableTxnMarkerTopicResult(name=topic.name)
            for index in topic.partition_indexes:
                partition = WriteTxnMarkersResponseWritableTxnMarkerPartitionResult(partition_index=index)
                topic_result.partitions.append(partition)
                replica = state.replica(topic.name, index)
                if not may:  # only brokers write markers (CLUSTER_ACTION on the cluster)
                    partition.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif replica is None:
                    partition.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not replica.is_leader:
                    partition.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif replica.under_min_isr:
                    partition.error_code = ErrorCode.NOT_ENOUGH_REPLICAS
                else:
                    outcome = replica.append_marker(
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.coordinator_epoch,
                        marker.transaction_result,
                        ctx.now_ms,
                    )
                    state.touch(replica)
                    partition.error_code = outcome.error_code
                    if not outcome.error_code:
                        scratch = ProduceResponsePartitionProduceResponse(index=index)
                        pending = PendingProduce(replica, replica.leader_epoch, outcome.next_offset, scratch)
                        offsets = topic.name == OFFSETS_TOPIC
                        waits.append(
                            _Wait(pending, partition, offsets, marker.producer_id, marker.transaction_result)
                        )
            result.topics.append(topic_result)
        response.markers.append(result)
    wait = DelayedMarkers(ctx, response, waits)
    answer = wait.poll(ctx.now_ms)
    return wait if answer is None else answer


@dataclass(slots=True)
class _Wait:
    """One appended marker waiting for the high watermark."""

    pending: PendingProduce
    result: WriteTxnMarkersResponseWritableTxnMarkerPartitionResult
    #: A ``__consumer_offsets`` partition: the group coordinator is told once it is replicated.
    offsets: bool
    producer_id: int
    commit: bool


class DelayedMarkers:
    """WriteTxnMarkers answered once every appended marker is replicated (or failed)."""

    def __init__(self, ctx: Context, response: WriteTxnMarkersResponse, waits: list[_Wait]) -> None:
        self._state = ctx.state
        self._response = response
        self._waits = waits
        self.deadline_ms = ctx.now_ms + MARKER_TIMEOUT_MS

    def poll(self, now_ms: int) -> WriteTxnMarkersResponse | None:
        still = []
        for wait in self._waits:
            if not wait.pending.check():
                still.append(wait)
                continue
            wait.result.error_code = wait.pending.result.error_code
            if wait.offsets and not wait.result.error_code:
                # The group coordinator applies (commit) or drops (abort) the offsets.
                self._state.txn_offsets_ended.append(
                    (wait.pending.replica.partition, wait.producer_id, wait.commit)
                )
        self._waits = still
        if still and now_ms < self.deadline_ms:
            return None
        for wait in still:
            wait.pending.time_out()
            wait.result.error_code = wait.pending.result.error_code
        self._waits = []
        return self._response
