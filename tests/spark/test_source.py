"""The kafka_wire data source in local[2]: live and at rest, every codec, transactions,
compaction, streaming, and the writer; compared with what a real client (librdkafka) sent or read."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTP
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # NewTopic is not in its stubs' exports
    AdminClient,
    NewTopic,
)
from pyspark.sql import DataFrame, SparkSession

from kafka_wire.client import TopicPartition
from kafka_wire.records import build_abort_marker, build_batch, build_commit_marker
from kafka_wire.spark.logs import discover, earliest_offset
from tests.e2e.brokers import kafka_wire
from tests.e2e.certs import make_pki
from tests.e2e.test_sasl import USERS, SaslBroker
from tests.e2e.tls_brokers import kafka_wire_ssl
from tests.spark.conftest import CODECS, Cluster, Sent
from tests.spark.segments import write_partition

# py4j (Spark's Java gateway) leaves its sockets to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)

TOPICS = ",".join(f"codec-{c}" for c in CODECS)


def _rows(df: DataFrame) -> list[Sent]:
    """Rows as librdkafka's delivery tuples (timestamps as ms), sorted."""
    out = []
    for r in df.selectExpr("*", "unix_millis(timestamp) AS ts_ms").collect():
        headers = [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers]
        key = None if r.key is None else bytes(r.key)
        value = None if r.value is None else bytes(r.value)
        out.append((r.topic, r.partition, r.offset, key, value, headers, r.ts_ms))
    return sorted(out, key=lambda s: (s[0], s[1], s[2]))


def _expected(cluster: Cluster, *topics: str) -> list[Sent]:
    return sorted((s for t in topics for s in cluster.sent[t]), key=lambda s: (s[0], s[1], s[2]))


def test_live_read_equals_what_librdkafka_sent(spark: SparkSession, cluster: Cluster) -> None:
    df = (
        spark.read.format("kafka_wire")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", TOPICS)
        .option("includeHeaders", "true")
        .load()
    )
    assert df.rdd.getNumPartitions() == 2 * len(CODECS)
    assert _rows(df) == _expected(cluster, *(f"codec-{c}" for c in CODECS))
    assert {r.timestampType for r in df.select("timestampType").distinct().collect()} == {0}


def test_nothing_to_read_is_an_empty_frame(spark: SparkSession, cluster: Cluster, tmp_path: Path) -> None:
    """A batch query with no offset range to read (an empty topic; a log at rest read from its
    latest offsets) has no rows, as Spark's Kafka source answers: PySpark then runs one task with a
    placeholder partition, which the source reads as nothing."""
    cluster.create("empty-topic")
    live = (
        spark.read.format("kafka_wire")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", "empty-topic")
        .load()
    )
    assert live.rdd.getNumPartitions() == 1 and live.count() == 0
    data = tmp_path / "data"
    write_partition(data, "full", 0, [[build_batch([(None, b"v", (), 1_700_000_000_000)])]])
    at_rest = (
        spark.read.format("kafka_wire")
        .option("path", str(data))
        .option("subscribe", "full")
        .option("startingOffsets", "latest")
        .load()
    )
    assert at_rest.collect() == []


def test_logs_at_rest_read_equals_what_librdkafka_sent(spark: SparkSession, cluster: Cluster) -> None:
    cluster.broker.stop()  # a data directory at rest: no broker running
    try:
        df = (
            spark.read.format("kafka_wire")
            .option("path", str(cluster.broker.data_dir))
            .option("subscribePattern", "codec-.*")
            .option("includeHeaders", "true")
            .option("minPartitions", "25")
            .load()
        )
        assert df.rdd.getNumPartitions() >= 25
        assert _rows(df) == _expected(cluster, *(f"codec-{c}" for c in CODECS))
        # offsets by partition, as Spark's Kafka source takes them
        some = (
            spark.read.format("kafka_wire")
            .option("path", str(cluster.broker.data_dir))
            .option("assign", '{"codec-zstd": [1]}')
            .option("startingOffsets", '{"codec-zstd": {"1": 10}}')
            .option("endingOffsets", '{"codec-zstd": {"1": 20}}')
            .load()
        )
        assert [r.offset for r in some.orderBy("offset").collect()] == list(range(10, 20))
        assert "headers" not in some.columns
    finally:
        cluster.broker.restart()


