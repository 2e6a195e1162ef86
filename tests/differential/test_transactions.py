"""Transactions: FindCoordinator for a transactional id, InitProducerId (a transactional id, a
timeout over the maximum), AddPartitionsToTxn (v3, the client's form: unknown topics, unknown
producers, wrong epochs), AddOffsetsToTxn, transactional Produce, EndTxn (abort under transaction
version 1's requests, commit under version 2's: Produce v12 adds the partition, EndTxn v5 bumps the
epoch), DescribeTransactions and ListTransactions at each step, and what a read_committed Fetch
and ListOffsets see of open and aborted transactions (the last stable offset, the aborted
transactions listed). Refusals: a transactional Produce to a partition never added, a
TxnOffsetCommit naming an unknown member, an admin's ABORT marker for an unknown producer.

Producer ids are each broker's own (:data:`TXN_RULES`); each broker gets its own in the requests
that name one (``check_each``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, Final

import pytest

from kafka_wire.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    ErrorCode,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListTransactionsRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestWritableTxnMarker,
    WriteTxnMarkersRequestWritableTxnMarkerTopic,
)
from tests.differential.compare import Rule, Side, clock
from tests.differential.pair import Pair, Peer, poll
from tests.differential.records import RECORDS_RULES, batch, fetch, now_ms, produce
from tests.differential.test_groups import coordinate


def _producer_id(value: Any, side: Side) -> Any:
    return value if value < 0 else "<producer id>"


#: Producer ids are each broker's own; a transaction's start is read from each broker's clock.
TXN_RULES: Final = (
    *RECORDS_RULES,
    Rule("producer_id", _producer_id, "each broker hands out its own ids"),
    Rule("*.producer_id", _producer_id, "each broker hands out its own ids"),
    Rule("*.transaction_start_time_ms", clock, "each broker's clock"),
)


def _marker_record(value: Any, side: Side) -> Any:
    """A marker's record (as the comparison shows it, a tuple's repr) with its timestamp taken as
    a time."""
    offset, _, *rest = ast.literal_eval(value)
    return repr((offset, "<time>", *rest))


#: A transaction's marker (the second batch of the partitions read here) is stamped with the time
#: each coordinator wrote it.
MARKER_RULES: Final = (
    *TXN_RULES,
    Rule("*records.batches[1].base_timestamp", clock, "the marker's time, each broker's clock"),
    Rule("*records.batches[1].records[0]", _marker_record, "the marker's time, each broker's clock"),
)


class Producer:
    """A transactional producer's id and epoch on each broker."""

    def __init__(self, pair: Pair, transactional_id: str) -> None:
        self.pair = pair
        self.transactional_id = transactional_id
        self.ids: dict[str, tuple[int, int]] = {}

    def init(
        self, version: int, timeout_ms: int = 60_000
    ) -> tuple[InitProducerIdResponse, InitProducerIdResponse]:
        """InitProducerId on both (asked again while the coordinator loads or ends a transaction),
        compared; the ids granted are kept."""
        request = InitProducerIdRequest(
            transactional_id=self.transactional_id, transaction_timeout_ms=timeout_ms
        )
        for peer in (self.pair.kafka, self.pair.kafka_wire):
            settle(peer, request, version)
        kafka, wire = self.pair.check(request, version, TXN_RULES)
        for peer, answer in ((self.pair.kafka, kafka), (self.pair.kafka_wire, wire)):
            if answer.error_code == ErrorCode.NONE:
                self.ids[peer.side.name] = (answer.producer_id, answer.producer_epoch)
        return kafka, wire

    def produce(self, topic: str, count: int, at: int) -> Callable[[Peer], ProduceRequest]:
        """A Produce of one transactional batch of ``count`` records (each broker's producer id)."""

        def make(peer: Peer) -> ProduceRequest:
            data = batch(
                count,
                producer_id=self.pid(peer),
                epoch=self.epoch(peer),
                sequence=0,
                timestamp_ms=at,
                transactional=True,
            )
            request = produce(topic, data)
            request.transactional_id = self.transactional_id
            return request

        return make

    def pid(self, peer: Peer) -> int:
        return self.ids[peer.side.name][0]

    def epoch(self, peer: Peer) -> int:
        return self.ids[peer.side.name][1]


#: Errors a coordinator answers while it is not ready yet (loading, or still ending a transaction).
NOT_YET: Final = frozenset(
    {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.CONCURRENT_TRANSACTIONS}
)


def settle(peer: Peer, request: InitProducerIdRequest, version: int) -> None:
    """Ask until the answer is no longer a "not yet" error (:data:`NOT_YET`)."""
    poll(
        f"{peer.side.name}'s transaction coordinator",
        lambda: peer.request(request, version).error_code not in NOT_YET,
        timeout_s=60,
    )


