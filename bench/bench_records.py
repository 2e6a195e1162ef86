"""Records codec benchmark: kafka_wire vs kafka-python vs aiokafka, in one process, one run.

Input: 10,000 records, 16-byte keys, 100-byte values (hex text of random bytes, so about 2:1
compressible), one header (``trace``: 16 bytes), timestamps ``1700000000000 + i``; everything
is derived from a fixed seed. Paths:

* decode+iterate: read the batch and touch offset, timestamp, key, value and headers of every
  record; the input bytes are the same for all three libraries (built by kafka-python);
* build: one batch from records already in memory (``build_batch`` for kafka_wire,
  ``append`` per record then ``build`` for the others);
* the same two paths over 1,000 uncompressed batches of 10 records (per-batch overhead).

Each library runs its own defaults except where stated: gzip at level 9 for everyone (both
peers hard-code 9), lz4 at level 0 (kafka-python's level) plus an extra row at level 9 (aiokafka's
default), zstd at level 3 everywhere. Every decoder checks each batch's CRC, as the consumers of
all three do by default (aiokafka's and kafka-python's ``check_crcs=True`` call the batch's
``validate_crc()``; kafka_wire's readers verify unless told not to); ``--no-crc``: none does.
Timing: the libraries take turns, round after round, and the best round counts, so a slow spell
of a shared machine hits all of them alike.

Usage: ``python bench/bench_records.py [--rounds N] [--records N] [--no-crc]``; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiokafka  # type: ignore[import-untyped]
import kafka  # type: ignore[import-untyped]
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder  # type: ignore[import-untyped]
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder  # type: ignore[import-untyped]
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords  # type: ignore[import-untyped]
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder  # type: ignore[import-untyped]
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder  # type: ignore[import-untyped]
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords  # type: ignore[import-untyped]

from kafka_wire.records import build_batch, decompress, read_batches

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000


@dataclass(frozen=True)
class Inputs:
    keys: list[bytes]
    values: list[bytes]
    headers: list[list[tuple[str, bytes]]]
    timestamps: list[int]
    tuples: list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]


def make_inputs(n: int, seed: int = 20240601) -> Inputs:
    rnd = random.Random(seed)
    keys = [rnd.randbytes(16) for _ in range(n)]
    values = [rnd.randbytes(50).hex().encode() for _ in range(n)]
    headers = [[("trace", rnd.randbytes(16))] for _ in range(n)]
    timestamps = [BASE_TS + i for i in range(n)]
    tuples = list(zip(keys, values, headers, timestamps, strict=True))
    return Inputs(keys, values, headers, timestamps, tuples)


# -- build ---------------------------------------------------------------------------------------


def kw_build(inp: Inputs, codec: str, level: int | None, magic: int = 2) -> Callable[[], bytes]:
    records = inp.tuples if magic == 2 else [(k, v, (), t) for k, v, _, t in inp.tuples]

    def run() -> bytes:
        return build_batch(records, magic=magic, compression=codec, compression_level=level)

    return run


def peer_build(builder_cls: type, inp: Inputs, codec: str) -> Callable[[], bytes]:
    keys, values, headers, timestamps = inp.keys, inp.values, inp.headers, inp.timestamps
    cid = CODEC_IDS[codec]

    def run() -> bytes:
        b = builder_cls(
            magic=2,
            compression_type=cid,
            is_transactional=0,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 30,
        )
        append = b.append
        for i in range(len(keys)):
            append(i, timestamp=timestamps[i], key=keys[i], value=values[i], headers=headers[i])
        return bytes(b.build())

    return run


def kw_build_small(inp: Inputs, per_batch: int) -> Callable[[], bytes]:
    records = inp.tuples

    def run() -> bytes:
        return b"".join(
            build_batch(records[i : i + per_batch], base_offset=i) for i in range(0, len(records), per_batch)
        )

    return run


def peer_build_small(builder_cls: type, inp: Inputs, per_batch: int) -> Callable[[], bytes]:
    keys, values, headers, timestamps = inp.keys, inp.values, inp.headers, inp.timestamps

    def run() -> bytes:
        out = []
        for start in range(0, len(keys), per_batch):
            b = builder_cls(
                magic=2,
                compression_type=0,
                is_transactional=0,
                producer_id=-1,
                producer_epoch=-1,
                base_sequence=-1,
                batch_size=1 << 30,
            )
            for i in range(start, min(start + per_batch, len(keys))):
                b.append(i - start, timestamp=timestamps[i], key=keys[i], value=values[i], headers=headers[i])
            out.append(bytes(b.build()))
        return b"".join(out)

    return run


def peer_legacy_build(builder_cls: type, inp: Inputs, codec: str) -> Callable[[], bytes]:
    keys, values, timestamps = inp.keys, inp.values, inp.timestamps
    cid = CODEC_IDS[codec]

    def run() -> bytes:
        b = builder_cls(magic=1, compression_type=cid, batch_size=1 << 30)
        append = b.append
        for i in range(len(keys)):
            append(i, timestamp=timestamps[i], key=keys[i], value=values[i])
        return bytes(b.build())

    return run


# -- decode + iterate ----------------------------------------------------------------------------


def kw_decode(data: bytes, crc: bool = True) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in read_batches(data, verify_crc=crc):
            for r in batch:
                r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018
                n += 1
        return n

    return run


def peer_decode(memory_records_cls: type, data: bytes, crc: bool = True) -> Callable[[], int]:
    """A peer's decode + iterate; with ``crc`` each batch's CRC checked first, as its consumer does."""

    def run() -> int:
        n = 0
        records = memory_records_cls(data)
        while records.has_next():
            batch = records.next_batch()
            if crc and not batch.validate_crc():
                raise SystemExit(f"{memory_records_cls.__module__}: CRC check failed")
            for r in batch:
                r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018
                n += 1
        return n

    return run


def decompressor_alone(data: bytes, codec: int) -> Callable[[], int]:
    """Only the decompression of the batch's records (kafka_wire's codec call: the library's
    decompressor plus Kafka's frame checks), for the ratio of the total decode time to it.

    Each call's output is kept until the next call's is made: dropped at once, glibc gave the
    heap's top back to the kernel after every lz4 call here and the next one faulted its pages in
    again (1,050 page faults and 2.0 ms a call against none and 0.5 ms), which the decoders timed
    beside it do not pay."""
    body = data[61:]
    held: list[bytes] = [b""]

    def run() -> int:
        held[0] = decompress(codec, body, magic=2, max_bytes=1 << 30)
        return len(held[0])

    return run


def contents(
    data: bytes,
) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for b in read_batches(data) for r in b]


def peer_contents(memory_records_cls: type, data: bytes) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    records = memory_records_cls(data)
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, r.timestamp, r.key, r.value, list(r.headers)))
    return out


# -- timing --------------------------------------------------------------------------------------


def best_times(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    best = {name: float("inf") for name in fns}
    for fn in fns.values():  # warm-up round, not timed
        fn()
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if dt < best[name]:
                best[name] = dt
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15, help="rounds per path (best round counts)")
    parser.add_argument("--records", type=int, default=10_000, help="records per batch")
    parser.add_argument("--no-crc", action="store_true", help="no decoder checks CRCs")
    args = parser.parse_args(argv)
    crc = not args.no_crc
    n = args.records
    inp = make_inputs(n)

    rows: list[tuple[str, float, float | None, float | None, float | None]] = []

    def add(path: str, fns: dict[str, Callable[[], object]]) -> None:
        t = best_times(fns, args.rounds)
        rate = {name: n / dt for name, dt in t.items()}
        rows.append((path, rate["kw"], rate.get("kp"), rate.get("aio"), rate.get("dec")))
        print(f"  {path}: " + ", ".join(f"{k} {v / 1e6:.3f} M/s" for k, v in rate.items()), file=sys.stderr)

    for codec in CODEC_IDS:
        data = peer_build(KpBuilder, inp, codec)()
        expected = peer_contents(KpMemoryRecords, data)
        if contents(data) != expected or peer_contents(AioMemoryRecords, data) != expected:
            raise SystemExit(f"decoders disagree on the {codec} batch")
        fns: dict[str, Callable[[], object]] = {
            "kw": kw_decode(data, crc),
            "kp": peer_decode(KpMemoryRecords, data, crc),
            "aio": peer_decode(AioMemoryRecords, data, crc),
        }
        if codec != "none":
            fns["dec"] = decompressor_alone(data, CODEC_IDS[codec])
        add(f"decode+iterate v2 {codec}", fns)
    for codec in CODEC_IDS:
        level = 9 if codec == "gzip" else None
        built = kw_build(inp, codec, level)()
        if peer_contents(KpMemoryRecords, built) != contents(built):
            raise SystemExit(f"kafka-python reads our {codec} batch differently")
        add(
            f"build v2 {codec}",
            {
                "kw": kw_build(inp, codec, level),
                "kp": peer_build(KpBuilder, inp, codec),
                "aio": peer_build(AioBuilder, inp, codec),
            },
        )
    small = kw_build_small(inp, 10)()
    if contents(small) != peer_contents(KpMemoryRecords, small):
        raise SystemExit("kafka-python reads our small batches differently")
    add(
        "decode+iterate v2 none, batches of 10",
        {
            "kw": kw_decode(small, crc),
            "kp": peer_decode(KpMemoryRecords, small, crc),
            "aio": peer_decode(AioMemoryRecords, small, crc),
        },
    )
    add(
        "build v2 none, batches of 10",
        {
            "kw": kw_build_small(inp, 10),
            "kp": peer_build_small(KpBuilder, inp, 10),
            "aio": peer_build_small(AioBuilder, inp, 10),
        },
    )
    add(
        "build v2 lz4, level 9 (aiokafka's default)",
        {"kw": kw_build(inp, "lz4", 9), "aio": peer_build(AioBuilder, inp, "lz4")},
    )

    legacy = peer_legacy_build(KpLegacyBuilder, inp, "none")()
    add(
        "decode+iterate v1 none",
        {
            "kw": kw_decode(legacy, crc),
            "kp": peer_decode(KpMemoryRecords, legacy, crc),
            "aio": peer_decode(AioMemoryRecords, legacy, crc),
        },
    )
    add(
        "build v1 none",
        {
            "kw": kw_build(inp, "none", None, magic=1),
            "kp": peer_legacy_build(KpLegacyBuilder, inp, "none"),
            "aio": peer_legacy_build(AioLegacyBuilder, inp, "none"),
        },
    )

    def fmt(rate: float | None) -> str:
        return "-" if rate is None else f"{rate / 1e6:.3f}"

    def ratio(a: float, b: float | None) -> str:
        return "-" if b is None else f"{a / b:.2f}x"

    print(
        f"{n:,} records, 16-byte keys, 100-byte values, one header; best of {args.rounds} interleaved rounds; "
        f"Python {platform.python_version()}, kafka-python {kafka.__version__}, aiokafka {aiokafka.__version__} "
        f"(compiled extensions); CRCs {'checked by every decoder' if crc else 'not checked'}\n"
    )
    print(
        "| path | kafka_wire M rec/s | kafka-python M rec/s | aiokafka M rec/s | vs kafka-python | vs aiokafka"
        " | decompressor alone M rec/s | total time / decompressor time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path, kw, kp, aio, dec in rows:
        print(
            f"| {path} | {fmt(kw)} | {fmt(kp)} | {fmt(aio)} | {ratio(kw, kp)} | {ratio(kw, aio)}"
            f" | {fmt(dec)} | {ratio(dec, kw) if dec is not None else '-'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
