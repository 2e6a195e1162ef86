"""Group invariants (ENGINE-NOTES §7 #16) over the History, read incrementally after each event:
at most one member owns a partition per (group, generation), a group's committed offset of a
partition never goes back (a commit sent after another was answered never stores a lower offset:
commits in flight together may land in either order, and a commit of unknown fate may land at any
time), and no commit of an old generation is accepted: a member holds its
assignment of generation g only after the coordinator has stored g (its SyncGroup answer waits
for the write), so an OffsetCommit of generation g - 1 sent after any member saw g must be
refused (ILLEGAL_GENERATION). A member assigned a partition resumes at the group's committed
offset, never below a commit answered before the assignment (or at a commit of unknown fate)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_wire.errors import LocalProtocolError
from kafka_wire.sim.contracts import Violation
from kafka_wire.sim.history import History, Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker


def parse_assignment(value: str) -> list[tuple[str, int]]:
    """``"t:p,t:p"`` (an ASSIGN op's value) as (topic, partition) pairs; malformed parts skipped."""
    out: list[tuple[str, int]] = []
    for part in value.split(","):
        topic, sep, index = part.rpartition(":")
        if sep and topic and index.isdigit():
            out.append((topic, int(index)))
    return out


@dataclass(slots=True)
class GroupChecker:
    #: History ops read so far.
    read: int = 0
    #: (group, generation, topic, partition) -> the member that owns it.
    _owners: dict[tuple[str, int, str, int], str] = field(default_factory=dict)
    #: (group, topic, partition) -> its acknowledged commits: (answered at, offset, by whom).
    _committed: dict[tuple[str, str, int], list[tuple[int, int, str]]] = field(default_factory=dict)
    #: (member, group, topic, partition) -> the group's committed offset when the member was
    #: assigned the partition, until the member's first poll of it.
    _resume_at: dict[tuple[str, str, str, int], int] = field(default_factory=dict)
    #: (group, topic, partition) -> commits whose fate is unknown (``info``: the answer was lost
    #: or was an error the coordinator may give after appending): (sent at, offset).
    _unknown: dict[tuple[str, str, int], list[tuple[int, int]]] = field(default_factory=dict)
    #: (group, generation) -> when a member first held an assignment of it.
    _formed: dict[tuple[str, int], int] = field(default_factory=dict)

    def check(self, history: History) -> list[Violation]:
        ops = history.ops
        if self.read >= len(ops):
            return []
        out: list[Violation] = []
        for op in ops[self.read :]:
            if not op.group:
                continue
            if op.kind is OpKind.POLL:
                out += self._first_poll(op)
                continue
            if op.kind is OpKind.COMMIT and op.type is OpType.INFO and op.offset >= 0:
                self._unknown.setdefault((op.group, op.topic, op.partition), []).append(
                    (op.invoked_ms, op.offset)
                )
                continue
            if op.type is not OpType.OK:
                continue
            if op.kind is OpKind.ASSIGN:
                self._formed.setdefault((op.group, op.generation), op.time_ms)
                for topic, index in parse_assignment(op.value):
                    answered = [
                        o for at, o, _ in self._committed.get((op.group, topic, index), []) if at < op.time_ms
                    ]
                    if answered:
                        self._resume_at[op.process, op.group, topic, index] = max(answered)
                    key = (op.group, op.generation, topic, index)
                    owner = self._owners.setdefault(key, op.process)
                    if owner != op.process:
                        out.append(
                            Violation(
                                "double-ownership",
                                op.time_ms,
                                f"group {op.group} generation {op.generation} {topic}-{index}"
                                f" owned by {owner} and {op.process}",
                            )
                        )
            elif op.kind is OpKind.COMMIT and op.offset >= 0:
                newer = self._newer_generation(op.group, op.generation, op.invoked_ms)
                if newer is not None:
                    out.append(
                        Violation(
                            "stale-commit",
                            op.time_ms,
                            f"group {op.group} {op.topic}-{op.partition} commit of generation"
                            f" {op.generation} by {op.process} sent at {op.invoked_ms} accepted, though"
                            f" generation {newer[0]} was formed by {newer[1]}",
                        )
                    )
                ckey = (op.group, op.topic, op.partition)
                acked = self._committed.setdefault(ckey, [])
                before = [(o, by) for at, o, by in acked if at < op.invoked_ms]
                if before and op.offset < max(before)[0]:
                    highest, by = max(before)
                    out.append(
                        Violation(
                            "commit-regressed",
                            op.time_ms,
                            f"group {op.group} {op.topic}-{op.partition} committed {highest} ({by})"
                            f" then {op.offset} ({op.process}, generation {op.generation})",
                        )
                    )
                acked.append((op.time_ms, op.offset, op.process))
        self.read = len(ops)
        return out

    def _first_poll(self, op: Op) -> list[Violation]:
        """A member's first poll of a partition after an assignment starts at the group's
        committed offset: never below a commit answered before the assignment (the coordinator
        stored it, and OffsetFetch follows the SyncGroup), unless a commit of unknown fate sent
        before the poll names an offset at or below it. Kafka stores a group's commits last
        writer wins, with no check that an offset moves forward, and a request whose answer was
        lost can still be stored late: an OffsetCommit read from a connection after the client
        gave it up (the broker reads a muted connection's buffered requests, behind a long
        Fetch, only once it answers that Fetch; the client has meanwhile reconnected and
        committed higher) or a write appended before its error and loaded by the next
        coordinator. A reset (an ``info`` poll) ends it."""
        expected = self._resume_at.pop((op.process, op.group, op.topic, op.partition), None)
        if expected is None or op.type is not OpType.OK or not op.records:
            return []
        first = op.records[0][0]
        if first >= expected:
            return []
        unknown = self._unknown.get((op.group, op.topic, op.partition), [])
        if any(sent < op.time_ms and offset <= first for sent, offset in unknown):
            return []  # a commit of unknown fate may have been stored last
        return [
            Violation(
                "committed-offset-lost",
                op.time_ms,
                f"group {op.group} {op.topic}-{op.partition}: {op.process} resumed at {first},"
                f" below the committed {expected}",
            )
        ]

    def _newer_generation(self, group: str, generation: int, sent_ms: int) -> tuple[int, int] | None:
        """A generation of ``group`` newer than ``generation`` that a member held before
        ``sent_ms`` (and when), or None."""
        if sent_ms < 0 or generation < 0:
            return None
        for (name, other), formed_ms in self._formed.items():
            if name == group and other > generation and formed_ms < sent_ms:
                return other, formed_ms
        return None


def consumer_group_owners(now_ms: int, node_id: int, broker: Broker) -> list[Violation]:
    """One owner per partition in every KIP-848 group a coordinator holds: a partition is in at
    most one member's assigned or pending-revocation set at any time (so at any member epoch)."""
    try:
        coordinator = broker.group_coordinator
    except LocalProtocolError:  # not started yet
        return []
    out: list[Violation] = []
    for group_id in coordinator.consumer_group_ids():
        view = coordinator.consumer_group_view(group_id)
        for topic_id, partition, first, second in [] if view is None else view.double_owned():
            out.append(
                Violation(
                    "double-ownership",
                    now_ms,
                    f"node {node_id} group {group_id}: {topic_id}-{partition} owned by {first} and {second}",
                )
            )
    return out
