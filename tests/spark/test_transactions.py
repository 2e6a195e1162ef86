"""Spark's ``kafka.isolation.level`` on the logs a real transactional producer wrote to
``kafka-wire serve``: the Java 4.4 client runs the transactions scenario of ``tests/txn`` (two
committed transactions, one aborted between them, offsets sent to each), reads the topic back with
a read_committed and a read_uncommitted consumer, and the data source, live and at rest, reads
exactly the same records at each level."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import Cluster
from tests.txn.harness import check, run_scenario

pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)

TOPIC = "spark-txn"

Row = tuple[int, int, str]
"""partition, offset, value."""


def _read(spark: SparkSession, source: tuple[str, str], isolation: str) -> list[Row]:
    rows = (
        spark.read.format("kafka_wire")
        .option(*source)
        .option("subscribe", TOPIC)
        .option("kafka.isolation.level", isolation)
        .load()
        .select("partition", "offset", "value")
        .collect()
    )
    return sorted((r.partition, r.offset, bytes(r.value).decode()) for r in rows)


def test_isolation_levels_read_what_the_java_consumer_reads(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create(TOPIC)
    cluster.create(f"{TOPIC}-src", partitions=1)
    outcome = run_scenario("java4", cluster.bootstrap, topic=TOPIC, source=f"{TOPIC}-src")
    check(outcome)
    java: dict[str, list[Row]] = {
        isolation: sorted((p, o, v) for p, o, v in outcome.event("consumed", isolation=isolation)["records"])
        for isolation in ("read_committed", "read_uncommitted")
    }
    aborted = {value for _, value in outcome.event("transacted")["aborted"]}
    assert aborted and not aborted & {v for _, _, v in java["read_committed"]}
    assert aborted <= {v for _, _, v in java["read_uncommitted"]}

    live = ("kafka.bootstrap.servers", cluster.bootstrap)
    for isolation, rows in java.items():
        assert _read(spark, live, isolation) == rows, isolation
    cluster.broker.stop()  # a data directory at rest: no broker running
    try:
        at_rest = ("path", str(cluster.broker.data_dir))
        for isolation, rows in java.items():
            assert _read(spark, at_rest, isolation) == rows, isolation
    finally:
        cluster.broker.restart()
