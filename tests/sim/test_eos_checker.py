"""The exactly-once check of the simulator's consume-transform-produce workers
(``sim/checker/eos.py``), each anomaly on a hand-made History: input records, a worker's
transactions (outputs and offsets) and a read_committed consumer's polls of the output."""

from __future__ import annotations

from kafka_wire.sim.checker.ends import EndReport
from kafka_wire.sim.checker.eos import check_eos
from kafka_wire.sim.history import History, Op, OpKind, OpType, output_value


class Run:
    def __init__(self) -> None:
        self.history = History()
        self.at = 0

    def _add(self, process: str, kind: OpType, what: OpKind, **fields: object) -> None:
        self.at += 1
        self.history.add(Op(self.at, process, kind, what, **fields))  # type: ignore[arg-type]

    def send(self, process: str, value: str, txn: str, topic: str, partition: int, offset: int) -> None:
        where = {"topic": topic, "partition": partition, "value": value, "acks": -1, "txn": txn}
        self._add(process, OpType.INVOKE, OpKind.SEND, **where)
        self._add(process, OpType.OK, OpKind.SEND, offset=offset, **where)

    def end(self, process: str, txn: str, outcome: str, *, kind: OpType = OpType.OK) -> None:
        self._add(process, OpType.INVOKE, OpKind.TXN, value=outcome, txn=txn)
        self._add(process, kind, OpKind.TXN, value=outcome if kind is OpType.OK else "", txn=txn)

    def inputs(self, txn: str, outcome: str, *values: tuple[int, str]) -> None:
        """Input records of a producer's transaction on t1-0."""
        for offset, value in values:
            self.send("txn-a", value, txn, "t1", 0, offset)
        self.end("txn-a", txn, outcome)

    def worker(
        self, txn: str, outcome: str, position: int, *outputs: tuple[int, str], kind: OpType = OpType.OK
    ) -> None:
        """A worker's transaction: outputs on t3-0, then offsets t1-0 -> position."""
        for offset, source in outputs:
            self.send("ctp-1", output_value(source, txn), txn, "t3", 0, offset)
        self._add("ctp-1", OpType.OK, OpKind.OFFSETS, topic="t1", partition=0, offset=position, txn=txn)
        self.end("ctp-1", txn, outcome, kind=kind)

    def poll(self, *records: tuple[int, str, str]) -> None:
        """consumer-rc polls t3-0: (offset, input value, worker transaction)."""
        polled = tuple((offset, output_value(source, txn)) for offset, source, txn in records)
        self._add(
            "consumer-rc",
            OpType.OK,
            OpKind.POLL,
            topic="t3",
            partition=0,
            records=polled,
            read_committed=True,
        )

    def found(self, *, unclean: bool = False) -> list[str]:
        report = EndReport()
        check_eos(self.history, {("t3", 0): 1} if unclean else {}, report)
        assert not unclean or not report.violations
        return sorted(v.anomaly for v in report.violations) or sorted(report.expected)


def test_each_input_once_in_the_output_is_clean() -> None:
    run = Run()
    run.inputs("a.1", "commit", (0, "a-1"), (1, "a-2"))
    run.worker("ctp-1.1", "commit", 2, (0, "a-1"), (1, "a-2"))
    run.poll((0, "a-1", "ctp-1.1"), (1, "a-2", "ctp-1.1"))
    assert run.found() == []


def test_an_aborted_attempt_done_again_is_clean() -> None:
    run = Run()
    run.inputs("a.1", "commit", (0, "a-1"), (1, "a-2"))
    run.worker("ctp-1.1", "abort", 2, (0, "a-1"), (1, "a-2"))
    run.worker("ctp-1.2", "commit", 2, (3, "a-1"), (4, "a-2"))
    run.poll((3, "a-1", "ctp-1.2"), (4, "a-2", "ctp-1.2"))
    assert run.found() == []


def test_an_input_transformed_and_committed_twice_is_an_eos_duplicate() -> None:
    run = Run()
    run.inputs("a.1", "commit", (0, "a-1"))
    run.worker("ctp-1.1", "commit", 1, (0, "a-1"))
    run.worker("ctp-1.2", "commit", 1, (2, "a-1"))
    run.poll((0, "a-1", "ctp-1.1"), (2, "a-1", "ctp-1.2"))
    assert run.found() == ["eos-duplicate"]


def test_the_output_of_an_aborted_input_is_an_eos_uncommitted_input() -> None:
    run = Run()
    run.inputs("a.1", "abort", (0, "a-1"))
    run.worker("ctp-1.1", "commit", 2, (0, "a-1"))
    run.poll((0, "a-1", "ctp-1.1"))
    assert run.found() == ["eos-uncommitted-input"]


def test_an_input_below_the_committed_position_without_output_is_eos_lost() -> None:
    run = Run()
    run.inputs("a.1", "commit", (0, "a-1"), (1, "a-2"))
    run.worker("ctp-1.1", "abort", 2, (0, "a-1"), (1, "a-2"))
    run.worker("ctp-1.2", "commit", 2, (3, "a-1"))  # offsets past a-2, no output of it
    run.poll((3, "a-1", "ctp-1.2"))
    assert run.found() == ["eos-lost"]


def test_unknown_outcomes_and_unread_outputs_are_not_eos_lost() -> None:
    run = Run()
    run.inputs("a.1", "commit", (0, "a-1"), (1, "a-2"), (2, "a-3"))
    run.worker("ctp-1.1", "commit", 1, (0, "a-1"), kind=OpType.INFO)  # unknown: may have committed
    run.worker("ctp-1.2", "commit", 3, (2, "a-2"), (3, "a-3"))  # committed, not read yet
    run.poll((0, "a-1", "ctp-1.1"))
    assert run.found() == []
    run.inputs("a.2", "commit", (4, "a-4"))  # above the committed position: not yet transformed
    assert run.found() == []


def test_anomalies_on_a_partition_that_had_an_unclean_election_are_expected() -> None:
    run = Run()
    run.inputs("a.1", "commit", (0, "a-1"))
    run.worker("ctp-1.1", "commit", 1, (0, "a-1"))
    run.worker("ctp-1.2", "commit", 1, (2, "a-1"))
    run.poll((0, "a-1", "ctp-1.1"), (2, "a-1", "ctp-1.2"))
    assert run.found(unclean=True) == ["eos-duplicate-after-unclean"]
