"""Seed corpora for the harnesses, written deterministically (same files on every run).

``python fuzz/corpus.py [OUT]`` writes one directory per harness under ``OUT`` (default
``build/fuzz/corpus``), each seed a file named by the SHA-1 of its content:

- ``requests``: every request frame of ``tests/data/captures``; every API and version's default
  request; random ones of every API and version from ``kafka_wire.testing.generate``.
- ``responses``: every API and version's default response (and random ones from ``generate``),
  after the 4-byte ``api_key api_version`` prefix the harness reads.
- ``records``: batches of every magic and codec (with headers, keys and values null, a
  transactional batch, control markers, several batches in a row).
- ``client_connection`` / ``server_connection``: the two sides' byte streams of a real
  conversation (ApiVersions, SASL, the client's requests) between a ClientConnection and a
  ServerConnection, per scenario and chunk size; the server also gets each capture.
- ``broker``: each capture; the default request of every API the broker serves (at its highest
  and lowest version); a Produce and a Fetch of topic ``t``.
- ``log_recovery``: partition directories written by a real PartitionLog (one and two segments,
  every codec, an interrupted compaction's swap file, offset files).
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz import fuzz_log_recovery
from fuzz.broker_driver import TOPIC, request_frame
from fuzz.conversation import SCENARIOS, client_requests, pack
from fuzz.fuzz_client_connection import new_client
from fuzz.fuzz_server_connection import answer, new_server
from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.broker.log import LogConfig, PartitionLog
from kafka_wire.codec.structs import Message
from kafka_wire.errors import KafkaWireError
from kafka_wire.messages import (
    REQUESTS,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    RequestHeader,
    ResponseHeader,
    catalog,
)
from kafka_wire.protocol import NEED_DATA, ClientState
from kafka_wire.protocol.framing import encode_request, encode_response
from kafka_wire.records import build_abort_marker, build_batch, build_commit_marker
from kafka_wire.testing.generate import random_message
from kafka_wire.testing.memory_storage import MemoryStorage

ROOT: Final = Path(__file__).resolve().parent.parent
CAPTURES: Final = ROOT / "tests" / "data" / "captures"
DEFAULT_OUT: Final = ROOT / "build" / "fuzz" / "corpus"
CODECS: Final = ("none", "gzip", "snappy", "lz4", "zstd")
#: Random messages per API and version (``kafka_wire.testing.generate``).
RANDOM_PER_VERSION: Final = 3
SEED: Final = 17


def captures() -> list[bytes]:
    return [bytes.fromhex(p.read_text().strip()) for p in sorted(CAPTURES.glob("*.hex"))]


def _messages(kind: str) -> Iterator[tuple[int, int, Message]]:
    """Per API and version: the default message, then random ones."""
    rng = random.Random(SEED)
    for api in catalog():
        cls = api.request if kind == "request" else api.response
        for version in api.versions:
            yield api.api_key, version, cls()
            for _ in range(RANDOM_PER_VERSION):
                yield api.api_key, version, random_message(cls, version, rng)


def request_seeds() -> Iterator[bytes]:
    yield from captures()
    for correlation_id, (_, version, body) in enumerate(_messages("request")):
        try:
            yield encode_request(
                RequestHeader(correlation_id=correlation_id, client_id="seed"), body, version
            )
        except KafkaWireError:
            continue  # a default that this version cannot hold


def response_seeds() -> Iterator[bytes]:
    for correlation_id, (api_key, version, body) in enumerate(_messages("response")):
        try:
            frame = encode_response(ResponseHeader(correlation_id=correlation_id), body, version)
        except KafkaWireError:
            continue
        yield api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + frame


def record_seeds() -> Iterator[bytes]:
    rows = [
        (b"k0", b"v0", [("h", b"x")], 1_700_000_000_000),
        (None, b"value" * 20, [], 1_700_000_000_001),
        (b"k2", None, [("a", None), ("b", b"")], 1_700_000_000_002),
    ]
    for codec in CODECS:
        yield build_batch(rows, compression=codec)
        yield build_batch(
            rows, compression=codec, producer_id=7, producer_epoch=1, base_sequence=0, is_transactional=True
        )
        for magic in (0, 1):
            if codec != "zstd":
                yield build_batch([(k, v, [], ts) for k, v, _, ts in rows], magic=magic, compression=codec)
    yield build_commit_marker(
        producer_id=7, producer_epoch=1, coordinator_epoch=0, timestamp=1_700_000_000_003
    )
    yield build_abort_marker(
        producer_id=7, producer_epoch=1, coordinator_epoch=0, timestamp=1_700_000_000_004
    )
    yield (
        build_batch(rows) + build_batch(rows, compression="gzip", base_offset=3) + build_batch(rows[:1])[:-5]
    )
    yield build_batch([])


def converse(selector: int) -> tuple[bytes, bytes]:
    """(client's bytes, server's bytes) of a whole conversation in ``selector``'s scenario."""
    client, server = new_client(selector), new_server(selector)
    to_server, to_client = bytearray(), bytearray()
    sent = False
    pending = b""
    for _ in range(50):
        data = pending + client.data_to_send()
        pending = b""
        to_server += data
        server.receive_data(data)
        reply = bytearray()
        while (event := server.next_event()) is not NEED_DATA:
            reply += answer(server, event)
        reply += server.data_to_send()
        to_client += reply
        client.receive_data(reply)
        while client.next_event() is not NEED_DATA:
            pass
        if not sent and client.state is ClientState.READY:
            sent = True
            pending = b"".join(client.send(request) for request in client_requests())
        elif not data and not reply:
            break
    return bytes(to_server), bytes(to_client)


