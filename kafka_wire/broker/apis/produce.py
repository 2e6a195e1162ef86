"""Produce.

Behaviour: ``acks`` must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS everywhere). Each partition's
records must be one v2 batch (or a legacy message set); the log validates it (CRC, size against
``max.message.bytes``, timestamps) and assigns offsets; idempotent batches are de-duplicated by
producer id, epoch and sequence (the last five per producer). Internal topics refuse client
writes (INVALID_TOPIC_EXCEPTION, as Kafka). A batch refused for some of its records (a record
without a key on a compacted topic, a timestamp out of range) names them in ``record_errors``. A
topic's ``compression.type`` other than ``producer`` stores the batch recompressed, and
``max.message.bytes`` also bounds what a batch inflates to (see ``log/validation.py``). Only the
partition's leader appends (NOT_LEADER_OR_FOLLOWER elsewhere). acks=all is refused while the ISR
is smaller than the topic's ``min.insync.replicas`` (NOT_ENOUGH_REPLICAS, before anything is
appended) and completes once the high watermark passes the batch (the purgatory,
``partition/purgatory.py``): with one broker, at once. An acks=0 request gets no response (the connection drops the answer; a failed one
closes the connection).
The partitions are appended in request order, in slices of the work budget (see
``kafka_wire.broker.work``): a request of many large or compressed batches yields to other
connections between partitions, and its answer comes after the last one.
Transactions: a transactional batch is refused while the producer's transaction in the
partition does not match (INVALID_TXN_STATE for a plain batch while one is open); the first
transactional batch of a producer in a partition is first checked with the transaction
coordinator (KIP-890, ``transaction.partition.verification.enable``), or added to the transaction
for Produce v12+ (transaction version 2), before anything of the request is appended
(:mod:`kafka_wire.broker.txn.verifier`); a partition that fails it is not appended.
NOT_LEADER_OR_FOLLOWER (also on a node without a replica of the partition) from v10 (KIP-951)
names the leader this node knows of in ``current_leader`` and its endpoint in ``node_endpoints``,
as Kafka's broker does. Errors carry a message only where Kafka's do (a record-level refusal). An
error answer's offsets are -1 (the log start too, unless the log refused the records, their
sequence or their epoch), as Kafka answers.
Authorization (with an authorizer): WRITE on each topic (TOPIC_AUTHORIZATION_FAILED for its
partitions, whether or not it exists), and for a transactional request WRITE on its
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED everywhere), checked before anything else.
Version notes: v13 names topics by id; ``log_start_offset`` from v5, ``record_errors`` and
``error_message`` from v8, ``current_leader`` and ``node_endpoints`` from v10.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from kafka_wire.broker.apis.cluster_facts import current_leader, missing_replica_error
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.partition.purgatory import DelayedProduce, PendingProduce
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed, topic_allowed
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.broker.txn.verifier import REQUEST_TIMEOUT_MS, Operation, produce_error
from kafka_wire.broker.work import Job
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.errors import DecodeError
from kafka_wire.messages import (
    ErrorCode,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    ProduceResponseBatchIndexAndErrorMessage,
    ProduceResponseNodeEndpoint,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)
from kafka_wire.records import RecordBatch, validate_batch

VALID_ACKS = (-1, 0, 1)
AUTHORIZATION_FAILURES: Final = frozenset(
    {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
)
#: Refusals answered without the log start offset (Kafka's ReplicaManager: corrupt or oversized
#: batches, storage errors, unknown partitions, not the leader; and what ProduceRequest's own
#: validation refuses first: not exactly one v2 batch, INVALID_RECORD without record errors).
NO_LOG_START: Final = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.INVALID_RECORD,
    }
)


def handle(
    ctx: Context, request: ProduceRequest
) -> ProduceResponse | Job[ProduceResponse] | DelayedProduce | VerifyingProduce:
    denied = _denied(ctx, request)
    guards = {k: v for k, v in _verifications(ctx, request).items() if k not in denied}
    if guards:
        verifying = VerifyingProduce(ctx, request, guards, denied)
        answer = verifying.poll(ctx.now_ms)
        return verifying if answer is None else answer
    return _run(ctx, request, denied)


def _denied(ctx: Context, request: ProduceRequest) -> dict[tuple[str, int], Verdict]:
    """The partitions the connection may not write, as Kafka's ``KafkaApis`` checks them first:
    every one when it may not WRITE the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    else those of topics it may not WRITE (TOPIC_AUTHORIZATION_FAILED)."""
    if ctx.state.authorizer is None:
        return {}
    txn_denied = bool(request.transactional_id) and not allowed(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id or ""
    )
    found: dict[tuple[str, int], Verdict] = {}
    for entry in request.topic_data:
        name = entry.name
        if ctx.api_version >= 13:
            topic = ctx.state.topic_with_id(entry.topic_id)
            if topic is None:
                continue  # UNKNOWN_TOPIC_ID: nothing to authorize
            name = topic.name
        if txn_denied:
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not topic_allowed(ctx, AclOperation.WRITE, name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            continue
        for data in entry.partition_data:
            found[name, data.index] = (code, None)
    return found


def _run(
    ctx: Context, request: ProduceRequest, verdicts: dict[tuple[str, int], Verdict]
) -> ProduceResponse | Job[ProduceResponse] | DelayedProduce:
    job = ProduceJob(ctx, request, verdicts)
    if request.acks != -1:
        return job.start(ctx.now_ms)
    wait = DelayedProduce(
        job.start(ctx.now_ms), job.pending, ctx.now_ms, request.timeout_ms, finish=job.hint_leaders
    )
    answer = wait.poll(ctx.now_ms)
    return wait if answer is None else answer


#: A partition's outcome of verification: the guard its append shows, or the error it answers.
Verdict = int | tuple[int, str | None]


def _verifications(ctx: Context, request: ProduceRequest) -> dict[tuple[str, int], tuple[int, int, int]]:
    """The partitions whose transactional batch must be checked with the coordinator first:
    (topic, partition) -> (guard, producer id, epoch)."""
    state = ctx.state
    operation = Operation.of_produce(ctx.api_version)
    if (
        not request.transactional_id
        or state.txn_verifier is None
        or not (state.config.transaction_partition_verification_enable or operation.adds)
    ):
        return {}
    found: dict[tuple[str, int], tuple[int, int, int]] = {}
    for entry in request.topic_data:
        topic = (
            state.topic_with_id(entry.topic_id) if ctx.api_version >= 13 else state.topic_named(entry.name)
        )
        for data in entry.partition_data:
            replica = state.replica(topic.name, data.index) if topic is not None else None
            header = _transactional_header(data.records)
            if replica is None or header is None or not replica.is_leader:
                continue
            producers = replica.producers
            current = producers.entry(header.producer_id)
            if current is not None and header.producer_epoch < current.epoch:
                continue  # the append refuses it (INVALID_PRODUCER_EPOCH) without asking
            guard = producers.start_verification(
                header.producer_id, header.producer_epoch, bumps_epoch=operation.adds
            )
            if guard is not None:
                found[(replica.topic, data.index)] = (guard, header.producer_id, header.producer_epoch)
    return found


def _transactional_header(records: bytes | memoryview | None) -> RecordBatch[bytes] | None:
    if not records:
        return None
    try:
        header = validate_batch(bytes(records), verify_crc=False)
    except DecodeError:
        return None
    return header if header.is_transactional and header.producer_id >= 0 else None


class VerifyingProduce:
    """A transactional Produce waiting for its partitions' verification with the coordinator;
    then appended as any other (see the module docstring)."""

    def __init__(
        self,
        ctx: Context,
        request: ProduceRequest,
        guards: dict[tuple[str, int], tuple[int, int, int]],
        denied: dict[tuple[str, int], Verdict],
    ) -> None:
        self._ctx = ctx
        self._denied = denied
        self._request = request
        self._guards = guards
        self._operation = Operation.of_produce(ctx.api_version)
        _, producer_id, epoch = next(iter(guards.values()))
        verifier = ctx.state.txn_verifier
        assert verifier is not None
        self._verifier = verifier
        self._verification = verifier.start(
            request.transactional_id or "", producer_id, epoch, sorted(guards), self._operation, ctx.now_ms
        )
        self._then: ProduceResponse | Job[ProduceResponse] | DelayedProduce | None = None
        self.deadline_ms = ctx.now_ms + REQUEST_TIMEOUT_MS

    def poll(self, now_ms: int) -> ProduceResponse | None:
        if self._then is None:
            if not self._verifier.poll(self._verification, now_ms):
                # Asking again later, or waiting for the coordinator's answer (which comes, if
                # only as a timeout, within the verifier's request timeout of being sent): a
                # deadline already passed would have the broker tick again at once, forever.
                v = self._verification
                self.deadline_ms = v.retry_at_ms if v.retry_at_ms is not None else now_ms + REQUEST_TIMEOUT_MS
                return None
            verdicts: dict[tuple[str, int], Verdict] = dict(self._denied)
            for key, (guard, _, _) in self._guards.items():
                error = self._verification.errors.get(key)
                verdicts[key] = guard if error is None else produce_error(error, self._operation)
            self._then = _run(replace(self._ctx, now_ms=now_ms), self._request, verdicts)
        if isinstance(self._then, ProduceResponse):
            return self._then
        answer = self._then.poll(now_ms)
        self.deadline_ms = self._then.deadline_ms
        return answer


class ProduceJob(Job[ProduceResponse]):
    """Appends one partition's records per step, in request order; each step spends the bytes it
    read and the decoding it did. Dropped (the rest not appended) if its connection closes."""

    def __init__(
        self, ctx: Context, request: ProduceRequest, verdicts: dict[tuple[str, int], Verdict] | None = None
    ) -> None:
        super().__init__(ctx.state.budget, ctx.now_ms)
        self._state = ctx.state
        self._verdicts = verdicts or {}
        self._listener = ctx.listener
        self._version = ctx.api_version
        self._acks = request.acks
        self._by_id = ctx.api_version >= 13
        self._steps = [
            (i, data) for i, entry in enumerate(request.topic_data) for data in entry.partition_data
        ]
        self._entries = request.topic_data
        self._topics: list[TopicInfo | None] = [None] * len(request.topic_data)
        self._found = [False] * len(request.topic_data)
        self._next = 0
        #: acks=all appends in a cluster, for the purgatory.
        self.pending: list[PendingProduce] = []
        self._response = ProduceResponse(
            responses=[
                ProduceResponseTopicProduceResponse(
                    name="" if self._by_id else entry.name,
                    topic_id=entry.topic_id if self._by_id else ZERO_UUID,
                    partition_responses=[],
                )
                for entry in request.topic_data
            ]
        )

    @property
    def done(self) -> bool:
        return self._next >= len(self._steps)

    def step(self, now_ms: int) -> None:
        i, data = self._steps[self._next]
        self._next += 1
        topic = self._topic(i)
        name = topic.name if topic is not None else self._entries[i].name
        verdict = self._verdicts.get((name, data.index))
        result, work, next_offset = _append(
            self._state, self._acks, self._by_id, topic, data, now_ms, verdict
        )
        self._response.responses[i].partition_responses.append(result)
        replica = self._state.replica(topic.name, data.index) if topic is not None else None
        if next_offset >= 0 and replica is not None and self._acks == -1:
            self.pending.append(PendingProduce(replica, replica.leader_epoch, next_offset, result))
        self.budget.spend(len(data.records or b"") + work)

    def _topic(self, i: int) -> TopicInfo | None:
        """The topic of request entry ``i``, looked up once (and again if it was deleted since)."""
        state = self._state
        topic = self._topics[i]
        if not self._found[i] or (topic is not None and state.topic_named(topic.name) is not topic):
            entry: ProduceRequestTopicProduceData = self._entries[i]
            topic = state.topic_with_id(entry.topic_id) if self._by_id else state.topic_named(entry.name)
            self._topics[i], self._found[i] = topic, True
        return topic

    def response(self) -> ProduceResponse:
        return self.hint_leaders(self._response)

    def hint_leaders(self, response: ProduceResponse) -> ProduceResponse:
        """From v10 (KIP-951), as Kafka's ``KafkaApis``: each NOT_LEADER_OR_FOLLOWER partition
        names the leader this broker knows of, and ``node_endpoints`` their endpoints."""
        if self._version < 10:
            return response
        leaders: dict[int, ProduceResponseNodeEndpoint] = {}
        for i, entry in enumerate(response.responses):
            topic = self._topics[i]
            for result in entry.partition_responses:
                if result.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER or topic is None:
                    continue
                found = current_leader(self._state, self._listener, topic.name, result.index)
                result.current_leader.leader_id = found.leader_id
                result.current_leader.leader_epoch = found.leader_epoch
                if found.node is not None:
                    node = found.node
                    leaders[node.node_id] = ProduceResponseNodeEndpoint(
                        node_id=node.node_id, host=node.host, port=node.port, rack=node.rack
                    )
        response.node_endpoints = [leaders[n] for n in sorted(leaders)]
        return response


def _append(
    state: BrokerState,
    acks: int,
    by_id: bool,
    topic: TopicInfo | None,
    data: ProduceRequestPartitionProduceData,
    now_ms: int,
    verdict: Verdict | None = None,
) -> tuple[ProduceResponsePartitionProduceResponse, int, int]:
    """One partition's answer, the decoding work its append did, and the offset after the
    appended batch (-1: nothing appended)."""
    # An error answer has no offsets (Kafka's).
    result = ProduceResponsePartitionProduceResponse(
        index=data.index, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1
    )
    replica = state.replica(topic.name, data.index) if topic is not None else None
    # Kafka's ReplicaManager reports these errors without a message (only a record-level
    # refusal, RecordValidationException, carries one).
    if acks not in VALID_ACKS:
        result.error_code = ErrorCode.INVALID_REQUIRED_ACKS
    elif isinstance(verdict, tuple) and verdict[0] in AUTHORIZATION_FAILURES:
        result.error_code = verdict[0]  # KafkaApis checks ACLs before the replica manager
    elif topic is None:
        result.error_code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif replica is None and (error := missing_replica_error(state, topic.name, data.index)) != (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    ):
        result.error_code = error
    elif not data.records:  # Kafka's ProduceRequest.validateRecords, before the append
        result.error_code = ErrorCode.INVALID_RECORD
    elif is_internal(topic.name):
        result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
    elif replica is None or not replica.is_leader:
        result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    elif acks == -1 and replica.under_min_isr:
        result.error_code = ErrorCode.NOT_ENOUGH_REPLICAS
    elif isinstance(verdict, tuple):
        result.error_code, result.error_message = verdict  # the coordinator refused the partition
    else:
        outcome = replica.append_as_leader(
            bytes(data.records),
            now_ms,
            require_verification=state.config.transaction_partition_verification_enable,
            guard=verdict,
        )
        state.touch(replica)
        result.error_code = outcome.error_code
        if not outcome.error_code:
            result.base_offset = outcome.base_offset
            result.log_append_time_ms = outcome.log_append_time_ms
            result.log_start_offset = outcome.log_start_offset
        elif outcome.record_errors or outcome.error_code not in NO_LOG_START:
            # Kafka's ReplicaManager names the log start for refusals of the log (records, sequences,
            # epochs), not for those of the batch's bytes or of the partition.
            result.log_start_offset = replica.log_start_offset
        result.error_message = outcome.error_message
        result.record_errors = [
            ProduceResponseBatchIndexAndErrorMessage(
                batch_index=e.batch_index, batch_index_error_message=e.message
            )
            for e in outcome.record_errors
        ]
        return result, outcome.work_bytes, outcome.next_offset if not outcome.error_code else -1
    return result, 0, -1
