"""Harness: request frames from an untrusted client, every API and version.

The input is a size-prefixed request frame; its header names the API and the version, so the
fuzzer reaches every decoder by changing four bytes. A frame whose size prefix is wrong is
decoded as it is (it must fail cleanly) and again with the size put right, so byte-level
insertions and deletions still reach the body decoders.

The rule: :func:`kafka_wire.decode_request_frame` returns a frame or raises a ``DecodeError``
subclass. The round trip: a decoded frame re-encodes (with its trailing bytes) to a frame that
decodes to the same header and body, and encoding that again gives the same bytes.

Run: ``python fuzz/fuzz_requests.py [corpus dir] [libFuzzer flags]``; replay a crash with
``python fuzz/fuzz_requests.py crash-file``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.common import Finding, MemorySampler, fuzz_main, instrumenting, structure_mutator, with_size_fixed

#: What ``KAFKA_WIRE_FUZZ_INSTRUMENT=core`` instruments.
TARGETS = ("kafka_wire.protocol.framing", "kafka_wire.codec", "kafka_wire.messages.request_header")

with instrumenting(__name__ == "__main__", TARGETS):
    from kafka_wire.errors import DecodeError, EncodeError
    from kafka_wire.protocol.framing import decode_request_frame, encode_request

_memory = MemorySampler()


def check_frame(frame: bytes) -> None:
    try:
        decoded = decode_request_frame(frame)
    except DecodeError:
        return
    header, body, trailing = decoded.header, decoded.body, decoded.trailing
    version = header.request_api_version
    try:
        again = encode_request(header, body, version, trailing=trailing)
    except EncodeError as exc:
        raise Finding(f"decoded {type(body).__name__} v{version} does not encode again: {exc}") from exc
    redecoded = decode_request_frame(again)
    if (redecoded.header, redecoded.body, redecoded.trailing) != (header, body, trailing):
        # NaN (float64 fields) is unequal to itself: then the encodings must agree.
        if encode_request(redecoded.header, redecoded.body, version, trailing=redecoded.trailing) != again:
            raise Finding(f"{type(body).__name__} v{version}: decode, encode, decode changed the message")


def _check(data: bytes) -> None:
    check_frame(data)
    fixed = with_size_fixed(data)
    if fixed is not None:
        check_frame(fixed)


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input, structure_mutator("request"))


if __name__ == "__main__":  # pragma: no cover
    main()
