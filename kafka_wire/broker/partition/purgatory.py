"""Requests held until replication catches up (Kafka's delayed produce and delete records).

A :class:`DelayedProduce` holds an ``acks=all`` answer, keyed by partition, until each appended
partition's high watermark reaches the offset after its batch; a partition whose ISR fell below
``min.insync.replicas`` meanwhile answers NOT_ENOUGH_REPLICAS_AFTER_APPEND, one whose leadership
moved NOT_LEADER_OR_FOLLOWER, and what is still waiting at the request's timeout
REQUEST_TIMED_OUT. A :class:`DelayedDeleteRecords` holds DeleteRecords until the low watermark
(the smallest log start offset over the ISR) reaches the requested offset. Both are
:class:`~kafka_wire.broker.state.Waiting` values: the broker polls them after every call, so a
high watermark that moves during a call completes them in the same call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.work import Job
from kafka_wire.messages import (
    DeleteRecordsResponse,
    DeleteRecordsResponsePartitionResult,
    ErrorCode,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
)


@dataclass(slots=True)
class PendingProduce:
    """One appended partition of an acks=all produce, waiting for its high watermark."""

    replica: PartitionReplica
    leader_epoch: int
    required_offset: int
    result: ProduceResponsePartitionProduceResponse
    done: bool = False

    def check(self) -> bool:
        """Kafka's ``checkEnoughReplicasReachOffset``; True once this partition is answered."""
        replica = self.replica
        if not replica.is_leader or replica.leader_epoch != self.leader_epoch:
            self._fail(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        elif replica.high_watermark >= self.required_offset or replica.hooks.planted("ack-before-isr"):
            if replica.under_min_isr:
                self._fail(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            self.done = True
        return self.done

    def _fail(self, code: int) -> None:
        # Only the code changes: Kafka's DelayedProduce keeps the append's base offset, append
        # time and log start offset in an answer that failed while waiting.
        self.result.error_code = code
        self.done = True

    def time_out(self) -> None:
        if not self.done:
            self._fail(ErrorCode.REQUEST_TIMED_OUT)


class DelayedProduce:
    """An acks=all Produce: its appends (a job, possibly sliced), then the wait for the HWs."""

    def __init__(
        self,
        job: Job[ProduceResponse] | ProduceResponse,
        pending: list[PendingProduce],
        now_ms: int,
        timeout_ms: int,
        *,
        finish: Callable[[ProduceResponse], ProduceResponse] | None = None,
    ) -> None:
        #: Applied to the answer once every partition is settled (the produce handler's leader
        #: hints: a partition may have lost its leadership while it waited).
        self._finish = finish
        self._job = job if isinstance(job, Job) else None
        self._response = job if isinstance(job, ProduceResponse) else None
        #: Keyed by partition, as Kafka's purgatory watches them.
        self.pending: dict[tuple[str, int], PendingProduce] = {}
        self._pending_list = pending
        self._timeout_ms = max(timeout_ms, 0)
        self._expires_ms = now_ms + self._timeout_ms
        self.deadline_ms = now_ms if self._job is not None else self._expires_ms

    def poll(self, now_ms: int) -> ProduceResponse | None:
        if self._response is None:
            assert self._job is not None
            body = self._job.poll(now_ms)
            if body is None:
                self.deadline_ms = now_ms
                return None
            self._response = body
            self._expires_ms = now_ms + self._timeout_ms  # Kafka's timer starts after the append
        for item in self._pending_list:
            self.pending.setdefault((item.replica.topic, item.replica.partition), item)
        for key, item in list(self.pending.items()):
            if item.check():
                del self.pending[key]
        if self.pending and now_ms < self._expires_ms:
            self.deadline_ms = self._expires_ms
            return None
        for item in self.pending.values():
            item.time_out()
        self.pending.clear()
        return self._response if self._finish is None else self._finish(self._response)


@dataclass(slots=True)
class PendingDelete:
    replica: PartitionReplica
    offset: int
    result: DeleteRecordsResponsePartitionResult
    done: bool = False

    def check(self) -> bool:
        replica = self.replica
        if not replica.is_leader:
            self.result.error_code, self.result.low_watermark = ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
            self.done = True
        elif (low := replica.low_watermark()) >= self.offset:
            self.result.low_watermark = low
            self.done = True
        return self.done


class DelayedDeleteRecords:
    """DeleteRecords answered once every ISR replica's log start reached the new start."""

    def __init__(
        self, response: DeleteRecordsResponse, pending: list[PendingDelete], now_ms: int, timeout_ms: int
    ) -> None:
        self._response = response
        self.pending = pending
        self.deadline_ms = now_ms + max(timeout_ms, 0)

    def poll(self, now_ms: int) -> DeleteRecordsResponse | None:
        self.pending = [p for p in self.pending if not p.check()]
        if self.pending and now_ms < self.deadline_ms:
            return None
        for item in self.pending:
            item.result.error_code, item.result.low_watermark = ErrorCode.REQUEST_TIMED_OUT, -1
        self.pending = []
        return self._response
