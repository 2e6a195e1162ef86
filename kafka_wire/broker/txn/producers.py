"""Idempotent producer state of one partition: Kafka's de-duplication by producer id, epoch and
sequence.

For each producer id the state keeps its epoch and the last five batches appended (first and last
sequence, first and last offset), as Kafka does (``NUM_BATCHES_TO_RETAIN``). ``check`` decides what
an incoming batch is: new (append it), a duplicate of a retained batch (answer with the original
offsets, append nothing), or an error code (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER).
State is rebuilt at start-up from the batch headers in the log (``observe``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.records import RecordBatch

#: Kafka keeps the metadata of the last five batches per producer (ProducerStateEntry).
BATCHES_RETAINED: Final = 5
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
_MAX_SEQUENCE: Final = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_RETAINED))

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a batch: append (``duplicate`` None, ``error_code`` 0), answer with a
    retained batch's offsets (``duplicate``), or refuse (``error_code``)."""

    error_code: int = ErrorCode.NONE
    duplicate: BatchMetadata | None = None
    message: str | None = None


APPEND: Final = Verdict()


def in_sequence(last: int, first: int) -> bool:
    """``first`` follows ``last`` (sequences wrap from 2^31-1 to 0)."""
    return first == last + 1 or (first == 0 and last == _MAX_SEQUENCE)


class ProducerStates:
    """The idempotent producer state of one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    def entries(self) -> list[tuple[int, ProducerEntry]]:
        """Every producer the partition knows, by producer id (DescribeProducers)."""
        return sorted(self._entries.items())

    def check(self, producer_id: int, epoch: int, first_sequence: int, last_sequence: int) -> Verdict:
        if producer_id == NO_PRODUCER_ID:
            return APPEND
        entry = self._entries.get(producer_id)
        if entry is None or entry.epoch == NO_PRODUCER_EPOCH:
            # Unknown producer (new, or its batches were all deleted): any sequence is accepted.
            return APPEND
        if epoch < entry.epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"producer {producer_id} epoch {epoch} is older than the current epoch {entry.epoch}",
            )
        if epoch > entry.epoch:
            if first_sequence != 0:
                return Verdict(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    message=f"a new epoch {epoch} of producer {producer_id} must start at sequence 0, not {first_sequence}",
                )
            return APPEND
        for batch in entry.batches:
            if (batch.first_sequence, batch.last_sequence) == (first_sequence, last_sequence):
                return Verdict(duplicate=batch)
        last = entry.last_sequence
        if last is not None and not in_sequence(last, first_sequence):
            return Verdict(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=f"producer {producer_id}: sequence {first_sequence} does not follow {last}",
            )
        return APPEND

    def observe(
        self,
        producer_id: int,
        epoch: int,
        first_sequence: int,
        last_sequence: int,
        first_offset: int,
        last_offset: int,
        timestamp: int,
    ) -> None:
        """Record an appended batch (also used to rebuild the state from the log)."""
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self._entries.setdefault(producer_id, ProducerEntry())
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        if first_sequence < 0:  # control or non-idempotent batch of a known producer id
            return
        entry.batches.append(
            BatchMetadata(first_sequence, last_sequence, first_offset, last_offset, timestamp)
        )

    def observe_batch(self, batch: RecordBatch[Any]) -> None:
        """Record a batch as the log holds it (a follower's append, a rebuild from the log)."""
        if batch.producer_id >= 0:
            self.observe(
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                batch.last_sequence,
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
            )

    def truncate_before(self, log_start_offset: int) -> None:
        """Forget batches now below the log start (DeleteRecords, retention)."""
        for producer_id in list(self._entries):
            entry = self._entries[producer_id]
            while entry.batches and entry.batches[0].last_offset < log_start_offset:
                entry.batches.popleft()
            if not entry.batches:
                del self._entries[producer_id]
