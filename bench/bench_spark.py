"""Spark pipeline benchmark: a logs-at-rest read through the kafka_wire data source next to
``kafka_wire.records`` alone on the same segment files, so that the Spark-side cost is visible.

Input (made once per run in a temporary directory, from a fixed seed): ``--records`` records
(default 10 million) over ``--partitions`` partitions (default 8) of one topic, in v2 batches of
1,000 records with ``--compression`` (default lz4), 16-byte keys, 100-byte values (hex text of
random bytes), one 16-byte header; segments of up to 64 MiB with an index entry every 4 KiB,
as Kafka writes them.

Paths, each timed once after a warm-up of the file cache:

* ``records``: ``kafka_wire.records.read_batches`` over each segment file, decoding every
  record and touching its offset, timestamp, key, value and headers (one core);
* ``logs.read_range``: the data source's reader without Spark (index seek, control/transaction
  checks, range filtering), one range per partition (one core);
* ``spark``: ``spark.read.format("kafka_wire")`` in ``local[N]`` written to Spark's ``noop``
  sink, so that every row crosses into the JVM as Arrow and nothing else is done with it.
  Per-core speed is records / seconds / N, N = min(cores, partitions).

Usage: ``python bench/bench_spark.py [--records N] [--partitions N] [--cores N]``; prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import struct
import sys
import tempfile
import time
from pathlib import Path

from kafka_wire.records import build_batch, read_batches
from kafka_wire.spark import logs

BATCH_RECORDS = 1_000
SEGMENT_BYTES = 64 * 1024 * 1024
INDEX_INTERVAL_BYTES = 4096
TOPIC = "bench"


def make_log(root: Path, records: int, partitions: int, compression: str) -> None:
    rng = random.Random(42)
    values = [rng.randbytes(50).hex().encode() for _ in range(997)]
    keys = [rng.randbytes(16) for _ in range(991)]
    trace = rng.randbytes(16)
    t0 = 1_700_000_000_000
    per_partition = records // partitions
    for p in range(partitions):
        directory = root / f"{TOPIC}-{p}"
        directory.mkdir(parents=True)
        offset = 0
        segment_base = 0
        log = bytearray()
        index = bytearray()
        since_index = 0

        while offset < per_partition:
            n = min(BATCH_RECORDS, per_partition - offset)
            batch = build_batch(
                [
                    (
                        keys[(offset + i) % 991],
                        values[(offset + i) % 997],
                        (("trace", trace),),
                        t0 + offset + i,
                    )
                    for i in range(n)
                ],
                base_offset=offset,
                compression=compression,
            )
            if len(log) + len(batch) > SEGMENT_BYTES and log:
                _write_segment(directory, segment_base, log, index)
                segment_base, log, index, since_index = offset, bytearray(), bytearray(), 0
            if since_index >= INDEX_INTERVAL_BYTES:
                index += struct.pack(">ii", offset + n - 1 - segment_base, len(log))
                since_index = 0
            log += batch
            since_index += len(batch)
            offset += n
        _write_segment(directory, segment_base, log, index)


def _write_segment(directory: Path, base: int, log: bytearray, index: bytearray) -> None:
    (directory / f"{base:020d}.log").write_bytes(log)
    (directory / f"{base:020d}.index").write_bytes(index)


def bench_records(root: Path) -> tuple[int, float]:
    count = 0
    start = time.perf_counter()
    for path in sorted(root.glob(f"{TOPIC}-*/*.log")):
        data = path.read_bytes()
        for batch in read_batches(data):
            for r in batch.records():
                _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
                count += 1
    return count, time.perf_counter() - start


def bench_read_range(root: Path) -> tuple[int, float]:
    found = logs.discover([root])
    count = 0
    start = time.perf_counter()
    for tp, log in found.items():
        assert tp.topic == TOPIC
        for _, records in logs.read_range(log, 0, logs.latest_offset(log)):
            for r in records:
                _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
            count += len(records)
    return count, time.perf_counter() - start


def bench_spark(root: Path, cores: int) -> tuple[int, float]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kafka_wire.spark.source import KafkaWireDataSource

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaWireDataSource)
    try:
        df = (
            spark.read.format("kafka_wire")
            .option("path", str(root))
            .option("subscribe", TOPIC)
            .option("includeHeaders", "true")
            .load()
        )
        count = df.count()  # warm-up: Python workers started, files cached
        start = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        return count, time.perf_counter() - start
    finally:
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--cores", type=int, default=min(os.cpu_count() or 1, 8))
    parser.add_argument("--compression", default="lz4")
    parser.add_argument(
        "--dir", type=Path, help="keep the generated log here (default: a temporary directory)"
    )
    args = parser.parse_args()
    cores = min(args.cores, args.partitions)
    with tempfile.TemporaryDirectory(prefix="kw-bench-spark-") as tmp:
        root = args.dir or Path(tmp)
        if not any(root.glob(f"{TOPIC}-*")):
            t = time.perf_counter()
            make_log(root, args.records, args.partitions, args.compression)
            print(f"made {args.records} records in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        size = sum(p.stat().st_size for p in root.glob(f"{TOPIC}-*/*.log"))
        bench_records(root)  # warm the file cache
        rows = [
            ("kafka_wire.records (decode only)", *bench_records(root), 1),
            ("kafka_wire.spark.logs.read_range", *bench_read_range(root), 1),
            (f"Spark local[{cores}], noop sink", *bench_spark(root, cores), cores),
        ]
    print(
        f"{args.records:,} records, {args.partitions} partitions, {args.compression}, {size / 2**20:.0f} MiB of"
        f" segments; Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores\n"
    )
    print("| path | records | seconds | records/s | records/s per core |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, count, seconds, n in rows:
        print(f"| {name} | {count:,} | {seconds:.2f} | {count / seconds:,.0f} | {count / seconds / n:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
