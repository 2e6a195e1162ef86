"""The read_committed anomalies of the simulator's checker (``sim/checker/txns.py``), each on a
hand-made History of transactional sends, transaction ends and read_committed polls."""

from __future__ import annotations

from kafka_wire.sim.checker.ends import EndReport
from kafka_wire.sim.checker.txns import check_txns
from kafka_wire.sim.history import History, Op, OpKind, OpType


def send(history: History, value: str, txn: str, offset: int, *, at: int = 0, partition: int = 0) -> None:
    base = Op(
        at, "txn-a", OpType.INVOKE, OpKind.SEND, topic="t", partition=partition, value=value, acks=-1, txn=txn
    )
    history.add(base)
    history.add(
        Op(
            at + 1,
            "txn-a",
            OpType.OK,
            OpKind.SEND,
            topic="t",
            partition=partition,
            value=value,
            offset=offset,
            acks=-1,
            txn=txn,
        )
    )


def end(history: History, txn: str, outcome: str, *, at: int, kind: OpType = OpType.OK) -> None:
    history.add(Op(at, "txn-a", OpType.INVOKE, OpKind.TXN, value=outcome, txn=txn))
    history.add(Op(at + 1, "txn-a", kind, OpKind.TXN, value=outcome if kind is OpType.OK else "", txn=txn))


def poll(history: History, at: int, *records: tuple[int, str], partition: int = 0) -> None:
    history.add(
        Op(
            at,
            "consumer-rc",
            OpType.OK,
            OpKind.POLL,
            topic="t",
            partition=partition,
            records=records,
            read_committed=True,
        )
    )


def found(history: History) -> list[str]:
    report = EndReport()
    check_txns(history, {}, report)
    return sorted(v.anomaly for v in report.violations)


def test_committed_records_read_in_order_are_clean() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    send(history, "a-2", "a.1", 1)
    end(history, "a.1", "commit", at=10)
    send(history, "a-3", "a.2", 3)  # offset 2 is the marker
    end(history, "a.2", "commit", at=20)
    poll(history, 30, (0, "a-1"), (1, "a-2"), (3, "a-3"))
    assert found(history) == []


def test_an_aborted_transactions_record_read_is_g1a() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    end(history, "a.1", "abort", at=10)
    poll(history, 30, (0, "a-1"))
    assert found(history) == ["G1a"]


def test_a_fenced_transactions_record_read_is_g1a() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    end(history, "a.1", "commit", at=10, kind=OpType.FAIL)
    poll(history, 30, (0, "a-1"))
    assert found(history) == ["G1a"]


def test_a_record_read_before_its_commit_was_asked_for_is_a_precommitted_read() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    poll(history, 5, (0, "a-1"))
    end(history, "a.1", "commit", at=10)
    assert found(history) == ["precommitted-read"]


def test_a_committed_record_read_past_is_a_lost_write_and_a_poll_skip() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    send(history, "a-2", "a.1", 1)
    send(history, "a-3", "a.1", 2)
    end(history, "a.1", "commit", at=10)
    poll(history, 30, (0, "a-1"), (2, "a-3"))
    assert found(history) == ["lost-write", "poll-skip"]


def test_skipping_an_aborted_transaction_is_no_poll_skip_and_an_unknown_end_is_no_lost_write() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    end(history, "a.1", "abort", at=10)
    send(history, "a-2", "a.2", 2)
    end(history, "a.2", "commit", at=20, kind=OpType.INFO)
    send(history, "a-3", "a.3", 4)
    end(history, "a.3", "commit", at=30)
    poll(history, 40, (4, "a-3"))
    assert found(history) == []


def test_reading_back_or_twice_is_caught() -> None:
    history = History()
    send(history, "a-1", "a.1", 0)
    send(history, "a-2", "a.1", 1)
    end(history, "a.1", "commit", at=10)
    poll(history, 30, (0, "a-1"), (1, "a-2"))
    poll(history, 31, (1, "a-2"))
    poll(history, 32, (5, "a-1"))
    assert found(history) == ["duplicate", "nonmonotonic-poll"]
