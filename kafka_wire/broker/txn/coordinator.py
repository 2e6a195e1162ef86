"""The transaction coordinator (Kafka's ``TransactionCoordinator``), a pure state machine: requests
and time in, effects out (:mod:`.effects`), never a clock, a file or a socket.

```python
coordinator = TxnCoordinator(TxnConfig(), timers, finalized_version=..., new_producer_id=...,
                             partition_exists=..., offsets_partition_of=...)
coordinator.partition_loading(p, coordinator_epoch)   # this node leads __transaction_state-p
coordinator.replay(p, key, value)                     # each of its records, oldest first
effects = coordinator.partition_loaded(p, now_ms)     # then it is served
effects = coordinator.handle(token, request, api_version, now_ms)
effects = coordinator.persisted(append_id, error, now_ms)    # each TxnPersist's outcome
effects = coordinator.markers_written(transactional_id, coordinator_epoch, partitions, now_ms)
effects = coordinator.tick(now_ms)                    # at next_deadline_ms()
```

It answers InitProducerId with a transactional id, AddPartitionsToTxn (a client's, v0-v3, and a
partition leader's batch of transactions, v4+: ``verify_only`` checks that partitions are in the
transaction, KIP-890 part 1; otherwise it adds them, the implicit addition of transaction version
2), AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions; what each answers is
documented in ``docs/internals/transactions.md``. The modules: :mod:`.runtime` (the transactions
served, writes, time), :mod:`.ending` (EndTxn, markers, completion, timeouts), :mod:`.metadata`
(one transaction and its epoch rules), :mod:`.states` (the state table), :mod:`.records`
(``__transaction_state`` layouts), :mod:`.admin` (DescribeTransactions, ListTransactions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import field

from kafka_wire import messages
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.txn.admin import describe, list_transactions
from kafka_wire.broker.txn.config import TxnConfig
from kafka_wire.broker.txn.effects import TxnEffect
from kafka_wire.broker.txn.ending import ABORT_CHECK_KEY, COMPLETE_RETRY_KEY, TxnEnding
from kafka_wire.broker.txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TxnMetadata,
    TxnTransit,
    TxnVersion,
)
from kafka_wire.broker.txn.runtime import TXN_TIMERS, TxnRuntime
from kafka_wire.broker.txn.states import TxnState
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: The APIs the coordinator answers.
TXN_API_KEYS = frozenset(
    {
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
        ApiKey.DESCRIBE_TRANSACTIONS,
        ApiKey.LIST_TRANSACTIONS,
    }
)
EXPIRE_KEY = (TXN_TIMERS, "expire-transactional-ids")


@dataclass(slots=True)
class _Batch:
    """A partition leader's AddPartitionsToTxn (v4+): answered once every transaction has its result."""

    token: object
    waiting: int
    results: list[messages.AddPartitionsToTxnResponseResult] = field(default_factory=list)


