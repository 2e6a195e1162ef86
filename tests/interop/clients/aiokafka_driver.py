"""aiokafka peer driver; see driver_common for the command line and output."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # type: ignore[import-untyped]
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]

from tests.interop.clients.driver_common import GOLDEN_LINGER_MS, Args, emit, run, text

CLIENT = "aiokafka"
CLIENT_ID = f"kw-interop-{CLIENT}"


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _security(args: Args) -> dict[str, Any]:
    security = args.security
    if security is None:
        return {}
    settings: dict[str, Any] = {
        "security_protocol": security.protocol,
        "sasl_mechanism": security.mechanism,
        "sasl_plain_username": security.username,
        "sasl_plain_password": security.password,
    }
    if security.tls:
        context = ssl.create_default_context(cafile=security.ca)
        if security.cert is not None:
            context.load_cert_chain(security.cert, security.key)
        settings["ssl_context"] = context
    return {key: value for key, value in settings.items() if value is not None}


def _sync(step: Callable[[Args], Awaitable[None]]) -> Callable[[Args], None]:
    def runner(args: Args) -> None:
        asyncio.run(asyncio.wait_for(step(args), args.remaining_s))

    return runner


async def metadata(args: Args) -> None:
    admin = AIOKafkaAdminClient(
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        request_timeout_ms=_ms(args.remaining_s),
    )
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
        topics = await admin.list_topics()
    finally:
        await admin.close()
    brokers = [[b["node_id"], b["host"], b["port"]] for b in cluster["brokers"]]
    emit("metadata", brokers=sorted(brokers), topics=sorted(topics))


async def create(args: Args) -> None:
    admin = AIOKafkaAdminClient(
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        request_timeout_ms=_ms(args.remaining_s),
    )
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(args.topic, num_partitions=args.partitions, replication_factor=1)]
        )
    finally:
        await admin.close()
    emit("created", topic=args.topic)


async def produce(args: Args) -> None:
    compression = None if args.compression == "none" else args.compression
    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        compression_type=compression,
        request_timeout_ms=args.request_timeout_ms(),
        **({"linger_ms": GOLDEN_LINGER_MS} if args.golden else {}),
    )
    await producer.start()
    try:
        # send() queues into per-partition batches (so compression sees many records a batch);
        # awaiting each returned future afterwards gives the offsets in send order.
        futures = [
            await producer.send(
                args.topic,
                value=value.encode(),
                key=f"k{i}".encode(),
                headers=args.record_headers(CLIENT, i),
                partition=args.partition_of(i),
                timestamp_ms=args.timestamp_ms(i),
            )
            for i, value in enumerate(args.values(CLIENT))
        ]
        metas = [await f for f in futures]
    finally:
        await producer.stop()
    emit(
        "produced",
        topic=args.topic,
        partition=sorted({m.partition for m in metas}),
        offsets=[m.offset for m in metas],
        records=[[m.partition, m.offset] for m in metas],
    )


async def consume(args: Args) -> None:
    consumer = AIOKafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        client_id=CLIENT_ID,
        **_security(args),
        group_id=args.group_id(CLIENT),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        request_timeout_ms=_ms(args.remaining_s),
    )
    await consumer.start()
    got: list[list[Any]] = []
    try:
        while len(got) < args.count and time.monotonic() < args.deadline:
            batches = await consumer.getmany(timeout_ms=_ms(min(0.5, args.remaining_s)))
            for records in batches.values():
                got.extend(
                    [r.partition, r.offset, text(r.key), text(r.value), [[k, text(v)] for k, v in r.headers]]
                    for r in records
                )
    finally:
        await consumer.stop()
    emit("consumed", topic=args.topic, values=[r[3] for r in got], records=got)


if __name__ == "__main__":
    run(
        {
            "metadata": _sync(metadata),
            "create": _sync(create),
            "produce": _sync(produce),
            "consume": _sync(consume),
        }
    )
