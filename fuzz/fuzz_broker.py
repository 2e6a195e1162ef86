"""Harness: the Broker engine fed an untrusted client's bytes after a valid ApiVersions handshake.

Each input gets a fresh broker on a copy of the same prepared data directory (topic ``t``, two
partitions, a few records: ``fuzz/broker_driver.py``). Connection 1 does the ApiVersions
handshake, then receives the input's byte stream in chunks of the input's chosen size
(``fuzz/conversation.py``); when the scenario selector is odd the clock moves 100 ms after each
chunk, so delayed answers (fetch waits, joins) and timers fire. Then connection 1 closes.

The rule: the engine never raises; every frame it sends on connection 1 is a response that decodes
for the request with that correlation id (API key and version from the request frames of the
stream; an ApiVersions request of an unknown version gets a v0 answer); and afterwards a new
connection gets correct answers to ApiVersions and Metadata (the same API table as before, the
broker itself in the broker list).

Memory: a broker on a copy of the prepared directory costs a few hundred KiB whatever the input;
the slack is 4 MiB here.

Run: ``python fuzz/fuzz_broker.py [corpus dir] [libFuzzer flags]``.
"""

from __future__ import annotations

import struct
import sys
from collections import defaultdict, deque
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.common import Finding, MemorySampler, fuzz_main, instrumenting

#: What ``KAFKA_WIRE_FUZZ_INSTRUMENT=core`` instruments.
TARGETS = ("kafka_wire.broker.broker", "kafka_wire.broker.apis", "kafka_wire.broker.channels")

with instrumenting(__name__ == "__main__", TARGETS):
    from fuzz.broker_driver import CONFIG, Engine, prepared_engine, request_frame
    from fuzz.conversation import chunks, unpack
    from kafka_wire.errors import DecodeError, UnsupportedApiError
    from kafka_wire.messages import (
        ApiKey,
        ApiVersionsRequest,
        ApiVersionsResponse,
        MetadataRequest,
        MetadataResponse,
    )
    from kafka_wire.protocol.framing import decode_request_frame, decode_response

_SIZE: Final = struct.Struct(">i")
_CORRELATION: Final = struct.Struct(">hhi")
_API_VERSIONS_VERSION: Final = 3
_METADATA_VERSION: Final = 12
_API_VERSIONS_REQUEST: Final = ApiVersionsRequest(
    client_software_name="kafka-wire-fuzz", client_software_version="1"
)
_memory = MemorySampler(slack=4 << 20)


def frames(stream: bytes) -> list[bytes]:
    """The complete size-prefixed frames at the start of ``stream`` (stops at a negative size)."""
    out: list[bytes] = []
    pos = 0
    while pos + 4 <= len(stream):
        (size,) = _SIZE.unpack_from(stream, pos)
        if size < 0 or pos + 4 + size > len(stream):
            break
        out.append(stream[pos : pos + 4 + size])
        pos += 4 + size
    return out


def expected_answers(stream: bytes) -> dict[int, deque[tuple[int, int]]]:
    """Per correlation id, the (api key, version) each request of ``stream`` would be answered at."""
    expected: dict[int, deque[tuple[int, int]]] = defaultdict(deque)
    for frame in frames(stream):
        try:
            header = decode_request_frame(frame).header
            expected[header.correlation_id].append((header.request_api_key, header.request_api_version))
        except UnsupportedApiError as exc:
            if exc.api_key == ApiKey.API_VERSIONS and exc.correlation_id is not None:
                expected[exc.correlation_id].append((ApiKey.API_VERSIONS, 0))
        except DecodeError:
            pass
    return expected


def check_answers(sent: bytes, stream: bytes) -> None:
    expected = expected_answers(stream)
    answers = frames(sent)
    if sum(len(a) for a in answers) != len(sent):
        raise Finding("the broker sent bytes that are not whole frames")
    for answer in answers:
        if len(answer) < 8:
            raise Finding("the broker sent a frame without a correlation id")
        (correlation_id,) = _SIZE.unpack_from(answer, 4)
        pending = expected.get(correlation_id)
        if not pending:
            raise Finding(f"the broker answered correlation id {correlation_id}, which no request carried")
        api_key, version = pending.popleft()
        try:
            decode_response(answer, api_key, version)
        except DecodeError as exc:
            if api_key != ApiKey.API_VERSIONS:
                raise Finding(
                    f"the broker's answer to api {api_key} v{version} does not decode: {exc}"
                ) from exc
            decode_response(answer, api_key, 0)  # an unsupported ApiVersions version: answered at v0


def handshake(engine: Engine, conn_id: int) -> ApiVersionsResponse:
    engine.open(conn_id)
    engine.feed(conn_id, request_frame(_API_VERSIONS_REQUEST, _API_VERSIONS_VERSION, 0))
    _, body = decode_response(engine.take(conn_id), ApiKey.API_VERSIONS, _API_VERSIONS_VERSION)
    assert isinstance(body, ApiVersionsResponse)
    if body.error_code != 0 or not body.api_keys:
        raise Finding(f"ApiVersions failed with error {body.error_code}")
    return body


def check_still_serving(engine: Engine, table: ApiVersionsResponse) -> None:
    again = handshake(engine, 2)
    if again.api_keys != table.api_keys:
        raise Finding("ApiVersions on a new connection changed after the input")
    engine.feed(2, request_frame(MetadataRequest(topics=None), _METADATA_VERSION, 1))
    if 2 in engine.closed:
        raise Finding("the broker closed a new connection's Metadata request")
    _, body = decode_response(engine.take(2), ApiKey.METADATA, _METADATA_VERSION)
    assert isinstance(body, MetadataResponse)
    if [b.node_id for b in body.brokers] != [CONFIG.node_id]:
        raise Finding(f"Metadata on a new connection lists brokers {[b.node_id for b in body.brokers]}")


def run(stream: bytes, chunk: int, selector: int) -> Engine:
    engine = prepared_engine()
    table = handshake(engine, 1)
    for piece in chunks(stream, chunk):
        engine.feed(1, piece)
        if selector & 1:
            engine.advance(100)
    engine.advance(1000)
    check_answers(engine.take(1), stream)
    engine.close(1)
    check_still_serving(engine, table)
    return engine


def _check(data: bytes) -> None:
    run(*unpack(data))


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input)


if __name__ == "__main__":  # pragma: no cover
    main()
