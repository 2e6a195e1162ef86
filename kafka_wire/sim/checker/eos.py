"""The exactly-once check of consume-transform-produce workers (``sim/clients/ctp_worker.py``):
what read_committed consumers polled of the workers' output against the input records and the
offsets the workers' transactions committed.

An output value names its input (:func:`~kafka_wire.sim.history.input_of`). An input record is
*committed* when its transaction committed (or, outside transactions, its acks=all send was
acknowledged), with its offset known; a worker's *committed position* on an input partition is
the highest offset an ``offsets`` op of a committed transaction of it names. For each
read_committed consumer that polled output records:

- ``eos-duplicate``: it polled outputs of one input at two places (the input was transformed and
  committed twice: offsets lost, or committed apart from the outputs);
- ``eos-uncommitted-input``: it polled the output of an input that was never committed (an
  aborted transaction's record, a send that failed, or a value no producer sent);
- ``eos-lost``: a committed input below the committed position has no output it polled, and none
  it may still read: every output of that input is in an aborted transaction, or at an offset the
  consumer read past (the offsets were committed, the outputs were not).

What is unknown at the end is left alone: inputs whose transaction's outcome is unknown, outputs
of transactions whose outcome is unknown (they may yet be read), positions of such transactions.
Anomalies on partitions that had an unclean election are counted in ``expected`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafka_wire.sim.checker.txns import ABORTED, COMMITTED, txn_outcomes
from kafka_wire.sim.history import History, Op, OpKind, OpType, input_of

if TYPE_CHECKING:
    from kafka_wire.sim.checker.ends import EndReport
    from kafka_wire.sim.checker.observe import TopicPartition


def check_eos(history: History, unclean: Mapping[TopicPartition, int], report: EndReport) -> None:
    """Add the exactly-once anomalies of ``history`` to ``report`` (see the module docstring)."""
    outcomes, _ = txn_outcomes(history)
    invoked: dict[str, Op] = {}
    acked: dict[str, Op] = {}
    failed: set[str] = set()
    #: input value -> the output values written for it.
    outputs: dict[str, list[str]] = {}
    committed_position: dict[TopicPartition, int] = {}
    polls: list[Op] = []
    for op in history.ops:
        if op.kind is OpKind.SEND:
            if op.type is OpType.INVOKE:
                invoked[op.value] = op
                source = input_of(op.value)
                if source is not None:
                    outputs.setdefault(source, []).append(op.value)
            elif op.type is OpType.OK and op.offset >= 0:
                acked[op.value] = op
            elif op.type is OpType.FAIL:
                failed.add(op.value)
        elif op.kind is OpKind.OFFSETS and op.type is OpType.OK and outcomes.get(op.txn) == COMMITTED:
            tp = (op.topic, op.partition)
            committed_position[tp] = max(committed_position.get(tp, 0), op.offset)
        elif op.kind is OpKind.POLL and op.type is OpType.OK and op.read_committed:
            polls.append(op)
    if not outputs:
        return

    def add(anomaly: str, tps: list[TopicPartition], time_ms: int, detail: str) -> None:
        if any(tp in unclean for tp in tps):
            report.expected[f"{anomaly}-after-unclean"] += 1
        else:
            report.add(anomaly, time_ms, detail)

    def place(value: str) -> list[TopicPartition]:
        op = acked.get(value) or invoked.get(value)
        return [] if op is None else [(op.topic, op.partition)]

    #: (consumer, input value) -> where it polled outputs of it.
    polled: dict[tuple[str, str], set[tuple[TopicPartition, int]]] = {}
    highest: dict[tuple[str, TopicPartition], int] = {}
    for op in polls:
        tp = (op.topic, op.partition)
        for offset, value in op.records:
            source = input_of(value)
            if source is None:
                continue
            key = (op.process, tp)
            highest[key] = max(highest.get(key, -1), offset)
            polled.setdefault((op.process, source), set()).add((tp, offset))
            send = invoked.get(source)
            if send is None or source in failed or (send.txn and outcomes.get(send.txn) == ABORTED):
                add(
                    "eos-uncommitted-input",
                    [tp, *place(source)],
                    op.time_ms,
                    f"{op.process} {tp[0]}-{tp[1]}@{offset} read {value}: its input was never committed",
                )
    for (process, source), places in sorted(polled.items()):
        if len(places) > 1:
            tps = sorted({tp for tp, _ in places})
            add(
                "eos-duplicate",
                [*tps, *place(source)],
                0,
                f"{process} read outputs of {source} at {sorted(places)}",
            )
    readers = sorted({process for process, _ in highest})
    for source, done in sorted(acked.items()):
        send = invoked.get(source)
        if send is None or input_of(source) is not None:
            continue
        committed = outcomes.get(send.txn) == COMMITTED if send.txn else send.acks == -1
        if not committed:
            continue
        tp = (done.topic, done.partition)
        if done.offset >= committed_position.get(tp, 0):
            continue
        for process in readers:
            if (process, source) in polled or _may_read(
                process, outputs.get(source, []), outcomes, invoked, acked, highest
            ):
                continue
            add(
                "eos-lost",
                [tp, *(p for out in outputs.get(source, []) for p in place(out))],
                done.time_ms,
                f"{source} at {tp[0]}-{tp[1]}@{done.offset} is below the committed position"
                f" {committed_position[tp]}: {process} read no output of it",
            )


def _may_read(
    process: str,
    outs: list[str],
    outcomes: Mapping[str, str],
    invoked: Mapping[str, Op],
    acked: Mapping[str, Op],
    highest: Mapping[tuple[str, TopicPartition], int],
) -> bool:
    """Whether ``process`` may yet read one of the outputs ``outs``: one not in an aborted
    transaction, not acknowledged or acknowledged at an offset it has not read past."""
    for out in outs:
        if outcomes.get(invoked[out].txn) == ABORTED:
            continue
        done = acked.get(out)
        if done is None or done.offset >= highest.get((process, (done.topic, done.partition)), -1):
            return True
    return False
