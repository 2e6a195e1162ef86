"""The simulator's clock and event queue: one heap of events ordered by ``(time_ms, seq)``.

Each executed event appends one line ``"<time> <label>"`` to the trace (when a trace is kept);
labels are built from deterministic values only (node ids, connection numbers, sizes), never
object ids or hash-ordered data, so the same seed gives the same trace in every process. A
cancelled event leaves the queue without running and without a trace line.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

Action = Callable[[], None]


class Event:
    """One scheduled action; :meth:`cancel` drops it."""

    __slots__ = ("action", "cancelled", "label", "seq", "time_ms")

    def __init__(self, time_ms: int, seq: int, label: str, action: Action) -> None:
        self.time_ms = time_ms
        self.seq = seq
        self.label = label
        self.action = action
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    """Virtual time and the events due at it. ``run_one`` executes the next event."""

    def __init__(self, start_ms: int, *, trace: bool = False) -> None:
        self.now_ms = start_ms
        self._heap: list[tuple[int, int, Event]] = []
        self._seq = 0
        #: Executed events so far.
        self.executed = 0
        #: The trace lines (None: not kept).
        self.trace: list[str] | None = [] if trace else None

    def at(self, time_ms: int, label: str, action: Action) -> Event:
        """Run ``action`` at ``time_ms`` (never before now)."""
        if time_ms < self.now_ms:
            time_ms = self.now_ms
        self._seq += 1
        event = Event(time_ms, self._seq, label, action)
        heapq.heappush(self._heap, (time_ms, self._seq, event))
        return event

    def after(self, delay_ms: int, label: str, action: Action) -> Event:
        return self.at(self.now_ms + delay_ms, label, action)

    def next_time_ms(self) -> int | None:
        """When the next live event is due (None: nothing is scheduled)."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def run_one(self) -> bool:
        """Execute the next live event (False: the queue is empty)."""
        heap = self._heap
        while heap:
            time_ms, _, event = heapq.heappop(heap)
            if event.cancelled:
                continue
            self.now_ms = time_ms
            self.executed += 1
            if self.trace is not None:
                self.trace.append(f"{time_ms} {event.label}")
            event.action()
            return True
        return False

    def pending(self) -> int:
        return sum(1 for _, _, e in self._heap if not e.cancelled)