def connection_seeds(side: int) -> Iterator[bytes]:
    for selector in range(len(SCENARIOS)):
        stream = converse(selector)[side]
        for chunk in (0, 1, 7):
            yield pack(stream, chunk, selector)
    if side == 0:
        for frame in captures():
            yield pack(frame, 0, 0)


def broker_seeds() -> Iterator[bytes]:
    for frame in captures():
        yield pack(frame, 0, 1)
    for correlation_id, (key, (lo, hi)) in enumerate(sorted(SUPPORTED.items()), start=1):
        for version in sorted({lo, hi}):
            try:
                yield pack(request_frame(REQUESTS[key](), version, correlation_id), 0, 0)
            except KafkaWireError:
                continue
    batch = build_batch([(b"k", b"v", [("h", b"x")], 1_700_000_000_000)])
    produce = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=TOPIC, partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    fetch = FetchRequest(
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchRequestTopic(
                topic=TOPIC,
                partitions=[FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
            )
        ],
    )
    yield pack(request_frame(produce, 9, 1) + request_frame(fetch, 11, 2), 0, 1)


def _log_files(batches: Iterable[bytes], *, roll: bool, close: bool) -> tuple[dict[str, bytes], int]:
    storage = MemoryStorage()
    now = fuzz_log_recovery.NOW_MS
    log = PartitionLog.open(fuzz_log_recovery.DIR, LogConfig(), storage, now)
    storage.apply(log.take_effects())
    for batch in batches:
        log.append(batch, now)
        storage.apply(log.take_effects())
    if roll:
        log.roll(now + 1)
        storage.apply(log.take_effects())
    if close:
        storage.apply(log.close())
    prefix = fuzz_log_recovery.DIR + "/"
    files = {
        path[len(prefix) :]: bytes(data) for path, data in storage.files.items() if path.startswith(prefix)
    }
    return files, log.segments[-1].base_offset


def log_seeds() -> Iterator[bytes]:
    batches = [
        build_batch([(b"k%d" % i, b"v" * i, [], 1_700_000_000_000 + i) for i in range(3)], compression=codec)
        for codec in CODECS
    ]
    for roll in (False, True):
        for close in (False, True):
            files, base = _log_files(batches, roll=roll, close=close)
            names = fuzz_log_recovery.file_names(max(base, 1))
            kept = {name: data for name, data in files.items() if name in names}
            yield fuzz_log_recovery.pack(kept, max(base, 1))
    files, _ = _log_files(batches[:2], roll=False, close=True)
    names = fuzz_log_recovery.file_names(3)
    swap = {names[0]: files[names[0]], names[6]: build_batch([(b"c", b"d", [], 1)], base_offset=3)}
    yield fuzz_log_recovery.pack({**swap, "log-start-offset": b"2\n", "cleaner-offset": b"4\n"}, 3)


SEEDS: Final[dict[str, Callable[[], Iterable[bytes]]]] = {
    "requests": request_seeds,
    "responses": response_seeds,
    "records": record_seeds,
    "client_connection": lambda: connection_seeds(1),
    "server_connection": lambda: connection_seeds(0),
    "broker": broker_seeds,
    "log_recovery": log_seeds,
}


def write(out: Path, names: Iterable[str] = SEEDS) -> dict[str, int]:
    """Write the seed corpora of ``names`` under ``out``; returns the number of seeds of each."""
    counts: dict[str, int] = {}
    for name in names:
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        seeds = {hashlib.sha1(seed).hexdigest(): seed for seed in SEEDS[name]()}
        for digest, seed in seeds.items():
            path = directory / digest
            if not path.exists():
                path.write_bytes(seed)
        counts[name] = len(seeds)
    return counts


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    for name, count in write(out).items():
        print(f"{name:18} {count:6} seeds in {out / name}")


if __name__ == "__main__":
    main(sys.argv[1:])
