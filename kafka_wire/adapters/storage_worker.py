"""Storage off the event loop: the engine's batches of storage effects applied on a worker thread.

The engine hands out one batch per call that writes (``kafka_wire.broker.storage_pipeline``). The
loop submits it (:meth:`StorageWorker.submit`) and goes on serving; the worker thread applies the
batches in the order they were submitted, each one's effects in order, and reports their outcomes
back to the loop in that order (``report``, called on the loop's thread with one outcome per
batch: None when it was applied, else the :class:`~kafka_wire.broker.driving.StorageFailure`;
after a failure nothing more is applied). The engine stays on the loop's thread; the worker only
touches files.

**Group commit.** The worker takes every batch waiting when it starts on one (up to
:data:`MAX_GROUP_BATCHES`) as one group: their effects are applied in order and the fsyncs they
ask for are done once each, at the end of the group (and before a rename or a delete:
``FileStorage``'s :class:`~kafka_wire.adapters.file_storage.GroupCommit`), then every batch of the
group is reported. So several writes to one file waiting together (``flush.messages=1`` under
load, the metadata log) cost one fsync, and a batch is reported applied only once what it asked to
be durable is.

**Reads.** The engine reads files on the loop's thread (this object is its
:class:`~kafka_wire.broker.storage.StorageReader`). It never reads the bytes of appends in flight
(it keeps them until their batch is reported), but it may read a path that a batch in flight
creates, renames, truncates, deletes or writes in place: such a read waits until the worker has
applied that batch (rare: a topic re-created while its old directory is being deleted, a segment
read just after compaction swapped it in), so that every read sees what earlier calls wrote.

**Zero-copy regions.** A ``Send`` that the engine releases when batch *k* is reported carries
file regions as they were after batch *k*, but the worker may have gone on with later batches. So
before a later batch renames or deletes a segment file the worker opens it and keeps the
descriptor (a *pin*): :meth:`StorageWorker.open_region` then reads the region from the pinned
file, which no rename or delete changes. Pins are closed once the loop has handled the reports
that could need them. (A truncation changes the file itself: a region cut by it sends short, and
the client's CRC check ends its read, as with a file gone.)
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import BinaryIO, Final

from kafka_wire.adapters.file_storage import FileStorage, GroupCommit
from kafka_wire.broker.driving import StorageFailure
from kafka_wire.broker.effects import Append, Delete, FileRegion, Fsync, Rename, StorageEffect

#: Batches applied and reported together at most (their fsyncs shared).
MAX_GROUP_BATCHES: Final = 64
#: The interpreter's thread switch interval while the worker runs (Python's default is 5 ms). The
#: worker applies its effects in Python, holding the GIL; the loop's thread wants it back after
#: each of its waits (select, a socket write), and waited up to a switch interval each time: while
#: the 60,000 effects of a 9,999-partition CreateTopics were applied, one turn of the loop took
#: about 20 ms and another connection's round trip up to 120-180 ms; at 0.5 ms, 41 ms.
SWITCH_INTERVAL_S: Final = 0.0005
#: In-flight path records kept before the applied ones are pruned.
_PRUNE_AT: Final = 4096
_log = logging.getLogger("kafka_wire.adapters.storage_worker")

Outcome = StorageFailure | None


def _with_ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class StorageWorker:
    """One thread applying storage batches in order (see the module docstring)."""

    def __init__(self, storage: FileStorage, report: Callable[[list[Outcome]], None]) -> None:
        self.storage = storage
        self._loop: asyncio.AbstractEventLoop | None = None
        self._report = report
        self._cond = threading.Condition()
        self._queue: deque[tuple[int, list[StorageEffect]]] = deque()
        #: Batches submitted (numbered from 1), and the last one applied with its fsyncs.
        self.submitted = 0
        self.applied = 0
        #: Set (on the worker's thread) at the first failure: nothing more is applied.
        self.failed = False
        self._closing = False
        self._thread: threading.Thread | None = None
        # What batches in flight change, for the reads that must wait for them (loop thread).
        self._changed: dict[str, int] = {}  # created, renamed, deleted, truncated or written in place
        self._resized: dict[str, int] = {}  # appended to
        self._listed: dict[str, int] = {}  # directories whose entries change
        #: Reads that had to wait for the worker.
        self.waited_reads = 0
        # Pins: segment files as they were before a batch renamed or deleted them.
        self._pins: dict[str, list[tuple[int, int]]] = {}
        self._pins_lock = threading.Lock()

    # -- the loop's side ----------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the thread; outcomes are reported on ``loop``. The interpreter's switch
        interval is shortened to :data:`SWITCH_INTERVAL_S`."""
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="kafka-wire-storage", daemon=True)
        self._thread.start()

    @property
    def in_flight(self) -> bool:
        return self.submitted > self.applied and not self.failed

    def submit(self, effects: list[StorageEffect]) -> None:
        """Queue one batch (on the loop's thread)."""
        self.submitted += 1
        batch = self.submitted
        changed, resized, listed = self._changed, self._resized, self._listed
        for effect in effects:
            if isinstance(effect, Append):
                resized[effect.path] = batch
                listed[effect.path.rpartition("/")[0]] = batch
            elif isinstance(effect, Rename):
                for path in (effect.source, effect.target):
                    changed[path] = batch
                    listed[path.rpartition("/")[0]] = batch
            elif not isinstance(effect, Fsync):
                changed[effect.path] = batch
                listed[effect.path.rpartition("/")[0]] = batch
        with self._cond:
            self._queue.append((batch, effects))
            self._cond.notify()

    def close(self) -> None:
        """Stop the thread once the queue is empty (or at once after a failure); close the pins."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        self.release_pins(self.submitted + 1)

    # -- StorageReader: reads see every batch submitted before them ----------------------------------
    def _wait_for(self, batch: int) -> None:
        if batch <= self.applied:
            return
        self.waited_reads += 1
        _log.debug("a read waits for batch %d (applied: %d)", batch, self.applied)
        with self._cond:
            while self.applied < batch and not self.failed and not self._closing:
                self._cond.wait()

    def _changed_at(self, path: str) -> int:
        changed = self._changed
        return max((changed.get(p, 0) for p in _with_ancestors(path)), default=0) if changed else 0

    def list_dir(self, path: str) -> list[str]:
        self._wait_for(max(self._listed.get(path, 0), self._changed_at(path) if path else 0))
        return self.storage.list_dir(path)

    def size(self, path: str) -> int | None:
        self._wait_for(max(self._resized.get(path, 0), self._changed_at(path)))
        return self.storage.size(path)

    def read(self, path: str, position: int, size: int) -> bytes:
        self._wait_for(self._changed_at(path))
        return self.storage.read(path, position, size)

    def prune(self) -> None:
        """Forget what batches already applied changed (called now and then on the loop)."""
        if len(self._changed) + len(self._resized) + len(self._listed) < _PRUNE_AT:
            return
        applied = self.applied
        for table in (self._changed, self._resized, self._listed):
            for path in [p for p, batch in table.items() if batch <= applied]:
                del table[path]

    # -- zero-copy regions ---------------------------------------------------------------------------
    def open_region(self, region: FileRegion, reported: int) -> BinaryIO:
        """Open a region's file as it was once batch ``reported`` was applied (the loop has
        handled that many reports): the pin of the first later batch that renamed or deleted it,
        else the file itself (``OSError`` when it is gone)."""
        with self._pins_lock:
            for batch, fd in self._pins.get(region.path, ()):
                if batch > reported:
                    return os.fdopen(os.dup(fd), "rb")
            return open(self.storage.root / region.path, "rb")

    def release_pins(self, reported: int) -> None:
        """The loop handled ``reported`` reports and opened their regions: the pins only
        regions released by those could need are closed."""
        if not self._pins:
            return
        with self._pins_lock:
            for path in list(self._pins):
                keep = []
                for batch, fd in self._pins[path]:
                    if batch <= reported + 1:
                        os.close(fd)
                    else:
                        keep.append((batch, fd))
                if keep:
                    self._pins[path] = keep
                else:
                    del self._pins[path]

    def _pin(self, batch: int, path: str) -> None:
        """Before batch ``batch`` renames or deletes ``path``: keep it open if it is a segment file."""
        if not path.endswith(".log"):
            return
        try:
            fd = os.open(self.storage.root / path, os.O_RDONLY)
        except OSError:
            return
        with self._pins_lock:
            self._pins.setdefault(path, []).append((batch, fd))

    # -- the worker's thread -------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                group = [self._queue.popleft() for _ in range(min(len(self._queue), MAX_GROUP_BATCHES))]
            try:
                outcomes = self._apply_group(group)
            except Exception as exc:  # a bug: the group fails, and the broker stops
                _log.exception("the storage worker failed")
                outcomes = [StorageFailure(group[0][1][0], None, f"storage worker: {exc!r}")]
            applied = sum(1 for outcome in outcomes if outcome is None)
            with self._cond:
                self.applied = group[0][0] + applied - 1
                if applied < len(outcomes):
                    self.failed = True
                    self._queue.clear()
                self._cond.notify_all()
            assert self._loop is not None
            try:
                self._loop.call_soon_threadsafe(self._report, outcomes)
            except RuntimeError:  # the loop is closed: nobody is left to tell
                return
            if self.failed:
                return

    def _apply_group(self, group: list[tuple[int, list[StorageEffect]]]) -> list[Outcome]:
        """Apply a group of batches with shared fsyncs: one outcome per batch (a failure ends the
        list; it fails the batch whose write failed, or the first one that asked for an fsync
        not yet done then, which may be what failed)."""
        first = group[0][0]
        fsyncs = GroupCommit()
        #: The first batch that asked for an fsync not done yet.
        unsynced: int | None = None
        for batch, effects in group:
            for effect in effects:
                if isinstance(effect, Rename | Delete):
                    self._pin(batch, effect.source if isinstance(effect, Rename) else effect.path)
                flushes = fsyncs.flushes
                try:
                    self.storage.apply_one(effect, fsyncs)
                except OSError as exc:
                    failed = batch if unsynced is None else unsynced
                    return [None] * (failed - first) + [StorageFailure.of(effect, exc)]
                except Exception as exc:  # a bug (a path outside the data directory): fail the batch
                    _log.exception("cannot apply %r", effect)
                    failed = batch if unsynced is None else unsynced
                    return [None] * (failed - first) + [StorageFailure(effect, None, str(exc))]
                if fsyncs.flushes != flushes:
                    unsynced = None
                if unsynced is None and len(fsyncs):
                    unsynced = batch
        try:
            fsyncs.flush()
        except OSError as exc:
            failed = first if unsynced is None else unsynced
            path = os.path.relpath(exc.filename, self.storage.root) if exc.filename else ""
            return [None] * (failed - first) + [StorageFailure.of(Fsync(path), exc)]
        return [None] * len(group)
