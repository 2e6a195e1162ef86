"""The end checks of transactions: what read_committed consumers polled against what the
transactional producers wrote and how each transaction ended (ENGINE-NOTES §7 #12, #14), with
Jepsen's Kafka anomaly names.

A transaction (its ``txn`` name on the producer's ``send`` and ``txn`` ops) is *committed* when
its EndTxn was answered ok with "commit", *aborted* when answered ok with "abort" or failed (it
cannot have committed: fenced, or abandoned before a commit was asked for), and otherwise unknown
or still open. For each read_committed consumer:

- ``G1a`` (aborted read): it polled a record of an aborted transaction;
- ``precommitted-read``: it polled a record of a transaction whose commit had not even been asked
  for when the poll was answered (read_committed must hold it below the last stable offset);
- ``lost-write``: a committed transaction's record acknowledged at an offset the consumer read
  past on that partition, yet it never polled the record;
- ``duplicate``: it polled one value at two offsets;
- ``nonmonotonic-poll`` / ``poll-skip``: its successive records of a partition went back, or
  skipped an offset known to hold a visible record (a committed transaction's, or a plain acks=all
  one acknowledged); an ``OFFSET_OUT_OF_RANGE`` reset starts its reads again.

Partitions that had an unclean election are counted in ``expected`` instead.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafka_wire.sim.history import History, Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.sim.checker.ends import EndReport
    from kafka_wire.sim.checker.observe import TopicPartition

COMMITTED = "committed"
ABORTED = "aborted"


def txn_outcomes(history: History) -> tuple[dict[str, str], dict[str, int]]:
    """Per transaction: its outcome when known (:data:`COMMITTED`, :data:`ABORTED`), and when its
    commit was first asked for."""
    outcomes: dict[str, str] = {}
    commit_asked: dict[str, int] = {}
    for op in history.ops:
        if op.kind is not OpKind.TXN:
            continue
        if op.type is OpType.INVOKE:
            if op.value == "commit":
                commit_asked.setdefault(op.txn, op.time_ms)
        elif op.type is OpType.OK:
            outcomes[op.txn] = COMMITTED if op.value == "commit" else ABORTED
        elif op.type is OpType.FAIL:
            outcomes[op.txn] = ABORTED
    return outcomes, commit_asked


def check_txns(history: History, unclean: Mapping[TopicPartition, int], report: EndReport) -> None:
    """Add the read_committed anomalies of ``history`` to ``report`` (see the module docstring)."""
    outcomes, commit_asked = txn_outcomes(history)
    invoked: dict[str, Op] = {}
    acked: dict[str, Op] = {}
    reads: list[Op] = []
    for op in history.ops:
        if op.kind is OpKind.SEND:
            if op.type is OpType.INVOKE:
                invoked[op.value] = op
            elif op.type is OpType.OK and op.offset >= 0:
                acked[op.value] = op
        elif op.kind is OpKind.POLL and op.read_committed:
            reads.append(op)
    if not reads:
        return
    # Offsets known to hold a record a read_committed consumer must see.
    visible: dict[TopicPartition, list[int]] = {}
    committed_at: dict[TopicPartition, list[tuple[int, str]]] = {}
    for value, done in acked.items():
        send = invoked.get(value)
        if send is None:
            continue
        tp = (done.topic, done.partition)
        if send.txn:
            if outcomes.get(send.txn) != COMMITTED:
                continue
            committed_at.setdefault(tp, []).append((done.offset, value))
        elif send.acks != -1:
            continue
        visible.setdefault(tp, []).append(done.offset)
    for offsets in visible.values():
        offsets.sort()

    def add(anomaly: str, tp: TopicPartition, time_ms: int, detail: str) -> None:
        if tp in unclean:
            report.expected[f"{anomaly}-after-unclean"] += 1
        else:
            report.add(anomaly, time_ms, detail)

    last: dict[tuple[str, TopicPartition], int] = {}
    highest: dict[tuple[str, TopicPartition], int] = {}
    read_at: dict[tuple[str, str], set[int]] = {}
    for op in reads:
        tp = (op.topic, op.partition)
        key = (op.process, tp)
        if op.type is not OpType.OK:
            last.pop(key, None)
            continue
        for offset, value in op.records:
            where = f"{op.process} {tp[0]}-{tp[1]}@{offset}"
            send = invoked.get(value)
            txn = send.txn if send is not None else ""
            if txn and outcomes.get(txn) == ABORTED:
                add("G1a", tp, op.time_ms, f"{where} read {value} of aborted transaction {txn}")
            elif txn and commit_asked.get(txn, op.time_ms + 1) > op.time_ms:
                add("precommitted-read", tp, op.time_ms, f"{where} read {value} of {txn} before its commit")
            read_at.setdefault((op.process, value), set()).add(offset)
            highest[key] = max(highest.get(key, -1), offset)
            before = last.get(key)
            last[key] = offset
            if before is None:
                continue
            if offset <= before:
                add("nonmonotonic-poll", tp, op.time_ms, f"{where} after {before}")
            elif offset > before + 1:
                known = visible.get(tp, [])
                i, j = bisect_right(known, before), bisect_left(known, offset)
                if j > i:
                    add("poll-skip", tp, op.time_ms, f"{where} after {before}, skipping {known[i]}")
    for (process, value), places in sorted(read_at.items()):
        if len(places) > 1:
            send = invoked.get(value)
            tp = (send.topic, send.partition) if send is not None else ("", -1)
            add("duplicate", tp, 0, f"{process} read {value} at offsets {sorted(places)}")
    processes = sorted({op.process for op in reads})
    for tp, records in sorted(committed_at.items()):
        for offset, value in records:
            for process in processes:
                top = highest.get((process, tp), -1)
                if offset < top and (process, value) not in read_at:
                    done = acked[value]
                    add(
                        "lost-write",
                        tp,
                        done.time_ms,
                        f"{value} committed at {tp[0]}-{tp[1]}@{offset}: {process} read up to {top}, not it",
                    )
