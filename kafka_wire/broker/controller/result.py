"""What a part of the controller decides for one request (Kafka's ``ControllerResult``), and the
metadata log's offsets the parts read.

A part's handler returns either the answer itself (nothing to write) or a
:class:`ControllerResult`: the records to propose, and how to answer once they are committed (or
fail, with NOT_CONTROLLER or REQUEST_TIMED_OUT). The
:class:`~kafka_wire.broker.controller.controller.QuorumController` proposes the records, applies
them to the parts at once and holds the answer until they are committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Protocol

from kafka_wire.broker.work import Steps
from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass


@dataclass(slots=True)
class ControllerResult:
    """Records to propose and the answer to give once they are committed."""

    records: list[Message]
    answer: Callable[[], Message]
    #: The answer when the records cannot be committed (the error code: NOT_CONTROLLER,
    #: REQUEST_TIMED_OUT).
    fail: Callable[[int], Message]
    #: How long the answer may wait for the commit (0: the controller's default).
    timeout_ms: int = 0
    #: Told the offset of the last record once the records are proposed.
    proposed: Callable[[int], None] | None = field(default=None)
    #: What remains to decide, in steps that add to ``records`` (a large CreateTopics places its
    #: partitions in steps): taken before the records are proposed.
    steps: Steps[None] | None = field(default=None)


#: A part's answer to one request.
Decision = Message | ControllerResult


class LogOffsets(Protocol):
    """Where the metadata log stands, as the active controller sees it."""

    @property
    def next_write_offset(self) -> int:
        """The offset the next proposed record gets (a new broker's epoch)."""
        ...

    @property
    def committed_offset(self) -> int:
        """The offset of the last committed record replayed (-1: none)."""
        ...

    @property
    def applied_offset(self) -> int:
        """The offset of the last record applied to the parts, proposed or replayed (-1: none)."""
        ...
