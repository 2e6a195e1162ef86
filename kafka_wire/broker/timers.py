"""The engine's one timer queue: every deadline of the broker, its logs and its groups.

A timer is a key and a deadline (``now_ms`` arithmetic, never a clock). Scheduling a key again
moves its deadline; :meth:`TimerQueue.cancel` drops it. Keys are tuples whose first element names
their owner (``"connection"``, ``"log"``, ``"group"``, ``"broker"``), so that each part of the
engine takes only its own due timers (:meth:`TimerQueue.pop_due` with ``owner``), while the
broker's next deadline is the queue's (:meth:`TimerQueue.next_deadline_ms`).

Timers with equal deadlines come due in the order they were scheduled. Each owner has its own
heap; a replaced or cancelled timer stays in its heap until it reaches the top, or until
stale entries outnumber live ones and the heap is rebuilt, so memory stays proportional to the
timers that are live.
"""

from __future__ import annotations

import heapq
from typing import Final

from kafka_wire.quick_dataclass import dataclass

#: A timer's identity: ``(owner, ...)``, hashable.
TimerKey = tuple[object, ...]

#: A heap is rebuilt once it holds more than this many entries and twice as many as live timers.
_REBUILD_MIN_ENTRIES: Final = 64


@dataclass(frozen=True, slots=True)
class DueTimer:
    """A timer taken from the queue: it is no longer scheduled."""

    key: TimerKey
    deadline_ms: int
    #: What the owner attached when scheduling (e.g. the generation a sync timer is for).
    payload: tuple[int, ...] = ()


#: A live timer: (deadline, sequence number, payload).
_Live = tuple[int, int, tuple[int, ...]]


class TimerQueue:
    """Deadlines by key, grouped by owner (``key[0]``); see the module docstring."""

    __slots__ = ("_heaps", "_live", "_seq")

    def __init__(self) -> None:
        self._live: dict[TimerKey, _Live] = {}
        self._heaps: dict[object, list[tuple[int, int, TimerKey]]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: TimerKey) -> bool:
        return key in self._live

    def schedule(self, key: TimerKey, deadline_ms: int, payload: tuple[int, ...] = ()) -> None:
        """Fire ``key`` at ``deadline_ms`` (replacing its earlier deadline, if any)."""
        seq = self._seq = self._seq + 1
        self._live[key] = (deadline_ms, seq, payload)
        heap = self._heaps.get(key[0])
        if heap is None:
            heap = self._heaps[key[0]] = []
        heapq.heappush(heap, (deadline_ms, seq, key))
        if len(heap) > 2 * len(self._live) + _REBUILD_MIN_ENTRIES:
            self._rebuild(key[0])

    def cancel(self, key: TimerKey) -> None:
        """Forget ``key`` (nothing happens if it is not scheduled)."""
        self._live.pop(key, None)

    def deadline_of(self, key: TimerKey) -> int | None:
        live = self._live.get(key)
        return None if live is None else live[0]

    def clear(self, owner: object) -> None:
        """Forget every timer of ``owner``."""
        for _, _, key in self._heaps.pop(owner, []):
            self._live.pop(key, None)

    def next_deadline_ms(self, owner: object | None = None) -> int | None:
        """The earliest deadline (of ``owner``'s timers, or of all), or None when none is set."""
        found: int | None = None
        for name in self._heaps if owner is None else (owner,):  # _head drops entries, not owners
            head = self._head(name)
            if head is not None and (found is None or head[0] < found):
                found = head[0]
        return found

    def pop_due(self, now_ms: int, owner: object | None = None) -> DueTimer | None:
        """Take the earliest timer due at ``now_ms`` (of ``owner``, or of any owner), or None.

        Call it in a loop: what a fired timer schedules at or before ``now_ms`` comes due in
        the same loop, in deadline order.
        """
        owners = list(self._heaps) if owner is None else [owner]
        best: tuple[int, int, TimerKey] | None = None
        for name in owners:
            head = self._head(name)
            if head is not None and head[0] <= now_ms and (best is None or head[:2] < best[:2]):
                best = head
        if best is None:
            return None
        key = best[2]
        heapq.heappop(self._heaps[key[0]])
        deadline_ms, _, payload = self._live.pop(key)
        return DueTimer(key, deadline_ms, payload)

    def _head(self, owner: object) -> tuple[int, int, TimerKey] | None:
        """The owner's earliest live entry (dropping stale ones above it)."""
        heap = self._heaps.get(owner)
        if heap is None:
            return None
        while heap:
            entry = heap[0]
            live = self._live.get(entry[2])
            if live is not None and live[1] == entry[1]:
                return entry
            heapq.heappop(heap)
        return None

    def _rebuild(self, owner: object) -> None:
        heap = [
            (deadline, seq, key)
            for deadline, seq, key in self._heaps[owner]
            if (live := self._live.get(key)) is not None and live[1] == seq
        ]
        heapq.heapify(heap)
        self._heaps[owner] = heap