class TxnCoordinator:
    """See the module docstring."""

    def __init__(
        self,
        config: TxnConfig,
        timers: TimerQueue,
        *,
        finalized_version: Callable[[], TxnVersion],
        new_producer_id: Callable[[int], int | None],
        partition_exists: Callable[[str, int], bool],
        offsets_partition_of: Callable[[str], int],
    ) -> None:
        self.rt = TxnRuntime(
            config, timers, finalized_version=finalized_version, new_producer_id=new_producer_id
        )
        self.ending = TxnEnding(self.rt)
        self._partition_exists = partition_exists
        self._offsets_partition_of = offsets_partition_of
        self._started = False

    # -- partitions ------------------------------------------------------------------------------

    def use_partition_count(self, count: int) -> None:
        """Place transactional ids by ``count`` partitions (``__transaction_state``'s own)."""
        self.rt.num_partitions = count

    def partition_loading(self, partition: int, coordinator_epoch: int) -> None:
        self.rt.loading_started(partition, coordinator_epoch)

    def replay(self, partition: int, key: bytes, value: bytes | None) -> None:
        """One record of a loading partition; ``DecodeError`` (nothing applied) when unreadable."""
        from kafka_wire.broker.txn.records import UnknownTxnKey, read_key, read_value  # with the first load

        transactional_id = read_key(key)
        if isinstance(transactional_id, UnknownTxnKey):
            return
        metadata = None if value is None else read_value(transactional_id, value)
        self.rt.replay(partition, transactional_id, metadata)

    def partition_loaded(self, partition: int, now_ms: int) -> list[TxnEffect]:
        self._time(now_ms)
        entry = self.rt.loaded(partition)
        if entry is not None:
            self.ending.partition_loaded(entry.coordinator_epoch, list(entry.transactions.values()))
        return self.rt.take()

    def partition_lost(self, partition: int, now_ms: int) -> list[TxnEffect]:
        self._time(now_ms)
        self.rt.fail_writes_of(partition)
        self.rt.lost(partition)
        return self.rt.take()

    @property
    def served_partitions(self) -> frozenset[int]:
        return frozenset(self.rt.partitions)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return frozenset(self.rt.loading)

    def transaction(self, transactional_id: str) -> TxnMetadata | None:
        """A transaction served here (read-only use)."""
        return self.rt.lookup(transactional_id)[2]

    def transactions(self) -> Iterable[TxnMetadata]:
        return [md for _, md in self.rt.served()]

    # -- inputs ----------------------------------------------------------------------------------

    def handle(self, token: object, request: Message, api_version: int, now_ms: int) -> list[TxnEffect]:
        self._time(now_ms)
        if isinstance(request, messages.InitProducerIdRequest):
            self._init_producer_id(token, request, api_version)
        elif isinstance(request, messages.AddPartitionsToTxnRequest):
            self._add_partitions(token, request, api_version)
        elif isinstance(request, messages.AddOffsetsToTxnRequest):
            self._add_offsets(token, request, api_version)
        elif isinstance(request, messages.EndTxnRequest):
            self._end_txn(token, request, api_version)
        elif isinstance(request, messages.DescribeTransactionsRequest):
            self.rt.respond(
                token,
                messages.DescribeTransactionsResponse(
                    transaction_states=[describe(self.rt, t) for t in request.transactional_ids]
                ),
            )
        elif isinstance(request, messages.ListTransactionsRequest):
            self.rt.respond(token, list_transactions(self.rt, request))
        else:
            raise LocalProtocolError(f"the transaction coordinator does not answer {type(request).__name__}")
        return self.rt.take()

    def persisted(self, append_id: int, error_code: int, now_ms: int) -> list[TxnEffect]:
        self._time(now_ms)
        self.rt.persisted(append_id, error_code)
        return self.rt.take()

    def markers_written(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        partitions: frozenset[TopicPartition],
        now_ms: int,
    ) -> list[TxnEffect]:
        self._time(now_ms)
        self.ending.markers_written(transactional_id, coordinator_epoch, partitions)
        return self.rt.take()

    def markers_abandoned(self, transactional_id: str, coordinator_epoch: int) -> None:
        self.ending.markers_abandoned(transactional_id, coordinator_epoch)

    def markers_wanted(self, transactional_id: str, coordinator_epoch: int) -> bool:
        return self.ending.still_wanted(transactional_id, coordinator_epoch)

    def tick(self, now_ms: int) -> list[TxnEffect]:
        self._time(now_ms)
        timers, rt = self.rt.timers, self.rt
        while (due := timers.pop_due(now_ms, TXN_TIMERS)) is not None:
            if due.key == ABORT_CHECK_KEY:
                self.ending.abort_timed_out()
                rt.schedule(ABORT_CHECK_KEY, due.deadline_ms + rt.config.abort_timed_out_interval_ms)
            elif due.key == EXPIRE_KEY:
                self._expire_transactional_ids()
                rt.schedule(EXPIRE_KEY, due.deadline_ms + rt.config.remove_expired_interval_ms)
            elif due.key == COMPLETE_RETRY_KEY:
                self.ending.retry_completions()
        return rt.take()

    def _time(self, now_ms: int) -> None:
        rt = self.rt
        rt.now = max(rt.now, now_ms)
        if not self._started:
            self._started = True
            rt.schedule(ABORT_CHECK_KEY, rt.now + rt.config.abort_timed_out_interval_ms)
            rt.schedule(EXPIRE_KEY, rt.now + rt.config.remove_expired_interval_ms)

    # -- InitProducerId --------------------------------------------------------------------------

    def _init_producer_id(
        self, token: object, request: messages.InitProducerIdRequest, api_version: int
    ) -> None:
        rt = self.rt

        def answer(error: int, transit: TxnTransit | None = None) -> None:
            if error == ErrorCode.PRODUCER_FENCED and api_version < 4:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            if transit is None or error:
                rt.respond(
                    token,
                    messages.InitProducerIdResponse(
                        error_code=error, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH
                    ),
                )
            else:
                rt.respond(
                    token,
                    messages.InitProducerIdResponse(
                        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch
                    ),
                )

        if (request.producer_id == NO_PRODUCER_ID) != (request.producer_epoch == NO_PRODUCER_EPOCH):
            answer(ErrorCode.INVALID_REQUEST)  # KafkaApis checks this first
            return
        transactional_id = request.transactional_id or ""
        timeout_ms = request.transaction_timeout_ms
        expected = (
            None if request.producer_id == NO_PRODUCER_ID else (request.producer_id, request.producer_epoch)
        )
        if not transactional_id:
            answer(ErrorCode.INVALID_REQUEST)
            return
        if not 0 < timeout_ms <= rt.config.max_timeout_ms:
            answer(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
            return
        error, coordinator_epoch, md = rt.lookup(transactional_id)
        if error:
            answer(error)
            return
        if md is None:
            producer_id = rt.new_producer_id(rt.now)
            if producer_id is None:
                answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
                return
            md = rt.add(TxnMetadata(transactional_id, producer_id, timeout_ms=timeout_ms, update_ms=rt.now))
        decided = self._prepare_init(md, timeout_ms, expected)
        if isinstance(decided, int):
            answer(decided)
        elif decided.state is TxnState.PREPARE_EPOCH_FENCE:
            # The open transaction is aborted first; the producer retries once it is.
            md.pending = None
            self.ending.fence_and_abort(md, lambda e, _p, _e: answer(e or ErrorCode.CONCURRENT_TRANSACTIONS))
        else:
            rt.persist(transactional_id, coordinator_epoch, decided, lambda e: answer(e, decided))

    def _prepare_init(
        self, md: TxnMetadata, timeout_ms: int, expected: tuple[int, int] | None
    ) -> TxnTransit | int:
        """Kafka's ``prepareInitProducerIdTransit``."""
        if md.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None:
            producer_id, epoch = expected
            valid = (
                md.producer_epoch == NO_PRODUCER_EPOCH
                or producer_id == md.producer_id
                or (producer_id == md.prev_producer_id and epoch >= 32766)
            )
            if not valid:
                return ErrorCode.PRODUCER_FENCED
        state = md.state
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state is TxnState.ONGOING:
            return md.prepare_fence_epoch()
        if state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            raise LocalProtocolError(f"transaction {md.transactional_id} found in state {state.name}")
        if md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
            new_id = self.rt.new_producer_id(self.rt.now)
            if new_id is None:
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            return md.prepare_producer_id_rotation(
                new_id, timeout_ms, self.rt.now, record_last_epoch=expected is not None
            )
        transit = md.prepare_increment_epoch(
            timeout_ms, None if expected is None else expected[1], self.rt.now
        )
        return ErrorCode.PRODUCER_FENCED if transit is None else transit

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------

    def _add_partitions(
        self, token: object, request: messages.AddPartitionsToTxnRequest, api_version: int
    ) -> None:
        if api_version >= 4:
            batch = _Batch(token, len(request.transactions))
            if not batch.waiting:
                self.rt.respond(token, messages.AddPartitionsToTxnResponse())
            for txn in request.transactions:
                partitions = [(t.name, p) for t in txn.topics for p in t.partitions]

                def done(errors: dict[TopicPartition, int], txn_id: str = txn.transactional_id) -> None:
                    batch.results.append(
                        messages.AddPartitionsToTxnResponseResult(
                            transactional_id=txn_id, topic_results=_topic_results(errors)
                        )
                    )
                    batch.waiting -= 1
                    if not batch.waiting:
                        self.rt.respond(
                            batch.token,
                            messages.AddPartitionsToTxnResponse(results_by_transaction=batch.results),
                        )

                self._add_or_verify(
                    txn.transactional_id,
                    txn.producer_id,
                    txn.producer_epoch,
                    partitions,
                    verify_only=txn.verify_only,
                    client_version=TxnVersion.TV_2,
                    api_version=api_version,
                    done=done,
                )
            return
        partitions = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]

        def answer(errors: dict[TopicPartition, int]) -> None:
            self.rt.respond(
                token,
                messages.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_topic_results(errors)),
            )

        self._add_or_verify(
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            partitions,
            verify_only=False,
            client_version=TxnVersion.TV_0,
            api_version=api_version,
            done=answer,
        )

    def _add_or_verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        *,
        verify_only: bool,
        client_version: TxnVersion,
        api_version: int,
        done: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        """KafkaApis' checks (a partition not in the metadata fails the whole transaction), then
        the coordinator's add or verification."""
        unknown = [tp for tp in partitions if not self._partition_exists(*tp)]
        if unknown:
            done(
                {
                    tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in partitions
                }
            )
            return
        if verify_only:
            done(self._verify(transactional_id, producer_id, producer_epoch, partitions))
            return

        def finish(error: int) -> None:
            if error == ErrorCode.PRODUCER_FENCED and api_version < 2:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            done(dict.fromkeys(partitions, error))

        self._add(
            transactional_id, producer_id, producer_epoch, frozenset(partitions), client_version, finish
        )

    def _add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        client_version: TxnVersion,
        finish: Callable[[int], None],
    ) -> None:
        """Kafka's ``handleAddPartitionsToTransaction``."""
        rt = self.rt
        if not transactional_id:
            finish(ErrorCode.INVALID_REQUEST)
            return
        error, coordinator_epoch, md = rt.lookup(transactional_id)
        if not error:
            if md is None:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif md.pending is not None:
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            elif md.producer_id != producer_id:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif md.producer_epoch != producer_epoch:
                error = ErrorCode.PRODUCER_FENCED
            elif md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            elif md.state is TxnState.ONGOING and partitions <= md.partitions:
                finish(ErrorCode.NONE)  # already in the transaction: nothing to write
                return
        if error or md is None:
            finish(error)
            return
        rt.persist(
            transactional_id,
            coordinator_epoch,
            md.prepare_add_partitions(partitions, rt.now, client_version),
            finish,
        )

    def _verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Kafka's ``handleVerifyPartitionsInTransaction`` (KIP-890 part 1)."""
        if not transactional_id:
            return dict.fromkeys(partitions, ErrorCode.INVALID_REQUEST)
        error, _, md = self.rt.lookup(transactional_id)
        if not error:
            if md is None or md.producer_id != producer_id:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif md.producer_epoch != producer_epoch:
                error = ErrorCode.PRODUCER_FENCED
            elif md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error or md is None:
            return dict.fromkeys(partitions, error)
        return {
            tp: ErrorCode.NONE if tp in md.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    def _add_offsets(self, token: object, request: messages.AddOffsetsToTxnRequest, api_version: int) -> None:
        partition = ("__consumer_offsets", self._offsets_partition_of(request.group_id))

        def finish(error: int) -> None:
            if error == ErrorCode.PRODUCER_FENCED and api_version < 2:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            self.rt.respond(token, messages.AddOffsetsToTxnResponse(error_code=error))

        self._add(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            frozenset({partition}),
            TxnVersion.TV_0,
            finish,
        )

    # -- EndTxn ----------------------------------------------------------------------------------

    def _end_txn(self, token: object, request: messages.EndTxnRequest, api_version: int) -> None:
        def reply(error: int, producer_id: int, producer_epoch: int) -> None:
            if error == ErrorCode.PRODUCER_FENCED and api_version < 2:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            self.rt.respond(
                token,
                messages.EndTxnResponse(
                    error_code=error, producer_id=producer_id, producer_epoch=producer_epoch
                ),
            )

        version = TxnVersion.TV_2 if api_version > 4 else TxnVersion.TV_0
        self.ending.end(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            version,
            reply,
        )

    # -- expiration ------------------------------------------------------------------------------

    def _expire_transactional_ids(self) -> None:
        """Tombstone every transactional id idle past ``transactional.id.expiration.ms``."""
        rt = self.rt
        horizon = rt.now - rt.config.transactional_id_expiration_ms
        for coordinator_epoch, md in list(rt.served()):
            if md.pending is None and md.state.expiration_allowed and md.update_ms <= horizon:
                rt.persist(md.transactional_id, coordinator_epoch, md.prepare_dead(), _expired)


def _expired(error: int) -> None:
    """An expiration's outcome needs no answer (a failed one is tried again at the next round)."""


def _topic_results(errors: dict[TopicPartition, int]) -> list[messages.AddPartitionsToTxnResponseTopicResult]:
    by_topic: dict[str, list[messages.AddPartitionsToTxnResponsePartitionResult]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(
            messages.AddPartitionsToTxnResponsePartitionResult(
                partition_index=partition, partition_error_code=error
            )
        )
    return [
        messages.AddPartitionsToTxnResponseTopicResult(name=t, results_by_partition=r)
        for t, r in by_topic.items()
    ]
