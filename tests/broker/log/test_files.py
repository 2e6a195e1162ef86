"""Real files: FileStorage, Kafka-format readability (read_batches, dump-log), determinism, memory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kafka_wire.adapters.file_storage import FileStorage
from kafka_wire.broker.effects import Append, Delete, Fsync, MakeDir, Rename, Truncate, WriteAt
from kafka_wire.broker.log import LogConfig
from kafka_wire.cli import dump_log
from kafka_wire.logformat.index import decode_offset_entries, decode_time_entries
from kafka_wire.records import build_batch, read_batches
from kafka_wire.testing.memory_storage import MemoryStorage

from .helpers import CODECS, DIR, MIB, Driven, batch, contents, noise

CONFIG = LogConfig(
    segment_bytes=MIB,
    index_interval_bytes=100_000,
    cleanup_policy=("compact", "delete"),
    min_cleanable_dirty_ratio=0.1,
)


def _workload(d: Driven) -> None:
    for i in range(60):
        codec = CODECS[i % len(CODECS)]
        records = [
            (
                b"k%d" % ((i + j) % 7),
                noise(15_000 * (1 + i % 4), b"%d-%d" % (i, j)),
                (),
                1_700_000_000_000 + i,
            )
            for j in range(1 + i % 4)
        ]
        assert d.append(build_batch(records, compression=codec), now_ms=1_700_000_000_000 + i).error_code == 0
        if i == 30:
            d.append(build_batch([(b"legacy", b"v1", (), 5)], magic=1, compression="gzip"))
            d.append(build_batch([(b"legacy0", b"v0")], magic=0))
    d.log.cleaner_bytes_per_call = 64 * MIB  # one maintain call runs the whole pass
    d.maintain(1_700_000_100_000)
    d.log.delete_records_before(5)
    d.apply()


def test_file_storage_effects(tmp_path: Path) -> None:
    fs = FileStorage(tmp_path)
    fs.apply(
        [
            MakeDir("a"),
            Append("a/x", b"hello"),
            Append("a/x", b" world"),
            WriteAt("a/y", 3, b"zz"),
            Truncate("a/x", 5),
            Fsync("a/x"),
            Rename("a/x", "a/z"),
        ]
    )
    assert fs.list_dir("a") == ["y", "z"] and fs.list_dir("missing") == []
    assert fs.read("a/z", 1, 100) == b"ello" and fs.size("a/y") == 5 and fs.read("a/y", 0, 5) == b"\0\0\0zz"
    assert fs.size("a/x") is None and fs.size("a") is None and fs.read("a/x", 0, 4) == b""
    fs.apply([Delete("a/y"), Delete("a/nothing"), Delete("a")])
    assert fs.list_dir("") == []
    with pytest.raises(ValueError, match="relative"):
        fs.read("../etc/passwd", 0, 1)


def test_memory_and_file_storage_end_the_same(tmp_path: Path) -> None:
    memory = Driven(CONFIG, now_ms=1_700_000_000_000)
    files = Driven(CONFIG, storage=FileStorage(tmp_path), now_ms=1_700_000_000_000)
    _workload(memory)
    _workload(files)
    assert memory.effects == files.effects
    on_disk = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert on_disk == {k: bytes(v) for k, v in memory.storage.files.items()}
    assert contents(files.reopen()) == contents(memory.log)


def test_same_inputs_same_effects() -> None:
    runs = []
    for _ in range(2):
        d = Driven(CONFIG, now_ms=1_700_000_000_000)
        _workload(d)
        d.reopen(now_ms=1_700_000_200_000)
        runs.append(d.effects)
    assert runs[0] == runs[1]


def _dump(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(prog="kafka-wire")
    dump_log.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["dump-log", "--json", str(path)])
    assert args.handler(args) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return [json.loads(line) for line in out.splitlines()]


def test_segment_files_read_as_kafka_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = Driven(CONFIG, storage=FileStorage(tmp_path), now_ms=1_700_000_000_000)
    _workload(d)
    d.log.roll(1_700_000_300_000)
    d.apply()
    directory = tmp_path / DIR
    names = sorted(p.name for p in directory.iterdir())
    assert "log-start-offset" in names
    seen: list[int] = []
    for segment in d.log.segments:
        prefix = f"{segment.base_offset:020d}"
        assert f"{prefix}.log" in names and f"{prefix}.index" in names and f"{prefix}.timeindex" in names
        data = (directory / f"{prefix}.log").read_bytes()
        batches = list(read_batches(data))
        positions = {b.position: b for b in batches}
        assert sum(b.size_in_bytes for b in batches) == len(data)
        for b in batches:
            seen.extend(r.offset for r in b.records())
            assert b.last_offset >= segment.base_offset
        for rel, pos in decode_offset_entries((directory / f"{prefix}.index").read_bytes()):
            assert positions[pos].last_offset == segment.base_offset + rel
        stamps = decode_time_entries((directory / f"{prefix}.timeindex").read_bytes())
        assert [t for t, _ in stamps] == sorted({t for t, _ in stamps})
        if stamps:
            assert stamps[-1][0] == max(b.max_timestamp for b in batches)
        if data:
            dumped = _dump(directory / f"{prefix}.log", capsys)
            summary = dumped[-1]
            assert summary["type"] == "summary" and summary["batches"] == len(batches) == len(dumped) - 1
            assert summary["records"] == sum(len(b.records()) for b in batches)
    assert seen == sorted(seen)
    assert seen[-1] == d.log.log_end_offset - 1


def test_memory_does_not_hold_closed_segments() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, index_interval_bytes=100_000))
    for i in range(300):
        d.append(batch(2, value_size=100_000, ts=i), now_ms=i)
    assert d.log.segment_count > 50
    assert d.log.memory_held_bytes() == 0
    for segment in d.log.segments:
        for file in segment.files():
            assert not file.pending
        assert not hasattr(segment, "__dict__")  # slots only: a handful of integers per segment
    # reads of old data go to storage
    reads: list[tuple[str, int, int]] = []
    storage: MemoryStorage = d.storage

    class Spy(MemoryStorage):
        def read(self, path: str, position: int, size: int) -> bytes:
            reads.append((path, position, size))
            return storage.read(path, position, size)

    d.log.storage = Spy()
    assert d.log.read(3, 100).size > 0  # one batch (min_one_batch), read in bounded pieces
    assert reads and all(size <= 256 * 1024 for _, _, size in reads)
