"""A simulated producer: records with values unique per run (``"<name>-<n>"``) at a rate, each to
a partition drawn at random, sent as small batches (one batch per partition in flight) to the
partition's leader with acks 0, 1 or -1, idempotent or not.

History, per record: ``invoke`` when first sent; ``ok`` with the acknowledged offset; ``fail``
only when no attempt can have written it (every answer was an error that comes before the
append); ``info`` otherwise (acks=0, a lost connection or timeout then giving up, an error after
the append). A retry keeps the batch, so an idempotent retry keeps its sequence numbers and the
broker answers a duplicate with the first offset: one ``invoke``, one completion per record.

Idempotence as Kafka's client does it: InitProducerId first; per-partition sequences;
``OUT_OF_ORDER_SEQUENCE_NUMBER``, ``UNKNOWN_PRODUCER_ID`` and ``INVALID_PRODUCER_EPOCH`` (and a
batch given up with its outcome unknown) reset the producer id: once nothing is in flight, a new
InitProducerId, and sequences restart at 0. A waiting batch that an earlier attempt may have
written is completed as ``info`` then, never re-sent under the new id (that could write it twice).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ErrorCode,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.records import build_batch
from kafka_wire.records.record import NewRecord
from kafka_wire.sim.clients.base import RETRY_BACKOFF_MS, Address, ClientBase
from kafka_wire.sim.history import Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

#: Kafka's ``delivery.timeout.ms`` is 2 minutes; a simulated producer gives up sooner.
DELIVERY_TIMEOUT_MS: Final = 30_000
#: Records per batch at most.
MAX_BATCH_RECORDS: Final = 4
#: How long the leader may wait for the ISR (the Produce request's ``timeout_ms``).
PRODUCE_TIMEOUT_MS: Final = 5_000

#: Answers that come before the append: this attempt wrote nothing, and a retry may succeed.
RETRY_NOT_WRITTEN: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
#: Answers after which the records may be in the log: retried, the outcome unknown until then.
RETRY_MAYBE_WRITTEN: Final = frozenset(
    {
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    }
)
#: The broker lost or refused this producer's sequence state: start over with a new producer id.
_RESET_PRODUCER: Final = frozenset(
    {
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_PRODUCER_EPOCH,
    }
)


def error_name(code: int) -> str:
    member = ErrorCode.lookup(code)
    return member.name if isinstance(member, ErrorCode) else f"ERROR_{code}"


@dataclass(slots=True)
class _Batch:
    topic: str
    partition: int
    values: list[str]
    first_sent_ms: int
    base_sequence: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    #: Whether an earlier attempt may have written it (its answer was lost or came after the append).
    maybe_written: bool = False
    in_flight: bool = False
    retry_at_ms: int = 0
    last_error: str = ""


class Producer(ClientBase):
    """One producer; see the module docstring."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        topics: list[str],
        *,
        acks: int = -1,
        idempotent: bool = False,
        interval_ms: int = 100,
        acks0_share: float = 0.0,
    ) -> None:
        if idempotent and acks != -1:
            raise ValueError("an idempotent producer uses acks=-1")
        super().__init__(name, history, rng, bootstrap, topics)
        self.acks = acks
        self.idempotent = idempotent
        self.interval_ms = interval_ms
        #: The share of batches sent with acks=0 instead (a non-idempotent producer only).
        self.acks0_share = acks0_share
        self.sent = 0
        self.next_record_ms: int | None = None
        self.queued: dict[tuple[str, int], list[str]] = {}
        self.batches: dict[tuple[str, int], _Batch] = {}
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.reset_needed = False
        self.pid_in_flight = False
        self.pid_retry_at_ms = 0

    def idle(self) -> bool:
        return not self.batches and (not self.queued or self.quiescing)

    def quiesce(self, now_ms: int) -> None:
        self.queued.clear()  # never invoked: they simply are not produced
        super().quiesce(now_ms)

    # -- the state machine -----------------------------------------------------------------------

    def pump(self, now_ms: int) -> None:
        super().pump(now_ms)
        if not self.quiescing:
            self._generate(now_ms)
        if self.idempotent and not self._producer_ready(now_ms):
            return
        for key in list(self.queued) + [k for k in self.batches if k not in self.queued]:
            self._send_partition(key, now_ms)

    def _generate(self, now_ms: int) -> None:
        if self.next_record_ms is None:
            self.next_record_ms = now_ms + self.rng.randint(0, self.interval_ms)
        keys = [(t, p) for t in self.topics for p in range(self.partition_counts.get(t, 0))]
        while self.next_record_ms <= now_ms:
            self.next_record_ms += self.rng.randint(self.interval_ms // 2, self.interval_ms * 3 // 2) or 1
            if not keys:
                continue  # no metadata yet: this record is skipped, not queued
            self.sent += 1
            self.queued.setdefault(keys[self.rng.randrange(len(keys))], []).append(f"{self.name}-{self.sent}")
        self.wake_at(self.next_record_ms)

    def _producer_ready(self, now_ms: int) -> bool:
        if self.reset_needed and not any(b.in_flight for b in self.batches.values()):
            self.reset_needed = False
            self.producer_id = -1
            self.sequences.clear()
            for key, batch in list(self.batches.items()):
                if batch.maybe_written:
                    self._complete(
                        key, batch, OpType.INFO, now_ms, error=batch.last_error or "PRODUCER_RESET"
                    )
                else:
                    batch.base_sequence = -1
        if self.producer_id >= 0 and not self.reset_needed:
            return True
        if self.producer_id < 0 and not self.pid_in_flight:
            if now_ms < self.pid_retry_at_ms:
                self.wake_at(self.pid_retry_at_ms)
            else:
                self.pid_in_flight = True
                request = InitProducerIdRequest(
                    transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
                )
                self.request(self.any_address(), request, self._on_producer_id)
        return False

    def _on_producer_id(self, body: Message | None, now_ms: int) -> None:
        self.pid_in_flight = False
        if isinstance(body, InitProducerIdResponse) and body.error_code == ErrorCode.NONE:
            self.producer_id, self.producer_epoch = body.producer_id, body.producer_epoch
        else:
            self.pid_retry_at_ms = now_ms + RETRY_BACKOFF_MS

    def _send_partition(self, key: tuple[str, int], now_ms: int) -> None:
        batch = self.batches.get(key)
        if batch is None:
            values = self.queued.get(key)
            if not values:
                return
            if self.leader_address(*key) is None:
                self.want_metadata()
                return
            batch = _Batch(key[0], key[1], values[:MAX_BATCH_RECORDS], now_ms)
            del values[:MAX_BATCH_RECORDS]
            if not values:
                del self.queued[key]
            self.batches[key] = batch
            acks = 0 if self.acks0_share and self.rng.random() < self.acks0_share else self.acks
            for value in batch.values:
                self.record(self._op(OpType.INVOKE, batch, now_ms, value=value, acks=acks))
            if acks == 0:
                self._send(key, batch, 0, now_ms)
                self._complete(key, batch, OpType.INFO, now_ms, acks=0)
                return
        if batch.in_flight:
            return
        if now_ms < batch.retry_at_ms:
            self.wake_at(batch.retry_at_ms)
            return
        if now_ms - batch.first_sent_ms >= DELIVERY_TIMEOUT_MS:
            self._give_up(key, batch, now_ms)
            return
        self._send(key, batch, self.acks, now_ms)

    def _send(self, key: tuple[str, int], batch: _Batch, acks: int, now_ms: int) -> None:
        address = self.leader_address(*key)
        if address is None:
            self.want_metadata()
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
            self.wake_at(batch.retry_at_ms)
            return
        if self.idempotent and batch.base_sequence < 0:
            batch.producer_id, batch.producer_epoch = self.producer_id, self.producer_epoch
            batch.base_sequence = self.sequences.get(key, 0)
            self.sequences[key] = batch.base_sequence + len(batch.values)
        records = build_batch(
            [NewRecord(None, v.encode(), timestamp=now_ms) for v in batch.values],
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
        )
        request = ProduceRequest(
            acks=acks,
            timeout_ms=PRODUCE_TIMEOUT_MS,
            topic_data=[
                ProduceRequestTopicProduceData(
                    name=key[0],
                    partition_data=[ProduceRequestPartitionProduceData(index=key[1], records=records)],
                )
            ],
        )
        if acks == 0:
            self.request(address, request, None)
            return
        batch.in_flight = True

        def answered(body: Message | None, at_ms: int) -> None:
            self._on_produced(key, batch, body, at_ms)

        self.request(address, request, answered)

    def _on_produced(self, key: tuple[str, int], batch: _Batch, body: Message | None, now_ms: int) -> None:
        batch.in_flight = False
        if self.batches.get(key) is not batch:
            return
        if not isinstance(body, ProduceResponse):
            batch.maybe_written = True
            batch.last_error = "CONNECTION_LOST"
            self.want_metadata()
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        result = body.responses[0].partition_responses[0]
        code = result.error_code
        if code == ErrorCode.NONE:
            self._complete(key, batch, OpType.OK, now_ms, base_offset=result.base_offset)
            return
        batch.last_error = error_name(code)
        if code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:  # written before; its offset is not known
            self._complete(key, batch, OpType.INFO, now_ms)
        elif code in RETRY_NOT_WRITTEN or code in RETRY_MAYBE_WRITTEN:
            batch.maybe_written = batch.maybe_written or code in RETRY_MAYBE_WRITTEN
            self.want_metadata()
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
        elif self.idempotent and code in _RESET_PRODUCER:
            self.reset_needed = True
            batch.retry_at_ms = now_ms + RETRY_BACKOFF_MS
        else:
            self._complete(key, batch, OpType.INFO if batch.maybe_written else OpType.FAIL, now_ms)

    def _give_up(self, key: tuple[str, int], batch: _Batch, now_ms: int) -> None:
        kind = OpType.INFO if batch.maybe_written else OpType.FAIL
        self._complete(key, batch, kind, now_ms, error=f"DELIVERY_TIMEOUT:{batch.last_error}")
        if self.idempotent and batch.maybe_written:
            self.reset_needed = True  # the partition's sequence state is unresolved

    def _complete(
        self,
        key: tuple[str, int],
        batch: _Batch,
        kind: OpType,
        now_ms: int,
        *,
        base_offset: int = -1,
        acks: int | None = None,
        error: str | None = None,
    ) -> None:
        del self.batches[key]
        for i, value in enumerate(batch.values):
            offset = base_offset + i if base_offset >= 0 else -1
            self.record(
                self._op(
                    kind,
                    batch,
                    now_ms,
                    value=value,
                    offset=offset,
                    acks=self.acks if acks is None else acks,
                    error="" if kind is OpType.OK else (error if error is not None else batch.last_error),
                )
            )

    def _op(
        self,
        kind: OpType,
        batch: _Batch,
        now_ms: int,
        *,
        value: str,
        acks: int,
        offset: int = -1,
        error: str = "",
    ) -> Op:
        return Op(
            now_ms,
            self.name,
            kind,
            OpKind.SEND,
            topic=batch.topic,
            partition=batch.partition,
            value=value,
            offset=offset,
            acks=acks,
            idempotent=self.idempotent,
            error=error,
        )
