"""The transaction coordinator alone: the state table, InitProducerId, adding partitions, ending
under transaction versions 1 and 2, fencing, timeouts, failed writes, reloading, admin."""

from __future__ import annotations

import pytest

from kafka_wire.broker.txn.coordinator import TxnCoordinator
from kafka_wire.broker.txn.metadata import TxnVersion
from kafka_wire.broker.txn.states import TXN_TRANSITIONS, TxnInput, TxnState, transition
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnRequestTransaction,
    AddPartitionsToTxnResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    ErrorCode,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from tests.broker.txn.harness import COORDINATOR_EPOCH, Harness

E = ErrorCode


@pytest.mark.parametrize("state", list(TxnState))
@pytest.mark.parametrize("move", list(TxnInput))
def test_every_state_and_input_pair(state: TxnState, move: TxnInput) -> None:
    if (state, move) in TXN_TRANSITIONS:
        assert transition(state, move) is TXN_TRANSITIONS[state, move]
    else:
        with pytest.raises(LocalProtocolError):
            transition(state, move)


def test_dead_is_final_and_names_are_kafkas() -> None:
    assert not [move for (state, move) in TXN_TRANSITIONS if state is TxnState.DEAD]
    assert TxnState.from_name("PrepareEpochFence") is TxnState.PREPARE_EPOCH_FENCE
    assert [s.value for s in TxnState] == list(range(8))


# -- helpers ------------------------------------------------------------------------------------


def init(h: Harness, tid: str = "t", *, timeout_ms: int = 60_000, version: int = 5) -> InitProducerIdResponse:
    answer = h.send(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout_ms), version)
    assert isinstance(answer, InitProducerIdResponse)
    return answer


def add(
    h: Harness, pid: int, epoch: int, *partitions: tuple[str, int], tid: str = "t", version: int = 3
) -> int:
    topics = [AddPartitionsToTxnRequestTopic(name=t, partitions=[p]) for t, p in partitions]
    answer = h.send(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=topics,
        ),
        version,
    )
    assert isinstance(answer, AddPartitionsToTxnResponse)
    codes = {
        r.partition_error_code for t in answer.results_by_topic_v3_and_below for r in t.results_by_partition
    }
    assert len(codes) == 1
    return codes.pop()


def add_by_broker(
    h: Harness, pid: int, epoch: int, *partitions: tuple[str, int], verify_only: bool = False
) -> dict[tuple[str, int], int]:
    answer = h.send(
        AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnRequestTransaction(
                    transactional_id="t",
                    producer_id=pid,
                    producer_epoch=epoch,
                    verify_only=verify_only,
                    topics=[AddPartitionsToTxnRequestTopic(name=t, partitions=[p]) for t, p in partitions],
                )
            ]
        ),
        5,
    )
    assert isinstance(answer, AddPartitionsToTxnResponse)
    [result] = answer.results_by_transaction
    return {
        (t.name, r.partition_index): r.partition_error_code
        for t in result.topic_results
        for r in t.results_by_partition
    }


def end(h: Harness, pid: int, epoch: int, *, commit: bool = True, version: int = 5) -> EndTxnResponse:
    answer = h.send(
        EndTxnRequest(transactional_id="t", producer_id=pid, producer_epoch=epoch, committed=commit), version
    )
    assert isinstance(answer, EndTxnResponse)
    return answer


def state(h: Harness, tid: str = "t") -> TxnState:
    md = h.coordinator.transaction(tid)
    assert md is not None
    return md.state


# -- the happy paths ------------------------------------------------------------------------------


def test_transaction_version_1_commit_keeps_the_epoch() -> None:
    h = Harness(version=TxnVersion.TV_1)
    pid = init(h).producer_id
    assert add(h, pid, 0, ("a", 0), ("b", 1)) == E.NONE
    assert state(h) is TxnState.ONGOING
    answer = end(h, pid, 0, version=4)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (E.NONE, -1, -1)
    [markers] = h.markers
    assert (markers.producer_epoch, markers.commit, markers.coordinator_epoch) == (0, True, COORDINATOR_EPOCH)
    assert markers.partitions == {("a", 0), ("b", 1)}
    assert state(h) is TxnState.COMPLETE_COMMIT
    assert end(h, pid, 0, version=4).error_code == E.NONE  # a retry
    assert end(h, pid, 0, commit=False, version=4).error_code == E.INVALID_TXN_STATE


