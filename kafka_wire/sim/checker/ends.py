"""The end checks, once the liveness phase is over: over the History (Jepsen's Kafka anomalies)
and over the replica logs (offset agreement, ENGINE-NOTES §7 #1, #2, #9, #13, #15, #18).

Anomalies:

- ``lost-write``: an acks=all send acknowledged at an offset at or below the highest offset polled
  on its partition and never polled, or absent (another value, or nothing) from the final leader's
  log at that offset;
- ``unseen``: an acks=all acknowledged send never polled (and not already a lost write), when
  the workload polled at all;
- ``inconsistent-offsets``: two values at one offset, across polls, acknowledged sends and the
  replica logs below their high watermark;
- ``duplicate``: an idempotent producer's value at two offsets;
- ``aborted-read`` (Jepsen's G1a): a send that failed (definitely not written) was polled;
- ``poll-skip`` / ``nonmonotonic-poll``: a consumer's successive records of one partition skip a
  known offset or go back (assign consumers over all their polls, group consumers within one
  assignment; an ``info`` poll with ``OFFSET_OUT_OF_RANGE``, after which the consumer reads from
  the log start, begins its reads again);
- ``nonmonotonic-send``: an idempotent producer's acknowledged offsets of one partition, in the
  order it invoked the sends, do not increase;
- ``divergent-replicas``: a follower's log differs from the final leader's, batch by batch, up to
  the follower's log end offset.

The read_committed consumers' anomalies are :mod:`kafka_wire.sim.checker.txns`'s.

acks=0/1 sends that are lost, and anything on a partition that had an unclean election, are not
violations: they are counted in ``expected``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_wire.sim.checker.eos import check_eos
from kafka_wire.sim.checker.observe import LogContents, TopicPartition
from kafka_wire.sim.checker.txns import check_txns
from kafka_wire.sim.contracts import Violation
from kafka_wire.sim.history import History, Op, OpKind, OpType

#: A poll's error when the consumer's position is outside the log: it resets its position.
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
#: At most this many violations of one anomaly are reported (the rest are counted).
MAX_PER_ANOMALY = 20


@dataclass(slots=True)
class _Send:
    invoke: Op
    done: Op | None = None


@dataclass(slots=True)
class EndReport:
    violations: list[Violation] = field(default_factory=list)
    #: Anomalies the failure model allows (acks=0/1 losses, after an unclean election), counted.
    expected: Counter[str] = field(default_factory=Counter)
    _per: Counter[str] = field(default_factory=Counter)

    def add(self, anomaly: str, time_ms: int, detail: str) -> None:
        self._per[anomaly] += 1
        if self._per[anomaly] <= MAX_PER_ANOMALY:
            self.violations.append(Violation(anomaly, time_ms, detail))
        elif self._per[anomaly] == MAX_PER_ANOMALY + 1:
            self.violations.append(Violation(anomaly, time_ms, "further cases not listed"))


def check_end(
    history: History,
    logs: Mapping[TopicPartition, Mapping[int, LogContents]],
    leaders: Mapping[TopicPartition, int],
    unclean: Mapping[TopicPartition, int],
    now_ms: int,
) -> EndReport:
    """``logs``: per partition, each live replica's log by node id; ``leaders``: the final leader
    of each partition (its node id); ``unclean``: partitions that had an unclean election."""
    report = EndReport()
    sends: dict[str, _Send] = {}
    polls: list[Op] = []
    #: Polls and group assignments, in order: a member reads from its committed offsets again
    #: after each assignment (a rejoin may keep the generation).
    reads: list[Op] = []
    for op in history.ops:
        if op.kind is OpKind.SEND:
            if op.type is OpType.INVOKE:
                sends[op.value] = _Send(op)
            elif op.value in sends:
                sends[op.value].done = op
        elif op.kind is OpKind.POLL and (op.type is OpType.OK or op.error == OFFSET_OUT_OF_RANGE):
            polls.append(op)
            if not op.read_committed:  # read_committed polls skip aborted records: txns.py
                reads.append(op)
        elif op.kind is OpKind.ASSIGN and op.type is OpType.OK:
            reads.append(op)

    # Every (partition, offset) -> value observed, and where.
    seen: dict[TopicPartition, dict[int, str]] = {}
    polled_at: dict[str, set[tuple[TopicPartition, int]]] = {}
    max_polled: dict[TopicPartition, int] = {}

    def observe(tp: TopicPartition, offset: int, value: str, where: str, time_ms: int) -> None:
        at = seen.setdefault(tp, {})
        old = at.setdefault(offset, value)
        if old != value:
            if tp in unclean:
                report.expected["inconsistent-offsets-after-unclean"] += 1
            else:
                report.add(
                    "inconsistent-offsets",
                    time_ms,
                    f"{tp[0]}-{tp[1]} offset {offset}: {old!r} and {value!r} ({where})",
                )

    for op in polls:
        tp = (op.topic, op.partition)
        if op.type is not OpType.OK:
            continue
        for offset, value in op.records:
            observe(tp, offset, value, f"poll by {op.process}", op.time_ms)
            polled_at.setdefault(value, set()).add((tp, offset))
            if offset > max_polled.get(tp, -1) and not op.read_committed:
                max_polled[tp] = offset
    for tp, replicas in sorted(logs.items()):
        for node_id, contents in sorted(replicas.items()):
            for offset, value in contents.records:
                if offset < contents.high_watermark:
                    observe(tp, offset, value, f"node {node_id} log", now_ms)
    acked_all: list[_Send] = []
    for send in sends.values():
        done = send.done
        if done is None or done.type is not OpType.OK or done.offset < 0:
            continue
        tp = (
            done.topic or send.invoke.topic,
            done.partition if done.partition >= 0 else send.invoke.partition,
        )
        if send.invoke.acks == -1:
            observe(tp, done.offset, send.invoke.value, f"ack to {done.process}", done.time_ms)
            acked_all.append(send)

    # aborted reads: a failed send was polled
    for send in sends.values():
        if send.done is not None and send.done.type is OpType.FAIL and send.invoke.value in polled_at:
            report.add(
                "aborted-read",
                send.done.time_ms,
                f"{send.invoke.value} failed ({send.done.error}) yet polled at {sorted(polled_at[send.invoke.value])}",
            )

    # lost writes and unseen
    final: dict[TopicPartition, dict[int, str]] = {}
    final_start: dict[TopicPartition, int] = {}
    for tp, node_id in leaders.items():
        kept = logs.get(tp, {}).get(node_id)
        if kept is not None:
            final[tp] = dict(kept.records)
            final_start[tp] = kept.log_start_offset
    for send in acked_all:
        done = send.done
        assert done is not None
        value = send.invoke.value
        tp = (send.invoke.topic, send.invoke.partition)
        lost_reason = ""
        if value not in polled_at and done.offset <= max_polled.get(tp, -1):
            lost_reason = f"never polled, yet offsets up to {max_polled[tp]} were"
        elif tp in final and done.offset >= final_start[tp] and final[tp].get(done.offset) != value:
            lost_reason = f"the final leader holds {final[tp].get(done.offset)!r} there"
        if lost_reason:
            if tp in unclean:
                report.expected["lost-write-after-unclean"] += 1
            else:
                report.add(
                    "lost-write",
                    done.time_ms,
                    f"{value} acked at {tp[0]}-{tp[1]}@{done.offset}: {lost_reason}",
                )
        elif value not in polled_at:
            if not polls:
                report.expected["unseen-no-consumer"] += 1
            elif tp in unclean:
                report.expected["unseen-after-unclean"] += 1
            else:
                report.add(
                    "unseen", done.time_ms, f"{value} acked at {tp[0]}-{tp[1]}@{done.offset}, never polled"
                )
    for send in sends.values():
        done = send.done
        if send.invoke.acks in (0, 1) and (done is None or done.type is not OpType.FAIL):
            tp = (send.invoke.topic, send.invoke.partition)
            if done is not None and done.type is OpType.OK and send.invoke.value not in polled_at:
                report.expected[f"lost-acks-{send.invoke.acks}"] += 1
            elif done is None or done.type is OpType.INFO:
                if send.invoke.value not in polled_at and tp in final:
                    report.expected["info-not-written"] += 1

    # duplicates from idempotent producers
    idempotent = {v for v, s in sends.items() if s.invoke.idempotent}
    places: dict[str, set[tuple[TopicPartition, int]]] = {}
    for tp, at in seen.items():
        for offset, value in at.items():
            if value in idempotent:
                places.setdefault(value, set()).add((tp, offset))
    for value, where in sorted(places.items()):
        if len(where) > 1:
            report.add("duplicate", now_ms, f"{value} at {sorted(where)}")

    # poll order
    known = {tp: sorted(at) for tp, at in seen.items()}
    last: dict[tuple[str, TopicPartition], int] = {}
    for op in reads:
        if op.kind is OpKind.ASSIGN:
            for key in [k for k in last if k[0] == op.process]:
                del last[key]
            continue
        tp = (op.topic, op.partition)
        key = (op.process, tp)
        if op.type is not OpType.OK:  # the consumer's position was reset: its reads start again
            last.pop(key, None)
            report.expected["offset-out-of-range-reset"] += 1
            continue
        for offset, _ in op.records:
            before = last.get(key)
            last[key] = offset
            if before is None:
                continue
            if offset <= before:
                report.add(
                    "nonmonotonic-poll",
                    op.time_ms,
                    f"{op.process} {tp[0]}-{tp[1]} polled {before} then {offset}",
                )
            elif offset > before + 1:
                offsets = known.get(tp, [])
                i, j = bisect_right(offsets, before), bisect_left(offsets, offset)
                if j > i:
                    report.add(
                        "poll-skip",
                        op.time_ms,
                        f"{op.process} {tp[0]}-{tp[1]} polled {before} then {offset}, skipping {offsets[i]}",
                    )

    # send order (idempotent producers: sends of one partition are acknowledged in order)
    acked: dict[tuple[str, TopicPartition], int] = {}
    for send in sends.values():  # in invocation order (dicts keep insertion order)
        done = send.done
        if not send.invoke.idempotent or done is None or done.type is not OpType.OK or done.offset < 0:
            continue
        tp = (send.invoke.topic, send.invoke.partition)
        pkey = (send.invoke.process, tp)
        before = acked.get(pkey)
        acked[pkey] = done.offset
        if before is not None and done.offset <= before and tp not in unclean:
            report.add(
                "nonmonotonic-send",
                done.time_ms,
                f"{send.invoke.process} {tp[0]}-{tp[1]} acked {before} then {done.offset} ({send.invoke.value})",
            )

    # replica agreement (after liveness)
    for tp, node_id in sorted(leaders.items()):
        replicas = logs.get(tp, {})
        leader = replicas.get(node_id)
        if leader is None:
            continue
        by_base = {b[0]: b for b in leader.batches}
        for follower_id, contents in sorted(replicas.items()):
            if follower_id == node_id:
                continue
            for batch in contents.batches:
                if batch[0] < leader.log_start_offset:
                    continue
                if by_base.get(batch[0]) != batch:
                    if tp in unclean:
                        report.expected["divergent-after-unclean"] += 1
                    else:
                        report.add(
                            "divergent-replicas",
                            now_ms,
                            f"{tp[0]}-{tp[1]} node {follower_id} batch (base, last, epoch, crc) {batch}"
                            f" vs leader {node_id} {by_base.get(batch[0])}",
                        )
                    break
    check_txns(history, unclean, report)
    check_eos(history, unclean, report)
    return report
