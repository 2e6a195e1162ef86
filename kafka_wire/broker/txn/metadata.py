"""One transactional id's state at its coordinator (Kafka's ``TransactionMetadata``).

A change is made in two steps, as Kafka makes it: a ``prepare_*`` method computes the next state
as a :class:`TxnTransit` and marks it pending (the state table of :mod:`.states` decides whether
the move is legal), the coordinator writes the transit to ``__transaction_state``, and once the
write succeeded :meth:`TxnMetadata.complete` applies it (or :meth:`TxnMetadata.abandon` forgets
it when the write failed). While a transit is pending, no other may be prepared.

The epoch rules (facts from Kafka's coordinator):

* InitProducerId bumps the epoch; a producer that names its current (or last) epoch (KIP-360) is
  let in, any other is fenced; once the epoch would reach ``Short.MAX_VALUE - 1`` a new producer
  id is taken instead (its epoch 0).
* Transaction version 2 bumps the epoch at every EndTxn: the prepare record holds the bumped
  epoch and the previous one as ``last_producer_epoch``, so (producer id, epoch) names one
  transaction and a retried EndTxn of the transaction before is recognised by its epoch + 1.
* An epoch fence (a new producer while a transaction is open, or the transaction timeout) bumps
  the epoch once, even if the fencing write failed before (``failed_epoch_fence``).
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Final

from kafka_wire.broker.txn.states import TxnInput, TxnState, in_progress, transition
from kafka_wire.errors import LocalProtocolError
from kafka_wire.quick_dataclass import dataclass

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
#: ``Short.MAX_VALUE``: the largest epoch.
MAX_EPOCH: Final = 32767

#: A partition of a transaction: (topic, partition).
TopicPartition = tuple[str, int]


class TxnVersion(enum.IntEnum):
    """The ``transaction.version`` feature level a client uses (Kafka's ``TransactionVersion``)."""

    TV_0 = 0
    #: Flexible ``__transaction_state`` values (KIP-890).
    TV_1 = 1
    #: An epoch bump at every transaction end, partitions added by the partition leaders (KIP-890).
    TV_2 = 2

    @property
    def bumps_epoch(self) -> bool:
        return self >= TxnVersion.TV_2

    @property
    def log_value_version(self) -> int:
        """The ``TransactionLogValue`` version the coordinator writes at this finalized level."""
        return 1 if self >= TxnVersion.TV_1 else 0

    @classmethod
    def of(cls, level: int) -> TxnVersion:
        """The version of a feature level (levels above 2 act as 2)."""
        return cls(min(max(level, 0), 2))


def epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps ``Short.MAX_VALUE`` for fencing: a producer never gets an epoch above MAX - 1."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The state a prepared change leads to (Kafka's ``TxnTransitMetadata``): what is written."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int
    client_version: TxnVersion


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    client_version: TxnVersion = TxnVersion.TV_0
    #: The state a transit being written leads to (None: none pending).
    pending: TxnState | None = None
    #: A fencing write failed: the epoch was bumped for it already.
    failed_epoch_fence: bool = False

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> TxnTransit:
        """The current state as a transit (what a write of it would hold)."""
        return TxnTransit(
            self.producer_id,
            self.prev_producer_id,
            self.next_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_ms,
            self.update_ms,
            self.client_version,
        )

    # -- preparing ------------------------------------------------------------------------------

    def prepare_fence_epoch(self) -> TxnTransit:
        """Fence the open transaction's producer: its epoch + 1 (once), then an abort follows."""
        bumped = self.producer_epoch
        if not self.failed_epoch_fence and self.producer_epoch < MAX_EPOCH:
            bumped += 1
        return self._prepare(
            TxnInput.FENCE_EPOCH, producer_epoch=bumped, last_producer_epoch=NO_PRODUCER_EPOCH
        )

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnTransit | None:
        """InitProducerId on the same producer id; None when ``expected_epoch`` is fenced."""
        if self.epoch_exhausted:
            raise LocalProtocolError(f"no epoch left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retry: no second bump
        else:
            return None
        return self._prepare(
            TxnInput.INIT_PRODUCER_ID,
            producer_epoch=epoch,
            last_producer_epoch=last,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
            update_ms=now_ms,
        )

    def prepare_producer_id_rotation(
        self, producer_id: int, timeout_ms: int, now_ms: int, *, record_last_epoch: bool
    ) -> TxnTransit:
        """InitProducerId once the epochs are exhausted: a new producer id at epoch 0."""
        if in_progress(self.state):
            raise LocalProtocolError("cannot rotate the producer id of a transaction in progress")
        return self._prepare(
            TxnInput.INIT_PRODUCER_ID,
            producer_id=producer_id,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
            update_ms=now_ms,
        )

    def prepare_add_partitions(
        self, added: frozenset[TopicPartition], now_ms: int, client_version: TxnVersion
    ) -> TxnTransit:
        starting = self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        return self._prepare(
            TxnInput.ADD_PARTITIONS,
            partitions=frozenset(self.partitions) | added,
            start_ms=now_ms if starting else self.start_ms,
            update_ms=now_ms,
            client_version=client_version,
        )

    def prepare_end(
        self,
        commit: bool,
        client_version: TxnVersion,
        next_producer_id: int,
        now_ms: int,
        *,
        no_partition_added: bool,
    ) -> TxnTransit:
        """EndTxn's prepare record: under TV2 the epoch is bumped (the last one kept)."""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if client_version.bumps_epoch:
            if self.producer_epoch < MAX_EPOCH:  # Kafka never bumps past MAX (logged as a bug)
                epoch = self.producer_epoch + 1
            last = self.producer_epoch
        return self._prepare(
            TxnInput.PREPARE_COMMIT if commit else TxnInput.PREPARE_ABORT,
            producer_epoch=epoch,
            last_producer_epoch=last,
            next_producer_id=next_producer_id,
            start_ms=now_ms if no_partition_added else self.start_ms,
            update_ms=now_ms,
            client_version=client_version,
        )

    def prepare_fencing_abort(self, server_version: TxnVersion, now_ms: int) -> TxnTransit:
        """The abort that fences the open transaction's producer (a new producer's InitProducerId,
        or the transaction timeout), as Kafka's coordinator does it: the epoch fence is prepared
        and at once replaced by the abort, with the bumped epoch under TV0/TV1 (TV2's abort bumps
        it by itself)."""
        fenced = self.prepare_fence_epoch()
        self.pending = None
        if not server_version.bumps_epoch:
            self.producer_epoch = fenced.producer_epoch
            self.last_producer_epoch = NO_PRODUCER_EPOCH
            server_version = TxnVersion.TV_0
        return self.prepare_end(False, server_version, NO_PRODUCER_ID, now_ms, no_partition_added=False)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Every marker is written: CompleteCommit or CompleteAbort (TV2: a producer id taken for
        an exhausted epoch becomes the producer id, at epoch 0)."""
        self.failed_epoch_fence = False
        producer_id, epoch = self.producer_id, self.producer_epoch
        if self.client_version.bumps_epoch and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0
        return self._prepare(
            TxnInput.COMPLETE,
            producer_id=producer_id,
            producer_epoch=epoch,
            next_producer_id=NO_PRODUCER_ID,
            partitions=frozenset(),
            update_ms=now_ms,
        )

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(TxnInput.EXPIRE, partitions=frozenset())

    def _prepare(
        self,
        move: TxnInput,
        *,
        producer_id: int | None = None,
        next_producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int | None = None,
        last_producer_epoch: int | None = None,
        timeout_ms: int | None = None,
        partitions: frozenset[TopicPartition] | None = None,
        start_ms: int | None = None,
        update_ms: int | None = None,
        client_version: TxnVersion | None = None,
    ) -> TxnTransit:
        if self.pending is not None:
            raise LocalProtocolError(
                f"transaction {self.transactional_id}: {move.value} while {self.pending.name} is being written"
            )
        target = transition(self.state, move, transactional_id=self.transactional_id)
        transit = TxnTransit(
            producer_id=self.producer_id if producer_id is None else producer_id,
            prev_producer_id=self.producer_id,
            next_producer_id=next_producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            last_producer_epoch=self.last_producer_epoch
            if last_producer_epoch is None
            else last_producer_epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=target,
            partitions=frozenset(self.partitions) if partitions is None else partitions,
            start_ms=self.start_ms if start_ms is None else start_ms,
            update_ms=self.update_ms if update_ms is None else update_ms,
            client_version=self.client_version if client_version is None else client_version,
        )
        if transit.producer_id < 0 or (target is not TxnState.DEAD and transit.producer_epoch < 0):
            raise LocalProtocolError(f"transaction {self.transactional_id}: bad transit {transit}")
        self.pending = target
        return transit

    # -- completing -----------------------------------------------------------------------------

    def complete(self, transit: TxnTransit) -> None:
        """The transit's write succeeded: it becomes the state (Kafka's ``completeTransitionTo``,
        whose checks are kept: a failing one is a coordinator bug)."""
        if self.pending is not transit.state:
            raise LocalProtocolError(
                f"transaction {self.transactional_id}: completing {transit.state.name}, pending {self.pending}"
            )
        if not self._valid(transit):
            raise LocalProtocolError(
                f"transaction {self.transactional_id}: invalid transit {transit} from {self}"
            )
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.update_ms = transit.update_ms
        self.client_version = transit.client_version
        self.pending = None
        self.state = transit.state

    def abandon(self) -> None:
        """The transit's write failed: nothing changes."""
        self.pending = None

    def _valid(self, transit: TxnTransit) -> bool:
        target = transit.state
        if target is TxnState.EMPTY:
            bump_ok = transit.producer_epoch == self.producer_epoch + 1 or (
                transit.producer_epoch == 0 and transit.producer_id != self.producer_id
            )
            return (
                (transit.producer_epoch == self.producer_epoch or bump_ok)
                and not transit.partitions
                and transit.start_ms == -1
            )
        if target is TxnState.ONGOING:
            return (
                self._valid_epoch(transit)
                and self.partitions <= transit.partitions
                and transit.timeout_ms == self.timeout_ms
            )
        if target in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            empty_abort = (
                target is TxnState.PREPARE_ABORT
                and transit.client_version.bumps_epoch
                and self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            )
            return (
                self._valid_epoch(transit)
                and frozenset(self.partitions) == transit.partitions
                and transit.timeout_ms == self.timeout_ms
                and (transit.start_ms == self.start_ms or empty_abort)
            )
        if target in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            return (
                self._valid_epoch(transit)
                and transit.timeout_ms == self.timeout_ms
                and transit.start_ms != -1
            )
        return False  # PREPARE_EPOCH_FENCE and DEAD are never completed

    def _valid_epoch(self, transit: TxnTransit) -> bool:
        v2 = transit.client_version.bumps_epoch
        if (
            v2
            and transit.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            and transit.producer_epoch == 0
        ):
            return (
                transit.last_producer_epoch == self.last_producer_epoch
                and transit.prev_producer_id == self.producer_id
            )
        if v2 and transit.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return (
                transit.last_producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id
            )
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id
