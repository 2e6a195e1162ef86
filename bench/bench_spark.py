"""Spark pipeline benchmark: a logs-at-rest read through the kafka_wire data source next to
``kafka_wire.records`` alone on the same segment files, so that the Spark-side cost is visible.

Input (made once per run in a temporary directory, from a fixed seed): ``--records`` records
(default 10 million) over ``--partitions`` partitions (default 8) of one topic, in v2 batches of
1,000 records with ``--compression`` (default lz4), 16-byte keys, 100-byte values (hex text of
random bytes), one 16-byte header; segments of up to 64 MiB with an index entry every 4 KiB,
as Kafka writes them.

Paths, each timed once after a warm-up of the file cache (the Spark queries: ``--rounds`` times in
turns after a warm-up count, the median):

* ``records``: ``kafka_wire.records.read_batches`` over each segment file, decoding every
  record and touching its offset, timestamp, key, value and headers (one core);
* ``logs.read_range``: the per-record reader of a log's ranges (index seek, control/transaction
  checks, range filtering), one range per partition (one core);
* ``read_arrow``: what one Spark task of the data source runs, without Spark (the same ranges
  into Arrow batches through the columnar decoder; one core);
* ``spark``: ``spark.read.format("kafka_wire")`` in ``local[N]`` written to Spark's ``noop``
  sink, so that every row crosses into the JVM as Arrow and nothing else is done with it.
  Per-core speed is records / seconds / N, N = min(cores, partitions);
* ``spark, pre-decoded``: the same query over a Python data source that decodes nothing: each of
  its tasks yields one Arrow batch that ``read_arrow`` made (the same schema and rows) again and
  again, as many rows as a partition holds. What Spark's Python data source path costs by itself,
  whatever the source does: the ceiling of the row above.
* ``spark, live``: the same records produced (untimed, the log's batches given offset 0, a few
  batches per Produce request, by ``kafka_wire.client.produce``) into a ``kafka-wire serve``
  broker on this machine (``tests/e2e/brokers.py``'s, its data in the temporary directory), then
  the first query with ``kafka.bootstrap.servers`` instead of ``path``: Fetch requests to the
  broker, which shares the machine's cores with Spark (``--no-live`` leaves it out).

Usage: ``python bench/bench_spark.py [--records N] [--partitions N] [--cores N] [--rounds N] [--no-live]``;
prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e.brokers (the broker processes of the e2e suite)

import asyncio  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402  # not in its stubs' exports

from kafka_wire.adapters.cluster import Cluster  # noqa: E402
from kafka_wire.client.produce import produce  # noqa: E402
from kafka_wire.client.types import TopicPartition  # noqa: E402
from kafka_wire.records import build_batch, read_batches, reoffset_batch_in_place  # noqa: E402
from kafka_wire.spark import logs  # noqa: E402
from kafka_wire.spark.plan import Settings, Source, read_arrow  # noqa: E402
from kafka_wire.spark.source import KafkaWireDataSource  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire  # noqa: E402

BATCH_RECORDS = 1_000
SEGMENT_BYTES = 64 * 1024 * 1024
INDEX_INTERVAL_BYTES = 4096
TOPIC = "bench"
#: Spark's Kafka schema with headers, in its order.
SPARK_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


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


def bench_read_arrow(root: Path) -> tuple[int, float]:
    settings = _settings(root)
    count = 0
    start = time.perf_counter()
    for r in Source(settings).plan():
        for batch in read_arrow(settings, r, SPARK_COLUMNS):
            count += batch.num_rows
    return count, time.perf_counter() - start


def _settings(root: Path) -> Settings:
    return Settings.parse({"path": str(root), "subscribe": TOPIC, "includeHeaders": "true"})


class _RepeatPartition(InputPartition):
    def __init__(self, rows: int) -> None:
        self.rows = rows


class _RepeatReader(DataSourceReader):
    """Yields the Arrow batch in ``path`` (an IPC stream) until ``rows`` rows per partition."""

    def __init__(self, path: str, rows: list[int]) -> None:
        self.path, self.rows = path, rows

    def partitions(self) -> list[InputPartition]:
        return [_RepeatPartition(n) for n in self.rows]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _RepeatPartition)
        with pa.ipc.open_stream(pa.memory_map(self.path)) as stream:
            batch = stream.read_next_batch()
        for start in range(0, partition.rows, batch.num_rows):
            yield batch.slice(0, min(batch.num_rows, partition.rows - start))


class _PreDecoded(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pre_decoded"

    def schema(self) -> str:
        return str(KafkaWireDataSource({"includeHeaders": "true"}).schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        return _RepeatReader(self.options["batch"], json.loads(self.options["rows"]))


def _pre_decoded_batch(root: Path) -> tuple[Path, list[int]]:
    """One batch of ``read_arrow``'s as an IPC file beside the log, and each partition's rows."""
    settings = _settings(root)
    ranges = Source(settings).plan()
    batch = next(read_arrow(settings, ranges[0], SPARK_COLUMNS))
    path = root / "pre-decoded.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return path, [r.end - r.start for r in ranges]


#: Batches of the log handed to one ``produce`` call when loading the live broker (one
#: Produce request each: a v2 Produce request holds one batch per partition).
BATCHES_PER_CALL = 100


def live_broker(root: Path, partitions: int, workdir: Path) -> BrokerProcess:
    """A started ``kafka-wire serve`` holding the log's records in topic ``TOPIC``, the same
    batches (given offset 0 again, as a producer sends them) in the same partitions; checked:
    each partition's offsets start at 0 and end where the log's do."""
    broker = kafka_wire(workdir)
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    # The log's timestamps are of 2023: without retention.ms=-1 the broker's retention would
    # delete the rolled segments (by their records' timestamps, as Kafka's does).
    topic = NewTopic(TOPIC, num_partitions=partitions, replication_factor=1, config={"retention.ms": "-1"})
    admin.create_topics([topic])[TOPIC].result(timeout=30)

    def calls(directory: Path) -> Iterator[list[bytes]]:
        pending: list[bytes] = []
        for path in sorted(directory.glob("*.log")):
            data = path.read_bytes()
            for batch in read_batches(data):
                chunk = bytearray(data[batch.position : batch.position + batch.batch_length + 12])
                reoffset_batch_in_place(chunk, 0, -1)
                pending.append(bytes(chunk))
                if len(pending) == BATCHES_PER_CALL:
                    yield pending
                    pending = []
        if pending:
            yield pending

    async def load() -> None:
        async with Cluster(broker.bootstrap, timeout_ms=120_000) as cluster:
            for p in range(partitions):
                for batches in calls(root / f"{TOPIC}-{p}"):
                    await produce(cluster, {TopicPartition(TOPIC, p): batches})

    asyncio.run(load())
    settings = Settings.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": TOPIC})
    held = sorted((r.partition, r.start, r.end) for r in Source(settings).plan())
    written = sorted((tp.partition, 0, logs.latest_offset(log)) for tp, log in logs.discover([root]).items())
    if held != written:
        broker.close()
        raise SystemExit(f"the live broker holds {held}, not the log's {written}")
    return broker


def bench_spark(
    root: Path, cores: int, rounds: int, live: BrokerProcess | None
) -> list[tuple[str, int, float]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    batch_path, rows = _pre_decoded_batch(root)
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaWireDataSource)
    spark.dataSource.register(_PreDecoded)
    frames = {
        f"Spark local[{cores}], noop sink": (
            spark.read.format("kafka_wire")
            .option("path", str(root))
            .option("subscribe", TOPIC)
            .option("includeHeaders", "true")
            .load()
        ),
        f"Spark local[{cores}], pre-decoded batches (no decoding), noop sink": (
            spark.read.format("pre_decoded")
            .option("batch", str(batch_path))
            .option("rows", json.dumps(rows))
            .load()
        ),
    }
    if live is not None:
        frames[f"Spark local[{cores}], live through kafka-wire serve, noop sink"] = (
            spark.read.format("kafka_wire")
            .option("kafka.bootstrap.servers", live.bootstrap)
            .option("subscribe", TOPIC)
            .option("includeHeaders", "true")
            .load()
        )
    try:
        counts = {name: df.count() for name, df in frames.items()}  # warm-up: workers, file cache
        seconds: dict[str, list[float]] = {name: [] for name in frames}
        for _ in range(rounds):  # the queries in turns: the JVM's JIT warms up over the first
            for name, df in frames.items():
                start = time.perf_counter()
                df.write.format("noop").mode("overwrite").save()
                seconds[name].append(time.perf_counter() - start)
        return [(name, counts[name], statistics.median(seconds[name])) for name in frames]
    finally:
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--cores", type=int, default=min(os.cpu_count() or 1, 8))
    parser.add_argument("--compression", default="lz4")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the Spark queries (median)")
    parser.add_argument(
        "--dir", type=Path, help="keep the generated log here (default: a temporary directory)"
    )
    parser.add_argument("--no-live", action="store_true", help="no query through a kafka-wire serve broker")
    args = parser.parse_args()
    cores = min(args.cores, args.partitions)
    with tempfile.TemporaryDirectory(prefix="kw-bench-spark-") as tmp:
        root = args.dir or Path(tmp)
        if not any(root.glob(f"{TOPIC}-*")):
            t = time.perf_counter()
            make_log(root, args.records, args.partitions, args.compression)
            print(f"made {args.records} records in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        size = sum(p.stat().st_size for p in root.glob(f"{TOPIC}-*/*.log"))
        live = None
        if not args.no_live:
            t = time.perf_counter()
            live = live_broker(root, args.partitions, Path(tmp) / "live")
            print(f"loaded the live broker in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        try:
            bench_records(root)  # warm the file cache
            rows = [
                ("kafka_wire.records (decode only)", *bench_records(root), 1),
                ("kafka_wire.spark.logs.read_range", *bench_read_range(root), 1),
                ("kafka_wire.spark.plan.read_arrow", *bench_read_arrow(root), 1),
                *(
                    (name, count, seconds, cores)
                    for name, count, seconds in bench_spark(root, cores, args.rounds, live)
                ),
            ]
        finally:
            if live is not None:
                live.close()
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
