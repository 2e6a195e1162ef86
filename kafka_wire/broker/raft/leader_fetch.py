"""``LeaderFetch``: the leader's side of Fetch: answering followers and observers (DivergingEpoch,
a snapshot id below the log start, else records), tracking each replica's progress, moving the high
watermark, and the long poll of a Fetch with nothing to return yet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.raft.config import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID
from kafka_wire.broker.raft.replica_state import ReplicaProgress, ReplicaState
from kafka_wire.broker.raft.snapshots import SnapshotId
from kafka_wire.broker.raft.states import QuorumRole
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        FetchRequest,
        FetchResponse,
    )


class _FetchWait:
    """A leader's Fetch with nothing to return yet (long poll): answered when data arrives, the
    high watermark moves, leadership changes, or its max wait ends."""

    __slots__ = ("deadline_ms", "epoch", "fetch_offset", "high_watermark", "replica", "request", "version")

    def __init__(
        self, replica: LeaderFetch, request: FetchRequest, version: int, fetch_offset: int, deadline_ms: int
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


class LeaderFetch(ReplicaState):
    """Layer 2 of :class:`~kafka_wire.broker.raft.replica.KRaftReplica`: the leader's side of Fetch."""

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

    # -- answering Fetch --------------------------------------------------------------------------
    def _handle_fetch(self, request: FetchRequest, version: int, now_ms: int) -> Message | Waiting:
        if not self._cluster_ok(request.cluster_id):
            return messages.FetchResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
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
            return messages.FetchResponse(error_code=ErrorCode.INVALID_REQUEST)
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
        return messages.FetchResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            session_id=0,
            responses=[
                messages.FetchResponseFetchableTopicResponse(
                    topic_id=METADATA_TOPIC_ID,
                    topic=METADATA_TOPIC,
                    partitions=[
                        messages.FetchResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            high_watermark=self._hw if not error else -1,
                            last_stable_offset=self._hw if not error else -1,
                            log_start_offset=self._log.log_start_offset if not error else -1,
                            diverging_epoch=messages.FetchResponseEpochEndOffset(
                                epoch=diverging[0] if diverging else -1,
                                end_offset=diverging[1] if diverging else -1,
                            ),
                            current_leader=messages.FetchResponseLeaderIdAndEpoch(
                                leader_id=self.leader_id, leader_epoch=self.epoch
                            ),
                            snapshot_id=messages.FetchResponseSnapshotId(
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
                messages.FetchResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port, rack=None
                )
            ]
            if endpoint is not None and version >= 16
            else [],
        )
