"""What every part of the transaction coordinator shares (Kafka's ``TransactionStateManager``): the
transactions of the ``__transaction_state`` partitions served here, each partition's coordinator
epoch, the writes awaiting their outcome, the clock and the effects of the call in progress.

A partition is served once its load ended (:meth:`TxnRuntime.loaded`); while it loads its
transactional ids get COORDINATOR_LOAD_IN_PROGRESS, and ids of a partition not served
NOT_COORDINATOR. A write (:meth:`TxnRuntime.persist`) names the coordinator epoch it was decided
under: its outcome applies only while the partition is still served at that epoch (else the
request gets NOT_COORDINATOR, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from kafka_wire.broker.coordinator_keys import partition_for_transactional_id
from kafka_wire.broker.timers import TimerKey, TimerQueue
from kafka_wire.broker.txn.config import TxnConfig
from kafka_wire.broker.txn.effects import Respond, TxnEffect, TxnPersist, client_error
from kafka_wire.broker.txn.metadata import TxnMetadata, TxnTransit, TxnVersion
from kafka_wire.broker.txn.states import TxnState
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: The owner of the coordinator's timers in the engine's queue.
TXN_TIMERS: Final = "txn"

#: Called with the client's error code (0: applied) once a write's outcome is known.
WriteDone = Callable[[int], None]


@dataclass(slots=True)
class _Write:
    transactional_id: str
    coordinator_epoch: int
    transit: TxnTransit
    done: WriteDone
    #: Errors on which the pending state is kept (the caller retries the write).
    keep_pending_on: frozenset[int]


@dataclass(slots=True)
class _Partition:
    coordinator_epoch: int
    transactions: dict[str, TxnMetadata]


class TxnRuntime:
    """The coordinator's shared state (see the module docstring)."""

    def __init__(
        self,
        config: TxnConfig,
        timers: TimerQueue,
        *,
        finalized_version: Callable[[], TxnVersion],
        new_producer_id: Callable[[int], int | None],
    ) -> None:
        self.config = config
        self.timers = timers
        self.finalized_version = finalized_version
        #: A producer id from the controller's blocks (None: none left yet; Kafka's
        #: COORDINATOR_LOAD_IN_PROGRESS).
        self.new_producer_id = new_producer_id
        self.num_partitions = config.num_partitions
        #: Partitions served, by partition: their coordinator epoch and transactions.
        self.partitions: dict[int, _Partition] = {}
        #: Partitions being loaded: the epoch and the transactions replayed so far.
        self.loading: dict[int, _Partition] = {}
        self._writes: dict[int, _Write] = {}
        self._next_append_id = 0
        #: The latest time seen.
        self.now = 0
        self.out: list[TxnEffect] = []

    # -- lookups --------------------------------------------------------------------------------

    def partition_of(self, transactional_id: str) -> int:
        return partition_for_transactional_id(transactional_id, self.num_partitions)

    def lookup(self, transactional_id: str) -> tuple[int, int, TxnMetadata | None]:
        """(error, coordinator epoch, transaction): NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
        when the id is not served here, else 0 and the transaction (None: unknown)."""
        partition = self.partition_of(transactional_id)
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1, None
        entry = self.partitions.get(partition)
        if entry is None:
            return ErrorCode.NOT_COORDINATOR, -1, None
        return ErrorCode.NONE, entry.coordinator_epoch, entry.transactions.get(transactional_id)

    def add(self, metadata: TxnMetadata) -> TxnMetadata:
        """Put a new transactional id in its partition (it must be served)."""
        entry = self.partitions[self.partition_of(metadata.transactional_id)]
        return entry.transactions.setdefault(metadata.transactional_id, metadata)

    def served(self) -> Iterator[tuple[int, TxnMetadata]]:
        """Every transaction served here with its coordinator epoch, by partition then id."""
        for partition in sorted(self.partitions):
            entry = self.partitions[partition]
            for transactional_id in sorted(entry.transactions):
                yield entry.coordinator_epoch, entry.transactions[transactional_id]

    # -- partitions -----------------------------------------------------------------------------

    def loading_started(self, partition: int, coordinator_epoch: int) -> None:
        self.partitions.pop(partition, None)
        self.loading[partition] = _Partition(coordinator_epoch, {})

    def replay(self, partition: int, transactional_id: str, metadata: TxnMetadata | None) -> None:
        """One loaded record of a loading partition (None: a tombstone)."""
        entry = self.loading.get(partition)
        if entry is None:
            return
        if metadata is None:
            entry.transactions.pop(transactional_id, None)
        else:
            entry.transactions[transactional_id] = metadata

    def loaded(self, partition: int) -> _Partition | None:
        """The load ended: the partition is served (None: it was lost meanwhile)."""
        entry = self.loading.pop(partition, None)
        if entry is not None:
            self.partitions[partition] = entry
        return entry

    def lost(self, partition: int) -> None:
        self.loading.pop(partition, None)
        self.partitions.pop(partition, None)

    # -- writes ---------------------------------------------------------------------------------

    def persist(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        transit: TxnTransit,
        done: WriteDone,
        keep_pending_on: frozenset[int] = frozenset(),
    ) -> None:
        """Write ``transit`` (Kafka's ``appendTransactionToLog``): refused at once (NOT_COORDINATOR)
        when the partition moved to another coordinator epoch since it was decided."""
        error, epoch, metadata = self.lookup(transactional_id)
        if error or metadata is None or epoch != coordinator_epoch:
            done(error or ErrorCode.NOT_COORDINATOR)
            return
        self._next_append_id += 1
        append_id = self._next_append_id
        self._writes[append_id] = _Write(transactional_id, coordinator_epoch, transit, done, keep_pending_on)
        from kafka_wire.broker.txn.records import key_bytes, value_bytes  # loaded with the first write

        value = None if transit.state is TxnState.DEAD else value_bytes(transit, self.finalized_version())
        self.out.append(
            TxnPersist(
                transactional_id,
                self.partition_of(transactional_id),
                key_bytes(transactional_id),
                value,
                append_id,
            )
        )

    def persisted(self, append_id: int, log_error: int) -> None:
        write = self._writes.pop(append_id, None)
        if write is None:
            raise LocalProtocolError(f"no transaction write {append_id} awaits its outcome")
        error = client_error(log_error)
        lookup_error, epoch, metadata = self.lookup(write.transactional_id)
        if not error:
            if lookup_error:
                error = lookup_error
            elif metadata is None or epoch != write.coordinator_epoch:
                error = ErrorCode.NOT_COORDINATOR
            elif write.transit.state is TxnState.DEAD:
                self._remove_expired(metadata, write.transit)
            else:
                metadata.complete(write.transit)
        elif metadata is not None and epoch == write.coordinator_epoch and error not in write.keep_pending_on:
            metadata.abandon()
        write.done(error)

    def _remove_expired(self, metadata: TxnMetadata, transit: TxnTransit) -> None:
        if metadata.pending is TxnState.DEAD and metadata.producer_epoch == transit.producer_epoch:
            entry = self.partitions[self.partition_of(metadata.transactional_id)]
            entry.transactions.pop(metadata.transactional_id, None)
        else:
            metadata.abandon()

    def fail_writes_of(self, partition: int) -> None:
        """The partition was lost: its writes awaiting an outcome fail (NOT_LEADER_OR_FOLLOWER)."""
        for append_id in [
            a for a, w in self._writes.items() if self.partition_of(w.transactional_id) == partition
        ]:
            self.persisted(append_id, ErrorCode.NOT_LEADER_OR_FOLLOWER)

    @property
    def pending_writes(self) -> int:
        return len(self._writes)

    # -- output and time ------------------------------------------------------------------------

    def respond(self, token: object, body: Message) -> None:
        self.out.append(Respond(token, body))

    def take(self) -> list[TxnEffect]:
        out, self.out = self.out, []
        return out

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        self.timers.schedule(key, deadline_ms)
