"""``kafka-wire decode``: size-prefixed frames (hex or binary; files or stdin) to JSON lines."""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Iterator
from typing import Any

from kafka_wire.codec.jsonify import to_jsonable
from kafka_wire.codec.runtime import Message
from kafka_wire.errors import DecodeError

# argparse's subparser action type is private; this alias keeps the signature readable.
SubParsers = Any


def add_parser(sub: SubParsers) -> None:
    p = sub.add_parser(
        "decode",
        help="decode request or response frames to JSON",
        description="Decode size-prefixed Kafka frames and print one JSON object per frame. "
        "Requests carry their api key and version in the header; responses need --api-key and --api-version.",
    )
    p.add_argument("files", nargs="*", help="files holding frames (default: stdin); '-' is stdin")
    p.add_argument("--hex", action="store_true", help="input is hex text (whitespace ignored)")
    p.add_argument("--response", action="store_true", help="frames are responses")
    p.add_argument("--api-key", type=int, help="api key of the request a response answers")
    p.add_argument("--api-version", type=int, help="api version of the request a response answers")
    p.add_argument("--strict", action="store_true", help="reject bytes after a body")
    p.add_argument("--indent", type=int, default=None, help="pretty-print JSON with this indent")
    p.set_defaults(handler=run)


def _read(path: str, as_hex: bool) -> bytes:
    raw = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    if as_hex:
        try:
            return bytes.fromhex("".join(raw.decode("ascii").split()))
        except ValueError as exc:
            raise SystemExit(f"{path}: not hex text: {exc}") from None
    return raw


def _frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    pos = 0
    while pos < len(data):
        if len(data) - pos < 4:
            raise DecodeError(f"{len(data) - pos} stray bytes after the last frame", offset=pos)
        (size,) = struct.unpack_from(">i", data, pos)
        end = pos + 4 + size
        if size < 0 or end > len(data):
            raise DecodeError(f"frame of {size} bytes does not fit the input", offset=pos)
        yield pos, data[pos:end]
        pos = end


def run(args: argparse.Namespace) -> int:
    from kafka_wire.protocol.framing import decode_request_frame, decode_response

    if args.response and (args.api_key is None or args.api_version is None):
        raise SystemExit("--response needs --api-key and --api-version")
    status = 0
    for path in args.files or ["-"]:
        data = _read(path, args.hex)
        try:
            for offset, frame in _frames(data):
                record: dict[str, Any] = {"source": path, "offset": offset, "size": len(frame) - 4}
                header: Message
                body: Message
                if args.response:
                    header, body = decode_response(frame, args.api_key, args.api_version, strict=args.strict)
                    record.update(kind="response", api_key=args.api_key, api_version=args.api_version)
                else:
                    decoded = decode_request_frame(frame, strict=args.strict)
                    header, body = decoded.header, decoded.body
                    record.update(
                        kind="request", api_key=decoded.header.request_api_key,
                        api_version=decoded.header.request_api_version,
                    )  # fmt: skip
                    if decoded.trailing:
                        record["trailing"] = decoded.trailing.hex()
                record["message"] = type(body).__name__
                record["header"] = to_jsonable(header)
                record["body"] = to_jsonable(body)
                print(json.dumps(record, indent=args.indent))
        except DecodeError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            status = 1
    return status