def test_transaction_version_2_bumps_the_epoch_at_every_end() -> None:
    h = Harness()
    pid = init(h).producer_id
    assert add_by_broker(h, pid, 0, ("a", 0)) == {("a", 0): E.NONE}
    answer = end(h, pid, 0)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (E.NONE, pid, 1)
    assert h.markers[-1].producer_epoch == 1
    retry = end(h, pid, 0)
    assert (retry.error_code, retry.producer_epoch) == (E.NONE, 1)
    assert add_by_broker(h, pid, 1, ("a", 0)) == {("a", 0): E.NONE}
    assert end(h, pid, 1, commit=False).producer_epoch == 2
    assert state(h) is TxnState.COMPLETE_ABORT


def test_transaction_version_2_aborts_an_empty_transaction() -> None:
    h = Harness()
    pid = init(h).producer_id
    answer = end(h, pid, 0, commit=False)
    assert (answer.error_code, answer.producer_epoch) == (E.NONE, 1)
    assert state(h) is TxnState.COMPLETE_ABORT
    assert not h.markers
    assert end(h, pid, 1, commit=True).error_code == E.INVALID_TXN_STATE


def test_delayed_end_of_a_finished_transaction_kafka_17754() -> None:
    """A delayed EndTxn(commit) of transaction 1 arrives while transaction 2 is open. Under TV1
    nothing tells the two apart and transaction 2 is committed with it; under TV2 the epoch does."""
    for version, end_version, expected in (
        (TxnVersion.TV_1, 4, E.NONE),
        (TxnVersion.TV_2, 5, E.PRODUCER_FENCED),
    ):
        h = Harness(version=version)
        pid = init(h).producer_id
        assert add(h, pid, 0, ("a", 0)) == E.NONE
        first = end(h, pid, 0, version=end_version)
        epoch = first.producer_epoch if version.bumps_epoch else 0
        assert add(h, pid, epoch, ("a", 0)) == E.NONE  # transaction 2
        # a duplicate of transaction 1's EndTxn
        assert end(h, pid, 0, version=end_version).error_code == expected
        assert state(h) is (TxnState.COMPLETE_COMMIT if expected == E.NONE else TxnState.ONGOING)


def test_concurrent_transactions_while_markers_are_written() -> None:
    h = Harness(hold_markers=True)
    pid = init(h).producer_id
    add_by_broker(h, pid, 0, ("a", 0))
    assert end(h, pid, 0).error_code == E.NONE
    assert state(h) is TxnState.PREPARE_COMMIT
    assert add_by_broker(h, pid, 1, ("a", 0)) == {("a", 0): E.CONCURRENT_TRANSACTIONS}
    assert init(h).error_code == E.CONCURRENT_TRANSACTIONS
    assert end(h, pid, 0).error_code == E.CONCURRENT_TRANSACTIONS  # the same end, retried
    assert end(h, pid, 1).error_code == E.PRODUCER_FENCED  # no transaction of epoch 1 yet
    h.release()
    assert state(h) is TxnState.COMPLETE_COMMIT
    assert add_by_broker(h, pid, 1, ("a", 0)) == {("a", 0): E.NONE}


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    h = Harness()
    pid = init(h).producer_id
    answer = h.send(
        AddOffsetsToTxnRequest(transactional_id="t", producer_id=pid, producer_epoch=0, group_id="g"), 4
    )
    assert isinstance(answer, AddOffsetsToTxnResponse) and answer.error_code == E.NONE
    md = h.coordinator.transaction("t")
    assert md is not None and md.partitions == {("__consumer_offsets", 0)}


