"""kafka-python peer driver; see driver_common for the command line and output."""

from __future__ import annotations

import logging
import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer  # type: ignore[import-untyped]

from tests.interop.clients.driver_common import GOLDEN_LINGER_MS, Args, emit, run, text

CLIENT = "kafka-python"
CLIENT_ID = f"kw-interop-{CLIENT}"
# kafka-python logs what it does (joins, metadata, fetch errors) to stderr: a failed run shows it.
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _security(args: Args) -> dict[str, Any]:
    security = args.security
    if security is None:
        return {}
    settings = {
        "security_protocol": security.protocol,
        "ssl_cafile": security.ca,
        "ssl_certfile": security.cert,
        "ssl_keyfile": security.key,
        "sasl_mechanism": security.mechanism,
        "sasl_plain_username": security.username,
        "sasl_plain_password": security.password,
    }
    return {key: value for key, value in settings.items() if value is not None}


def metadata(args: Args) -> None:
    admin = KafkaAdminClient(
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        request_timeout_ms=_ms(args.remaining_s),
    )
    try:
        cluster = admin.describe_cluster()
        topics = admin.list_topics()
    finally:
        admin.close()
    brokers = [[b["broker_id"], b["host"], b["port"]] for b in cluster["brokers"]]
    emit("metadata", brokers=sorted(brokers), topics=sorted(topics))


def create(args: Args) -> None:
    admin = KafkaAdminClient(
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        request_timeout_ms=_ms(args.remaining_s),
    )
    try:
        admin.create_topics({args.topic: {"num_partitions": args.partitions, "replication_factor": 1}})
    finally:
        admin.close()
    emit("created", topic=args.topic)


def produce(args: Args) -> None:
    compression = None if args.compression == "none" else args.compression
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        compression_type=compression,
        request_timeout_ms=args.request_timeout_ms(),
        max_block_ms=_ms(args.remaining_s),
        **({"linger_ms": GOLDEN_LINGER_MS} if args.golden else {}),
    )
    try:
        futures = [
            producer.send(
                args.topic,
                value=value.encode(),
                key=f"k{i}".encode(),
                headers=args.record_headers(CLIENT, i),
                partition=args.partition_of(i),
                timestamp_ms=args.timestamp_ms(i),
            )
            for i, value in enumerate(args.values(CLIENT))
        ]
        metas = [f.get(timeout=args.remaining_s) for f in futures]
    finally:
        producer.close(timeout=1)
    emit(
        "produced",
        topic=args.topic,
        partition=sorted({m.partition for m in metas}),
        offsets=[m.offset for m in metas],
        records=[[m.partition, m.offset] for m in metas],
    )


def consume(args: Args) -> None:
    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        group_id=args.group_id(CLIENT),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        request_timeout_ms=_ms(args.remaining_s) + 6000,  # must exceed session_timeout_ms
    )
    got: list[list[Any]] = []
    try:
        while len(got) < args.count and time.monotonic() < args.deadline:
            batches = consumer.poll(timeout_ms=_ms(min(0.5, args.remaining_s)))
            for records in batches.values():
                got.extend(
                    [r.partition, r.offset, text(r.key), text(r.value), [[k, text(v)] for k, v in r.headers]]
                    for r in records
                )
    finally:
        consumer.close(autocommit=False)
    emit("consumed", topic=args.topic, values=[r[3] for r in got], records=got)


if __name__ == "__main__":
    run({"metadata": metadata, "create": create, "produce": produce, "consume": consume})
