"""Harness: response frames from an untrusted broker, every API and version.

The input is ``api_key:int16 api_version:int16`` (the request the response answers; a client
knows both) followed by a size-prefixed response frame. Keys and versions outside the catalog are
folded into it (key modulo the number of APIs, version modulo that API's versions), so every
input reaches a decoder. As in ``fuzz_requests``, a frame with a wrong size prefix is decoded as
it is and again with the size put right.

The rule: :func:`kafka_wire.decode_response` returns a value or raises a ``DecodeError``
subclass. The round trip: decode, encode, decode gives the same header and body.

Run: ``python fuzz/fuzz_responses.py [corpus dir] [libFuzzer flags]``.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.common import Finding, MemorySampler, fuzz_main, instrumenting, structure_mutator, with_size_fixed

#: What ``KAFKA_WIRE_FUZZ_INSTRUMENT=core`` instruments.
TARGETS = ("kafka_wire.protocol.framing", "kafka_wire.codec", "kafka_wire.messages.response_header")

with instrumenting(__name__ == "__main__", TARGETS):
    from kafka_wire.errors import DecodeError, EncodeError
    from kafka_wire.messages import catalog
    from kafka_wire.protocol.framing import decode_response, encode_response

_KEY_VERSION = struct.Struct(">hh")
_APIS = catalog()
_BY_KEY = {int(a.api_key): a for a in _APIS}
_memory = MemorySampler()


def choose(api_key: int, api_version: int) -> tuple[int, int]:
    """The (api key, version) an input's prefix stands for, folded into the catalog."""
    api = _BY_KEY.get(api_key) or _APIS[api_key % len(_APIS)]
    version = api_version if api_version in api.versions else api.versions[api_version % len(api.versions)]
    return int(api.api_key), version


def check_frame(frame: bytes, api_key: int, version: int) -> None:
    try:
        header, body = decode_response(frame, api_key, version)
    except DecodeError:
        return
    try:
        again = encode_response(header, body, version)
    except EncodeError as exc:
        raise Finding(f"decoded {type(body).__name__} v{version} does not encode again: {exc}") from exc
    header2, body2 = decode_response(again, api_key, version)
    if (header2, body2) != (header, body) and encode_response(header2, body2, version) != again:
        raise Finding(f"{type(body).__name__} v{version}: decode, encode, decode changed the message")


def _check(data: bytes) -> None:
    if len(data) < _KEY_VERSION.size:
        return
    api_key, version = choose(*_KEY_VERSION.unpack_from(data))
    frame = data[_KEY_VERSION.size :]
    check_frame(frame, api_key, version)
    fixed = with_size_fixed(frame)
    if fixed is not None:
        check_frame(fixed, api_key, version)


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input, structure_mutator("response"))


if __name__ == "__main__":  # pragma: no cover
    main()
