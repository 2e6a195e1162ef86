"""KIP-932 share group invariants over the share consumers' history (``acquire``, ``ack`` and
``session`` ops of ``sim/clients/share_consumer.py``).

Checked as the ops come:

* ``share-double-acquire``: a record is acquired by at most one member at a time. A member's
  acquisition counts from the answer to its ShareFetch until the first of: its lock's end (the
  lock started on the leader at or after the ShareFetch was sent, so it runs at least until the
  node's clock reached that send time plus the lock duration, node clock jumps included), the
  member sending an acknowledgement of the record or opening or closing a session (each may
  release it), the member's connection being lost (the leader may have closed it first: the
  acquisition then counts for nothing). Only acquisitions from the same node with no restart of
  it between, and no change of its leadership of the partition (lost, or led at another epoch:
  the node drops the share-partition, as Kafka's does), are compared: a new leader, or a
  restarted one, reads the share-partition's state from ``__share_group_state``, where acquired
  records are kept as available (Kafka's too: a lock does not outlive its leader).
* ``share-redelivered-accepted`` / ``share-redelivered-rejected``: no record is acquired again by
  a ShareFetch sent after an accept (reject) of it was confirmed (the leader answered NONE: the
  state was written to ``__share_group_state`` before the answer).
* ``share-count-regressed``: a record's delivery counts never decrease across its acquisitions
  (an acquisition comes after another when its ShareFetch was sent after the other's answer came:
  a held or slow answer can arrive after a later acquisition's).

Relaxation (``--workload share`` only; none on one node or with ``--workload share-strict``):
with more than one node, a redelivery after a confirmed accept or reject and a lower delivery
count are counted as expected (``share-state-lost``) when another node serves the record than the
one that confirmed (delivered) it, or that node restarted since. It dates from before the
partition leaders kept their share-partitions' state at the share coordinator of another node
(the *ShareGroupState RPCs, ``broker/share/persister.py``); ``share-strict`` runs without it.
* ``share-delivery-limit``: no record is acquired more than ``share.delivery.count.limit`` times.

At the end (``share-unsettled``): every acks=all write was accepted or rejected (an ``ack`` op ok
or info) or acquired the limit number of times (``history.share_unsettled``). A record a
ShareFetch whose answer was lost may have acquired (an ``acquire`` info op of its partition that
ended after its last acquisition seen was asked for) may have reached the limit unseen and been
archived: counted as expected (``share-archived-unseen``; seed 349). Relaxation: writes
below the lowest offset ever acquired in their partition are counted as expected
(``share-before-start``), as a share-partition may start above them when its leader did not yet
know the group's ``share.auto.offset.reset=earliest``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.sim.contracts import Violation
from kafka_wire.sim.history import OpKind, OpType, share_unsettled

if TYPE_CHECKING:
    from kafka_wire.sim.history import History, Op

_NEVER: Final = 1 << 62

Record = tuple[str, int, int]


@dataclass(slots=True)
class _Hold:
    member: str
    node: int
    sent_ms: int
    recv_ms: int
    #: The node time (lower bound) the lock started at, plus the lock duration.
    lock_end_node_ms: int
    #: The earliest time the member may have given it back (an ack, a session change).
    released_ms: int = _NEVER


class ShareChecker:
    """See the module docstring; ``lock_ms`` and ``delivery_limit`` are the group's configs."""

    def __init__(self, lock_ms: int, delivery_limit: int, *, strict: bool = False) -> None:
        self.lock_ms = lock_ms
        self.delivery_limit = delivery_limit
        #: Relax nothing, in a cluster too (``--workload share-strict``: Kafka's guarantees).
        self.strict = strict
        #: Whether a share-partition's state may be lost when its leader changes or restarts
        #: (set from the world: in a cluster, unless strict; see the module docstring).
        self.failover_loses_state = not strict
        self.read = 0
        self.expected: Counter[str] = Counter()
        self._holds: dict[Record, list[_Hold]] = {}
        self._by_member: dict[str, set[Record]] = {}
        #: Per record: its acquisitions' delivery counts, nodes and answer times.
        self._counts: dict[Record, list[tuple[int, int, int]]] = {}
        #: Per record: when an accept (reject) of it was confirmed, and by which node.
        self._accepted: dict[Record, tuple[int, int]] = {}
        self._rejected: dict[Record, tuple[int, int]] = {}
        #: Per node: (world time, clock offset) at each change of its offset.
        self._offsets: dict[int, tuple[list[int], list[int]]] = {}
        #: Per node: the times it restarted.
        self._restarts: dict[int, list[int]] = {}
        #: Per (node, topic, partition): its leader epoch there (-1: not its leader), and the
        #: times that changed.
        self._leadership: dict[tuple[int, str, int], int] = {}
        self._leader_moves: dict[tuple[int, str, int], list[int]] = {}

    # -- the world ---------------------------------------------------------------------------------

    def observe(self, node_id: int, now_ms: int, offset_ms: int) -> None:
        times, offsets = self._offsets.setdefault(node_id, ([], []))
        if not offsets or offsets[-1] != offset_ms:
            times.append(now_ms)
            offsets.append(offset_ms)

    def restarted(self, node_id: int, now_ms: int) -> None:
        self._restarts.setdefault(node_id, []).append(now_ms)

    def led(self, node_id: int, tp: tuple[str, int], leader_epoch: int, now_ms: int) -> None:
        """``node_id``'s replica of ``tp`` is led at ``leader_epoch`` (-1: it is not the leader)."""
        key = (node_id, tp[0], tp[1])
        before = self._leadership.get(key)
        if before != leader_epoch:
            self._leadership[key] = leader_epoch
            if before is not None:
                self._leader_moves.setdefault(key, []).append(now_ms)

    def _moved_between(self, node_id: int, topic: str, partition: int, start_ms: int, end_ms: int) -> bool:
        return any(start_ms <= t <= end_ms for t in self._leader_moves.get((node_id, topic, partition), ()))

    def _offset_at(self, node_id: int, time_ms: int) -> int:
        times, offsets = self._offsets.get(node_id, ([], []))
        i = bisect_right(times, time_ms)
        return offsets[i - 1] if i else (offsets[0] if offsets else 0)

    def _restarted_between(self, node_id: int, start_ms: int, end_ms: int) -> bool:
        return any(start_ms <= t <= end_ms for t in self._restarts.get(node_id, ()))

    # -- the history -------------------------------------------------------------------------------

    def check(self, history: History) -> list[Violation]:
        out: list[Violation] = []
        ops = history.ops
        for op in ops[self.read :]:
            if op.kind is OpKind.ACQUIRE and op.type is OpType.OK:
                out += self._acquire(op)
            elif op.kind is OpKind.ACK:
                self._ack(op)
            elif op.kind is OpKind.SESSION:
                self._session(op)
        self.read = len(ops)
        return out

    def _acquire(self, op: Op) -> list[Violation]:
        out: list[Violation] = []
        now, sent, node = op.time_ms, op.invoked_ms, op.node
        node_now = now + self._offset_at(node, now)
        for offset, _ in op.records:
            record = (op.topic, op.partition, offset)
            name = f"{op.topic}-{op.partition}@{offset}"
            what = (
                f"{name} acquired by {op.member} from node {node} (sent {sent}, delivery {op.delivery_count})"
            )
            if op.delivery_count > self.delivery_limit:
                out.append(Violation("share-delivery-limit", now, f"{what}: limit {self.delivery_limit}"))
            # the acquisitions answered before this one was asked for came before it
            earlier = [c for c in self._counts.get(record, ()) if c[2] < sent]
            if earlier:
                before, before_node, before_ms = max(earlier)
                if op.delivery_count < before:
                    detail = f"{what}: delivered {before} times before (node {before_node} at {before_ms})"
                    out += self._unless_lost(
                        "share-count-regressed", now, node, before_node, before_ms, detail
                    )
            self._counts.setdefault(record, []).append((op.delivery_count, node, now))
            for anomaly, done in (
                ("share-redelivered-accepted", self._accepted.get(record)),
                ("share-redelivered-rejected", self._rejected.get(record)),
            ):
                if done is not None and sent > done[0]:
                    detail = f"{what}: {anomaly.rsplit('-', 1)[1]} at {done[0]} by node {done[1]}"
                    out += self._unless_lost(anomaly, now, node, done[1], done[0], detail)
            holds = self._holds.setdefault(record, [])
            for hold in holds:
                if (
                    hold.member != op.member
                    and hold.node == node
                    and node >= 0
                    and sent >= hold.recv_ms
                    and now <= hold.released_ms
                    and node_now < hold.lock_end_node_ms
                    and not self._restarted_between(node, hold.sent_ms, now)
                    and not self._moved_between(node, op.topic, op.partition, hold.sent_ms, now)
                ):
                    out.append(
                        Violation(
                            "share-double-acquire",
                            now,
                            f"{what} while {hold.member} held it (acquired at {hold.recv_ms}, "
                            f"lock until node time {hold.lock_end_node_ms}, now {node_now})",
                        )
                    )
            # Holds that can no longer matter are dropped (their lock ended in node time).
            holds[:] = [h for h in holds if h.lock_end_node_ms > node_now and h.released_ms > now]
            lock_end = sent + self._offset_at(node, sent) + self.lock_ms
            holds.append(_Hold(op.member, node, sent, now, lock_end))
            self._by_member.setdefault(op.member, set()).add(record)
        return out

    def _unless_lost(
        self, anomaly: str, now_ms: int, node: int, earlier_node: int, earlier_ms: int, detail: str
    ) -> list[Violation]:
        """``anomaly``, unless the share-partition's state may have been lost since
        ``earlier_ms`` (another node serves it, or the node restarted): then counted as expected
        (``share-state-lost``)."""
        if self.failover_loses_state and (
            node != earlier_node or node < 0 or self._restarted_between(node, earlier_ms, now_ms)
        ):
            self.expected["share-state-lost"] += 1
            return []
        return [Violation(anomaly, now_ms, detail)]

    def _release(self, member: str, records: set[Record] | None, time_ms: int) -> None:
        held = self._by_member.get(member, set())
        for record in list(held if records is None else held & records):
            for hold in self._holds.get(record, ()):
                if hold.member == member:
                    hold.released_ms = min(hold.released_ms, time_ms)
        if records is None:
            self._by_member[member] = set()
        else:
            held -= records

    def _ack(self, op: Op) -> None:
        records = {(op.topic, op.partition, o) for o, _ in op.records}
        if op.type is OpType.INVOKE:
            self._release(op.member, records, op.time_ms)
        elif op.type is OpType.OK:
            done = (
                self._accepted if op.value == "accept" else self._rejected if op.value == "reject" else None
            )
            if done is not None:
                for record in records:
                    done.setdefault(record, (op.time_ms, op.node))

    def _session(self, op: Op) -> None:
        if op.type is OpType.INFO:  # lost: the leader may have released it at any time since
            for record in self._by_member.get(op.member, set()):
                for hold in self._holds.get(record, ()):
                    if hold.member == op.member:
                        hold.released_ms = min(hold.released_ms, hold.recv_ms)
            self._by_member[op.member] = set()
        else:
            self._release(op.member, None, op.time_ms)

    # -- the end -----------------------------------------------------------------------------------

    def at_end(self, history: History, topics: frozenset[str]) -> list[Violation]:
        out = self.check(history)
        unsettled, unseen = share_unsettled(history, self.delivery_limit, topics)
        self.expected["share-archived-unseen"] += unseen
        if unsettled:
            shown = ", ".join(f"{t}-{p}@{o}" for t, p, o in unsettled[:10])
            out.append(
                Violation(
                    "share-unsettled",
                    history.ops[-1].time_ms if history.ops else 0,
                    f"{len(unsettled)} acknowledged writes never accepted, rejected nor archived: {shown}",
                )
            )
        self.expected["share-before-start"] += _below_start(history, topics)
        return out


def _below_start(history: History, topics: frozenset[str]) -> int:
    """acks=all writes below the lowest offset acquired in their partition."""
    lowest: dict[tuple[str, int], int] = {}
    for op in history.ops:
        if op.kind is OpKind.ACQUIRE and op.records:
            key = (op.topic, op.partition)
            lowest[key] = min(lowest.get(key, op.records[0][0]), op.records[0][0])
    return sum(
        1
        for op in history.ops
        if op.kind is OpKind.SEND
        and op.type is OpType.OK
        and op.acks == -1
        and op.topic in topics
        and op.offset < lowest.get((op.topic, op.partition), 0)
    )