def test_verification_of_partitions() -> None:
    h = Harness()
    pid = init(h).producer_id
    add_by_broker(h, pid, 0, ("a", 0))
    assert add_by_broker(h, pid, 0, ("a", 0), ("a", 1), verify_only=True) == {
        ("a", 0): E.NONE,
        ("a", 1): E.TRANSACTION_ABORTABLE,
    }
    assert add_by_broker(h, pid, 9, ("a", 0), verify_only=True) == {("a", 0): E.PRODUCER_FENCED}
    assert add_by_broker(h, pid + 1, 0, ("a", 0), verify_only=True) == {
        ("a", 0): E.INVALID_PRODUCER_ID_MAPPING
    }
    assert add_by_broker(h, pid, 0, ("missing", 0), ("a", 0)) == {
        ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("a", 0): E.OPERATION_NOT_ATTEMPTED,
    }


# -- fencing and timeouts -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [TxnVersion.TV_1, TxnVersion.TV_2])
def test_a_new_producer_fences_the_open_transaction(version: TxnVersion) -> None:
    h = Harness(version=version)
    pid = init(h).producer_id
    assert add(h, pid, 0, ("a", 0)) == E.NONE
    assert init(h).error_code == E.CONCURRENT_TRANSACTIONS
    assert state(h) is TxnState.COMPLETE_ABORT
    assert not h.markers[-1].commit
    again = init(h)
    assert again.error_code == E.NONE and again.producer_id == pid
    assert again.producer_epoch > h.markers[-1].producer_epoch >= 1
    # The zombie's requests are fenced.
    assert add(h, pid, 0, ("a", 0)) == E.PRODUCER_FENCED
    assert end(h, pid, 0, version=4).error_code == E.PRODUCER_FENCED
    assert end(h, pid, 0, version=1).error_code == E.INVALID_PRODUCER_EPOCH


@pytest.mark.parametrize("version", [TxnVersion.TV_1, TxnVersion.TV_2])
def test_a_transaction_past_its_timeout_is_aborted(version: TxnVersion) -> None:
    h = Harness(version=version)
    pid = init(h, timeout_ms=5_000).producer_id
    add(h, pid, 0, ("a", 0))
    h.tick(h.now + 6_000)
    assert state(h) is TxnState.ONGOING  # checked every 10 s
    h.tick(h.now + 10_000)
    assert state(h) is TxnState.COMPLETE_ABORT
    md = h.coordinator.transaction("t")
    assert md is not None and md.producer_epoch >= 1
    assert end(h, pid, 0, version=4).error_code == E.PRODUCER_FENCED


def test_kip_360_a_producer_that_names_its_epoch_keeps_its_id() -> None:
    h = Harness()
    first = init(h)
    again = h.send(
        InitProducerIdRequest(
            transactional_id="t",
            transaction_timeout_ms=60_000,
            producer_id=first.producer_id,
            producer_epoch=0,
        ),
        5,
    )
    assert isinstance(again, InitProducerIdResponse)
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, 1)
    stale = h.send(
        InitProducerIdRequest(
            transactional_id="t",
            transaction_timeout_ms=60_000,
            producer_id=first.producer_id + 7,
            producer_epoch=0,
        ),
        3,
    )
    assert isinstance(stale, InitProducerIdResponse) and stale.error_code == E.INVALID_PRODUCER_EPOCH


# -- bad input ------------------------------------------------------------------------------------


