"""What simulated clients did and saw, in Jepsen's shape: one :class:`Op` per invocation and
one per completion, in the order they happened.

A send is ``invoke`` then ``ok`` (acknowledged, with its offset), ``fail`` (definitely not
written: the broker answered an error that means so) or ``info`` (unknown: a timeout, a closed
connection). A poll is one ``ok`` op listing every record it returned. The checker reads only
this and the engine's state, never the clients.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class OpType(enum.Enum):
    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


class OpKind(enum.Enum):
    SEND = "send"  # value: the record's value; offset set on OK
    POLL = "poll"  # records: ((offset, value), ...) returned for (topic, partition)
    COMMIT = "commit"  # group offset commit: offset is the committed position
    ASSIGN = "assign"  # a group member's assignment: records unused, value lists "t:p,..."
    #: A transaction's end: invoke when its EndTxn is first sent (value "commit" or "abort");
    #: ok with the outcome in value ("commit" / "abort"); fail when it cannot have committed
    #: (fenced, abandoned before a commit was asked for); info when unknown. ``txn`` names it.
    TXN = "txn"
    #: The offsets a consume-transform-produce worker's transaction commits for its group (one op
    #: per partition, ``ok`` when its TxnOffsetCommit was answered ok): offset is the position
    #: committed, ``txn`` the transaction (whose outcome is the offsets'), ``group`` the group.
    OFFSETS = "offsets"
    #: A share consumer's acquisition (KIP-932), ``ok`` only: the records ShareFetch acquired in
    #: one range of one partition, ``delivery_count`` each, from ``node``, for ``member``;
    #: ``invoked_ms`` is when the ShareFetch was sent (the locks started after it).
    ACQUIRE = "acquire"
    #: A share consumer's acknowledgement of ``records`` (value "accept", "release" or "reject"):
    #: invoke when sent, ok when the leader answered NONE for the partition, fail on an error that
    #: means it was not applied, info when unknown.
    ACK = "ack"
    #: A share consumer's session with ``node`` opened (value "open", invoke), closed ("close",
    #: invoke) or lost with its connection ("lost", info): each may release what it holds there.
    SESSION = "session"


@dataclass(frozen=True, slots=True)
class Op:
    time_ms: int
    process: str  # the client's name, e.g. "producer-1"
    type: OpType
    kind: OpKind
    topic: str = ""
    partition: int = -1
    #: SEND: the record value (unique per run: "<process>-<n>"); ASSIGN: "t:p,..."
    value: str = ""
    #: SEND ok: the offset the broker acknowledged; COMMIT: the committed offset.
    offset: int = -1
    #: POLL ok: the records returned, in order.
    records: tuple[tuple[int, str], ...] = ()
    #: SEND: the producer's acks (0, 1, -1); -2 elsewhere.
    acks: int = -2
    idempotent: bool = False
    #: GROUP ops: the group, the member's generation.
    group: str = ""
    generation: int = -1
    error: str = ""  # FAIL / INFO: the error's name
    #: COMMIT ok or info: when its OffsetCommit was sent.
    invoked_ms: int = -1
    #: SEND and TXN ops of a transactional producer: the transaction ("<process>.<n>").
    txn: str = ""
    #: POLL: the consumer reads at read_committed.
    read_committed: bool = False
    #: ACQUIRE / ACK / SESSION: the share group member, the node that served it.
    member: str = ""
    node: int = -1
    #: ACQUIRE: the records' delivery count, and the lock duration the leader answered
    #: (``acquisition_lock_timeout_ms``: the lock ends by the answer's time plus this).
    delivery_count: int = -1
    lock_ms: int = -1

    def line(self) -> str:
        """One deterministic line for the trace."""
        parts = [f"{self.time_ms}", self.process, self.type.value, self.kind.value]
        if self.topic:
            parts.append(f"{self.topic}-{self.partition}")
        if self.txn:
            parts.append(f"txn={self.txn}")
        if self.value:
            parts.append(self.value)
        if self.offset >= 0:
            parts.append(f"@{self.offset}")
        if self.records:
            parts.append(f"[{self.records[0][0]}..{self.records[-1][0]} n={len(self.records)}]")
        if self.delivery_count >= 0:
            parts.append(f"dc={self.delivery_count}")
        if self.node >= 0:
            parts.append(f"n{self.node}")
        if self.error:
            parts.append(self.error)
        return " ".join(parts)


#: A consume-transform-produce worker's output value: this prefix, the input record's value, then
#: ``/`` and the transaction that wrote it (values stay unique per send; the input is recoverable).
OUTPUT_PREFIX = "out:"


def output_value(input_value: str, txn: str) -> str:
    return f"{OUTPUT_PREFIX}{input_value}/{txn}"


def input_of(value: str) -> str | None:
    """The input value an output value was derived from (None: not an output value)."""
    if not value.startswith(OUTPUT_PREFIX) or "/" not in value:
        return None
    return value[len(OUTPUT_PREFIX) :].rsplit("/", 1)[0]


@dataclass(slots=True)
class History:
    ops: list[Op] = field(default_factory=list)

    def add(self, op: Op) -> None:
        self.ops.append(op)


def share_unsettled(
    history: History, delivery_limit: int, topics: frozenset[str]
) -> tuple[list[tuple[str, int, int]], int]:
    """The acks=all writes to ``topics`` a share group has not finished with: ``(topic, partition,
    offset)`` of every acknowledged send that no ``ack`` op accepted or rejected (ok, or info: it
    may have been applied) and that was not acquired ``delivery_limit`` times (then archived when
    released or timed out); and how many more may have been acquired unseen (a ShareFetch whose
    answer was lost, an ``acquire`` info op of their partition, ended after their last acquisition
    seen was asked for: the limit may have been reached unseen). Writes below the lowest offset
    ever acquired in their partition are left out (the share-partition may have started above
    them: ``share.auto.offset.reset``)."""
    acked: list[tuple[str, int, int]] = []
    settled: set[tuple[str, int, int]] = set()
    lowest: dict[tuple[str, int], int] = {}
    #: Per record: when its last acquisition seen was asked for.
    asked: dict[tuple[str, int, int], int] = {}
    #: Per partition: the latest end of a ShareFetch whose answer was lost.
    lost: dict[tuple[str, int], int] = {}
    for op in history.ops:
        if op.kind is OpKind.SEND:
            if op.type is OpType.OK and op.acks == -1 and op.topic in topics:
                acked.append((op.topic, op.partition, op.offset))
        elif op.kind is OpKind.ACQUIRE:
            key = (op.topic, op.partition)
            if op.type is not OpType.OK:
                lost[key] = op.time_ms
                continue
            first = op.records[0][0] if op.records else -1
            if first >= 0 and first < lowest.get(key, first + 1):
                lowest[key] = first
            for o, _ in op.records:
                asked[op.topic, op.partition, o] = op.invoked_ms
            if op.delivery_count >= delivery_limit:
                settled.update((op.topic, op.partition, o) for o, _ in op.records)
        elif (
            op.kind is OpKind.ACK and op.type in (OpType.OK, OpType.INFO) and op.value in ("accept", "reject")
        ):
            settled.update((op.topic, op.partition, o) for o, _ in op.records)
    open_ = [r for r in acked if r not in settled and r[2] >= lowest.get((r[0], r[1]), 0)]
    unsettled = [r for r in open_ if lost.get((r[0], r[1]), -1) <= asked.get(r, -1)]
    return unsettled, len(open_) - len(unsettled)
