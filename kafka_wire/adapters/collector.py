"""The interpreter's cyclic garbage collector, kept from pausing the event loop for long.

CPython collects its oldest generation whenever it has grown by a quarter since the last time,
in the middle of whatever the loop is doing; with the state of 10,000 partitions (some 250,000
tracked objects) one such collection stops every connection for 50 ms to several hundred. So a
``kafka-wire serve`` process (:meth:`Collector.start`) leaves the young generations to the
interpreter (small: a few milliseconds at most) and collects the oldest generation itself: when
the broker is quiet (no request in progress, no write in flight, no input for :data:`QUIET_S`),
or at the latest :data:`MAX_INTERVAL_S` after the last full collection, so that cyclic garbage
cannot pile up under a load that never pauses. What ``kafka-wire serve`` made before it listened
(its modules, classes and start-up state, made with the collector off) is frozen with ``gc.freeze``
until the first full collection, which thaws it first (``gc.unfreeze``): the first requests are
not the ones to pay for a young collection of all of it, and nothing stays frozen (the state of a
topic deleted later must be collected).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from typing import Final

#: How long the broker must have been quiet before a full collection.
QUIET_S: Final = 0.5
#: The longest time between two full collections, quiet or not.
MAX_INTERVAL_S: Final = 300.0
#: How often the collector looks.
_CHECK_S: Final = 0.25
#: A threshold for the oldest generation that the interpreter never reaches.
_NEVER: Final = 1 << 30
_log = logging.getLogger("kafka_wire.adapters.collector")


class Collector:
    """Full collections at quiet moments for one process (see the module docstring)."""

    def __init__(self, quiet_for: Callable[[], float]) -> None:
        #: Seconds the broker has been quiet (0 while it is busy).
        self._quiet_for = quiet_for
        self._thresholds: tuple[int, int, int] | None = None
        #: Collections of the middle generation that call for a full one (the interpreter's own
        #: threshold for the oldest generation).
        self._full_after = 10
        self._task: asyncio.Task[None] | None = None
        self._last = time.monotonic()

    def start(self) -> None:
        """Take the oldest generation from the interpreter, start looking."""
        young, middle, self._full_after = self._thresholds = gc.get_threshold()
        gc.set_threshold(young, middle, _NEVER)
        self._last = time.monotonic()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
        gc.unfreeze()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(_CHECK_S)
            since = time.monotonic() - self._last
            # gc.get_count()[2]: collections of the middle generation since the last full one.
            due = gc.get_count()[2] >= self._full_after
            if (due and self._quiet_for() >= QUIET_S) or since >= MAX_INTERVAL_S:
                start = time.monotonic()
                gc.unfreeze()  # what serve made before it listened: collected from now on
                found = gc.collect()
                self._last = time.monotonic()
                _log.debug("full collection: %d unreachable, %.1f ms", found, (self._last - start) * 1000)
