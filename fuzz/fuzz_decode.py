"""Fuzz harness: any bytes into the request/response decoders give a message or a DecodeError.

Run under atheris (coverage-guided) when it is installed::

    python fuzz/fuzz_decode.py fuzz/corpus

``fuzz_one_input`` is also driven by the test suite with Hypothesis (tests/codec/test_fuzz_harness.py).
Each input is decoded whole and, for the first bytes, prefix by prefix.
"""

from __future__ import annotations

import sys

import kafka_wire
from kafka_wire.errors import DecodeError
from kafka_wire.messages import catalog

_APIS = catalog()


def fuzz_one_input(data: bytes) -> None:
    """The invariant: decoding succeeds or raises a DecodeError subclass, nothing else."""
    if not data:
        return
    # First byte picks a response decoder (api key, version); the rest is a frame or a body.
    api = _APIS[data[0] % len(_APIS)]
    version = api.versions[(data[1] if len(data) > 1 else 0) % len(api.versions)]
    payload = data[2:]
    for prefix in (payload, payload[: len(payload) // 2]):
        for attempt in (
            lambda b: kafka_wire.decode_request(b),
            lambda b: api.response.decode(b, version),
            lambda b: api.request.decode(b, version),
        ):
            try:
                attempt(prefix)
            except DecodeError:
                pass


def main() -> None:  # pragma: no cover - needs atheris
    import atheris  # type: ignore[import-untyped]  # ships no annotations (typeshed knows its stubs)

    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()


if __name__ == "__main__":  # pragma: no cover
    main()
