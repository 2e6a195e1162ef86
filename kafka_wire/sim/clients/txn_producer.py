"""A simulated transactional producer, as Kafka 4 clients do it (transaction version 2) or as
older ones do (version 1).

One transaction at a time, each of 1 to :data:`MAX_TXN_RECORDS` records (values unique per run,
``"<name>-<n>"``) over partitions drawn at random, one batch per partition; the transaction is
committed or aborted as the seeded generator decides when it begins (an error on the way aborts
it). Steps, in :data:`TRANSITIONS`:

- ``INIT``: FindCoordinator (key type 1) when the coordinator is not known, then InitProducerId
  with the transactional id (a new instance: no producer id and epoch);
- ``READY``: between transactions, waiting for the next one's time;
- ``ADDING`` (version 1 only): AddPartitionsToTxn v3 with every partition of the transaction;
- ``PRODUCING``: transactional Produce (v12 under version 2, which adds the partitions
  implicitly; v9 under version 1), retried on retriable errors with the same sequence numbers;
- ``STALLED``: a producer that stalls past ``transaction.timeout.ms`` before its EndTxn (the
  coordinator aborts the transaction and bumps the epoch: the EndTxn is then fenced);
- ``ENDING``: EndTxn, retried with the same epoch after a lost answer, a coordinator move or
  CONCURRENT_TRANSACTIONS; under version 2 the answer's bumped epoch is the producer's next.

Fencing (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE...) ends the transaction as
not committed and the producer initializes again. A producer process restarts now and then in
the middle of a transaction (``restart_share``): the new instance initializes again (which fences
and aborts the open transaction) while the old one, a zombie, still sends the transaction's
remaining batches with its old epoch once the new instance is ready.

History: a ``send`` invoke per record (with ``txn``) when its transaction begins; ``ok`` with
the offset when its Produce is acknowledged, ``fail`` when no attempt can have written it, ``info``
otherwise. One ``txn`` op pair per transaction: invoke when its EndTxn is first sent, completed
``ok`` with the outcome, ``fail`` when it cannot have committed, ``info`` when unknown; a
transaction abandoned before any EndTxn gets a ``txn`` fail alone.

The consume-transform-produce worker (``ctp_worker.py``) is a transactional producer that also
fetches: it builds its transactions from what it consumed (``_maybe_begin`` with
``_next_txn``, ``_add_record``, ``_begin``), sends its offsets before the end (``_produced``) and
resumes from its group's offsets after each transaction not committed (``_txn_op``).
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    EndTxnRequest,
    EndTxnResponse,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceResponse,
)
from kafka_wire.sim.clients.base import RETRY_BACKOFF_MS, Address, ClientBase
from kafka_wire.sim.clients.producer import (
    DELIVERY_TIMEOUT_MS,
    RETRY_MAYBE_WRITTEN,
    RETRY_NOT_WRITTEN,
    error_name,
)
from kafka_wire.sim.clients.txn_requests import TxnBatch, add_partitions_request, answer_code, produce_request
from kafka_wire.sim.history import Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

#: Records per transaction at most.
MAX_TXN_RECORDS: Final = 6
#: The producer's ``transaction.timeout.ms`` (Kafka's default is 60 s).
TXN_TIMEOUT_MS: Final = 3_000
#: A stalled producer waits this long before its EndTxn: past the timeout and the coordinator's
#: next check for timed-out transactions (the simulated nodes check every second).
STALL_MS: Final = TXN_TIMEOUT_MS + 2_500
#: Answers meaning the coordinator moved or is not ready yet: find it again, then retry.
COORDINATOR_MOVED: Final = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
#: Produce answers after which the batch may be in the log: those of the plain producer, and
#: NOT_LEADER_OR_FOLLOWER, which a leader also answers for a batch it appended and then stopped
#: leading before the ISR had it (seed 32: appended, answered so, then fenced on the retry).
_MAYBE_WRITTEN: Final = RETRY_MAYBE_WRITTEN | {ErrorCode.NOT_LEADER_OR_FOLLOWER}
#: Answers meaning "retry the same request later".
RETRY: Final = frozenset({ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
#: This producer instance's epoch is gone: a newer one (or the coordinator's timeout) fenced it.
FENCED: Final = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    }
)


class Step(enum.Enum):
    INIT = "init"
    READY = "ready"
    ADDING = "adding"
    PRODUCING = "producing"
    STALLED = "stalled"
    ENDING = "ending"


#: (step, what happened) -> the next step: the producer's whole state machine.
TRANSITIONS: Final[dict[tuple[Step, str], Step]] = {
    (Step.INIT, "initialized"): Step.READY,
    (Step.READY, "begin-v1"): Step.ADDING,
    (Step.READY, "begin-v2"): Step.PRODUCING,
    (Step.ADDING, "added"): Step.PRODUCING,
    (Step.ADDING, "fenced"): Step.INIT,
    (Step.ADDING, "failed"): Step.ENDING,
    (Step.PRODUCING, "produced"): Step.ENDING,
    (Step.PRODUCING, "stall"): Step.STALLED,
    (Step.PRODUCING, "fenced"): Step.INIT,
    (Step.PRODUCING, "restart"): Step.INIT,
    (Step.STALLED, "woke"): Step.ENDING,
    (Step.ENDING, "ended"): Step.READY,
    (Step.ENDING, "fenced"): Step.INIT,
}


@dataclass(slots=True)
class Txn:
    name: str
    commit: bool
    stall: bool
    restart: bool
    started_ms: int
    batches: dict[tuple[str, int], TxnBatch] = field(default_factory=dict)
    #: Batches acknowledged.
    acked: int = 0
    failed: bool = False
    fenced: bool = False
    #: EndTxn sent at least once; and whether an attempt's outcome is unknown.
    end_sent: bool = False
    end_unknown: bool = False
    wake_ms: int = 0


class TxnProducer(ClientBase):
    """One transactional producer; see the module docstring."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        topics: list[str],
        *,
        version: int = 2,
        interval_ms: int = 100,
        commit_share: float = 0.75,
        stall_share: float = 0.04,
        restart_share: float = 0.15,
    ) -> None:
        if version not in (1, 2):
            raise ValueError("transaction version 1 or 2")
        super().__init__(name, history, rng, bootstrap, topics)
        self.transactional_id = f"tx-{name}"
        self.version = version
        self.interval_ms = interval_ms
        self.commit_share = commit_share
        self.stall_share = stall_share
        self.restart_share = restart_share
        self.version_caps.update(
            {ApiKey.PRODUCE: 12, ApiKey.END_TXN: 5, ApiKey.INIT_PRODUCER_ID: 5}
            if version == 2
            else {
                ApiKey.PRODUCE: 9,
                ApiKey.END_TXN: 4,
                ApiKey.INIT_PRODUCER_ID: 4,
                ApiKey.ADD_PARTITIONS_TO_TXN: 3,
            }
        )
        self.step = Step.INIT
        self.coordinator: Address | None = None
        self.finding = False
        #: A coordinator request (InitProducerId, AddPartitionsToTxn, EndTxn) in flight.
        self.asking = False
        #: When the next coordinator request may go (a retry's backoff).
        self.ask_at_ms = 0
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.txn: Txn | None = None
        self.count = 0
        self.sent = 0
        self.next_txn_ms: int | None = None
        #: Batches a restarted instance's zombie still sends once the new instance is ready.
        self.zombie: list[tuple[tuple[str, int], TxnBatch]] = []

    def idle(self) -> bool:
        return self.quiescing and self.txn is None and not self.asking and not self.zombie

    def _move(self, event: str) -> None:
        self.step = TRANSITIONS[self.step, event]

    # -- the pump --------------------------------------------------------------------------------

    def pump(self, now_ms: int) -> None:
        super().pump(now_ms)
        step = self.step
        if step is Step.PRODUCING:
            self._produce(now_ms)
        elif step is Step.STALLED:
            txn = self.txn
            assert txn is not None
            if now_ms >= txn.wake_ms:
                self._move("woke")
                self._ask(now_ms)
            else:
                self.wake_at(txn.wake_ms)
        elif step is Step.READY:
            if self.zombie:
                self._send_zombie()
            self._maybe_begin(now_ms)
        else:
            self._ask(now_ms)

    def _ask(self, now_ms: int) -> None:
        """Send the coordinator request of this step, once the coordinator is known."""
        if self.asking or self.finding:
            return
        if now_ms < self.ask_at_ms:
            self.wake_at(self.ask_at_ms)
            return
        if self.coordinator is None:
            self.finding = True
            self.request(
                self.any_address(),
                FindCoordinatorRequest(key=self.transactional_id, key_type=1),
                self._on_coordinator,
            )
            return
        step, txn = self.step, self.txn
        message: Message
        if step is Step.INIT:
            message = InitProducerIdRequest(
                transactional_id=self.transactional_id,
                transaction_timeout_ms=TXN_TIMEOUT_MS,
                producer_id=-1,
                producer_epoch=-1,
            )
        elif step is Step.ADDING:
            assert txn is not None
            message = add_partitions_request(
                self.transactional_id, self.producer_id, self.producer_epoch, list(txn.batches)
            )
        else:
            assert step is Step.ENDING and txn is not None
            if not txn.end_sent:
                txn.end_sent = True
                self._txn_op(OpType.INVOKE, txn, now_ms, "commit" if txn.commit else "abort")
            message = EndTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                committed=txn.commit,
            )
        self.asking = True
        self.request(self.coordinator, message, self._on_answer)

    def _on_coordinator(self, body: Message | None, now_ms: int) -> None:
        self.finding = False
        if isinstance(body, FindCoordinatorResponse) and body.error_code == ErrorCode.NONE:
            self.coordinator = (body.host, body.port)
        else:
            self.ask_at_ms = now_ms + RETRY_BACKOFF_MS

    def _on_answer(self, body: Message | None, now_ms: int) -> None:
        self.asking = False
        code = answer_code(body)
        if code is None or code in COORDINATOR_MOVED:
            self.coordinator = None
            if self.step is Step.ENDING and self.txn is not None:
                # Lost, or refused by a coordinator that may have written the end before
                # losing its partition (the next one completes it): the outcome is unknown.
                self.txn.end_unknown = True
            self.ask_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        if code in RETRY:
            self.ask_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        if self.step is Step.INIT:
            self._on_initialized(body, code, now_ms)
        elif self.step is Step.ADDING:
            self._on_added(code, now_ms)
        elif self.step is Step.ENDING:
            self._on_ended(body, code, now_ms)

    def _on_initialized(self, body: Message | None, code: int, now_ms: int) -> None:
        if code != ErrorCode.NONE or not isinstance(body, InitProducerIdResponse):
            self.ask_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self.producer_id, self.producer_epoch = body.producer_id, body.producer_epoch
        self.sequences.clear()
        self._move("initialized")

    def _on_added(self, code: int, now_ms: int) -> None:
        txn = self.txn
        assert txn is not None
        if code == ErrorCode.NONE:
            self._move("added")
        elif code in FENCED:
            self._abandon(txn, now_ms, error_name(code), "fenced")
        else:  # the partitions were not added: nothing was written, abort
            txn.commit = False
            for key in list(txn.batches):
                self._complete(txn, key, OpType.FAIL, now_ms, error=error_name(code))
            self._move("failed")

    def _on_ended(self, body: Message | None, code: int, now_ms: int) -> None:
        txn = self.txn
        assert txn is not None
        if code == ErrorCode.NONE:
            if self.version == 2 and isinstance(body, EndTxnResponse) and body.producer_epoch >= 0:
                self.producer_id, self.producer_epoch = body.producer_id, body.producer_epoch
                self.sequences.clear()
            self._txn_op(OpType.OK, txn, now_ms, "commit" if txn.commit else "abort")
            self.txn = None
            self._move("ended")
            return
        if code == ErrorCode.TRANSACTION_ABORTABLE and txn.commit:
            txn.commit = False
            return  # abort it instead (the invoke said commit: an abort answered ok says abort)
        # Fenced (a timeout's abort, a newer instance): not committed, unless an earlier
        # attempt's outcome is unknown (it may have committed before the fence).
        definite = code in FENCED and not (txn.end_unknown and txn.commit)
        kind = OpType.FAIL if definite or not txn.commit else OpType.INFO
        self._txn_op(kind, txn, now_ms, "", error=error_name(code))
        self.txn = None
        self._move("fenced")

    # -- transactions ----------------------------------------------------------------------------

    def _maybe_begin(self, now_ms: int) -> None:
        if self.quiescing:
            return
        if self.next_txn_ms is None:
            self.next_txn_ms = now_ms + self.rng.randint(0, self.interval_ms)
        if now_ms < self.next_txn_ms:
            self.wake_at(self.next_txn_ms)
            return
        keys = [(t, p) for t in self.topics for p in range(self.partition_counts.get(t, 0))]
        if not keys:
            self.want_metadata()
            self.wake_at(now_ms + RETRY_BACKOFF_MS)
            return
        rng = self.rng
        txn = self._next_txn(now_ms)
        for _ in range(rng.randint(1, MAX_TXN_RECORDS)):
            self._add_record(txn, keys[rng.randrange(len(keys))], f"{self.name}-{self.sent + 1}", now_ms)
        self._begin(txn, now_ms)

    def _next_txn(self, now_ms: int) -> Txn:
        """The next transaction, its fate drawn (and the time of the one after)."""
        self.next_txn_ms = now_ms + self.rng.randint(self.interval_ms // 2, self.interval_ms * 3 // 2)
        self.count += 1
        rng = self.rng
        return Txn(
            f"{self.name}.{self.count}",
            commit=rng.random() < self.commit_share,
            stall=rng.random() < self.stall_share,
            restart=rng.random() < self.restart_share,
            started_ms=now_ms,
        )

    def _add_record(self, txn: Txn, key: tuple[str, int], value: str, now_ms: int) -> None:
        self.sent += 1
        txn.batches.setdefault(key, TxnBatch(txn.name, [])).values.append(value)
        self.record(self._send_op(OpType.INVOKE, txn.name, key, now_ms, value))

    def _begin(self, txn: Txn, now_ms: int) -> None:
        self.txn = txn
        self._move("begin-v2" if self.version == 2 else "begin-v1")
        self.pump(now_ms)

    def _produce(self, now_ms: int) -> None:
        txn = self.txn
        assert txn is not None
        if not txn.batches:
            self._produced(txn, now_ms)
            return
        for key, batch in list(txn.batches.items()):
            if batch.in_flight:
                continue
            if txn.failed:  # the transaction aborts: what waits is not sent again
                kind = OpType.INFO if batch.maybe_written else OpType.FAIL
                self._complete(txn, key, kind, now_ms, error=batch.last_error or "TRANSACTION_ABORTED")
                continue
            if txn.restart and batch.sequence < 0 and any(b.sequence >= 0 for b in txn.batches.values()):
                continue  # a restarting producer sends one batch first, then restarts
            if txn.restart and batch.sequence < 0 and txn.acked:
                self._restart(txn, now_ms)
                return
            if now_ms < batch.retry_at_ms:
                self.wake_at(batch.retry_at_ms)
                continue
            if now_ms - txn.started_ms >= DELIVERY_TIMEOUT_MS:
                kind = OpType.INFO if batch.maybe_written else OpType.FAIL
                self._complete(txn, key, kind, now_ms, error=f"DELIVERY_TIMEOUT:{batch.last_error}")
                txn.failed = True
                continue
            self._send_batch(key, batch, now_ms, zombie=False)
        if not txn.batches:
            self._produced(txn, now_ms)

    def _produced(self, txn: Txn, now_ms: int) -> None:
        if txn.fenced:
            self._abandon(txn, now_ms, "FENCED", "fenced")
            return
        if txn.failed:
            txn.commit = False
        if txn.stall:
            txn.wake_ms = now_ms + STALL_MS
            self._move("stall")
        else:
            self._move("produced")
        self.pump(now_ms)

    def _abandon(self, txn: Txn, now_ms: int, error: str, event: str) -> None:
        """The transaction ends without an EndTxn: fenced, or its producer restarted. It cannot
        commit (no commit was asked for); its unsent batches are left to the zombie or dropped."""
        for key in list(txn.batches):  # never sent (fenced while adding its partitions)
            self._complete(txn, key, OpType.FAIL, now_ms, error=error)
        self._txn_op(OpType.FAIL, txn, now_ms, "", error=error)
        self.txn = None
        self._move(event)

    def _restart(self, txn: Txn, now_ms: int) -> None:
        """The process restarts mid-transaction: the new instance initializes again, and the old
        one's unsent batches are the zombie's, sent with the old epoch once the new is ready."""
        for key, batch in txn.batches.items():
            batch.producer_id, batch.producer_epoch = self.producer_id, self.producer_epoch
            batch.sequence = self.sequences.get(key, 0)
            self.zombie.append((key, batch))
        txn.batches = {}
        self._abandon(txn, now_ms, "RESTARTED", "restart")
        self.coordinator = None
        self.pump(now_ms)

    def _send_zombie(self) -> None:
        zombie, self.zombie = self.zombie, []
        for key, batch in zombie:
            self._send_batch(key, batch, self.now_ms, zombie=True)

    def _send_batch(self, key: tuple[str, int], batch: TxnBatch, now_ms: int, *, zombie: bool) -> None:
        address = self.leader_address(*key)
        if address is None:
            if zombie:
                self._finish_zombie(key, batch, OpType.FAIL, now_ms, "NO_LEADER")
                return
            self.want_metadata()
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
            self.wake_at(batch.retry_at_ms)
            return
        if batch.sequence < 0:
            batch.producer_id, batch.producer_epoch = self.producer_id, self.producer_epoch
            batch.sequence = self.sequences.get(key, 0)
            self.sequences[key] = batch.sequence + len(batch.values)
        request = produce_request(self.transactional_id, key, batch, now_ms)
        batch.in_flight = True
        txn = self.txn

        def answered(body: Message | None, at_ms: int) -> None:
            batch.in_flight = False
            if zombie:
                self._on_zombie(key, batch, body, at_ms)
            elif txn is not None and self.txn is txn and txn.batches.get(key) is batch:
                self._on_produced(txn, key, batch, body, at_ms)

        self.request(address, request, answered)

    def _on_produced(
        self, txn: Txn, key: tuple[str, int], batch: TxnBatch, body: Message | None, now_ms: int
    ) -> None:
        if not isinstance(body, ProduceResponse):
            batch.maybe_written, batch.last_error = True, "CONNECTION_LOST"
            self.want_metadata()
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        result = body.responses[0].partition_responses[0]
        code = result.error_code
        if code == ErrorCode.NONE:
            self._complete(txn, key, OpType.OK, now_ms, base_offset=result.base_offset)
            return
        batch.last_error = error_name(code)
        if (
            code in RETRY_NOT_WRITTEN
            or code in RETRY_MAYBE_WRITTEN
            or code == ErrorCode.CONCURRENT_TRANSACTIONS
        ):
            batch.maybe_written = batch.maybe_written or code in _MAYBE_WRITTEN
            self.want_metadata()
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        kind = (
            OpType.INFO if batch.maybe_written or code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER else OpType.FAIL
        )
        self._complete(txn, key, kind, now_ms)
        txn.failed = True
        txn.fenced = txn.fenced or code in FENCED

    def _on_zombie(self, key: tuple[str, int], batch: TxnBatch, body: Message | None, now_ms: int) -> None:
        if not isinstance(body, ProduceResponse):
            self._finish_zombie(key, batch, OpType.INFO, now_ms, "CONNECTION_LOST")
            return
        result = body.responses[0].partition_responses[0]
        if result.error_code == ErrorCode.NONE:
            self._finish_zombie(key, batch, OpType.OK, now_ms, "", base_offset=result.base_offset)
        else:
            kind = OpType.INFO if result.error_code in _MAYBE_WRITTEN else OpType.FAIL
            self._finish_zombie(key, batch, kind, now_ms, error_name(result.error_code))

    def _finish_zombie(
        self,
        key: tuple[str, int],
        batch: TxnBatch,
        kind: OpType,
        now_ms: int,
        error: str,
        *,
        base_offset: int = -1,
    ) -> None:
        for i, value in enumerate(batch.values):
            offset = base_offset + i if base_offset >= 0 else -1
            self.record(self._send_op(kind, batch.txn, key, now_ms, value, offset=offset, error=error))

    def _complete(
        self,
        txn: Txn,
        key: tuple[str, int],
        kind: OpType,
        now_ms: int,
        *,
        base_offset: int = -1,
        error: str | None = None,
    ) -> None:
        batch = txn.batches.pop(key)
        txn.acked += kind is OpType.OK
        for i, value in enumerate(batch.values):
            offset = base_offset + i if base_offset >= 0 else -1
            err = "" if kind is OpType.OK else (error if error is not None else batch.last_error)
            self.record(self._send_op(kind, txn.name, key, now_ms, value, offset=offset, error=err))

    # -- history ---------------------------------------------------------------------------------

    def _send_op(
        self,
        kind: OpType,
        txn: str,
        key: tuple[str, int],
        now_ms: int,
        value: str,
        *,
        offset: int = -1,
        error: str = "",
    ) -> Op:
        return Op(
            now_ms,
            self.name,
            kind,
            OpKind.SEND,
            topic=key[0],
            partition=key[1],
            value=value,
            offset=offset,
            acks=-1,
            idempotent=True,
            error=error,
            txn=txn,
        )

    def _txn_op(self, kind: OpType, txn: Txn, now_ms: int, value: str, *, error: str = "") -> None:
        self.record(Op(now_ms, self.name, kind, OpKind.TXN, value=value, error=error, txn=txn.name))
