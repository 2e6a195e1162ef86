"""Group invariants (ENGINE-NOTES §7 #16) over the History, read incrementally after each event:
at most one member owns a partition per (group, generation), and a group's committed offset of a
partition never goes back."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_wire.sim.contracts import Violation
from kafka_wire.sim.history import History, OpKind, OpType


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
    #: (group, topic, partition) -> the highest committed offset, and by whom.
    _committed: dict[tuple[str, str, int], tuple[int, str]] = field(default_factory=dict)

    def check(self, history: History) -> list[Violation]:
        ops = history.ops
        if self.read >= len(ops):
            return []
        out: list[Violation] = []
        for op in ops[self.read :]:
            if op.type is not OpType.OK or not op.group:
                continue
            if op.kind is OpKind.ASSIGN:
                for topic, index in parse_assignment(op.value):
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
                ckey = (op.group, op.topic, op.partition)
                seen = self._committed.get(ckey)
                if seen is not None and op.offset < seen[0]:
                    out.append(
                        Violation(
                            "commit-regressed",
                            op.time_ms,
                            f"group {op.group} {op.topic}-{op.partition} committed {seen[0]} ({seen[1]})"
                            f" then {op.offset} ({op.process}, generation {op.generation})",
                        )
                    )
                if seen is None or op.offset >= seen[0]:
                    self._committed[ckey] = (op.offset, op.process)
        self.read = len(ops)
        return out
