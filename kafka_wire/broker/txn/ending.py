"""Ending transactions: EndTxn, the markers, the completion record, and the aborts the coordinator
decides itself (timeouts, fencing).

An end is two writes with the markers between them, as Kafka's coordinator does it:

1. the PrepareCommit / PrepareAbort record (under transaction version 2 with the epoch bumped);
   once it is replicated the EndTxn is answered, and the CompleteCommit / CompleteAbort transit
   is prepared at once (so that the transactional id stays "pending": CONCURRENT_TRANSACTIONS to
   its requests until the end is written);
2. a :class:`~kafka_wire.broker.txn.effects.SendMarkers` for the transaction's partitions; each
   partition written is removed from the transaction (:meth:`TxnEnding.markers_written`);
3. with no partition left, the completion record; a failure to write it that can pass
   (COORDINATOR_NOT_AVAILABLE) is retried after :data:`COMPLETE_RETRY_MS`.

EndTxn's epoch checks differ by version. Under TV0/TV1 the request must carry the current
epoch. Under TV2 the epoch names the transaction: a request with the epoch before the current one
(``epoch + 1 == current``) is a retry of an end already decided (answered NONE when it matches,
INVALID_TXN_STATE otherwise, CONCURRENT_TRANSACTIONS while its markers are written), and an
abort with the current epoch of an ended transaction is an empty transaction's abort (KIP-890:
the producer may abort before anything was added).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kafka_wire.broker.txn.effects import SendMarkers
from kafka_wire.broker.txn.metadata import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TxnMetadata,
    TxnTransit,
    TxnVersion,
)
from kafka_wire.broker.txn.runtime import TXN_TIMERS, TxnRuntime
from kafka_wire.broker.txn.states import TxnState
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: Called with (error, producer id, producer epoch) once an end is decided.
EndReply = Callable[[int, int, int], None]

#: kafka_wire's: the wait before a completion record that could not be written is written again
#: (Kafka retries at the marker sender's next round).
COMPLETE_RETRY_MS: Final = 100
ABORT_CHECK_KEY: Final = (TXN_TIMERS, "abort-timed-out")
COMPLETE_RETRY_KEY: Final = (TXN_TIMERS, "complete-retry")


@dataclass(slots=True)
class _Completing:
    """A transaction whose markers are being written."""

    coordinator_epoch: int
    commit: bool
    transit: TxnTransit


class TxnEnding:
    """The end of transactions (see the module docstring)."""

    def __init__(self, rt: TxnRuntime) -> None:
        self.rt = rt
        #: Transactions whose markers are in flight, by transactional id.
        self.completing: dict[str, _Completing] = {}
        #: Completion records to write again, in order.
        self._retries: list[tuple[str, _Completing]] = []

    # -- EndTxn ---------------------------------------------------------------------------------

    def end(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        client_version: TxnVersion,
        reply: EndReply,
        *,
        from_client: bool = True,
    ) -> None:
        """Kafka's ``endTransaction``: prepare, write, answer, then the markers."""
        rt = self.rt
        if not transactional_id:
            reply(ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        error, coordinator_epoch, md = rt.lookup(transactional_id)
        if not error and md is None:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if error or md is None:
            reply(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        fencing = md.pending is TxnState.PREPARE_EPOCH_FENCE
        decided: TxnTransit | int
        if client_version.bumps_epoch:
            decided = self._decide_v2(md, producer_id, producer_epoch, commit, fencing)
        else:
            decided = self._decide_v1(md, producer_id, producer_epoch, commit, fencing, from_client)
        if isinstance(decided, int):
            if decided == ErrorCode.NONE:
                reply(ErrorCode.NONE, md.producer_id, md.producer_epoch)
            else:
                reply(decided, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        prepared = decided

        def written(error: int) -> None:
            if error:
                if fencing:
                    current = rt.lookup(transactional_id)
                    if current[2] is not None and current[1] == coordinator_epoch:
                        current[2].failed_epoch_fence = True
                reply(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                return
            self._after_prepare(
                transactional_id,
                coordinator_epoch,
                producer_id,
                producer_epoch,
                commit,
                client_version,
                reply,
            )

        rt.persist(transactional_id, coordinator_epoch, prepared, written)

    def _decide_v1(
        self,
        md: TxnMetadata,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        fencing: bool,
        from_client: bool,
    ) -> TxnTransit | int:
        if md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if md.pending is not None and not fencing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = md.state
        if state is TxnState.ONGOING:
            if fencing:
                md.pending = None
                if not commit:
                    md.producer_epoch = producer_epoch
                    md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_end(
                commit, TxnVersion.TV_0, NO_PRODUCER_ID, self.rt.now, no_partition_added=False
            )
        return _settled(state, commit, retry=True)

    def _decide_v2(
        self, md: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool, fencing: bool
    ) -> TxnTransit | int:
        retry_on_overflow = (
            not fencing
            and md.prev_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and md.producer_epoch == 0
        )
        retry_on_bump = not fencing and md.producer_epoch == producer_epoch + 1
        state = md.state
        if fencing:
            valid = producer_epoch >= md.producer_epoch
        elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid = retry_on_bump
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        else:
            valid = producer_epoch == md.producer_epoch
        if md.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if not valid:
            return ErrorCode.PRODUCER_FENCED
        if md.pending is not None and not fencing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        retry = retry_on_bump or retry_on_overflow
        if state is TxnState.ONGOING:
            return self._prepare_v2(md, commit, fencing, no_partition_added=False)
        if not commit and (
            (state is TxnState.COMPLETE_COMMIT and not retry)
            or (state is TxnState.COMPLETE_ABORT and not retry)
            or state is TxnState.EMPTY
        ):
            return self._prepare_v2(md, commit, fencing, no_partition_added=True)
        return _settled(state, commit, retry=retry)

    def _prepare_v2(
        self, md: TxnMetadata, commit: bool, fencing: bool, *, no_partition_added: bool
    ) -> TxnTransit | int:
        next_producer_id = NO_PRODUCER_ID
        if md.epoch_exhausted:
            allocated = self.rt.new_producer_id(self.rt.now)
            if allocated is None:
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            next_producer_id = allocated
        if fencing and not commit:
            md.pending = None
        return md.prepare_end(
            commit, TxnVersion.TV_2, next_producer_id, self.rt.now, no_partition_added=no_partition_added
        )

    def _after_prepare(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        client_version: TxnVersion,
        reply: EndReply,
    ) -> None:
        """The prepare record is written (Kafka's ``sendTxnMarkersCallback``)."""
        error, epoch, md = self.rt.lookup(transactional_id)
        if error or md is None:
            reply(error or ErrorCode.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        if epoch != coordinator_epoch:
            reply(ErrorCode.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        epochs = (producer_epoch, producer_epoch + 1) if client_version.bumps_epoch else (producer_epoch,)
        if md.producer_id != producer_id:
            reply(ErrorCode.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        elif md.producer_epoch not in epochs:
            reply(ErrorCode.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        elif md.pending is not None:
            reply(ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        elif md.state is not (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
            reply(ErrorCode.INVALID_TXN_STATE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        else:
            complete = md.prepare_complete(self.rt.now)
            if client_version.bumps_epoch:
                reply(ErrorCode.NONE, complete.producer_id, complete.producer_epoch)
            else:
                reply(ErrorCode.NONE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            self.send_markers(md, coordinator_epoch, commit, complete)

    # -- markers --------------------------------------------------------------------------------

    def send_markers(
        self, md: TxnMetadata, coordinator_epoch: int, commit: bool, complete: TxnTransit
    ) -> None:
        """Ask for the transaction's markers (Kafka's ``addTxnMarkersToSend``); with no partition
        the completion is written at once."""
        done = _Completing(coordinator_epoch, commit, complete)
        self.completing[md.transactional_id] = done
        if md.partitions:
            self.rt.out.append(
                SendMarkers(
                    md.transactional_id,
                    coordinator_epoch,
                    md.producer_id,
                    md.producer_epoch,
                    commit,
                    frozenset(md.partitions),
                    int(md.client_version),
                )
            )
        else:
            self._maybe_complete(md.transactional_id)

    def markers_written(
        self, transactional_id: str, coordinator_epoch: int, partitions: frozenset[TopicPartition]
    ) -> None:
        """The markers of ``partitions`` are written (or the partitions are gone)."""
        md = self._owned(transactional_id, coordinator_epoch)
        if md is None:
            return
        if md.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise LocalProtocolError(
                f"transaction {transactional_id}: markers written in state {md.state.name}"
            )
        md.partitions -= partitions
        self._maybe_complete(transactional_id)

    def markers_abandoned(self, transactional_id: str, coordinator_epoch: int) -> None:
        """A marker was refused for good (the producer's epoch or this coordinator was fenced):
        the transaction is left to the next coordinator, as Kafka leaves it."""
        current = self.completing.get(transactional_id)
        if current is not None and current.coordinator_epoch == coordinator_epoch:
            del self.completing[transactional_id]

    def still_wanted(self, transactional_id: str, coordinator_epoch: int) -> bool:
        """Whether markers of the transaction under ``coordinator_epoch`` are still to be written."""
        return self._owned(transactional_id, coordinator_epoch) is not None

    def _owned(self, transactional_id: str, coordinator_epoch: int) -> TxnMetadata | None:
        current = self.completing.get(transactional_id)
        error, epoch, md = self.rt.lookup(transactional_id)
        if current is None or current.coordinator_epoch != coordinator_epoch:
            return None
        if error or md is None or epoch != coordinator_epoch:
            del self.completing[transactional_id]
            return None
        return md

    def _maybe_complete(self, transactional_id: str) -> None:
        current = self.completing.get(transactional_id)
        error, epoch, md = self.rt.lookup(transactional_id)
        if current is None or md is None or md.partitions:
            return
        del self.completing[transactional_id]
        if error or epoch != current.coordinator_epoch:
            return  # no longer this coordinator's (a load will complete it)
        self._write_completion(transactional_id, current)

    def _write_completion(self, transactional_id: str, current: _Completing) -> None:
        def written(error: int) -> None:
            if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                self._retries.append((transactional_id, current))
                self.rt.schedule(COMPLETE_RETRY_KEY, self.rt.now + COMPLETE_RETRY_MS)

        self.rt.persist(
            transactional_id,
            current.coordinator_epoch,
            current.transit,
            written,
            keep_pending_on=frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE}),
        )

    def retry_completions(self) -> None:
        retries, self._retries = self._retries, []
        for transactional_id, current in retries:
            self._write_completion(transactional_id, current)

    # -- the coordinator's own aborts -------------------------------------------------------------

    def abort_timed_out(self) -> None:
        """Abort every open transaction past its timeout (Kafka's ``abortTimedOutTransactions``):
        its producer is fenced (epoch + 1) and the transaction aborted."""
        rt = self.rt
        expired = [
            (md.transactional_id, md.producer_id)
            for _, md in rt.served()
            if md.pending is None and md.state is TxnState.ONGOING and md.start_ms + md.timeout_ms < rt.now
        ]
        for transactional_id, producer_id in expired:
            _, _, md = rt.lookup(transactional_id)
            if md is None or md.producer_id != producer_id or md.pending is not None:
                continue
            self.fence_and_abort(md, _ignore)

    def fence_and_abort(self, md: TxnMetadata, reply: EndReply) -> None:
        """Fence the open transaction's producer and abort it, with the finalized transaction
        version's rules (a new producer's InitProducerId, or the timeout)."""
        fenced = md.prepare_fence_epoch()
        self.end(
            md.transactional_id,
            fenced.producer_id,
            fenced.producer_epoch,
            False,
            self.rt.finalized_version(),
            reply,
            from_client=False,
        )

    def partition_loaded(self, coordinator_epoch: int, transactions: list[TxnMetadata]) -> None:
        """After a load: the transactions that were ending get their markers again."""
        for md in transactions:
            if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                commit = md.state is TxnState.PREPARE_COMMIT
                self.send_markers(md, coordinator_epoch, commit, md.prepare_complete(self.rt.now))


def _settled(state: TxnState, commit: bool, *, retry: bool) -> int:
    """The answer to an EndTxn for a transaction not open (none written): a retry of the end
    decided (NONE), one whose markers are still written (CONCURRENT_TRANSACTIONS), else
    INVALID_TXN_STATE."""
    if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        same = commit == (state is TxnState.COMPLETE_COMMIT)
        return ErrorCode.NONE if same and retry else ErrorCode.INVALID_TXN_STATE
    if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        same = commit == (state is TxnState.PREPARE_COMMIT)
        return ErrorCode.CONCURRENT_TRANSACTIONS if same else ErrorCode.INVALID_TXN_STATE
    if state is TxnState.EMPTY:
        return ErrorCode.INVALID_TXN_STATE
    raise LocalProtocolError(f"a transaction in state {state.name} cannot be ended")


def _ignore(error: int, producer_id: int, producer_epoch: int) -> None:
    """The coordinator's own aborts answer nobody."""
