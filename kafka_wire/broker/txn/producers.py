"""Producer state of one partition: Kafka's de-duplication by producer id, epoch and sequence, and
the transactions open in the partition (Kafka's ``ProducerStateManager``).

For each producer id the state keeps its epoch, the last five batches appended (first and last
sequence, first and last offset; Kafka's ``NUM_BATCHES_TO_RETAIN``), the coordinator epoch of
the last marker, and the first offset of its transaction open here (-1: none). ``check`` decides
what an incoming batch is: new (append it), a duplicate of a retained batch (answer with the
original offsets, append nothing), or an error code (INVALID_PRODUCER_EPOCH,
OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_TXN_STATE for a plain batch while the producer's
transaction is open); ``check_marker`` the same for a COMMIT or ABORT marker
(INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED).

Transactions: a transactional batch of a producer with none open starts one at its first
offset; its marker completes it. Completed transactions stay "unreplicated" until the high
watermark passes their marker (:meth:`ProducerStates.on_high_watermark`): the partition's first
unstable offset is the smallest first offset among the open and unreplicated ones, and its last
stable offset that, or the high watermark when there is none (Kafka's ``firstUnstableOffset``).

State is rebuilt at start-up from a snapshot and the batches after it (see
:mod:`kafka_wire.broker.partition.transactions`).
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.log.cleaner_txn import ActiveProducer
from kafka_wire.messages import ErrorCode

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
    #: The coordinator epoch of the last marker (-1: none yet).
    coordinator_epoch: int = -1
    #: The first offset of the transaction open here (-1: none).
    txn_first_offset: int = -1
    #: The timestamp of the last batch or marker (-1: unknown).
    last_timestamp: int = -1

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


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction its marker ended: data from ``first_offset``, the marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(slots=True)
class _Verifying:
    """A transaction's verification with its coordinator in progress (Kafka's
    ``VerificationStateEntry``): the guard the append must show."""

    guard: int
    epoch: int
    #: The producer uses transaction version 2 (its marker may come after its next
    #: transaction's verification started).
    bumps_epoch: bool


def in_sequence(last: int, first: int) -> bool:
    """``first`` follows ``last`` (sequences wrap from 2^31-1 to 0)."""
    return first == last + 1 or (first == 0 and last == _MAX_SEQUENCE)


class ProducerStates:
    """The producer state of one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}
        #: First offsets of the open transactions, ascending, and their producers.
        self._open_offsets: list[int] = []
        self._open: dict[int, int] = {}
        #: Completed transactions whose marker is not below the high watermark yet, by first offset.
        self._unreplicated: dict[int, CompletedTxn] = {}
        #: ``first_unstable_offset`` as last computed, valid while ``_first_unstable_known`` (reset
        #: when either of the two above changes: the last stable offset is read on every fetch
        #: and every test of a held one).
        self._first_unstable: int | None = None
        self._first_unstable_known = False
        #: Verifications in progress, by producer id (KIP-890 part 1).
        self._verifying: dict[int, _Verifying] = {}
        self._next_guard = 0

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    def active(self, producer_id: int) -> ActiveProducer | None:
        """What log compaction needs of a producer held here (``broker.log.cleaner_txn``)."""
        entry = self._entries.get(producer_id)
        if entry is None:
            return None
        return ActiveProducer(entry.batches[-1].last_offset if entry.batches else -1, entry.epoch)

    def entries(self) -> list[tuple[int, ProducerEntry]]:
        """Every producer the partition knows, by producer id (DescribeProducers)."""
        return sorted(self._entries.items())

    # -- checks ---------------------------------------------------------------------------------

    def check(
        self,
        producer_id: int,
        epoch: int,
        first_sequence: int,
        last_sequence: int,
        *,
        transactional: bool = False,
        sequenced: bool = True,
    ) -> Verdict:
        """``sequenced`` False: a coordinator's batch, whose epoch only is checked."""
        if producer_id == NO_PRODUCER_ID:
            return APPEND
        entry = self._entries.get(producer_id)
        if entry is None or entry.epoch == NO_PRODUCER_EPOCH:
            # Unknown producer (new, or its batches were all deleted): any sequence is accepted.
            return self._txn_state(producer_id, entry, transactional)
        if epoch < entry.epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"producer {producer_id} epoch {epoch} is older than the current epoch {entry.epoch}",
            )
        if not sequenced:
            return self._txn_state(producer_id, entry, transactional)
        if epoch > entry.epoch:
            if first_sequence != 0:
                return Verdict(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    message=f"a new epoch {epoch} of producer {producer_id} must start at sequence 0, not {first_sequence}",
                )
            return self._txn_state(producer_id, entry, transactional)
        for batch in entry.batches:
            if (batch.first_sequence, batch.last_sequence) == (first_sequence, last_sequence):
                return Verdict(duplicate=batch)
        last = entry.last_sequence
        if last is not None and not in_sequence(last, first_sequence):
            return Verdict(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=f"producer {producer_id}: sequence {first_sequence} does not follow {last}",
            )
        return self._txn_state(producer_id, entry, transactional)

    @staticmethod
    def _txn_state(producer_id: int, entry: ProducerEntry | None, transactional: bool) -> Verdict:
        if entry is not None and entry.txn_first_offset >= 0 and not transactional:
            return Verdict(
                ErrorCode.INVALID_TXN_STATE,
                message=f"producer {producer_id} sent a non-transactional batch while its transaction is open",
            )
        return APPEND

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> Verdict:
        """A COMMIT or ABORT marker from the coordinator (Kafka's ``appendEndTxnMarker`` checks)."""
        entry = self._entries.get(producer_id)
        if entry is None:
            return APPEND
        if epoch < entry.epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"marker of producer {producer_id} at epoch {epoch}, older than {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            return Verdict(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                message=f"coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}",
            )
        return APPEND

    # -- verification (KIP-890 part 1) ----------------------------------------------------------------

    def start_verification(self, producer_id: int, epoch: int, *, bumps_epoch: bool) -> int | None:
        """A transactional batch is about to be verified with the coordinator: the guard its
        append must show (None when the producer's transaction is open here: no verification)."""
        if self.has_open_transaction(producer_id, epoch):
            return None
        current = self._verifying.get(producer_id)
        if current is None:
            self._next_guard += 1
            current = self._verifying[producer_id] = _Verifying(self._next_guard, epoch, bumps_epoch)
        current.epoch = max(current.epoch, epoch)
        return current.guard

    def verified(self, producer_id: int, guard: int | None) -> bool:
        """Whether ``guard`` is the verification in progress (none ended it since it started)."""
        current = self._verifying.get(producer_id)
        return guard is not None and current is not None and current.guard == guard

    def _end_verification(self, producer_id: int, epoch: int, *, marker: bool) -> None:
        current = self._verifying.get(producer_id)
        if current is not None and not (marker and current.bumps_epoch and epoch == current.epoch):
            del self._verifying[producer_id]

    def has_open_transaction(self, producer_id: int, epoch: int) -> bool:
        """Whether the producer's transaction of ``epoch`` is open here (Kafka's
        ``hasOngoingTransaction``). Under transaction version 2 the epoch tells two transactions
        apart: the next one's first batch, of the bumped epoch, can arrive before the previous
        one's marker, and must be verified (the coordinator answers CONCURRENT_TRANSACTIONS until
        the markers are written) rather than join the previous one's open span."""
        entry = self._entries.get(producer_id)
        return entry is not None and entry.txn_first_offset >= 0 and entry.epoch == epoch

    # -- updates --------------------------------------------------------------------------------

    def observe(
        self,
        producer_id: int,
        epoch: int,
        first_sequence: int,
        last_sequence: int,
        first_offset: int,
        last_offset: int,
        timestamp: int,
        *,
        transactional: bool = False,
    ) -> None:
        """Record an appended data batch (also used to rebuild the state from the log)."""
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self._entries.setdefault(producer_id, ProducerEntry())
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.last_timestamp = timestamp
        if transactional:
            self._end_verification(producer_id, epoch, marker=False)
        if transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = first_offset
            bisect.insort(self._open_offsets, first_offset)
            self._open[first_offset] = producer_id
            self._first_unstable_known = False
        if first_sequence < 0:  # a non-idempotent batch of a known producer id
            return
        entry.batches.append(
            BatchMetadata(first_sequence, last_sequence, first_offset, last_offset, timestamp)
        )

    def observe_marker(
        self,
        producer_id: int,
        epoch: int,
        coordinator_epoch: int,
        offset: int,
        timestamp: int,
        *,
        commit: bool,
    ) -> CompletedTxn | None:
        """Record an appended marker; the transaction it ends (None when none was open here)."""
        entry = self._entries.setdefault(producer_id, ProducerEntry())
        self._end_verification(producer_id, epoch, marker=True)
        completed = None
        if entry.txn_first_offset >= 0:
            completed = CompletedTxn(producer_id, entry.txn_first_offset, offset, not commit)
            self._close(entry.txn_first_offset)
            self._unreplicated[completed.first_offset] = completed
            self._first_unstable_known = False
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.txn_first_offset = -1
        entry.last_timestamp = timestamp
        return completed

    def _close(self, first_offset: int) -> None:
        self._first_unstable_known = False
        self._open.pop(first_offset, None)
        at = bisect.bisect_left(self._open_offsets, first_offset)
        if at < len(self._open_offsets) and self._open_offsets[at] == first_offset:
            del self._open_offsets[at]

    def load(self, producer_id: int, entry: ProducerEntry) -> None:
        """An entry read from a snapshot."""
        self._entries[producer_id] = entry
        if entry.txn_first_offset >= 0:
            bisect.insort(self._open_offsets, entry.txn_first_offset)
            self._open[entry.txn_first_offset] = producer_id
            self._first_unstable_known = False

    # -- offsets ------------------------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """The smallest first offset of a transaction open, or completed above the high watermark."""
        if not self._first_unstable_known:
            candidates = [*self._open_offsets[:1], *self._unreplicated]
            self._first_unstable = min(candidates) if candidates else None
            self._first_unstable_known = True
        return self._first_unstable

    def last_stable_offset_of(self, completed: CompletedTxn) -> int:
        """The last stable offset an aborted transaction's index entry records (Kafka's
        ``lastStableOffset(completedTxn)``): the first open transaction of another producer, else
        the offset after the marker."""
        for first_offset in self._open_offsets:
            if self._open[first_offset] != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def on_high_watermark(self, high_watermark: int) -> None:
        """Completed transactions whose marker is below the high watermark are decided."""
        if self._unreplicated:
            self._unreplicated = {
                k: t for k, t in self._unreplicated.items() if t.last_offset >= high_watermark
            }
            self._first_unstable_known = False

    def truncate_before(self, log_start_offset: int) -> None:
        """Forget batches now below the log start (DeleteRecords, retention); producers left with
        no batch, no open transaction and no marker are forgotten (one a marker reached keeps its
        epoch: a zombie stays fenced)."""
        for producer_id in list(self._entries):
            entry = self._entries[producer_id]
            while entry.batches and entry.batches[0].last_offset < log_start_offset:
                entry.batches.popleft()
            if not entry.batches and entry.txn_first_offset < 0 and entry.coordinator_epoch < 0:
                del self._entries[producer_id]
        self.on_high_watermark(log_start_offset)
