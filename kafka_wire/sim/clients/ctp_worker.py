"""A simulated consume-transform-produce worker: Kafka's exactly-once pattern, reading one topic
and writing another in transactions that also commit the positions it read.

The worker is a :class:`~kafka_wire.sim.clients.txn_producer.TxnProducer` (its initialization,
transaction versions 1 and 2, retries, stalls past the timeout, restarts leaving zombies,
fencing) that fetches like a consumer (:class:`~kafka_wire.sim.clients.consumer.Fetcher`, at
read_committed). Its input partitions are a fixed manual assignment (partition ``p`` of the input
topic when ``p % workers == index``); its group id only names where its offsets go, as Kafka's
``sendOffsetsToTransaction(offsets, groupMetadata)`` allows. Each transaction takes what was
consumed, writes one output record per input record to the output topic (the input's partition
index modulo the output's count, value :func:`~kafka_wire.sim.history.output_value`: the input's
value and the transaction's name) and sends the positions after those records to the transaction
(version 1: AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit v4 to the group
coordinator; version 2: TxnOffsetCommit v5 alone, which adds the group itself), then ends it.
Input records that are themselves outputs (input and output topics the same) are skipped.

When it starts and whenever a transaction ends other than committed (aborted, fenced, unknown,
the process restarted), the worker resumes from the group's committed offsets: OffsetFetch with
``require_stable``, retried while it answers UNSTABLE_OFFSET_COMMIT (the previous transaction's
offsets not yet settled); what it had consumed beyond them is dropped. Its phases, beside the
producer's steps, are in :data:`TRANSITIONS`:

- ``RESUME``: the positions must be fetched again before the next transaction;
- ``RUNNING``: reading; a transaction begins with what was consumed;
- ``ADDING_OFFSETS`` (version 1), ``COMMITTING_OFFSETS``: the transaction's records are written,
  its offsets are being sent;
- ``OFFSETS_SENT``: the offsets are in the transaction; its EndTxn follows.

History: the producer's ``send`` and ``txn`` ops (the outputs), ``poll`` ops of its reads (with
an ``info`` poll op ``RESUMED`` per partition where its reads start again), and an ``offsets`` ok
op per partition when a TxnOffsetCommit is answered ok.
"""

from __future__ import annotations

import enum
import random
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    ApiKey,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from kafka_wire.sim.clients.base import RETRY_BACKOFF_MS, Address
from kafka_wire.sim.clients.consumer import Fetcher
from kafka_wire.sim.clients.producer import DELIVERY_TIMEOUT_MS
from kafka_wire.sim.clients.txn_producer import COORDINATOR_MOVED, FENCED, RETRY, Txn, TxnProducer
from kafka_wire.sim.history import Op, OpKind, OpType, input_of, output_value

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