@pytest.fixture(scope="module")
def coordinators(pair_module: Pair) -> None:
    """Both brokers coordinate transactions (their ``__transaction_state`` exists and is loaded)."""
    for peer in (pair_module.kafka, pair_module.kafka_wire):

        def found(peer: Peer = peer) -> bool:
            return (
                peer.request(FindCoordinatorRequest(key="tx-probe", key_type=1), 3).error_code
                == ErrorCode.NONE
            )

        poll(f"{peer.side.name} to coordinate transactions", found, timeout_s=90)
        request = InitProducerIdRequest(transactional_id="tx-probe", transaction_timeout_ms=60_000)
        settle(peer, request, 4)


def describe(pair: Pair, *ids: str) -> tuple[DescribeTransactionsResponse, DescribeTransactionsResponse]:
    return pair.check(DescribeTransactionsRequest(transactional_ids=list(ids)), 0, TXN_RULES)


def wait_for_state(pair: Pair, transactional_id: str, state: str) -> None:
    request = DescribeTransactionsRequest(transactional_ids=[transactional_id])
    for peer in (pair.kafka, pair.kafka_wire):

        def reached(peer: Peer = peer) -> bool:
            return peer.request(request, 0).transaction_states[0].transaction_state == state

        poll(f"{peer.side.name}'s {transactional_id} to be {state}", reached, timeout_s=30)


def add_partitions(
    producer: Producer, topics: dict[str, list[int]], *, pid: int | None = None, epoch_delta: int = 0
) -> Callable[[Peer], AddPartitionsToTxnRequest]:
    def make(peer: Peer) -> AddPartitionsToTxnRequest:
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=producer.transactional_id,
            v3_and_below_producer_id=producer.pid(peer) if pid is None else pid,
            v3_and_below_producer_epoch=producer.epoch(peer) + epoch_delta,
            v3_and_below_topics=[
                AddPartitionsToTxnRequestTopic(name=t, partitions=ps) for t, ps in topics.items()
            ],
        )

    return make


def list_offsets(topic: str, isolation_level: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequestTopic(
                name=topic, partitions=[ListOffsetsRequestPartition(partition_index=0, timestamp=-1)]
            )
        ],
    )


def test_init_producer_id(pair: Pair, coordinators: None) -> None:
    """A transactional id's first producer, the same id again (the epoch bumped), a timeout over
    ``transaction.max.timeout.ms``."""
    producer = Producer(pair, "tx-init")
    kafka, _ = producer.init(4)
    assert kafka.error_code == ErrorCode.NONE
    producer.init(5)
    kafka, _ = producer.init(5, timeout_ms=900_001)
    assert kafka.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    describe(pair, "tx-init", "tx-never-seen")


def test_abort_under_version_1(pair: Pair, coordinators: None) -> None:
    """The client form of transaction version 1: partitions added by AddPartitionsToTxn (v3),
    offsets by AddOffsetsToTxn, a Produce v9, EndTxn v4 aborting; what read_committed reads."""
    topic = "tx-v1"
    pair.create_topic(topic)
    producer = Producer(pair, "tx-v1")
    producer.init(4)
    pair.check_each(add_partitions(producer, {topic: [0], "tx-no-such-topic": [0]}), 3, TXN_RULES)
    pair.check_each(add_partitions(producer, {topic: [0]}, pid=123_456_789), 3, TXN_RULES)
    pair.check_each(add_partitions(producer, {topic: [0]}, epoch_delta=1), 3, TXN_RULES)
    kafka, _ = pair.check_each(add_partitions(producer, {topic: [0]}), 3, TXN_RULES)
    assert (
        kafka.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.NONE
    )
    describe(pair, "tx-v1")
    at = now_ms()

    def offsets(peer: Peer) -> AddOffsetsToTxnRequest:
        return AddOffsetsToTxnRequest(
            transactional_id="tx-v1",
            producer_id=producer.pid(peer),
            producer_epoch=producer.epoch(peer),
            group_id="tx-v1-group",
        )

    pair.check_each(offsets, 3, TXN_RULES)

    kafka_produced, _ = pair.check_each(producer.produce(topic, 3, at), 9, TXN_RULES)
    assert kafka_produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    # Open: read_committed stops at the transaction's first offset.
    pair.check(fetch(topic, [(0, 0)], isolation_level=1), 12, TXN_RULES)
    pair.check(fetch(topic, [(0, 0)]), 12, TXN_RULES)
    pair.check(list_offsets(topic, 1), 7, TXN_RULES)
    pair.check_each(
        lambda peer: ListTransactionsRequest(
            state_filters=["Ongoing"], producer_id_filters=[producer.pid(peer)]
        ),
        1,
        TXN_RULES,
    )

    def end(peer: Peer, epoch_delta: int = 0) -> EndTxnRequest:
        return EndTxnRequest(
            transactional_id="tx-v1",
            producer_id=producer.pid(peer),
            producer_epoch=producer.epoch(peer) + epoch_delta,
            committed=False,
        )

    pair.check_each(lambda peer: end(peer, 1), 4, TXN_RULES)  # an epoch the coordinator never gave
    kafka_ended, _ = pair.check_each(end, 4, TXN_RULES)
    assert kafka_ended.error_code == ErrorCode.NONE
    wait_for_state(pair, "tx-v1", "CompleteAbort")
    describe(pair, "tx-v1")
    # Aborted: read_committed reads past it, told of the aborted transaction; the marker is read too.
    pair.check(fetch(topic, [(0, 0)], isolation_level=1), 12, MARKER_RULES)
    pair.check(list_offsets(topic, 1), 7, TXN_RULES)
    pair.check_each(end, 4, TXN_RULES)  # the same abort again: done already


