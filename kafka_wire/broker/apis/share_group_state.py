"""InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
ReadShareGroupStateSummary (v0-v1, KIP-932): the share coordinator's RPCs, which partition
leaders (``share.persister``) and the group coordinator send to the leader of a share-partition's
``__share_group_state`` partition.

Behaviour: each partition of the request is one share-partition key ("group:topic id:partition"),
answered by the state store (``share.coordinator.ShareStateStore``; its docstring has the checks
and their errors: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION). An empty group id, a topic
without partitions, or a request without topics is INVALID_REQUEST, as Kafka's service answers.
The answer leaves once what it reports is replicated (the high watermark of the state partition
at the operation's offset; NOT_COORDINATOR when the node stops leading it meanwhile,
COORDINATOR_NOT_AVAILABLE when the ISR shrinks below ``min.insync.replicas`` or the write is not
replicated within ``offsets.commit.timeout.ms``).
Authorization (with an authorizer): CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED
per partition); this node's own requests (the loopback) always may.
Version notes: v1 of Write and ReadSummary carry ``delivery_complete_count``: a write's is not kept
(the state's records say it), ReadSummary's is counted from the state kept (the records past the
start offset acknowledged or archived; -1 without a state).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire import messages
from kafka_wire.broker.group.share_partition import RecordState
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC
from kafka_wire.broker.offsets_topic import replication_outcome
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.share.coordinator import ShareStateStore
from kafka_wire.broker.share.state_records import ShareState, ShareStateKey
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.messages import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    DeleteShareGroupStateResponseDeleteStateResult,
    DeleteShareGroupStateResponsePartitionResult,
    ErrorCode,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    InitializeShareGroupStateResponseInitializeStateResult,
    InitializeShareGroupStateResponsePartitionResult,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateResponsePartitionResult,
    ReadShareGroupStateResponseReadStateResult,
    ReadShareGroupStateResponseStateBatch,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    ReadShareGroupStateSummaryResponsePartitionResult,
    ReadShareGroupStateSummaryResponseReadStateSummaryResult,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
    WriteShareGroupStateResponsePartitionResult,
    WriteShareGroupStateResponseWriteStateResult,
)

#: The delivery states of records done with (acknowledged, archived).
_DONE = (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED))

Request = (
    InitializeShareGroupStateRequest
    | ReadShareGroupStateRequest
    | WriteShareGroupStateRequest
    | DeleteShareGroupStateRequest
    | ReadShareGroupStateSummaryRequest
)
Response = (
    InitializeShareGroupStateResponse
    | ReadShareGroupStateResponse
    | WriteShareGroupStateResponse
    | DeleteShareGroupStateResponse
    | ReadShareGroupStateSummaryResponse
)

#: Kafka's coordinator runtime: what a failed append or replication is answered with.
_AS_COORDINATOR_ERROR: dict[int, int] = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


def _coordinator_error(code: int) -> int:
    return _AS_COORDINATOR_ERROR.get(code, code)


@dataclass(slots=True)
class _Result:
    """One partition's outcome: its error, the state read (Read, ReadSummary) and the offset of
    ``__share_group_state`` its answer waits for (-1: none)."""

    error_code: int
    partition: int | None
    end_offset: int
    state: ShareState | None = None


def _store(state: BrokerState) -> ShareStateStore | None:
    return None if state.share is None else state.share.store


def handle(ctx: Context, request: Request) -> Response | StateWait:
    state, now = ctx.state, ctx.now_ms
    store = _store(state)
    allowed = cluster_allowed(ctx, AclOperation.CLUSTER_ACTION)
    results: list[tuple[ShareStateKey, _Result]] = []
    invalid = not request.group_id or not request.topics
    for topic in request.topics:
        invalid = invalid or not topic.partitions
        for p in topic.partitions:
            key = ShareStateKey(request.group_id, topic.topic_id, p.partition)
            if not allowed:
                results.append((key, _Result(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, -1)))
            elif invalid or p.partition < 0:
                results.append((key, _Result(ErrorCode.INVALID_REQUEST, None, -1)))
            elif store is None:
                results.append((key, _Result(ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1)))
            else:
                results.append((key, _operate(store, request, p, key, now)))
    wait = StateWait(state, request, results, now + state.config.offsets_commit_timeout_ms)
    answer = wait.poll(now)
    return wait if answer is None else answer


def _operate(store: ShareStateStore, request: Request, p: object, key: ShareStateKey, now: int) -> _Result:
    """One partition of ``request`` (``p``, its partition data) carried out by the store."""
    partition = store.partition_of(key)
    if isinstance(p, messages.ReadShareGroupStateRequestPartitionData):
        error, kept, end = store.read_state(key, p.leader_epoch, now)
        return _Result(error, partition, end, kept)
    if isinstance(p, messages.ReadShareGroupStateSummaryRequestPartitionData):
        error, kept, end = store.summary(key, now)
        return _Result(error, partition, end, kept)
    if isinstance(p, messages.WriteShareGroupStateRequestPartitionData):
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches
        ]
        error, end = store.write_state(key, p.state_epoch, p.leader_epoch, p.start_offset, batches, now)
        return _Result(error, partition, end)
    if isinstance(p, messages.InitializeShareGroupStateRequestPartitionData):
        error, end = store.initialize(key, p.state_epoch, p.start_offset, now)
        return _Result(error, partition, end)
    error, end = store.delete(key, now)
    return _Result(error, partition, end)


@dataclass(slots=True)
class StateWait:
    """The answer, held until what it reports is replicated."""

    state: BrokerState
    request: Request
    results: list[tuple[ShareStateKey, _Result]]
    deadline_ms: int

    def poll(self, now_ms: int) -> Response | None:
        for _, result in self.results:
            if result.error_code or result.end_offset < 0 or result.partition is None:
                continue
            outcome = replication_outcome(
                self.state, result.partition, result.end_offset, SHARE_GROUP_STATE_TOPIC
            )
            if outcome is None:
                if now_ms < self.deadline_ms:
                    return None
                outcome = ErrorCode.REQUEST_TIMED_OUT
            result.error_code = outcome
            result.end_offset = -1
        for _, result in self.results:
            result.error_code = _coordinator_error(result.error_code)
        return _answer(self.request, self.results)


def _answer(request: Request, results: list[tuple[ShareStateKey, _Result]]) -> Response:
    by_topic: dict[object, list[tuple[ShareStateKey, _Result]]] = {}
    for key, result in results:
        by_topic.setdefault(key.topic_id, []).append((key, result))
    if isinstance(request, ReadShareGroupStateRequest):
        return ReadShareGroupStateResponse(
            results=[
                ReadShareGroupStateResponseReadStateResult(
                    topic_id=entries[0][0].topic_id, partitions=[_read_result(k, r) for k, r in entries]
                )
                for entries in by_topic.values()
            ]
        )
    if isinstance(request, ReadShareGroupStateSummaryRequest):
        return ReadShareGroupStateSummaryResponse(
            results=[
                ReadShareGroupStateSummaryResponseReadStateSummaryResult(
                    topic_id=entries[0][0].topic_id, partitions=[_summary_result(k, r) for k, r in entries]
                )
                for entries in by_topic.values()
            ]
        )
    if isinstance(request, WriteShareGroupStateRequest):
        return WriteShareGroupStateResponse(
            results=[
                WriteShareGroupStateResponseWriteStateResult(
                    topic_id=entries[0][0].topic_id,
                    partitions=[
                        WriteShareGroupStateResponsePartitionResult(
                            partition=k.partition, error_code=r.error_code, error_message=_message(r)
                        )
                        for k, r in entries
                    ],
                )
                for entries in by_topic.values()
            ]
        )
    if isinstance(request, InitializeShareGroupStateRequest):
        return InitializeShareGroupStateResponse(
            results=[
                InitializeShareGroupStateResponseInitializeStateResult(
                    topic_id=entries[0][0].topic_id,
                    partitions=[
                        InitializeShareGroupStateResponsePartitionResult(
                            partition=k.partition, error_code=r.error_code, error_message=_message(r)
                        )
                        for k, r in entries
                    ],
                )
                for entries in by_topic.values()
            ]
        )
    return DeleteShareGroupStateResponse(
        results=[
            DeleteShareGroupStateResponseDeleteStateResult(
                topic_id=entries[0][0].topic_id,
                partitions=[
                    DeleteShareGroupStateResponsePartitionResult(
                        partition=k.partition, error_code=r.error_code, error_message=_message(r)
                    )
                    for k, r in entries
                ],
            )
            for entries in by_topic.values()
        ]
    )


def _message(result: _Result) -> str | None:
    known = ErrorCode.lookup(result.error_code) if result.error_code else None
    return known.description if isinstance(known, ErrorCode) else None


def _read_result(key: ShareStateKey, result: _Result) -> ReadShareGroupStateResponsePartitionResult:
    answer = ReadShareGroupStateResponsePartitionResult(
        partition=key.partition, error_code=result.error_code, error_message=_message(result)
    )
    kept = result.state
    if not result.error_code and kept is not None:
        answer.state_epoch, answer.start_offset = kept.state_epoch, kept.start_offset
        answer.state_batches = [
            ReadShareGroupStateResponseStateBatch(
                first_offset=f, last_offset=last, delivery_state=s, delivery_count=c
            )
            for f, last, s, c in kept.batches
        ]
    return answer


def _summary_result(key: ShareStateKey, result: _Result) -> ReadShareGroupStateSummaryResponsePartitionResult:
    answer = ReadShareGroupStateSummaryResponsePartitionResult(
        partition=key.partition, error_code=result.error_code, error_message=_message(result)
    )
    kept = result.state
    if not result.error_code and kept is not None:
        answer.state_epoch, answer.leader_epoch = kept.state_epoch, kept.leader_epoch
        answer.start_offset = kept.start_offset
        if kept.start_offset >= 0:
            answer.delivery_complete_count = sum(
                last - max(first, kept.start_offset) + 1
                for first, last, kind, _ in kept.batches
                if kind in _DONE and last >= kept.start_offset
            )
    return answer
