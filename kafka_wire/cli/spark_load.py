"""``kafka-wire spark-load``: load topics from a data directory or a live cluster into Parquet.

For users who do not write Spark code: the options are the data source's, as flags; the output
is one Parquet dataset with the data source's schema. A progress bar (tasks done of tasks
planned, one task per offset range) runs on stderr while Spark works.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BAR_WIDTH: Final = 40


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "spark-load",
        help="load Kafka topics into Parquet with Spark",
        description="Read topics from Kafka logs at rest (--path) or a live cluster (--bootstrap-servers) "
        "with the kafka_wire Spark data source and write them to Parquet. Needs the 'spark' extra.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--path",
        action="append",
        help="a data directory, topic-partition folder or segment file (repeatable)",
    )
    where.add_argument("--bootstrap-servers", help="host:port[,host:port...] of a live cluster")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--subscribe", help="comma-separated topics")
    which.add_argument("--subscribe-pattern", help="a regular expression of topic names")
    which.add_argument("--assign", help='JSON: {"topic": [0, 1]}')
    parser.add_argument(
        "--starting-offsets", default="earliest", help="earliest, latest or JSON (default earliest)"
    )
    parser.add_argument("--ending-offsets", default="latest", help="latest or JSON (default latest)")
    parser.add_argument(
        "--starting-timestamp", help="start each partition at the first record at or after this ms"
    )
    parser.add_argument(
        "--isolation-level", choices=["read_uncommitted", "read_committed"], default="read_uncommitted"
    )
    parser.add_argument("--include-headers", action="store_true", help="add the headers column")
    parser.add_argument(
        "--min-partitions", type=int, help="split offset ranges into at least this many tasks"
    )
    parser.add_argument("--output", required=True, help="Parquet output directory")
    parser.add_argument(
        "--mode",
        choices=["error", "overwrite", "append"],
        default="error",
        help="when the output exists (default error)",
    )
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def options_of(args: argparse.Namespace) -> dict[str, str]:
    """The data source options the flags stand for."""
    options: dict[str, str] = {
        "startingOffsets": args.starting_offsets,
        "endingOffsets": args.ending_offsets,
        "kafka.isolation.level": args.isolation_level,
        "includeHeaders": "true" if args.include_headers else "false",
    }
    if args.path:
        options["path"] = ",".join(args.path)
    else:
        options["kafka.bootstrap.servers"] = args.bootstrap_servers
    for flag, name in (
        ("subscribe", "subscribe"),
        ("subscribe_pattern", "subscribePattern"),
        ("assign", "assign"),
    ):
        if getattr(args, flag):
            options[name] = getattr(args, flag)
    if args.starting_timestamp:
        options["startingTimestamp"] = args.starting_timestamp
    if args.min_partitions:
        options["minPartitions"] = str(args.min_partitions)
    return options


def load(
    spark: SparkSession, options: Mapping[str, str], output: str, mode: str, *, progress: IO[str] | None
) -> int:
    """Write the records chosen by ``options`` to Parquet at ``output``; returns how many."""
    from kafka_wire.spark.plan import Settings, Source
    from kafka_wire.spark.source import register

    ranges = Source(Settings.parse(options)).plan()
    total = sum(r.size for r in ranges)
    if progress is not None:
        progress.write(f"kafka-wire spark-load: {len(ranges)} offset ranges, up to {total} records\n")
    register(spark)
    df = spark.read.format("kafka_wire").options(**options).load()
    with _progress_bar(spark, progress):
        df.write.mode(mode).parquet(output)
    written = spark.read.parquet(output).count() if mode != "append" else total
    if progress is not None:
        progress.write(f"kafka-wire spark-load: wrote {written} records to {output}\n")
    return written


@contextmanager
def _progress_bar(spark: SparkSession, out: IO[str] | None) -> Iterator[None]:
    if out is None:
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    done = threading.Event()
    seen: dict[int, tuple[int, int]] = {}

    def draw() -> None:
        for stage in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage)
            if info is not None:
                seen[stage] = (info.numCompletedTasks, info.numTasks)
        finished = sum(c for c, _ in seen.values())
        planned = sum(n for _, n in seen.values()) or 1
        filled = BAR_WIDTH * finished // planned
        out.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {finished}/{planned} tasks")
        out.flush()

    def loop() -> None:
        while not done.wait(0.5):
            draw()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        for stage, (_, n) in seen.items():
            seen[stage] = (n, n)
        draw()
        out.write("\n")


def run(args: argparse.Namespace) -> int:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("kafka-wire spark-load needs PySpark: pip install 'kafka-wire[spark]'", file=sys.stderr)
        return 2
    from kafka_wire.spark.ranges import OptionError

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(args.master)
        .appName("kafka-wire spark-load")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        load(
            spark, options_of(args), args.output, args.mode, progress=None if args.no_progress else sys.stderr
        )
    except OptionError as e:
        print(f"kafka-wire spark-load: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    return 0
