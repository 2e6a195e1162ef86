"""Columnar decode benchmark: kafka_wire's Arrow decoder vs aiokafka and kafka-python, one process, one run.

Input: the 10,000-record batches of ``bench_records.py`` (16-byte keys, 100-byte values, one
header, built by kafka-python), one per codec. Paths:

* kafka_wire columnar: ``decode_arrow`` of the batch into a ``pyarrow.RecordBatch`` with every
  column of Spark's Kafka schema (headers included), compiled (the C extension) and pure (its
  Python twin, swapped in for the run);
* aiokafka and kafka-python: decode + iterate, touching offset, timestamp, key, value and headers
  of every record (``bench_records.py``'s loop), which is what a consumer of their records does;
  each batch's CRC is checked first by every decoder, as the three libraries' consumers do by
  default (``--no-crc``: by none);
* the decompressor alone (kafka_wire's codec call) for the compressed batches;
* the floor of a compressed batch: what every decoder of it must do before parsing a record (the
  batch's CRC-32C, the decompression) and the one copy of its bytes into columns, with no parsing.

Ratios printed: compiled columnar vs aiokafka, pure columnar vs kafka-python, columnar time over
decompressor time, and the floor's time over decompressor time (how near the columnar decode can
get to the decompressor alone). Timing as ``bench_records.py``: the paths take turns, the best round counts.

Usage: ``python bench/bench_columnar.py [--rounds N] [--records N] [--no-crc]``; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import aiokafka  # type: ignore[import-untyped]
import kafka  # type: ignore[import-untyped]
import pyarrow as pa
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords  # type: ignore[import-untyped]
from bench_records import (
    CODEC_IDS,
    best_times,
    contents,
    decompressor_alone,
    make_inputs,
    peer_build,
    peer_decode,
)
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder  # type: ignore[import-untyped]
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords  # type: ignore[import-untyped]

from kafka_wire.records import ReadConfig, columnar, columnar_pure, decompress
from kafka_wire.records.crc import crc32c


@contextmanager
def flavour(columns_cls: type) -> Iterator[None]:
    """``decode_arrow`` runs on ``columns_cls`` (the C ``Columns`` or its pure twin) inside."""
    chosen = columnar.Columns
    setattr(columnar, "Columns", columns_cls)  # noqa: B010  # the module's choice, swapped for a path
    try:
        yield
    finally:
        setattr(columnar, "Columns", chosen)  # noqa: B010


def kw_columnar(data: bytes, columns_cls: type, crc: bool) -> Callable[[], int]:
    config = ReadConfig(verify_crc=crc)

    def run() -> int:
        with flavour(columns_cls):
            return int(columnar.decode_arrow(data, config=config).num_rows)

    return run


def floor(data: bytes, codec: int, crc: bool) -> Callable[[], int]:
    """The batch's CRC-32C (over attributes to its end, as the readers check it; with ``crc``), its
    records decompressed (kafka_wire's codec call) and copied once: the least a columnar decode does."""
    view = memoryview(data)
    held: list[bytearray] = [bytearray()]

    def run() -> int:
        if crc:
            crc32c(view[21:])
        held[0] = bytearray(decompress(codec, view[61:], magic=2, max_bytes=1 << 30))
        return len(held[0])

    return run


def check(data: bytes) -> None:
    """The columnar output (both flavours) equals the per-record decoder's records."""
    expected = [(o, t * 1000, k, v, h or None) for o, t, k, v, h in contents(data)]
    for cls in (columnar.Columns, columnar_pure.Columns):
        with flavour(cls):
            batch = columnar.decode_arrow(data)
        got = list(
            zip(
                batch.column("offset").to_pylist(),
                batch.column("timestamp").cast(pa.int64()).to_pylist(),
                batch.column("key").to_pylist(),
                batch.column("value").to_pylist(),
                [
                    None if h is None else [(x["key"], x["value"]) for x in h]
                    for h in batch.column("headers").to_pylist()
                ],
                strict=True,
            )
        )
        if got != expected:
            raise SystemExit(f"columnar output ({cls.__module__}) differs from the per-record decoder")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15, help="rounds per path (best round counts)")
    parser.add_argument("--records", type=int, default=10_000, help="records per batch")
    parser.add_argument("--no-crc", action="store_true", help="no decoder checks CRCs")
    args = parser.parse_args(argv)
    crc = not args.no_crc
    if not columnar.COMPILED:
        raise SystemExit("the C extension is not built (make compile) or KAFKA_WIRE_PURE is set")
    n = args.records
    inp = make_inputs(n)
    rows = []
    for codec in CODEC_IDS:
        data = peer_build(KpBuilder, inp, codec)()
        check(data)
        fns: dict[str, Callable[[], object]] = {
            "col": kw_columnar(data, columnar.Columns, crc),
            "pure": kw_columnar(data, columnar_pure.Columns, crc),
            "aio": peer_decode(AioMemoryRecords, data, crc),
            "kp": peer_decode(KpMemoryRecords, data, crc),
        }
        if codec != "none":
            fns["dec"] = decompressor_alone(data, CODEC_IDS[codec])
            fns["floor"] = floor(data, CODEC_IDS[codec], crc)
        t = best_times(fns, args.rounds)
        rate = {name: n / dt for name, dt in t.items()}
        print(f"  {codec}: " + ", ".join(f"{k} {v / 1e6:.3f} M/s" for k, v in rate.items()), file=sys.stderr)
        rows.append((codec, rate))

    def fmt(rate: float | None) -> str:
        return "-" if rate is None else f"{rate / 1e6:.2f}"

    print(
        f"{n:,} records per batch, 16-byte keys, 100-byte values, one header; best of {args.rounds} "
        f"interleaved rounds; Python {platform.python_version()}, pyarrow {pa.__version__}, "
        f"aiokafka {aiokafka.__version__}, kafka-python {kafka.__version__}; "
        f"CRCs {'checked by every decoder' if crc else 'not checked'}\n"
    )
    print(
        "| codec | columnar (C) M rec/s | columnar (pure) M rec/s | aiokafka decode+iterate M rec/s"
        " | kafka-python decode+iterate M rec/s | decompressor alone M rec/s | C vs aiokafka"
        " | pure vs kafka-python | C time / decompressor time | floor time / decompressor time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for codec, r in rows:
        dec = r.get("dec")
        over = "-" if dec is None else f"{dec / r['col']:.2f}x"
        least = "-" if dec is None else f"{dec / r['floor']:.2f}x"
        print(
            f"| {codec} | {fmt(r['col'])} | {fmt(r['pure'])} | {fmt(r['aio'])} | {fmt(r['kp'])} | {fmt(dec)}"
            f" | {r['col'] / r['aio']:.2f}x | {r['pure'] / r['kp']:.2f}x"
            f" | {over} | {least} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
