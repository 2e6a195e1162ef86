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
