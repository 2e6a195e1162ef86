"""``RequestHandlers``: the answers to other nodes' requests: Vote, BeginQuorumEpoch,
EndQuorumEpoch, DescribeQuorum and FetchSnapshot (Fetch is :mod:`.leader_fetch`'s), dispatched by
:meth:`~RequestHandlers.handle`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.raft.config import METADATA_PARTITION, METADATA_TOPIC
from kafka_wire.broker.raft.quorum_state import NO_NODE
from kafka_wire.broker.raft.replica_state import ReplicaProgress
from kafka_wire.broker.raft.snapshots import SnapshotId
from kafka_wire.broker.raft.states import QuorumRole
from kafka_wire.broker.raft.transitions import QuorumTransitions
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        BeginQuorumEpochRequest,
        BeginQuorumEpochResponse,
        DescribeQuorumRequest,
        DescribeQuorumResponse,
        DescribeQuorumResponsePartitionData,
        DescribeQuorumResponseReplicaState,
        EndQuorumEpochRequest,
        EndQuorumEpochResponse,
        FetchSnapshotRequest,
        FetchSnapshotResponse,
        VoteRequest,
        VoteResponse,
    )


class RequestHandlers(QuorumTransitions):
    """Layer 4 of :class:`~kafka_wire.broker.raft.replica.KRaftReplica`: answering requests."""

    # -- answering requests -----------------------------------------------------------------------
    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        """Answer Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch (of ``__cluster_metadata``),
        FetchSnapshot or DescribeQuorum; a Fetch with nothing to return yet waits (long poll)."""
        self._now_ms = now_ms
        try:
            if api_key == ApiKey.VOTE and isinstance(body, messages.VoteRequest):
                return self._handle_vote(body, api_version, now_ms)
            if api_key == ApiKey.BEGIN_QUORUM_EPOCH and isinstance(body, messages.BeginQuorumEpochRequest):
                return self._handle_begin_epoch(body, api_version, now_ms)
            if api_key == ApiKey.END_QUORUM_EPOCH and isinstance(body, messages.EndQuorumEpochRequest):
                return self._handle_end_epoch(body, api_version, now_ms)
            if api_key == ApiKey.FETCH and isinstance(body, messages.FetchRequest):
                return self._handle_fetch(body, api_version, now_ms)
            if api_key == ApiKey.FETCH_SNAPSHOT and isinstance(body, messages.FetchSnapshotRequest):
                return self._handle_fetch_snapshot(body, api_version, now_ms)
            if api_key == ApiKey.DESCRIBE_QUORUM and isinstance(body, messages.DescribeQuorumRequest):
                return self._handle_describe_quorum(body, api_version, now_ms)
            raise LocalProtocolError(
                f"the raft replica does not answer api key {api_key} ({type(body).__name__})"
            )
        finally:
            self._flush()

    def _voter_only_error(self, remote_id: int, remote_epoch: int) -> int:
        if remote_epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if remote_id < 0:
            return ErrorCode.INVALID_REQUEST
        if not self.is_voter or remote_id not in self._voters:
            return ErrorCode.INCONSISTENT_VOTER_SET
        return ErrorCode.NONE

    def _handle_vote(self, request: VoteRequest, version: int, now_ms: int) -> VoteResponse:
        if not self._cluster_ok(request.cluster_id):
            return messages.VoteResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if (
            len(request.topics) != 1
            or request.topics[0].topic_name != METADATA_TOPIC
            or len(request.topics[0].partitions) != 1
            or request.topics[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return messages.VoteResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = request.topics[0].partitions[0]
        candidate, candidate_epoch = part.replica_id, part.replica_epoch
        pre_vote = part.pre_vote  # decoded from v2 on, False before
        # A candidate bumped its epoch, which no leader has written in yet; a prospective asks in
        # its current epoch, which may already be its log's last (Kafka's ``handleVoteRequest``).
        epoch_illegal = (
            part.last_offset_epoch > candidate_epoch
            if pre_vote
            else part.last_offset_epoch >= candidate_epoch
        )
        if part.last_offset < 0 or part.last_offset_epoch < 0 or epoch_illegal:
            return self._vote_response(version, ErrorCode.INVALID_REQUEST, False)
        error = self._voter_only_error(candidate, candidate_epoch)
        if error:
            return self._vote_response(version, error, False)
        if candidate_epoch > self.epoch:
            # any request of a higher epoch moves this voter there, a pre-vote's too: that epoch
            # exists, the prospective learnt it from another node (the election timer is kept
            # or not as :meth:`_become_unattached` says)
            self._become_unattached(candidate_epoch, now_ms)
        up_to_date = (part.last_offset_epoch, part.last_offset) >= (
            self.last_epoch(),
            self._log.log_end_offset,
        )
        granted = self._can_grant_vote(candidate, up_to_date, pre_vote)
        if (
            granted
            and not pre_vote
            and self.voted_id == NO_NODE
            and self.role in (QuorumRole.UNATTACHED, QuorumRole.PROSPECTIVE)
        ):
            self._become_voted(candidate, now_ms)
        return self._vote_response(version, ErrorCode.NONE, granted)

    def _can_grant_vote(self, candidate: int, up_to_date: bool, pre_vote: bool) -> bool:
        """Kafka's ``canGrantVote`` of each ``EpochState``. A pre-vote is granted to any log at least
        as up to date as this one, except by a leader, and by a follower that has heard from its
        leader; it changes nothing here (no vote is cast, nothing is persisted). A vote is granted
        once per epoch, while no leader is known."""
        role = self.role
        if role is QuorumRole.LEADER:
            return False
        if pre_vote:
            if role is QuorumRole.FOLLOWER:
                return up_to_date and not self._fetched_from_leader
            return up_to_date
        if role in (QuorumRole.VOTED, QuorumRole.PROSPECTIVE) and self.voted_id != NO_NODE:
            return self.voted_id == candidate
        if role is QuorumRole.UNATTACHED or (role is QuorumRole.PROSPECTIVE and self.leader_id == NO_NODE):
            return up_to_date
        return False  # a follower, a candidate (its vote is its own), a resigned leader

    def _vote_response(self, version: int, error: int, granted: bool) -> VoteResponse:
        endpoint = self._leader_endpoint()
        return messages.VoteResponse(
            error_code=ErrorCode.NONE,
            topics=[
                messages.VoteResponseTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        messages.VoteResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            leader_id=self.leader_id,
                            leader_epoch=self.epoch,
                            vote_granted=granted,
                        )
                    ],
                )
            ],
            node_endpoints=[
                messages.VoteResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port
                )
            ]
            if endpoint is not None and version >= 1
            else [],
        )

    def _handle_begin_epoch(
        self, request: BeginQuorumEpochRequest, version: int, now_ms: int
    ) -> BeginQuorumEpochResponse:
        if not self._cluster_ok(request.cluster_id):
            return messages.BeginQuorumEpochResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if (
            len(request.topics) != 1
            or request.topics[0].topic_name != METADATA_TOPIC
            or len(request.topics[0].partitions) != 1
            or request.topics[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return messages.BeginQuorumEpochResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = request.topics[0].partitions[0]
        error = self._voter_only_error(part.leader_id, part.leader_epoch)
        if not error:
            self._maybe_transition(part.leader_id, part.leader_epoch, now_ms)
            if self.role is QuorumRole.FOLLOWER and self.leader_id == part.leader_id:
                self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        endpoint = self._leader_endpoint()
        return messages.BeginQuorumEpochResponse(
            error_code=ErrorCode.NONE,
            topics=[
                messages.BeginQuorumEpochResponseTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        messages.BeginQuorumEpochResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            leader_id=self.leader_id,
                            leader_epoch=self.epoch,
                        )
                    ],
                )
            ],
            node_endpoints=[
                messages.BeginQuorumEpochResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port
                )
            ]
            if endpoint is not None and version >= 1
            else [],
        )

    def _handle_end_epoch(
        self, request: EndQuorumEpochRequest, version: int, now_ms: int
    ) -> EndQuorumEpochResponse:
        if not self._cluster_ok(request.cluster_id):
            return messages.EndQuorumEpochResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if (
            len(request.topics) != 1
            or request.topics[0].topic_name != METADATA_TOPIC
            or len(request.topics[0].partitions) != 1
            or request.topics[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return messages.EndQuorumEpochResponse(error_code=ErrorCode.INVALID_REQUEST)
        part = request.topics[0].partitions[0]
        error = self._voter_only_error(part.leader_id, part.leader_epoch)
        if not error:
            self._maybe_transition(part.leader_id, part.leader_epoch, now_ms)
            if (
                self.role is QuorumRole.FOLLOWER
                and self.leader_id == part.leader_id
                and self.epoch == part.leader_epoch
            ):
                successors = (
                    [c.candidate_id for c in part.preferred_candidates]
                    if version >= 1
                    else list(part.preferred_successors)
                )
                position = successors.index(self.node_id) if self.node_id in successors else -1
                self._fetch_deadline = now_ms + self._successor_backoff(position, len(successors))
        endpoint = self._leader_endpoint()
        return messages.EndQuorumEpochResponse(
            error_code=ErrorCode.NONE,
            topics=[
                messages.EndQuorumEpochResponseTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        messages.EndQuorumEpochResponsePartitionData(
                            partition_index=METADATA_PARTITION,
                            error_code=error,
                            leader_id=self.leader_id,
                            leader_epoch=self.epoch,
                        )
                    ],
                )
            ],
            node_endpoints=[
                messages.EndQuorumEpochResponseNodeEndpoint(
                    node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port
                )
            ]
            if endpoint is not None and version >= 1
            else [],
        )

    def _successor_backoff(self, position: int, count: int) -> int:
        """How long a follower of a resigned leader waits before standing (Kafka's strict
        exponential backoff by position among the preferred successors)."""
        backoff_max = self.config.election_backoff_max_ms
        if position == 0:
            return 0
        if position < 0 or position >= count:
            return backoff_max
        base = backoff_max >> (count - 1)
        return min(backoff_max, base << (position - 1))

    def _handle_fetch_snapshot(
        self, request: FetchSnapshotRequest, version: int, now_ms: int
    ) -> FetchSnapshotResponse:
        if not self._cluster_ok(request.cluster_id):
            return messages.FetchSnapshotResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        if len(request.topics) != 1 or len(request.topics[0].partitions) != 1:
            return messages.FetchSnapshotResponse(error_code=ErrorCode.INVALID_REQUEST)
        topic = request.topics[0]
        part = topic.partitions[0]
        if topic.name != METADATA_TOPIC or part.partition != METADATA_PARTITION:
            return self._snapshot_response(topic.name, part.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        error = self._leader_only_error(part.current_leader_epoch)
        if error:
            return self._snapshot_response(topic.name, part.partition, error)
        wanted = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
        if self._snapshot != wanted:
            return self._snapshot_response(topic.name, part.partition, ErrorCode.SNAPSHOT_NOT_FOUND)
        path = f"{self.config.directory}/{wanted.file_name}"
        size = self._storage.size(path) or 0
        if part.position < 0 or part.position >= size:
            return self._snapshot_response(topic.name, part.partition, ErrorCode.POSITION_OUT_OF_RANGE)
        chunk = self._storage.read(path, part.position, max(1, request.max_bytes))
        if request.replica_id in self._voters:
            progress = self._progress.setdefault(request.replica_id, ReplicaProgress())
            progress.last_fetch_ms = now_ms
        return self._snapshot_response(
            topic.name,
            part.partition,
            ErrorCode.NONE,
            snapshot=wanted,
            size=size,
            position=part.position,
            data=chunk,
        )

    def _snapshot_response(
        self,
        topic: str,
        partition: int,
        error: int,
        *,
        snapshot: SnapshotId | None = None,
        size: int = 0,
        position: int = 0,
        data: bytes = b"",
    ) -> FetchSnapshotResponse:
        return messages.FetchSnapshotResponse(
            error_code=ErrorCode.NONE,
            topics=[
                messages.FetchSnapshotResponseTopicSnapshot(
                    name=topic,
                    partitions=[
                        messages.FetchSnapshotResponsePartitionSnapshot(
                            index=partition,
                            error_code=error,
                            snapshot_id=messages.FetchSnapshotResponseSnapshotId(
                                end_offset=snapshot.end_offset if snapshot else -1,
                                epoch=snapshot.epoch if snapshot else -1,
                            ),
                            current_leader=messages.FetchSnapshotResponseLeaderIdAndEpoch(
                                leader_id=self.leader_id, leader_epoch=self.epoch
                            ),
                            size=size,
                            position=position,
                            unaligned_records=data,
                        )
                    ],
                )
            ],
        )

    def _handle_describe_quorum(
        self, request: DescribeQuorumRequest, version: int, now_ms: int
    ) -> DescribeQuorumResponse:
        valid = (
            len(request.topics) == 1
            and request.topics[0].topic_name == METADATA_TOPIC
            and len(request.topics[0].partitions) == 1
            and request.topics[0].partitions[0].partition_index == METADATA_PARTITION
        )
        if not valid:
            return messages.DescribeQuorumResponse(
                error_code=ErrorCode.NONE,
                topics=[
                    messages.DescribeQuorumResponseTopicData(
                        topic_name=t.topic_name,
                        partitions=[
                            _describe_quorum_error(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ],
            )
        if self.role is not QuorumRole.LEADER:
            partition = _describe_quorum_error(METADATA_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        else:
            self._update_leader_progress(now_ms)

            def state(node_id: int) -> DescribeQuorumResponseReplicaState:
                progress = self._progress_of(node_id)
                return messages.DescribeQuorumResponseReplicaState(
                    replica_id=node_id,
                    log_end_offset=progress.end_offset,
                    last_fetch_timestamp=progress.last_fetch_ms,
                    last_caught_up_timestamp=progress.last_caught_up_ms,
                )

            partition = messages.DescribeQuorumResponsePartitionData(
                partition_index=METADATA_PARTITION,
                error_code=ErrorCode.NONE,
                leader_id=self.node_id,
                leader_epoch=self.epoch,
                high_watermark=self._hw,
                current_voters=[state(v) for v in self._voters],
                observers=[state(o) for o in sorted(self._progress) if o not in self._voters],
            )
        return messages.DescribeQuorumResponse(
            error_code=ErrorCode.NONE,
            topics=[
                messages.DescribeQuorumResponseTopicData(topic_name=METADATA_TOPIC, partitions=[partition])
            ],
            nodes=[
                messages.DescribeQuorumResponseNode(
                    node_id=v.node_id,
                    listeners=[
                        messages.DescribeQuorumResponseListener(
                            name=self.config.listener, host=v.host, port=v.port
                        )
                    ]
                    if v.port  # a standalone node's controller has no listener
                    else [],
                )
                for v in sorted(self.config.voters, key=lambda v: v.node_id)
            ]
            if version >= 2
            else [],
        )


def _describe_quorum_error(partition_index: int, code: ErrorCode) -> DescribeQuorumResponsePartitionData:
    """A partition DescribeQuorum fails, as Kafka's ``singletonErrorResponse`` gives it: the code
    and its message, the leader, epoch and high watermark left at 0."""
    return messages.DescribeQuorumResponsePartitionData(
        partition_index=partition_index, error_code=code, error_message=code.description
    )