def test_commit_under_version_2(pair: Pair, coordinators: None) -> None:
    """Transaction version 2: Produce v12 adds its partition to the transaction itself, EndTxn v5
    commits and answers the bumped epoch."""
    topic = "tx-v2"
    pair.create_topic(topic)
    producer = Producer(pair, "tx-v2")
    producer.init(5)
    at = now_ms()

    kafka_produced, _ = pair.check_each(producer.produce(topic, 2, at), 12, TXN_RULES)
    assert kafka_produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    describe(pair, "tx-v2")

    def end(peer: Peer) -> EndTxnRequest:
        return EndTxnRequest(
            transactional_id="tx-v2",
            producer_id=producer.pid(peer),
            producer_epoch=producer.epoch(peer),
            committed=True,
        )

    kafka_ended, _ = pair.check_each(end, 5, TXN_RULES)
    assert (kafka_ended.error_code, kafka_ended.producer_epoch) == (
        ErrorCode.NONE,
        producer.epoch(pair.kafka) + 1,
    )
    wait_for_state(pair, "tx-v2", "CompleteCommit")
    describe(pair, "tx-v2")
    pair.check(fetch(topic, [(0, 0)], isolation_level=1), 12, MARKER_RULES)
    pair.check(list_offsets(topic, 1), 7, TXN_RULES)
    pair.check_each(end, 5, TXN_RULES)  # the old epoch's commit again: a retry of the one that ended


def test_refusals(pair: Pair, coordinators: None) -> None:
    """A transactional Produce to a partition never added (transaction version 1's requests), a
    TxnOffsetCommit naming a member the group does not have, an admin's ABORT marker for a
    producer the partition never saw (KIP-664)."""
    topic = "tx-bad"
    pair.create_topic(topic)
    producer = Producer(pair, "tx-bad")
    producer.init(4)
    at = now_ms()

    pair.check_each(producer.produce(topic, 1, at), 9, TXN_RULES)

    def offsets(peer: Peer) -> AddOffsetsToTxnRequest:
        return AddOffsetsToTxnRequest(
            transactional_id="tx-bad",
            producer_id=producer.pid(peer),
            producer_epoch=producer.epoch(peer),
            group_id="tx-bad-group",
        )

    pair.check_each(offsets, 3, TXN_RULES)
    coordinate(pair, "tx-bad-group")  # both coordinate the group (their offsets topic is loaded)

    def commit(peer: Peer) -> TxnOffsetCommitRequest:
        return TxnOffsetCommitRequest(
            transactional_id="tx-bad",
            group_id="tx-bad-group",
            producer_id=producer.pid(peer),
            producer_epoch=producer.epoch(peer),
            generation_id_or_member_epoch=7,
            member_id="ghost",
            topics=[
                TxnOffsetCommitRequestTopic(
                    name=topic,
                    partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)],
                )
            ],
        )

    pair.check_each(commit, 3, TXN_RULES)
    marker = WriteTxnMarkersRequest(
        markers=[
            WriteTxnMarkersRequestWritableTxnMarker(
                producer_id=424_242,
                producer_epoch=0,
                transaction_result=False,
                topics=[WriteTxnMarkersRequestWritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                coordinator_epoch=0,
            )
        ]
    )
    pair.check(marker, 1, TXN_RULES)
    pair.check(list_offsets(topic, 0), 7, TXN_RULES)
