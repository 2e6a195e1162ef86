"""Kafka consumer's rule for aborted transactions under ``read_committed``.

A Fetch response at isolation level 1 lists the aborted transactions of each partition as
``(producer_id, first_offset)``. Reading its batches in order, a transactional batch of a
producer is left out from the first offset of that producer's aborted transaction until the
producer's ABORT marker (a control batch, which is itself never returned as a record).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from kafka_wire.records.constants import CONTROL_MASK, TRANSACTIONAL_MASK
from kafka_wire.records.control import ControlRecordType, decode_control_key


def aborted_pairs(aborted: Iterable[Any]) -> list[tuple[int, int]]:
    """``(producer_id, first_offset)`` pairs from pairs or from objects with those attributes
    (Fetch's ``FetchResponseAbortedTransaction``)."""
    return [a if type(a) is tuple else (a.producer_id, a.first_offset) for a in aborted]


def is_abort_marker(batch: Any) -> bool:
    """Whether a control batch holds an ABORT marker."""
    return any(decode_control_key(r.key).type == ControlRecordType.ABORT for r in batch.records())


class AbortedFilter:
    """Kafka consumer's rule for one fetch response's aborted transactions."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        """``aborted``: ``(producer id, first offset)`` of each aborted transaction."""
        self._heap = [(first, pid) for pid, first in aborted]
        heapq.heapify(self._heap)
        self._open: set[int] = set()

    def skip(self, producer_id: int, last_offset: int, is_control: bool, abort_marker: bool) -> bool:
        """Whether the batch is left out (a control batch always is)."""
        while self._heap and self._heap[0][0] <= last_offset:
            self._open.add(heapq.heappop(self._heap)[1])
        if is_control:
            if abort_marker:
                self._open.discard(producer_id)
            return True
        return producer_id in self._open

    def skips(self, batch: Any) -> bool:
        """:meth:`skip` for a batch read from the payload, in order (legacy batches are never
        transactional; a v2 batch that is neither transactional nor control is kept)."""
        if batch.magic != 2 or not batch.attributes & (CONTROL_MASK | TRANSACTIONAL_MASK):
            return False
        control = bool(batch.attributes & CONTROL_MASK)
        return self.skip(batch.producer_id, batch.last_offset, control, control and is_abort_marker(batch))
