"""``kafka-wire dump-log``: text and JSON output for segment files and records payloads."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pytest

from kafka_wire.cli import dump_log
from kafka_wire.logformat import encode_offset_entry, encode_time_entry
from kafka_wire.records import build_batch, build_commit_marker


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-wire")
    sub = parser.add_subparsers(dest="command", required=True)
    dump_log.add_parser(sub)
    return parser


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = _parser().parse_args(["dump-log", *argv])
    status = args.handler(args)
    out, err = capsys.readouterr()
    return status, out, err


def _segment() -> bytes:
    records = [(b"k%d" % i, b"value-%d" % i, [("h", b"x%d" % i)], 1_700_000_000_000 + i) for i in range(3)]
    return (
        build_batch(records, compression="lz4")
        + build_batch([r[:2] for r in records], magic=1, compression="gzip", base_offset=3)
        + build_commit_marker(producer_id=9, producer_epoch=0, coordinator_epoch=4, base_offset=6)
        + build_batch([(b"\xff\xfe", None, (), 5)], base_offset=7)
    )


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_segment() + _segment()[:25])
    return path


def test_text(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([str(segment)], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    batches = [line for line in lines if line.startswith("batch ")]
    records = [line for line in lines if line.startswith("| ")]
    assert len(batches) == 4 and len(records) == 8
    assert (
        'compression: "lz4"' in batches[0] and "magic: 1" in batches[1] and "is_control: true" in batches[2]
    )
    assert "control_type: COMMIT coordinator_epoch: 4" in records[6]
    assert "key:" not in records[0]
    assert lines[-1] == f"4 batches, 8 records, truncated tail of 25 bytes at position {len(_segment())}"


def test_print_data(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run([str(segment), "--print-data"], capsys)
    records = [line for line in out.splitlines() if line.startswith("| ")]
    assert 'key: "k0" value: "value-0" headers: h="x0"' in records[0]
    assert "key: 0xfffe value: null" in records[7]


def test_json(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run([str(segment), "--json", "--print-data"], capsys)
    objects = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [o["type"] for o in objects] == ["batch"] * 4 + ["summary"]
    first = objects[0]
    assert first["compression"] == "lz4" and first["record_count"] == 3 and first["crc_valid"]
    assert first["records"][1] == {
        "offset": 1,
        "timestamp": 1_700_000_000_001,
        "key_size": 2,
        "value_size": 7,
        "header_keys": ["h"],
        "key": "k1",
        "value": "value-1",
        "headers": [{"key": "h", "value": "x1"}],
    }
    assert objects[2]["records"][0]["control_type"] == "COMMIT"
    assert objects[3]["records"][0]["key_hex"] == "fffe"
    assert objects[-1] == {
        "type": "summary",
        "batches": 4,
        "records": 8,
        "position": len(_segment()),
        "truncated_tail": 25,
    }


def test_batches_only(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run([str(segment), "--json", "--batches-only"], capsys)
    objects = [json.loads(line) for line in out.splitlines()]
    assert all("records" not in o for o in objects[:-1]) and objects[-1]["records"] == 0


def test_corrupt_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(_segment())
    data[70] ^= 0xFF
    path = tmp_path / "bad.log"
    path.write_bytes(bytes(data))
    status, out, err = run([str(path)], capsys)
    assert status == 1 and "CRC-32C mismatch" in err and out.endswith("0 batches, 0 records\n")
    status, out, _ = run([str(path), "--no-verify", "--json", "--batches-only"], capsys)
    assert status == 0 and json.loads(out.splitlines()[0])["crc_valid"] is False


def test_stdin_hex_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hex_path = tmp_path / "payload.hex"
    hex_path.write_text(_segment().hex() + "\n")
    status, out, _ = run([str(hex_path), "--hex"], capsys)
    assert status == 0 and out.endswith("4 batches, 8 records\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_segment())))
    status, out, _ = run(["-"], capsys)
    assert status == 0 and out.endswith("4 batches, 8 records\n")
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert run([str(empty)], capsys)[1] == "0 batches, 0 records\n"
    status, _, err = run([str(tmp_path / "missing.log")], capsys)
    assert status == 2 and "cannot read" in err
    hex_path.write_text("zz")
    assert run([str(hex_path), "--hex"], capsys)[0] == 2


def test_index_files_print_their_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An offset or time index prints absolute offsets; the zero-filled tail of a preallocated
    index is reported, not printed."""
    index = tmp_path / "00000000000000000100.index"
    index.write_bytes(encode_offset_entry(0, 0) + encode_offset_entry(7, 4096) + bytes(16))
    status, out, err = run([str(index)], capsys)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "offset: 100 position: 0",
        "offset: 107 position: 4096",
        "2 entries, 16 bytes after the last entry ignored",
    ]
    times = tmp_path / "00000000000000000100.timeindex"
    times.write_bytes(encode_time_entry(1_700_000_000_000, 3))
    status, out, err = run(["--json", str(times)], capsys)
    assert (status, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"type": "time_entry", "timestamp": 1_700_000_000_000, "offset": 103},
        {"type": "summary", "entries": 1, "ignored_bytes": 0},
    ]


def test_a_file_not_named_as_an_index_reads_as_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "payload.index"
    path.write_bytes(build_batch([(b"k", b"v")]))
    status, out, _ = run([str(path)], capsys)
    assert status == 0 and out.endswith("1 batches, 1 records\n")
