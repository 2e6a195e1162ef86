"""The storage worker on real files: batches applied in order off the loop's thread, fsyncs shared
by the batches waiting together, a failure ending the work, reads that wait for what is in flight
on their path, and regions read as they were when the engine released them."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from kafka_wire.adapters.file_storage import FileStorage, GroupCommit
from kafka_wire.adapters.storage_worker import Outcome, StorageWorker
from kafka_wire.broker.effects import Append, FileRegion, Fsync, MakeDir, Rename, StorageEffect, WriteAt


class GatedStorage(FileStorage):
    """Files whose writes wait at ``gate`` (once it is set to a cleared event) before ``gated_on``."""

    def __init__(self, root: Path, gated_on: type) -> None:
        super().__init__(root)
        self.gate = threading.Event()
        self.gated_on = gated_on
        self.reached = threading.Event()

    def apply_one(self, effect: StorageEffect, group: GroupCommit | None = None) -> None:
        if isinstance(effect, self.gated_on) and not self.gate.is_set():
            self.reached.set()
            self.gate.wait(10)
        super().apply_one(effect, group)


def run(test: Callable[[asyncio.AbstractEventLoop], Coroutine[Any, Any, None]]) -> None:
    async def main() -> None:
        await test(asyncio.get_running_loop())

    asyncio.run(main())


async def reports(outcomes: list[Outcome], count: int) -> None:
    """Let the loop take the worker's reports until ``count`` outcomes came (or 10 s)."""
    for _ in range(1000):
        if len(outcomes) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(outcomes)} outcomes of {count}")


def test_batches_waiting_together_share_their_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = GatedStorage(tmp_path, Append)
    outcomes: list[Outcome] = []
    fsyncs: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        if os.path.isfile(f"/proc/self/fd/{fd}"):
            fsyncs.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)

    async def test(loop: asyncio.AbstractEventLoop) -> None:
        worker = StorageWorker(storage, outcomes.extend)
        worker.start(loop)
        worker.submit([MakeDir("t-0"), Append("t-0/a.log", b"0"), Fsync("t-0/a.log")])
        assert await asyncio.to_thread(storage.reached.wait, 10)
        for i in range(1, 10):  # queued while the first batch is held: one group
            worker.submit([Append("t-0/a.log", b"%d" % i), Fsync("t-0/a.log")])
        storage.gate.set()
        await reports(outcomes, 10)
        worker.close()
        assert outcomes == [None] * 10 and worker.applied == 10
        assert (tmp_path / "t-0" / "a.log").read_bytes() == b"0123456789"
        assert len(fsyncs) == 2  # one for the first batch, one for the nine that waited

    run(test)


def test_a_failed_write_ends_the_work(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    (tmp_path / "file").write_bytes(b"")
    outcomes: list[Outcome] = []

    async def test(loop: asyncio.AbstractEventLoop) -> None:
        worker = StorageWorker(storage, outcomes.extend)
        worker.start(loop)
        worker.submit([Append("a", b"1")])
        worker.submit([Append("b", b"2"), Append("file/c", b"3")])  # a file is not a directory
        worker.submit([Append("d", b"4")])
        await reports(outcomes, 2)
        worker.close()
        assert outcomes[0] is None
        failure = outcomes[1]
        assert failure is not None and failure.errno == errno.ENOTDIR and "file/c" in str(failure)
        assert len(outcomes) == 2 and worker.failed and not worker.in_flight
        assert not (tmp_path / "d").exists()  # nothing after the failure is applied

    run(test)


def test_a_read_waits_for_a_change_in_flight_on_its_path(tmp_path: Path) -> None:
    storage = GatedStorage(tmp_path, Rename)
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "m.tmp").write_bytes(b"new")
    (tmp_path / "t-0" / "m").write_bytes(b"old")
    (tmp_path / "t-0" / "log").write_bytes(b"abc")
    outcomes: list[Outcome] = []

    async def test(loop: asyncio.AbstractEventLoop) -> None:
        worker = StorageWorker(storage, outcomes.extend)
        worker.start(loop)
        worker.submit([Append("t-0/log", b"def"), Rename("t-0/m.tmp", "t-0/m")])
        assert await asyncio.to_thread(storage.reached.wait, 10)
        # Appends in flight never make a read wait: the engine reads only what was applied.
        assert worker.read("t-0/log", 0, 3) == b"abc" and worker.waited_reads == 0
        threading.Timer(0.2, storage.gate.set).start()
        assert worker.read("t-0/m", 0, 3) == b"new"  # after the rename, as the engine wrote it
        assert worker.waited_reads == 1 and worker.applied == 1
        await reports(outcomes, 1)
        worker.close()

    run(test)


def test_a_region_reads_the_file_as_it_was_when_released(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00.log").write_bytes(b"old segment")
    outcomes: list[Outcome] = []

    async def test(loop: asyncio.AbstractEventLoop) -> None:
        worker = StorageWorker(storage, outcomes.extend)
        worker.start(loop)
        # Batch 1 swaps the segment for another (as compaction does) before the loop has opened
        # the regions of the answers released with the report of batch 0.
        worker.submit([Rename("t-0/00.log", "t-0/00.log.deleted"), WriteAt("t-0/00.log", 0, b"NEW SEGMENT")])
        await reports(outcomes, 1)
        region = FileRegion("t-0/00.log", 0, 3)
        with worker.open_region(region, 0) as before, worker.open_region(region, 1) as after:
            assert before.read(3) == b"old" and after.read(3) == b"NEW"
        worker.release_pins(1)
        with worker.open_region(region, 0) as now:
            assert now.read(3) == b"NEW"  # pins go once no report could need them
        worker.close()

    run(test)
