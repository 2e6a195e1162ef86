"""Python's cyclic garbage collector kept from stalling the event loop.

A full collection (generation 2) walks every object the collector tracks, while the loop waits:
with 10,000 partitions open, about 100 ms on two idle cores, which was the worst stall another
connection saw while a CreateTopics of 9,999 partitions ran (its objects pile into the oldest
generation and set off several full collections on the way). Almost all of those objects live as
long as the broker, so walking them again finds nothing.

:class:`CollectorPolicy` freezes (``gc.freeze``) what survives each full collection: frozen objects
are skipped by later collections, so the next full one walks only what is newer. Frozen objects
that become cyclic garbage later are not freed while frozen; so that this cannot grow without
bound, once the frozen objects are more than :data:`GROWTH` times as many as after the last full
collection that walked everything (and more than :data:`WHOLE_WALK_FLOOR`), they are unfrozen,
and the next full collection walks (and frees) the whole heap again: memory stays within about
that factor of what is live (or that many objects more), at the cost of one whole-heap walk each
time the heap grows by it. Measured in-process on a CreateTopics of 9,999 partitions (tmpfs):
the longest engine call went from 96 ms to 13 ms. The policy is the driver's (it
touches the interpreter, which the engine never does) and checks after each engine call.
"""

from __future__ import annotations

import gc
from typing import Final

#: How much the frozen objects may grow before a full collection walks the whole heap again.
GROWTH: Final = 2.0
#: ... but not before they are this many (a walk of them takes about 0.1 s on this project's
#: 2-core machine; a tracked object is 50-200 bytes, so this bounds what may leak meanwhile).
WHOLE_WALK_FLOOR: Final = 500_000


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


class CollectorPolicy:
    """Freeze the survivors of every full collection; walk the whole heap once per growth."""

    def __init__(self, growth: float = GROWTH, floor: int = WHOLE_WALK_FLOOR) -> None:
        self.growth = growth
        self.floor = floor
        self._seen = _full_collections()
        #: Frozen objects after the last whole-heap collection.
        self._base = 0
        #: Unfrozen for the next full collection to walk everything.
        self._whole_next = False

    def start(self) -> None:
        """After start-up: what it built lives as long as the broker."""
        gc.freeze()
        self._base = gc.get_freeze_count()
        self._seen = _full_collections()

    def after_call(self) -> None:
        """After an engine call: freeze the survivors when a full collection ran since the last
        call (or unfreeze everything when the frozen objects grew past :attr:`growth`)."""
        seen = _full_collections()
        if seen == self._seen:
            return
        self._seen = seen
        gc.freeze()
        frozen = gc.get_freeze_count()
        if self._whole_next:
            self._whole_next = False
            self._base = frozen
        elif frozen > max(self.growth * self._base, self.floor):
            gc.unfreeze()
            self._whole_next = True