#: Input records one transaction takes at most.
MAX_TAKEN: Final = 10
#: Offsets answers after which the same request is sent again later.
_RETRY_OFFSETS: Final = RETRY | {ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


class Phase(enum.Enum):
    RESUME = "resume"
    RUNNING = "running"
    ADDING_OFFSETS = "adding-offsets"
    COMMITTING_OFFSETS = "committing-offsets"
    OFFSETS_SENT = "offsets-sent"


#: (phase, what happened) -> the next phase: the worker's own state machine.
TRANSITIONS: Final[dict[tuple[Phase, str], Phase]] = {
    (Phase.RESUME, "resumed"): Phase.RUNNING,
    (Phase.RUNNING, "offsets-v1"): Phase.ADDING_OFFSETS,
    (Phase.RUNNING, "offsets-v2"): Phase.COMMITTING_OFFSETS,
    (Phase.ADDING_OFFSETS, "added"): Phase.COMMITTING_OFFSETS,
    (Phase.ADDING_OFFSETS, "failed"): Phase.RUNNING,
    (Phase.COMMITTING_OFFSETS, "committed"): Phase.OFFSETS_SENT,
    (Phase.COMMITTING_OFFSETS, "failed"): Phase.RUNNING,
    (Phase.OFFSETS_SENT, "txn-committed"): Phase.RUNNING,
    # A transaction that ends otherwise (aborted, fenced, unknown, abandoned) sends it back.
    **{(phase, "txn-lost"): Phase.RESUME for phase in Phase},
}


class CtpWorker(TxnProducer, Fetcher):
    """One consume-transform-produce worker; see the module docstring."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        source: str,
        sink: str,
        group: str,
        *,
        index: int = 0,
        workers: int = 1,
        version: int = 2,
        interval_ms: int = 100,
        commit_share: float = 0.8,
        stall_share: float = 0.04,
        restart_share: float = 0.15,
    ) -> None:
        super().__init__(
            name,
            history,
            rng,
            bootstrap,
            sorted({source, sink}),
            version=version,
            interval_ms=interval_ms,
            commit_share=commit_share,
            stall_share=stall_share,
            restart_share=restart_share,
        )
        self.read_committed = True
        self.version_caps[ApiKey.TXN_OFFSET_COMMIT] = 5 if version == 2 else 4
        self.source, self.sink, self.group_id = source, sink, group
        self.index, self.workers = index, workers
        self.phase = Phase.RESUME
        self.group_coordinator: Address | None = None
        #: A FindCoordinator, OffsetFetch, AddOffsetsToTxn or TxnOffsetCommit of the worker in flight.
        self.offsets_asking = False
        self.offsets_at_ms = 0
        #: Per input partition: the records consumed and not yet taken by a transaction.
        self.consumed: dict[tuple[str, int], list[tuple[int, str]]] = {}
        #: The positions the current transaction commits.
        self.positions: dict[tuple[str, int], int] = {}

    def idle(self) -> bool:
        return super().idle() and not self.offsets_asking

    def _shift(self, event: str) -> None:
        self.phase = TRANSITIONS[self.phase, event]

    def assignment(self) -> list[tuple[str, int]]:
        count = self.partition_counts.get(self.source, 0)
        return [(self.source, p) for p in range(count) if p % self.workers == self.index]

    def took(self, key: tuple[str, int], records: tuple[tuple[int, str], ...]) -> None:
        if self.phase is not Phase.RESUME:
            self.consumed.setdefault(key, []).extend(records)

    # -- resuming from the group's committed offsets ---------------------------------------------

    def _maybe_begin(self, now_ms: int) -> None:
        if self.quiescing:
            return
        if self.phase is Phase.RESUME:
            self._resume(now_ms)
            return
        if self.next_txn_ms is not None and now_ms < self.next_txn_ms:
            self.wake_at(self.next_txn_ms)
            return
        out_count = self.partition_counts.get(self.sink, 0)
        taken = self._take() if out_count else []
        if not any(input_of(value) is None for _, _, value in taken):
            return  # nothing to transform yet (the next poll pumps again)
        txn = self._next_txn(now_ms)
        self.positions = {}
        for key, offset, value in taken:
            self.positions[key] = offset + 1
            if input_of(value) is None:
                self._add_record(txn, (self.sink, key[1] % out_count), output_value(value, txn.name), now_ms)
        self._begin(txn, now_ms)

    def _take(self) -> list[tuple[tuple[str, int], int, str]]:
        taken: list[tuple[tuple[str, int], int, str]] = []
        for key in sorted(self.consumed):
            records = self.consumed[key]
            n = min(len(records), MAX_TAKEN - len(taken))
            taken += [(key, offset, value) for offset, value in records[:n]]
            del records[:n]
        return taken

    def _resume(self, now_ms: int) -> None:
        assignment = self.assignment()
        if not assignment:
            if self.source not in self.partition_counts:
                self.want_metadata()
            return
        if self.offsets_asking:
            return
        if now_ms < self.offsets_at_ms:
            self.wake_at(self.offsets_at_ms)
            return
        if self.group_coordinator is None:
            self._find(group=True)
            return
        request = OffsetFetchRequest(
            group_id=self.group_id,
            topics=[OffsetFetchRequestTopic(name=self.source, partition_indexes=[p for _, p in assignment])],
            require_stable=True,
        )
        self.offsets_asking = True
        self.request(self.group_coordinator, request, self._on_positions)

    def _on_positions(self, body: Message | None, now_ms: int) -> None:
        self.offsets_asking = False
        if self.phase is not Phase.RESUME:
            return
        codes = [body.error_code] if isinstance(body, OffsetFetchResponse) else []
        offsets: dict[tuple[str, int], int] = {}
        if isinstance(body, OffsetFetchResponse):
            for topic in body.topics:
                for p in topic.partitions:
                    codes.append(p.error_code)
                    offsets[topic.name, p.partition_index] = p.committed_offset
        code = next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE if codes else None)
        if code != ErrorCode.NONE:  # lost, moved, loading, UNSTABLE_OFFSET_COMMIT: ask again
            if code is None or code in COORDINATOR_MOVED:
                self.group_coordinator = None
            self.offsets_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self.consumed.clear()
        for key in self.assignment():
            offset = max(offsets.get(key, 0), 0)
            self.read_from(key, offset)
            self.retry_at_ms.pop(key, None)
            self.record(self._op(OpType.INFO, key, now_ms, offset=offset, error="RESUMED"))
        self._shift("resumed")

    def _find(self, *, group: bool) -> None:
        """Find the group's coordinator, or the transaction's (AddOffsetsToTxn goes to it)."""
        self.offsets_asking = True

        def answered(body: Message | None, now_ms: int) -> None:
            self.offsets_asking = False
            if not isinstance(body, FindCoordinatorResponse) or body.error_code != ErrorCode.NONE:
                self.offsets_at_ms = now_ms + RETRY_BACKOFF_MS
            elif group:
                self.group_coordinator = (body.host, body.port)
            else:
                self.coordinator = (body.host, body.port)

        key = self.group_id if group else self.transactional_id
        request = FindCoordinatorRequest(key=key, key_type=0 if group else 1)
        self.request(self.any_address(), request, answered)

    # -- the transaction's offsets ---------------------------------------------------------------

    def _produced(self, txn: Txn, now_ms: int) -> None:
        """The transaction's records are written: send its offsets first, then end it."""
        if txn.fenced or txn.failed or self.phase is Phase.OFFSETS_SENT:
            super()._produced(txn, now_ms)
            return
        if self.phase is Phase.RUNNING:
            self._shift("offsets-v2" if self.version == 2 else "offsets-v1")
        if self.offsets_asking:
            return
        if now_ms - txn.started_ms >= DELIVERY_TIMEOUT_MS:
            self._offsets_failed(txn, now_ms, fenced=False)
            return
        if now_ms < self.offsets_at_ms:
            self.wake_at(self.offsets_at_ms)
            return
        message: Message
        if self.phase is Phase.ADDING_OFFSETS:
            address = self.coordinator
            if address is None:  # the transaction coordinator moved meanwhile
                self._find(group=False)
                return
            message = AddOffsetsToTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                group_id=self.group_id,
            )
        else:
            address = self.group_coordinator
            if address is None:
                self._find(group=True)
                return
            partitions = [
                TxnOffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)
                for (_, partition), offset in sorted(self.positions.items())
            ]
            message = TxnOffsetCommitRequest(
                transactional_id=self.transactional_id,
                group_id=self.group_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                topics=[TxnOffsetCommitRequestTopic(name=self.source, partitions=partitions)],
            )

        def answered(body: Message | None, at_ms: int) -> None:
            self.offsets_asking = False
            if self.txn is txn and self.phase in (Phase.ADDING_OFFSETS, Phase.COMMITTING_OFFSETS):
                self._on_offsets(txn, body, at_ms)

        self.offsets_asking = True
        self.request(address, message, answered)

    def _on_offsets(self, txn: Txn, body: Message | None, now_ms: int) -> None:
        code: int | None = None
        if isinstance(body, AddOffsetsToTxnResponse):
            code = body.error_code
        elif isinstance(body, TxnOffsetCommitResponse):
            codes = [p.error_code for t in body.topics for p in t.partitions]
            code = next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE)
        if code is None or code in COORDINATOR_MOVED:
            if self.phase is Phase.ADDING_OFFSETS:
                self.coordinator = None
            else:
                self.group_coordinator = None
            self.offsets_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        if code in _RETRY_OFFSETS:
            self.offsets_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        if code != ErrorCode.NONE:
            self._offsets_failed(txn, now_ms, fenced=code in FENCED)
            return
        if self.phase is Phase.ADDING_OFFSETS:
            self._shift("added")
            return
        for (topic, partition), offset in sorted(self.positions.items()):
            self.record(
                Op(
                    now_ms,
                    self.name,
                    OpType.OK,
                    OpKind.OFFSETS,
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    group=self.group_id,
                    txn=txn.name,
                )
            )
        self._shift("committed")
        self._produced(txn, now_ms)

    def _offsets_failed(self, txn: Txn, now_ms: int, *, fenced: bool) -> None:
        """The offsets did not make it into the transaction: it aborts (or, fenced, is abandoned)."""
        txn.failed = True
        txn.fenced = txn.fenced or fenced
        self._shift("failed")
        super()._produced(txn, now_ms)

    # -- history ---------------------------------------------------------------------------------

    def _txn_op(self, kind: OpType, txn: Txn, now_ms: int, value: str, *, error: str = "") -> None:
        super()._txn_op(kind, txn, now_ms, value, error=error)
        if kind is OpType.INVOKE:
            return
        self._shift("txn-committed" if kind is OpType.OK and value == "commit" else "txn-lost")