def _transactional_and_compacted(root: Path) -> None:
    now = int(time.time() * 1000)

    def txn(pid: int, base: int, values: list[bytes]) -> bytes:
        return build_batch(
            [(b"k", v, (), now) for v in values],
            base_offset=base,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
            compression="lz4",
        )

    write_partition(
        root,
        "txn",
        0,
        [
            [
                txn(1, 0, [b"committed-0", b"committed-1"]),
                txn(2, 2, [b"aborted-0"]),
                build_batch([(b"k", b"plain", (), now)], base_offset=3),
                build_commit_marker(producer_id=1, producer_epoch=0, coordinator_epoch=0, base_offset=4),
                txn(2, 5, [b"aborted-1"]),
                build_abort_marker(producer_id=2, producer_epoch=0, coordinator_epoch=0, base_offset=6),
                txn(3, 7, [b"open"]),  # the copy was taken while this transaction was open
                build_batch([(b"k", b"after-open", (), now)], base_offset=8),
            ]
        ],
    )
    write_partition(
        root,
        "compacted",
        0,
        [
            [
                build_batch(
                    [(b"a", b"a2", (), now), (b"b", b"b1", (), now)],
                    base_offset=0,
                    offset_deltas=[2, 5],
                    last_offset_delta=5,
                )
            ],
            [
                build_batch([(b"c", b"c1", (), now)], base_offset=8, compression="snappy"),
                build_batch([(b"a", None, (), now)], base_offset=12),
            ],
        ],
    )


def test_read_committed_and_compacted_logs(spark: SparkSession, tmp_path: Path) -> None:
    _transactional_and_compacted(tmp_path)

    def values(topic: str, isolation: str) -> list[tuple[int, bytes | None]]:
        df = (
            spark.read.format("kafka_wire")
            .option("path", str(tmp_path))
            .option("subscribe", topic)
            .option("kafka.isolation.level", isolation)
            .load()
        )
        return [
            (r.offset, None if r.value is None else bytes(r.value)) for r in df.orderBy("offset").collect()
        ]

    assert values("txn", "read_uncommitted") == [
        (0, b"committed-0"),
        (1, b"committed-1"),
        (2, b"aborted-0"),
        (3, b"plain"),
        (5, b"aborted-1"),
        (7, b"open"),
        (8, b"after-open"),
    ]
    # Kafka's read_committed consumer stops at the last stable offset: the open transaction's first offset
    assert values("txn", "read_committed") == [(0, b"committed-0"), (1, b"committed-1"), (3, b"plain")]
    assert values("compacted", "read_uncommitted") == [(2, b"a2"), (5, b"b1"), (8, b"c1"), (12, None)]
    headers = (
        spark.read.format("kafka_wire")
        .option("path", str(tmp_path))
        .option("subscribe", "compacted")
        .option("includeHeaders", "true")
        .load()
        .select("headers")
        .collect()
    )
    assert [r.headers for r in headers] == [None] * 4  # no headers: null, as Spark's Kafka source gives


