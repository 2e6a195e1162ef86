"""``kafka-wire dump-log FILE``: print the batches and records of a segment file or records payload,
or the entries of a segment's index file.

It maps the file (or reads stdin), hands the bytes to :class:`RecordsReader` and prints what comes
back, as text or as JSON lines (one object per batch, then a summary object). A file named as a
segment's offset index or time index (``00000000000000000042.index`` / ``.timeindex``, see
:mod:`kafka_wire.logformat`) is printed entry by entry instead, with absolute offsets.
"""

from __future__ import annotations

import argparse
import binascii
import json
import mmap
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from kafka_wire.errors import DecodeError
from kafka_wire.logformat.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    decode_offset_entries,
    decode_time_entries,
)
from kafka_wire.logformat.names import INDEX_SUFFIX, TIME_INDEX_SUFFIX, parse_segment_name
from kafka_wire.records.config import DEFAULT_MAX_DECOMPRESSED_BYTES, ReadConfig
from kafka_wire.records.control import (
    ControlRecordType,
    decode_control_key,
    decode_end_txn_marker,
)
from kafka_wire.records.reader import RecordsReader
from kafka_wire.records.record import Record


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``dump-log`` subcommand."""
    parser = sub.add_parser(
        "dump-log",
        help="print the batches and records of a segment file or records payload",
        description=(
            "Print every batch (any magic) and its records from a Kafka segment file (.log) or a raw "
            "records payload. A partial batch at the end is reported as a truncated tail. An offset "
            "index (.index) or time index (.timeindex) prints its entries."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", help="segment file, index file or records payload; '-' reads stdin"
    )
    parser.add_argument(
        "--json", action="store_true", help="JSON lines: one object per batch, then a summary"
    )
    parser.add_argument("--print-data", action="store_true", help="show keys, values and header values")
    parser.add_argument("--no-verify", action="store_true", help="do not check CRCs")
    parser.add_argument("--batches-only", action="store_true", help="print batch headers without records")
    parser.add_argument("--hex", action="store_true", help="FILE holds hex text rather than raw bytes")
    parser.add_argument(
        "--max-decompressed-bytes",
        type=int,
        default=DEFAULT_MAX_DECOMPRESSED_BYTES,
        metavar="N",
        help=f"cap per compressed batch (default {DEFAULT_MAX_DECOMPRESSED_BYTES})",
    )
    parser.set_defaults(handler=run)


def _text_or_hex(data: bytes | None) -> tuple[str, str | None]:
    """``("text", s)`` for printable UTF-8, ``("hex", h)`` otherwise, ``("text", None)`` for null."""
    if data is None:
        return "text", None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if text.isprintable():
            return "text", text
    return "hex", binascii.hexlify(data).decode()


def _show(data: bytes | None) -> str:
    kind, text = _text_or_hex(data)
    if text is None:
        return "null"
    return json.dumps(text, ensure_ascii=False) if kind == "text" else f"0x{text}"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _control_fields(record: Record[bytes]) -> dict[str, Any]:
    try:
        key = decode_control_key(record.key)
    except DecodeError as e:
        return {"control_error": e.reason}
    out: dict[str, Any] = {
        "control_type": key.type.name if key.type is not ControlRecordType.UNKNOWN else key.type_id
    }
    if key.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        try:
            marker = decode_end_txn_marker(record.value)
        except DecodeError as e:
            out["control_error"] = e.reason
        else:
            out["coordinator_epoch"] = marker.coordinator_epoch
    return out


def _record_dict(record: Record[bytes], *, control: bool, print_data: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_size": _size(record.key),
        "value_size": _size(record.value),
        "header_keys": [k for k, _ in record.headers],
    }
    if control:
        out.update(_control_fields(record))
    if print_data:
        for name, data in (("key", record.key), ("value", record.value)):
            kind, text = _text_or_hex(data)
            out[name if kind == "text" else f"{name}_hex"] = text
        headers = []
        for k, v in record.headers:
            kind, text = _text_or_hex(v)
            headers.append({"key": k, ("value" if kind == "text" else "value_hex"): text})
        out["headers"] = headers
    return out


def _batch_dict(batch: Any, verify: bool) -> dict[str, Any]:
    return {
        "type": "batch",
        "position": batch.position,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "record_count": batch.record_count,
        "size": batch.size_in_bytes,
        "magic": batch.magic,
        "compression": batch.compression,
        "crc": batch.crc,
        "crc_valid": batch.is_valid() if not verify else True,
        "attributes": batch.attributes,
        "timestamp_type": batch.timestamp_type.name,
        "base_timestamp": batch.base_timestamp,
        "max_timestamp": batch.max_timestamp,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "delete_horizon_ms": batch.delete_horizon_ms,
    }


def _print_text(
    out: IO[str], batch: dict[str, Any], records: list[dict[str, Any]] | None, print_data: bool
) -> None:
    line = " ".join(f"{k}: {json.dumps(v)}" for k, v in batch.items() if k != "type")
    out.write(f"batch {line}\n")
    for rec in records or ():
        parts = [f"| offset: {rec['offset']}", f"timestamp: {rec['timestamp']}"]
        if "control_type" in rec or "control_error" in rec:
            for name in ("control_type", "coordinator_epoch", "control_error"):
                if name in rec:
                    parts.append(f"{name}: {rec[name]}")
        parts.append(f"key_size: {rec['key_size']} value_size: {rec['value_size']}")
        parts.append(f"header_keys: {json.dumps(rec['header_keys'], ensure_ascii=False)}")
        if print_data:
            parts.append(f"key: {rec['_key']} value: {rec['_value']}")
            if rec["_headers"]:
                parts.append("headers: " + ", ".join(rec["_headers"]))
        out.write(" ".join(parts) + "\n")


def dump(data: Any, args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print every batch of ``data``; returns the exit status (1 after a decode error)."""
    config = ReadConfig(verify_crc=not args.no_verify, max_decompressed_bytes=args.max_decompressed_bytes)
    reader = RecordsReader(data, config)

    def emit(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")

    batches = records_seen = 0
    status = 0
    try:
        for batch in reader:
            info = _batch_dict(batch, verify=config.verify_crc)
            records: list[dict[str, Any]] | None = None
            if not args.batches_only:
                records = []
                for record in batch:
                    rec = _record_dict(
                        record, control=batch.is_control, print_data=args.print_data and args.json
                    )
                    if args.print_data and not args.json:
                        rec["_key"] = _show(record.key)
                        rec["_value"] = _show(record.value)
                        rec["_headers"] = [f"{k}={_show(v)}" for k, v in record.headers]
                    records.append(rec)
                records_seen += len(records)
            batches += 1
            if args.json:
                if records is not None:
                    info["records"] = records
                emit(info)
            else:
                _print_text(out, info, records, args.print_data)
    except DecodeError as e:
        err.write(f"error: {e}\n")
        status = 1
    summary = {
        "type": "summary",
        "batches": batches,
        "records": records_seen,
        "position": reader.position,
        "truncated_tail": reader.truncated_tail,
    }
    if args.json:
        emit(summary)
    else:
        out.write(f"{batches} batches, {records_seen} records")
        if reader.truncated_tail:
            out.write(f", truncated tail of {reader.truncated_tail} bytes at position {reader.position}")
        out.write("\n")
    return status


def index_kind(name: str) -> tuple[int, str] | None:
    """``(base offset, suffix)`` when ``name`` is a segment's offset or time index file."""
    parsed = parse_segment_name(name)
    if parsed is None or parsed[1] not in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        return None
    return parsed


def dump_index(data: bytes, base_offset: int, suffix: str, args: argparse.Namespace, out: IO[str]) -> int:
    """Print the entries of an index file with absolute offsets. Entries stop at the first one that
    does not increase (the zero-filled tail of a preallocated index); the rest is reported as
    ignored bytes. Returns 0."""
    if suffix == INDEX_SUFFIX:
        entries: list[dict[str, Any]] = [
            {"type": "offset_entry", "offset": base_offset + rel, "position": pos}
            for rel, pos in decode_offset_entries(data)
        ]
        used = len(entries) * OFFSET_ENTRY_SIZE
    else:
        entries = [
            {"type": "time_entry", "timestamp": ts, "offset": base_offset + rel}
            for ts, rel in decode_time_entries(data)
        ]
        used = len(entries) * TIME_ENTRY_SIZE
    summary = {"type": "summary", "entries": len(entries), "ignored_bytes": len(data) - used}
    for entry in entries:
        if args.json:
            out.write(json.dumps(entry) + "\n")
        else:
            out.write(" ".join(f"{k}: {v}" for k, v in entry.items() if k != "type") + "\n")
    if args.json:
        out.write(json.dumps(summary) + "\n")
    else:
        out.write(f"{len(entries)} entries")
        if summary["ignored_bytes"]:
            out.write(f", {summary['ignored_bytes']} bytes after the last entry ignored")
        out.write("\n")
    return 0


def _load(args: argparse.Namespace) -> tuple[Any, Callable[[], None]]:
    """The input bytes (a memory map for regular files) and a function that releases them."""
    if args.file == "-":
        raw = sys.stdin.buffer.read()
        data: Any = binascii.unhexlify(b"".join(raw.split())) if args.hex else raw
        return data, lambda: None
    path = Path(args.file)
    if args.hex:
        return binascii.unhexlify(b"".join(path.read_bytes().split())), lambda: None
    with path.open("rb") as f:
        if path.stat().st_size == 0:
            return b"", lambda: None
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def release() -> None:
        try:
            mapped.close()
        except BufferError:  # a view is still alive somewhere; the map goes with it
            pass

    return mapped, release


def run(args: argparse.Namespace) -> int:
    """Handler of ``kafka-wire dump-log``."""
    try:
        data, release = _load(args)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"error: cannot read {args.file}: {e}\n")
        return 2
    kind = None if args.file == "-" else index_kind(Path(args.file).name)
    try:
        if kind is not None:
            return dump_index(bytes(data), kind[0], kind[1], args, sys.stdout)
        return dump(data, args, sys.stdout, sys.stderr)
    except BrokenPipeError:
        return 0
    finally:
        del data
        release()
