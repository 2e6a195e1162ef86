"""A simulated share group member's acknowledgement bookkeeping (``share_consumer.py``): the
records it holds and what it decided for each, the acknowledgements due to a leader, their ``ack``
ops (invoked when taken into a request, settled from its answer) and how many are unsettled.

:class:`AckBook` owns that state; the consumer decides (its generator), sends and reads answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kafka_wire.messages import ErrorCode
from kafka_wire.sim.clients.base import Address
from kafka_wire.sim.clients.producer import error_name
from kafka_wire.sim.clients.share_requests import ACCEPT, ACK_NAMES, REJECT, RELEASE, Acks, Key, completed
from kafka_wire.sim.history import Op, OpKind, OpType

#: The decision "never acknowledged": the record's lock runs out.
SLOW: Final = 0

#: A partition's error after which its acknowledgements may still have been applied (the write to
#: the share coordinator timed out: it may land later).
_UNKNOWN_OUTCOME: Final = frozenset({ErrorCode.REQUEST_TIMED_OUT})


@dataclass(slots=True)
class _Held:
    value: str
    #: The acknowledge type decided (SLOW: none, left to time out).
    decision: int
    due_ms: int


class AckBook:
    """What one member holds and the acknowledgements it sent; see the module docstring."""

    def __init__(
        self, name: str, group: str, record: Callable[[Op], None], node_of: Callable[[Address], int]
    ) -> None:
        self._name = name
        self._group = group
        self._record = record
        self._node_of = node_of
        #: Records acquired and not acknowledged yet: (topic, partition, offset) -> what to do.
        self._held: dict[tuple[str, int, int], _Held] = {}
        #: Acknowledgement ops sent and not answered.
        self._pending = 0

    @property
    def busy(self) -> bool:
        """Whether it holds records or waits for acknowledgements' answers."""
        return bool(self._held) or bool(self._pending)

    def hold(self, key: Key, offset: int, value: str, decision: int, due_ms: int) -> None:
        self._held[key[0], key[1], offset] = _Held(value, decision, due_ms)

    def drop_all(self) -> None:
        """Forget what is held (the member left: its leaders release it)."""
        self._held = {}

    def next_due_ms(self) -> int | None:
        return min((h.due_ms for h in self._held.values()), default=None)

    def due(
        self,
        address: Address,
        now_ms: int,
        leader_of: Callable[[str, int], Address | None],
        quiescing: bool,
    ) -> Acks:
        """(topic, partition) -> [(offset, type)] of the held records led by ``address`` whose
        acknowledgement is due (a slow record whose lock ran out is dropped: the leader took it
        back)."""
        out: Acks = {}
        for (topic, partition, offset), held in sorted(self._held.items()):
            if held.decision == SLOW:
                if held.due_ms <= now_ms:
                    del self._held[topic, partition, offset]
                continue
            if held.due_ms > now_ms and not quiescing:
                continue
            if leader_of(topic, partition) == address:
                out.setdefault((topic, partition), []).append((offset, held.decision))
        return out

    def take(self, acks: Acks, address: Address, member: str, now_ms: int) -> list[Op]:
        """Invoke ops for ``acks`` (dropped from what is held), one per partition and type."""
        ops: list[Op] = []
        for (topic, partition), items in acks.items():
            for kind in (ACCEPT, RELEASE, REJECT):
                records = tuple((o, self._held[topic, partition, o].value) for o, k in items if k == kind)
                if records:
                    ops.append(self._op(topic, partition, kind, records, address, member, now_ms))
            for offset, _ in items:
                del self._held[topic, partition, offset]
        for op in ops:
            self._record(op)
        self._pending += len(ops)
        return ops

    def _op(
        self,
        topic: str,
        partition: int,
        kind: int,
        records: tuple[tuple[int, str], ...],
        address: Address,
        member: str,
        now_ms: int,
    ) -> Op:
        return Op(
            now_ms,
            self._name,
            OpType.INVOKE,
            OpKind.ACK,
            topic=topic,
            partition=partition,
            value=ACK_NAMES[kind],
            records=records,
            group=self._group,
            member=member,
            node=self._node_of(address),
        )

    def settle(self, ops: list[Op], outcome: OpType, now_ms: int, error: str = "") -> None:
        self._pending -= len(ops)
        for op in ops:
            self._record(completed(op, outcome, now_ms, error))

    def settle_by_partition(self, ops: list[Op], codes: dict[Key, int], now_ms: int) -> None:
        """Each partition's acknowledgements by its answer's code (none: unknown)."""
        for op in ops:
            code = codes.get((op.topic, op.partition))
            if code is None:
                self.settle([op], OpType.INFO, now_ms, "not answered")
            else:
                outcome = (
                    OpType.OK
                    if code == ErrorCode.NONE
                    else OpType.INFO
                    if code in _UNKNOWN_OUTCOME
                    else OpType.FAIL
                )
                self.settle([op], outcome, now_ms, "" if code == ErrorCode.NONE else error_name(code))
