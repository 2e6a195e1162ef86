"""Produce and Fetch request/response encode and decode: kafka_wire (compiled and pure) against kio and kafka-python.

Run: ``python bench/bench_produce_fetch.py``. Messages at the latest versions (ProduceRequest and
ProduceResponse v13, FetchRequest and FetchResponse v18), each for one topic and one partition.
The record-carrying messages (ProduceRequest, FetchResponse) are measured with a 1 KiB and a 1 MiB
payload per partition: one uncompressed v2 record batch built by ``kafka_wire.records`` whose record
values fill it; records stay raw bytes in every library's message codec. ProduceResponse and
FetchRequest carry no records, so they are measured once.

kafka_wire builds each message and encodes it; kio and kafka-python decode those bytes into their
own objects and must encode them back unchanged (the script stops otherwise). Every path is then
timed with the cyclic GC on: the median of the repeats, in MB/s of message body (1 MB = 10**6
bytes) and in microseconds per call. kafka_wire runs in both flavours in the same run: compiled
(``kafka_wire._compiled.messages``, built by ``make compile``) in this process and pure in a child
process of this script started with ``KAFKA_WIRE_PURE=1`` (the compiled flavour's classes are
native classes, so the two cannot share a process).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import platform
import statistics
import sys
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import version as dist_version
from typing import Any

from kafka.protocol.consumer import FetchRequest as KpFetchRequest  # type: ignore[import-untyped]
from kafka.protocol.consumer import FetchResponse as KpFetchResponse
from kafka.protocol.producer import ProduceRequest as KpProduceRequest  # type: ignore[import-untyped]
from kafka.protocol.producer import ProduceResponse as KpProduceResponse
from kio.serial import entity_reader, entity_writer
from pure_child import pure_figures

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)
from kafka_wire.records import build_batch

PRODUCE_V = 13
FETCH_V = 18
PARTITIONS = 1
TOPIC_ID = uuid.UUID("6f1c9a52-3e1b-4d2f-9a7e-0c5b8e2d4f10")
#: kafka_wire's flavour in this process; the pure one is timed in a child process of this script
#: (``KAFKA_WIRE_PURE=1``, ``--only-pure``) when the compiled one is built: its classes are native.
OURS = "compiled" if ProduceRequest._native_decoders else "pure"


def batch(payload: int) -> bytes:
    """One uncompressed v2 batch of about ``payload`` bytes: 1 KiB values, keys of 8 bytes."""
    value = 1024 if payload >= 1024 else payload
    count = max(1, payload // (value + 32))
    records = [(b"key-%04d" % (i % 10_000), bytes((i + j) % 251 for j in range(value))) for i in range(count)]
    return build_batch(records, base_offset=1_000, default_timestamp=1_700_000_000_000)


def produce_request(records: bytes) -> ProduceRequest:
    parts = [ProduceRequestPartitionProduceData(index=p, records=records) for p in range(PARTITIONS)]
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[ProduceRequestTopicProduceData(topic_id=TOPIC_ID, partition_data=parts)],
    )


def produce_response() -> ProduceResponse:
    parts = [
        ProduceResponsePartitionProduceResponse(
            index=p, base_offset=1_000 + p, log_append_time_ms=-1, log_start_offset=0
        )
        for p in range(PARTITIONS)
    ]
    return ProduceResponse(
        responses=[ProduceResponseTopicProduceResponse(topic_id=TOPIC_ID, partition_responses=parts)]
    )


def fetch_request() -> FetchRequest:
    parts = [
        FetchRequestPartition(
            partition=p,
            current_leader_epoch=5,
            fetch_offset=1_000,
            log_start_offset=-1,
            partition_max_bytes=1 << 20,
        )
        for p in range(PARTITIONS)
    ]
    return FetchRequest(
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequestTopic(topic_id=TOPIC_ID, partitions=parts)],
        rack_id="",
    )


def fetch_response(records: bytes) -> FetchResponse:
    parts = [
        FetchResponsePartitionData(
            partition_index=p,
            high_watermark=5_000,
            last_stable_offset=5_000,
            log_start_offset=0,
            aborted_transactions=[],
            preferred_read_replica=-1,
            records=records,
        )
        for p in range(PARTITIONS)
    ]
    return FetchResponse(
        session_id=0, responses=[FetchResponseFetchableTopicResponse(topic_id=TOPIC_ID, partitions=parts)]
    )


@dataclass(frozen=True)
class Case:
    name: str
    version: int
    message: Message
    kio: str  # kio module path
    kp: Any  # kafka-python class


def cases() -> list[Case]:
    produce, fetch = f"kio.schema.produce.v{PRODUCE_V}", f"kio.schema.fetch.v{FETCH_V}"
    out = []
    for label, size in (("1 KiB", 1024), ("1 MiB", 1 << 20)):
        records = batch(size)
        request = produce_request(records)
        out.append(
            Case(
                f"ProduceRequest v{PRODUCE_V} {label}",
                PRODUCE_V,
                request,
                f"{produce}.request",
                KpProduceRequest,
            )
        )
        response = fetch_response(records)
        out.append(
            Case(f"FetchResponse v{FETCH_V} {label}", FETCH_V, response, f"{fetch}.response", KpFetchResponse)
        )
    out.append(
        Case(
            f"ProduceResponse v{PRODUCE_V}",
            PRODUCE_V,
            produce_response(),
            f"{produce}.response",
            KpProduceResponse,
        )
    )
    out.append(Case(f"FetchRequest v{FETCH_V}", FETCH_V, fetch_request(), f"{fetch}.request", KpFetchRequest))
    return out


def kio_class(module: str, name: str) -> Any:
    return getattr(import_module(module), name)


def median_seconds(fn: Callable[[], object], repeat: int, target: float) -> float:
    timer = timeit.Timer(fn, setup="gc.enable()")
    number, _ = timer.autorange()
    one = timer.timeit(number) / number
    number = max(1, round(target / one))
    return statistics.median(t / number for t in timer.repeat(repeat=repeat, number=number))


def prepare(case: Case, data: bytes) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """``{library: (decode call, encode call)}``, after checking each re-encodes ``data`` unchanged."""
    cls = type(case.message)
    v = case.version
    calls: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {}
    if case.message.encode(v) != data or cls.decode(data, v) != case.message:
        raise SystemExit(f"{case.name}: kafka_wire {OURS} does not round-trip")
    msg = case.message
    calls[OURS] = (lambda: cls.decode(data, v), lambda: msg.encode(v))

    kio_cls = kio_class(case.kio, cls.__name__)
    read, write = entity_reader(kio_cls), entity_writer(kio_cls)
    kio_obj, size = read(data, 0)

    def kio_encode() -> bytes:
        out = io.BytesIO()
        write(out, kio_obj)
        return out.getvalue()

    if size != len(data) or kio_encode() != data:
        raise SystemExit(f"{case.name}: kio does not decode and re-encode the bytes unchanged")
    calls["kio"] = (lambda: read(data, 0), kio_encode)

    kp_obj = case.kp.decode(data, version=v)
    if kp_obj.encode() != data:
        raise SystemExit(f"{case.name}: kafka-python does not decode and re-encode the bytes unchanged")
    calls["kafka-python"] = (lambda: case.kp.decode(data, version=v), kp_obj.encode)
    return calls


def time_rows(libs: tuple[str, ...], args: argparse.Namespace) -> list[tuple[str, int, dict[str, float]]]:
    """(path, message size, {library: seconds per call}) for every case and direction."""
    rows: list[tuple[str, int, dict[str, float]]] = []
    for case in cases():
        data = case.message.encode(case.version)
        calls = prepare(case, data)
        if libs != (OURS,):
            print(f"{case.name}: {len(data):,} bytes; kio and kafka-python re-encode them unchanged")
        for op_index, op in enumerate(("decode", "encode")):
            speeds: dict[str, float] = {}
            for lib in libs:
                gc.collect()
                speeds[lib] = median_seconds(calls[lib][op_index], args.repeat, args.target)
            rows.append((f"{case.name} {op}", len(data), speeds))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per path (median reported)")
    parser.add_argument("--target", type=float, default=0.2, help="seconds per timed run")
    parser.add_argument("--only-pure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only_pure:
        if OURS != "pure":
            raise SystemExit("--only-pure needs KAFKA_WIRE_PURE=1")
        print(json.dumps(time_rows(("pure",), args)))
        return 0
    print(
        f"python {platform.python_version()}, {platform.machine()}, kafka_wire {dist_version('kafka-wire')}, "
        f"kio {dist_version('kio')}, kafka-python {dist_version('kafka-python')}; GC on; median of {args.repeat}"
    )
    print(f"kafka_wire compiled flavour: {'in use' if OURS == 'compiled' else 'NOT BUILT (make compile)'}")
    libs = (*(("compiled",) if OURS == "compiled" else ()), "pure", "kio", "kafka-python")
    rows = time_rows((OURS, "kio", "kafka-python"), args)
    if OURS == "compiled":
        pure_rows = pure_figures(__file__, ["--repeat", str(args.repeat), "--target", str(args.target)])
        for (path, _, speeds), (pure_path, _, pure) in zip(rows, pure_rows, strict=True):
            assert path == pure_path
            speeds.update(pure)

    def ratio(s: dict[str, float], a: str, b: str) -> str:
        return f"{s[b] / s[a]:.2f}x" if a in s else "-"

    header = ("path", *(f"{lib} MB/s (us)" for lib in libs), "compiled/kio", "compiled/kafka-python",
              "pure/kio", "pure/kafka-python")  # fmt: skip
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for path, size, s in rows:
        cells = [f"{size / s[lib] / 1e6:,.0f} ({s[lib] * 1e6:,.1f})" for lib in libs]
        cells += [ratio(s, "compiled", "kio"), ratio(s, "compiled", "kafka-python")]
        cells += [ratio(s, "pure", "kio"), ratio(s, "pure", "kafka-python")]
        print(f"| {path} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