def test_bad_requests() -> None:
    h = Harness()
    assert init(h, "").error_code == E.INVALID_REQUEST
    assert init(h, timeout_ms=900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert init(h, timeout_ms=0).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert add(h, 5, 0, ("a", 0), tid="unknown") == E.INVALID_PRODUCER_ID_MAPPING
    pid = init(h).producer_id
    assert end(h, pid, 0).error_code == E.INVALID_TXN_STATE  # nothing open
    assert end(h, pid + 1, 0).error_code == E.INVALID_PRODUCER_ID_MAPPING


def test_an_id_of_another_partition_is_not_coordinated_here() -> None:
    h = Harness()
    h.coordinator.use_partition_count(50)
    other = next(t for t in (f"t{i}" for i in range(100)) if h.coordinator.rt.partition_of(t) != 0)
    assert init(h, other).error_code == E.NOT_COORDINATOR
    h.coordinator.partition_loading(h.coordinator.rt.partition_of(other), 1)
    assert init(h, other).error_code == E.COORDINATOR_LOAD_IN_PROGRESS


def test_a_failed_write_changes_nothing() -> None:
    h = Harness()
    pid = init(h).producer_id
    h.write_error = E.NOT_ENOUGH_REPLICAS
    assert add(h, pid, 0, ("a", 0)) == E.COORDINATOR_NOT_AVAILABLE
    assert state(h) is TxnState.EMPTY
    h.write_error = E.NOT_LEADER_OR_FOLLOWER
    assert add(h, pid, 0, ("a", 0)) == E.NOT_COORDINATOR
    h.write_error = 0
    assert add(h, pid, 0, ("a", 0)) == E.NONE


# -- reloading --------------------------------------------------------------------------------------


def test_a_reloaded_coordinator_finishes_what_was_prepared() -> None:
    h = Harness(hold_markers=True)
    pid = init(h).producer_id
    add_by_broker(h, pid, 0, ("a", 0), ("b", 0))
    end(h, pid, 0)
    assert state(h) is TxnState.PREPARE_COMMIT
    fresh = Harness()
    coordinator: TxnCoordinator = fresh.coordinator
    coordinator.partition_lost(0, fresh.now)
    coordinator.partition_loading(0, COORDINATOR_EPOCH + 1)
    for key, value in h.records:
        coordinator.replay(0, key, value)
    fresh.apply(coordinator.partition_loaded(0, fresh.now))
    [markers] = fresh.markers
    assert (markers.commit, markers.producer_epoch, markers.coordinator_epoch) == (
        True,
        1,
        COORDINATOR_EPOCH + 1,
    )
    assert state(fresh) is TxnState.COMPLETE_COMMIT
    md = coordinator.transaction("t")
    assert md is not None and (md.producer_id, md.producer_epoch) == (pid, 1)


# -- admin ------------------------------------------------------------------------------------------


def test_describe_and_list() -> None:
    h = Harness()
    pid = init(h).producer_id
    add_by_broker(h, pid, 0, ("b", 2), ("a", 1))
    init(h, "u")
    answer = h.send(DescribeTransactionsRequest(transactional_ids=["t", "nope", ""]), 0)
    assert isinstance(answer, DescribeTransactionsResponse)
    t, nope, empty = answer.transaction_states
    assert (t.transaction_state, t.producer_id, [(d.topic, d.partitions) for d in t.topics]) == (
        "Ongoing",
        pid,
        [("a", [1]), ("b", [2])],
    )
    assert (nope.error_code, empty.error_code) == (E.TRANSACTIONAL_ID_NOT_FOUND, E.INVALID_REQUEST)
    listed = h.send(ListTransactionsRequest(state_filters=["Ongoing", "Bogus"]), 1)
    assert isinstance(listed, ListTransactionsResponse)
    assert [s.transactional_id for s in listed.transaction_states] == ["t"]
    assert listed.unknown_state_filters == ["Bogus"]
    h.now += 5_000
    old = h.send(ListTransactionsRequest(state_filters=["Ongoing"], duration_filter=4_000), 1)
    young = h.send(ListTransactionsRequest(state_filters=["Ongoing"], duration_filter=6_000), 1)
    assert isinstance(old, ListTransactionsResponse) and isinstance(young, ListTransactionsResponse)
    assert ([s.transactional_id for s in old.transaction_states], young.transaction_states) == (["t"], [])
    by_pattern = h.send(ListTransactionsRequest(transactional_id_pattern="u|v"), 2)
    assert isinstance(by_pattern, ListTransactionsResponse)
    assert [s.transactional_id for s in by_pattern.transaction_states] == ["u"]
    bad = h.send(ListTransactionsRequest(transactional_id_pattern="("), 2)
    assert isinstance(bad, ListTransactionsResponse) and bad.error_code == E.INVALID_REGULAR_EXPRESSION
