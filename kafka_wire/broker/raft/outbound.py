"""``OutboundRequests``: the requests a replica sends other nodes (Vote as a candidate,
BeginQuorumEpoch as a leader, EndQuorumEpoch once resigned, Fetch and FetchSnapshot as a follower
or observer) and what it does with their answers: counting votes, and on a follower appending
fetched batches, truncating on a diverging epoch, and fetching and installing a snapshot."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.cluster_settings import Voter
from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.effects import Delete
from kafka_wire.broker.raft.committed import SnapshotLoad
from kafka_wire.broker.raft.config import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID
from kafka_wire.broker.raft.handlers import RequestHandlers
from kafka_wire.broker.raft.replica_state import SnapshotFetch
from kafka_wire.broker.raft.snapshots import SnapshotId, decode_snapshot, write_snapshot
from kafka_wire.broker.raft.states import QuorumRole
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, InvalidValueError
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.reader import read_batches

if TYPE_CHECKING:
    from kafka_wire.messages import (
        BeginQuorumEpochRequest,
        EndQuorumEpochRequest,
        FetchRequest,
        FetchResponse,
        FetchSnapshotRequest,
        FetchSnapshotResponse,
        VoteRequest,
    )


#: The first Vote version with PreVote (KIP-996, Kafka 4.0).
PRE_VOTE_MIN_VERSION: Final = 2


@dataclass(slots=True)
class _Call:
    """One request in flight; ``on_reply`` is what :class:`Outbound` calls back."""

    replica: OutboundRequests
    api: ApiKey
    destination: int
    epoch: int
    generation: int

    def on_reply(self, body: Message | None, now_ms: int) -> None:
        self.replica._on_reply(self, body, now_ms)


class OutboundRequests(RequestHandlers):
    """Layer 5 of :class:`~kafka_wire.broker.raft.replica.KRaftReplica`: requests to other nodes."""

    # -- requests to other nodes ------------------------------------------------------------------
    def poll_outbound(self, now_ms: int) -> list[Outbound]:
        """The requests this replica wants sent now (each once; a lost one is sent again later)."""
        self._now_ms = now_ms
        out: list[Outbound] = []
        role = self.role
        others = [v for v in self._voters if v != self.node_id]
        if role in (QuorumRole.PROSPECTIVE, QuorumRole.CANDIDATE):
            if not self._majority_rejected():  # asking on is of use while the election can be won
                for voter in others:
                    if voter not in self._granted and voter not in self._rejected:
                        self._send(out, ApiKey.VOTE, voter, partial(self._vote_request, voter), now_ms)
        elif role is QuorumRole.LEADER:
            for voter in others:
                if voter not in self._acked:
                    self._send(
                        out, ApiKey.BEGIN_QUORUM_EPOCH, voter, partial(self._begin_request, voter), now_ms
                    )
        elif role is QuorumRole.RESIGNED:
            for voter in others:
                if voter not in self._acked:
                    self._send(out, ApiKey.END_QUORUM_EPOCH, voter, self._end_request, now_ms)
        elif role is QuorumRole.FOLLOWER:
            fetching = self._snapshot_fetch
            if fetching is not None:
                self._send(
                    out,
                    ApiKey.FETCH_SNAPSHOT,
                    self.leader_id,
                    partial(self._fetch_snapshot_request, fetching),
                    now_ms,
                )
            else:
                self._send(out, ApiKey.FETCH, self.leader_id, self._fetch_request, now_ms)
        elif not self.is_voter and self._bootstrap:
            waiting = any(key[0] == ApiKey.FETCH for key in self._inflight) or any(
                key[0] == ApiKey.FETCH and due > now_ms for key, due in self._retry_at.items()
            )
            if not waiting:
                target = self._bootstrap[self._rng.randrange(len(self._bootstrap))]
                self._send(out, ApiKey.FETCH, target, self._fetch_request, now_ms)
        return out

    def _send(
        self, out: list[Outbound], api: ApiKey, destination: int, build: Callable[[], Message], now_ms: int
    ) -> None:
        """Send what ``build`` makes, unless one is in flight or waits for its retry (then it is
        not built at all)."""
        key = (api, destination)
        retry_at = self._retry_at.get(key)
        if key in self._inflight or (retry_at is not None and retry_at > now_ms):
            return
        self._retry_at.pop(key, None)
        self._inflight.add(key)
        call = _Call(self, api, destination, self.epoch, self._generation)
        timeout = self.config.request_timeout_ms
        if api == ApiKey.FETCH:
            timeout = max(timeout, self.config.fetch_max_wait_ms + timeout)
        body = build()
        # a pre-vote needs the version carrying PreVote: never negotiated down to one without it
        version = (
            PRE_VOTE_MIN_VERSION if isinstance(body, messages.VoteRequest) and self._pre_voting() else None
        )
        out.append(Outbound(destination, self.config.listener, body, call.on_reply, timeout, version))

    def _pre_voting(self) -> bool:
        return self.role is QuorumRole.PROSPECTIVE

    def _vote_request(self, voter: int) -> VoteRequest:
        return messages.VoteRequest(
            cluster_id=self.config.cluster_id,
            voter_id=voter,
            topics=[
                messages.VoteRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        messages.VoteRequestPartitionData(
                            partition_index=METADATA_PARTITION,
                            replica_epoch=self.epoch,  # a candidate's is bumped, a prospective's not
                            replica_id=self.node_id,
                            last_offset_epoch=self.last_epoch(),
                            last_offset=self._log.log_end_offset,
                            pre_vote=self._pre_voting(),
                        )
                    ],
                )
            ],
        )

    def _my_endpoint(self) -> Voter | None:
        return self._endpoints.get(self.node_id)

    def _begin_request(self, voter: int) -> BeginQuorumEpochRequest:
        me = self._my_endpoint()
        return messages.BeginQuorumEpochRequest(
            cluster_id=self.config.cluster_id,
            voter_id=voter,
            topics=[
                messages.BeginQuorumEpochRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        messages.BeginQuorumEpochRequestPartitionData(
                            partition_index=METADATA_PARTITION,
                            leader_id=self.node_id,
                            leader_epoch=self.epoch,
                        )
                    ],
                )
            ],
            leader_endpoints=[
                messages.BeginQuorumEpochRequestLeaderEndpoint(
                    name=self.config.listener, host=me.host, port=me.port
                )
            ]
            if me is not None
            else [],
        )

    def _end_request(self) -> EndQuorumEpochRequest:
        me = self._my_endpoint()
        return messages.EndQuorumEpochRequest(
            cluster_id=self.config.cluster_id,
            topics=[
                messages.EndQuorumEpochRequestTopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[
                        messages.EndQuorumEpochRequestPartitionData(
                            partition_index=METADATA_PARTITION,
                            leader_id=self.node_id,
                            leader_epoch=self.epoch,
                            preferred_successors=list(self._preferred),
                            preferred_candidates=[
                                messages.EndQuorumEpochRequestReplicaInfo(candidate_id=c)
                                for c in self._preferred
                            ],
                        )
                    ],
                )
            ],
            leader_endpoints=[
                messages.EndQuorumEpochRequestLeaderEndpoint(
                    name=self.config.listener, host=me.host, port=me.port
                )
            ]
            if me is not None
            else [],
        )

    def _fetch_request(self) -> FetchRequest:
        config = self.config
        return messages.FetchRequest(
            cluster_id=config.cluster_id,
            replica_state=messages.FetchRequestReplicaState(replica_id=self.node_id, replica_epoch=-1),
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=0,
            max_bytes=config.fetch_max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                messages.FetchRequestTopic(
                    topic_id=METADATA_TOPIC_ID,
                    topic=METADATA_TOPIC,
                    partitions=[
                        messages.FetchRequestPartition(
                            partition=METADATA_PARTITION,
                            current_leader_epoch=self.epoch,
                            fetch_offset=self._log.log_end_offset,
                            last_fetched_epoch=self.last_epoch(),
                            log_start_offset=self._log.log_start_offset,
                            partition_max_bytes=config.fetch_max_bytes,
                        )
                    ],
                )
            ],
        )

    def _fetch_snapshot_request(self, fetching: SnapshotFetch) -> FetchSnapshotRequest:
        return messages.FetchSnapshotRequest(
            cluster_id=self.config.cluster_id,
            replica_id=self.node_id,
            max_bytes=self.config.fetch_max_bytes,
            topics=[
                messages.FetchSnapshotRequestTopicSnapshot(
                    name=METADATA_TOPIC,
                    partitions=[
                        messages.FetchSnapshotRequestPartitionSnapshot(
                            partition=METADATA_PARTITION,
                            current_leader_epoch=self.epoch,
                            snapshot_id=messages.FetchSnapshotRequestSnapshotId(
                                end_offset=fetching.snapshot_id.end_offset, epoch=fetching.snapshot_id.epoch
                            ),
                            position=len(fetching.data),
                        )
                    ],
                )
            ],
        )

    # -- replies ----------------------------------------------------------------------------------
    def _on_reply(self, call: _Call, body: Message | None, now_ms: int) -> None:
        self._now_ms = now_ms
        try:
            current = call.generation == self._generation
            key = (call.api, call.destination)
            if current:
                self._inflight.discard(key)
            if body is None:
                if current:
                    self._retry_at[key] = now_ms + self.config.retry_backoff_ms
                return
            ok = self._dispatch_reply(call, body, current, now_ms)
            if not ok and call.generation == self._generation:
                self._retry_at[key] = now_ms + self.config.retry_backoff_ms
        finally:
            self._flush()

    def _dispatch_reply(self, call: _Call, body: Message, current: bool, now_ms: int) -> bool:
        """Handle one answer; False asks for a retry after the backoff."""
        if isinstance(body, messages.VoteResponse):
            if body.error_code or not body.topics or not body.topics[0].partitions:
                return False
            vote = body.topics[0].partitions[0]
            if self._common(vote.error_code, vote.leader_id, vote.leader_epoch, now_ms) or not current:
                return True
            if vote.error_code:
                return False
            if self.role is QuorumRole.PROSPECTIVE:
                if vote.vote_granted:
                    self._granted.add(call.destination)
                    self._maybe_pre_elected(now_ms)
                else:
                    self._rejected.add(call.destination)
                    if self._majority_rejected():
                        self._lose_pre_vote(now_ms)
            elif self.role is QuorumRole.CANDIDATE:
                if vote.vote_granted:
                    self._granted.add(call.destination)
                    self._maybe_elected(now_ms)
                elif not self._majority_rejected():  # backing off already
                    self._rejected.add(call.destination)
                    if self._majority_rejected():  # back off, then ask for pre-votes again
                        self._election_deadline = now_ms + self._election_backoff()
            return True
        if isinstance(body, messages.BeginQuorumEpochResponse | messages.EndQuorumEpochResponse):
            if body.error_code or not body.topics or not body.topics[0].partitions:
                return False
            part = body.topics[0].partitions[0]
            if self._common(part.error_code, part.leader_id, part.leader_epoch, now_ms) or not current:
                return True
            if part.error_code:
                return False
            if self.role in (QuorumRole.LEADER, QuorumRole.RESIGNED):
                self._acked.add(call.destination)
            return True
        if isinstance(body, messages.FetchResponse):
            return self._on_fetch_reply(body, current, now_ms)
        if isinstance(body, messages.FetchSnapshotResponse):
            return self._on_fetch_snapshot_reply(body, current, now_ms)
        return False

    def _election_backoff(self) -> int:
        retries = max(1, self._election_retries)
        spread = 2 << min(20, retries - 1)
        return min(
            self.config.retry_backoff_ms * self._rng.randrange(1, spread), self.config.election_backoff_max_ms
        )

    def _common(self, error: int, leader_id: int, epoch: int, now_ms: int) -> bool:
        """Kafka's ``maybeHandleCommonResponse``: True when the answer changed or outdated what
        this replica knows and needs nothing more."""
        if epoch < self.epoch:
            return True
        if epoch > self.epoch or (
            leader_id >= 0
            and leader_id != self.leader_id
            and error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE)
        ):
            before = (self.epoch, self.leader_id)
            self._maybe_transition(leader_id, epoch, now_ms)
            return (self.epoch, self.leader_id) != before
        return False

    # -- a follower's fetching: appending, truncating, snapshots ----------------------------------
    def _on_fetch_reply(self, body: FetchResponse, current: bool, now_ms: int) -> bool:
        if body.error_code or len(body.responses) != 1 or len(body.responses[0].partitions) != 1:
            return False
        part = body.responses[0].partitions[0]
        leader = part.current_leader
        if self._common(part.error_code, leader.leader_id, leader.leader_epoch, now_ms) or not current:
            return True
        if part.error_code or self.role is not QuorumRole.FOLLOWER:
            return False
        diverging = part.diverging_epoch
        if diverging.epoch >= 0:
            _, local_end = self._end_offset_for_epoch(diverging.epoch)
            target = min(local_end, diverging.end_offset)
            if target < self._hw:
                return False
            self._truncate(target)
        elif part.snapshot_id.epoch >= 0 and part.snapshot_id.end_offset >= 0:
            wanted = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
            if self._snapshot != wanted:
                self._snapshot_fetch = SnapshotFetch(wanted)
        else:
            records = part.records
            if records:
                if not self._append_as_follower(bytes(records), now_ms):
                    return False
            if part.high_watermark >= 0:
                self._leader_hw = part.high_watermark
                new_hw = min(part.high_watermark, self._log.log_end_offset)
                if new_hw > self._hw:
                    self._hw = new_hw
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._fetched_from_leader = True
        return True

    def _append_as_follower(self, records: bytes, now_ms: int) -> bool:
        epochs: list[tuple[int, int]] = []
        try:
            for batch in read_batches(records):
                if batch.base_offset < self._log.log_end_offset:
                    return False
                epochs.append(
                    (batch.partition_leader_epoch if isinstance(batch, RecordBatch) else 0, batch.base_offset)
                )
        except DecodeError:
            return False
        result = self._log.append(records, now_ms, assign_offsets=False, origin="replication")
        if result.error_code:
            return False
        for epoch, start in epochs:
            self._note_epoch(epoch, start)
        return True

    def _truncate(self, offset: int) -> None:
        self._log.truncate_to(offset)
        while self._epochs and self._epochs[-1][1] >= self._log.log_end_offset:
            self._epochs.pop()

    def _on_fetch_snapshot_reply(self, body: FetchSnapshotResponse, current: bool, now_ms: int) -> bool:
        if body.error_code or len(body.topics) != 1 or len(body.topics[0].partitions) != 1:
            return False
        part = body.topics[0].partitions[0]
        leader = part.current_leader
        if self._common(part.error_code, leader.leader_id, leader.leader_epoch, now_ms) or not current:
            return True
        fetching = self._snapshot_fetch
        if fetching is None or self.role is not QuorumRole.FOLLOWER:
            return True
        if part.error_code in (ErrorCode.SNAPSHOT_NOT_FOUND, ErrorCode.POSITION_OUT_OF_RANGE):
            self._snapshot_fetch = None  # fetch again: the leader names its current snapshot
            return True
        if part.error_code:
            return False
        got = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
        if got != fetching.snapshot_id or part.position != len(fetching.data):
            self._snapshot_fetch = None
            return True
        fetching.data += part.unaligned_records
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._fetched_from_leader = True
        if len(fetching.data) >= part.size:
            self._snapshot_fetch = None
            self._install_snapshot(fetching.snapshot_id, bytes(fetching.data))
        return True

    def _install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        try:
            records = decode_snapshot(data)
        except (DecodeError, InvalidValueError):
            return
        directory = self.config.directory
        write_snapshot(self._effects, directory, snapshot_id, data)
        previous = self._snapshot
        if previous is not None and previous != snapshot_id:
            self._effects.emit(Delete(f"{directory}/{previous.file_name}"))
        self._snapshot = snapshot_id
        self._reset_log(snapshot_id.end_offset)
        self._epochs = []
        self._hw = max(self._hw, snapshot_id.end_offset)
        self._taken = snapshot_id.end_offset
        self._pending_load = SnapshotLoad(snapshot_id, tuple(records))