def test_streaming_picks_up_records_produced_after_start(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create("stream", partitions=2)
    before = cluster.produce("stream", 20)
    query = (
        spark.readStream.format("kafka_wire")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", "stream")
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.format("memory")
        .queryName("stream_out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert spark.table("stream_out").count() == len(before)
        after = cluster.produce("stream", 30, first=20)
        deadline = time.monotonic() + 60
        while spark.table("stream_out").count() < len(before) + len(after) and time.monotonic() < deadline:
            time.sleep(0.2)
        got = sorted(
            (r.partition, r.offset, None if r.value is None else bytes(r.value))
            for r in spark.table("stream_out").collect()
        )
        assert got == sorted((s[1], s[2], s[4]) for s in before + after)
        query.processAllAvailable()
        # Spark's offset log: "v1", the batch metadata, then each source's offset as JSON.
        offsets = tmp_path / "checkpoint" / "offsets"
        newest = max((f for f in offsets.iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
        assert json.loads(newest.read_text().splitlines()[2]) == {"stream": {"0": 25, "1": 25}}
    finally:
        query.stop()


def test_writer_output_reads_back_equal(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create("written", partitions=3)
    rows = [
        (f"k{i}".encode() if i % 4 else None, f"v{i}".encode(), [("h", str(i).encode())]) for i in range(500)
    ]
    df = spark.createDataFrame(
        rows, "key binary, value binary, headers array<struct<key: string, value: binary>>"
    )
    (
        df.repartition(2)
        .write.format("kafka_wire")
        .mode("append")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("topic", "written")
        .option("kafka.compression.type", "zstd")
        .option("kafka.batch.records", "64")
        .save()
    )
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "spark-writer-check",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([ConfluentTP("written", p, 0) for p in range(3)])
        got: list[tuple[int | None, bytes | None, bytes | None, list[Any]]] = []
        deadline = time.monotonic() + 30
        while len(got) < len(rows) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.partition(), msg.key(), msg.value(), list(msg.headers() or [])))
    finally:
        consumer.close()
    assert sorted((k or b"", v, h) for _, k, v, h in got) == sorted((k or b"", v, h) for k, v, h in rows)
    # keyed records went where Kafka's default partitioner puts them
    from kafka_wire.client import partition_for_key

    assert all(p == partition_for_key(k, 3) for p, k, _, _ in got if k is not None)
    back = (
        spark.read.format("kafka_wire")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", "written")
        .option("includeHeaders", "true")
        .load()
    )
    assert back.count() == len(rows)


def test_spark_load_writes_parquet(spark: SparkSession, tmp_path: Path) -> None:
    from kafka_wire.cli import build_parser
    from kafka_wire.cli.spark_load import load, options_of

    _transactional_and_compacted(tmp_path / "data")
    args = build_parser().parse_args(
        [
            "spark-load",
            "--path",
            str(tmp_path / "data"),
            "--subscribe",
            "txn,compacted",
            "--isolation-level",
            "read_committed",
            "--include-headers",
            "--output",
            str(tmp_path / "out"),
        ]
    )
    progress = io.StringIO()
    assert load(spark, options_of(args), args.output, args.mode, progress=progress) == 7
    table = spark.read.parquet(str(tmp_path / "out"))
    assert table.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert sorted((r.topic, r.offset) for r in table.collect()) == [
        ("compacted", 2),
        ("compacted", 5),
        ("compacted", 8),
        ("compacted", 12),
        ("txn", 0),
        ("txn", 1),
        ("txn", 3),
    ]
    shown = progress.getvalue()
    assert "2 offset ranges, up to 20 records" in shown
    assert "] 2/2 tasks" in shown and "wrote 7 records" in shown


def _error_text(e: BaseException) -> str:
    return str(e) + "".join(str(c) for c in (e.__cause__, e.__context__) if c is not None)


def test_fail_on_data_loss_at_rest(spark: SparkSession, tmp_path: Path) -> None:
    # Retention removed the segments before offset 20.
    write_partition(
        tmp_path,
        "trimmed",
        0,
        [[build_batch([(None, f"v{i}".encode(), (), 0) for i in range(20, 25)], base_offset=20)]],
    )

    def read(fail: str) -> DataFrame:
        return (
            spark.read.format("kafka_wire")
            .option("path", str(tmp_path))
            .option("subscribe", "trimmed")
            .option("startingOffsets", '{"trimmed": {"0": 5}}')
            .option("failOnDataLoss", fail)
            .load()
        )

    with pytest.raises(Exception) as lost:
        read("true").collect()
    assert "failOnDataLoss" in _error_text(lost.value)
    assert [r.offset for r in read("false").orderBy("offset").collect()] == list(range(20, 25))


def test_fail_on_data_loss_live(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create("deleted", partitions=2)
    sent = [s for s in cluster.produce("deleted", 20) if s[1] == 0]  # offsets 0..9 of partition 0
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.delete_records([ConfluentTP("deleted", 0, 6)]).values():
        assert future.result(30).low_watermark == 6  # the new log start offset
    # at rest too: the records below 6 are still in the segment, the broker's checkpoint hides them
    assert earliest_offset(discover([cluster.broker.data_dir])[TopicPartition("deleted", 0)]) == 6

    def read(fail: str) -> DataFrame:
        return (
            spark.read.format("kafka_wire")
            .option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("assign", '{"deleted": [0]}')
            .option("startingOffsets", '{"deleted": {"0": 2}}')
            .option("failOnDataLoss", fail)
            .load()
        )

    with pytest.raises(Exception) as lost:
        read("true").collect()
    assert "failOnDataLoss" in _error_text(lost.value)
    got = [
        (r.offset, None if r.value is None else bytes(r.value))
        for r in read("false").orderBy("offset").collect()
    ]
    assert got == [(s[2], s[4]) for s in sorted(sent, key=lambda s: s[2]) if s[2] >= 6]


def test_sasl_live_read_and_write(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> None:
    plain = kafka_wire(tmp_path_factory.mktemp("spark-sasl"))
    broker = SaslBroker(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    broker.start()
    try:
        user, password = USERS["PLAIN"]
        admin = AdminClient(
            {
                "bootstrap.servers": broker.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": user,
                "sasl.password": password,
            }
        )
        for future in admin.create_topics([NewTopic("secured", 2, 1)]).values():
            future.result(30)

        def login(mechanism: str, who: str, secret: str) -> dict[str, str]:
            module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
            return {
                "kafka.bootstrap.servers": broker.bootstrap,
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": mechanism,
                "kafka.sasl.jaas.config": f"org.apache.kafka.common.security.{module} required "
                f'username="{who}" password="{secret}";',
            }

        rows = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(40)]
        spark.createDataFrame(rows, "key binary, value binary").write.format("kafka_wire").mode(
            "append"
        ).options(**login("SCRAM-SHA-512", *USERS["SCRAM-SHA-512"])).option("topic", "secured").save()
        df = (
            spark.read.format("kafka_wire")
            .options(**login("SCRAM-SHA-256", *USERS["SCRAM-SHA-256"]))
            .option("subscribe", "secured")
            .load()
        )
        assert sorted((bytes(r.key), bytes(r.value)) for r in df.collect()) == sorted(rows)
        with pytest.raises(Exception) as refused:
            spark.read.format("kafka_wire").options(**login("PLAIN", user, "wrong")).option(
                "subscribe", "secured"
            ).load().collect()
        assert "uthentication failed" in _error_text(refused.value)
    finally:
        broker.close()


def test_tls_live_read_and_write(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Mutual TLS with Kafka's client options (``kafka.ssl.*``, PEM stores) against ``kafka-wire
    serve`` on an SSL listener that requires client certificates: a write, then a read."""
    workdir = tmp_path_factory.mktemp("spark-tls")
    pki = make_pki(workdir / "pki")
    broker = kafka_wire_ssl(workdir, pki)
    broker.start()
    try:
        alice = pki.clients["alice"]
        admin = AdminClient(
            {
                "bootstrap.servers": broker.bootstrap,
                "security.protocol": "SSL",
                "ssl.ca.location": str(pki.ca),
                "ssl.certificate.location": str(alice.cert),
                "ssl.key.location": str(alice.key),
            }
        )
        for future in admin.create_topics([NewTopic("encrypted", 2, 1)]).values():
            future.result(30)
        options = {
            "kafka.bootstrap.servers": broker.bootstrap,
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(pki.ca),
            "kafka.ssl.keystore.type": "PEM",
            "kafka.ssl.keystore.location": str(alice.pem),
        }
        rows = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(40)]
        spark.createDataFrame(rows, "key binary, value binary").write.format("kafka_wire").mode(
            "append"
        ).options(**options).option("topic", "encrypted").save()
        df = spark.read.format("kafka_wire").options(**options).option("subscribe", "encrypted").load()
        assert sorted((bytes(r.key), bytes(r.value)) for r in df.collect()) == sorted(rows)
        assert "principal User:alice" in broker.log()
    finally:
        broker.close()


def test_stream_from_a_timestamp_in_capped_micro_batches_until_the_ends_seen_at_start(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``startingTimestamp`` + ``maxOffsetsPerTrigger=1000`` + ``Trigger.AvailableNow`` over a log at
    rest: 10,000 records from the timestamp's offset on, in at least 10 micro-batches of at most
    1,000, and nothing of what is appended after the query started."""
    t0 = 1_700_000_000_000

    def batches(first: int, count: int) -> list[bytes]:
        return [
            build_batch([(None, b"v%d" % i, (), t0 + i) for i in range(lo, lo + 500)], base_offset=lo)
            for lo in range(first, first + count, 500)
        ]

    data = tmp_path / "data"
    write_partition(data, "burst", 0, [batches(0, 12_500)])
    query = (
        spark.readStream.format("kafka_wire")
        .option("path", str(data))
        .option("subscribe", "burst")
        .option("startingTimestamp", str(t0 + 2_500))
        .option("maxOffsetsPerTrigger", "1000")
        .load()
        .writeStream.format("memory")
        .queryName("burst_out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        deadline = time.monotonic() + 120
        while not spark.table("burst_out").count() and time.monotonic() < deadline:
            time.sleep(0.05)
        appended_while_running = query.isActive
        write_partition(data, "burst", 0, [batches(12_500, 1_000)])  # a new segment after the start
        assert query.awaitTermination(300)
    finally:
        query.stop()
    assert appended_while_running  # else the test would prove nothing about the end offsets
    offsets = sorted(r.offset for r in spark.table("burst_out").select("offset").collect())
    assert offsets == list(range(2_500, 12_500))
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert len(sizes) >= 10 and max(sizes) <= 1_000 and sum(sizes) == 10_000
    # a batch query that names fewer columns gets (and decodes) only those
    narrow = (
        spark.read.format("kafka_wire")
        .schema("offset long, value binary")
        .option("path", str(data))
        .option("subscribe", "burst")
        .option("startingOffsets", '{"burst": {"0": 100}}')
        .option("endingOffsetsByTimestamp", json.dumps({"burst": {"0": t0 + 103}}))
        .load()
    )
    assert narrow.columns == ["offset", "value"]
    assert [(r.offset, bytes(r.value)) for r in narrow.collect()] == [
        (i, b"v%d" % i) for i in range(100, 103)
    ]
