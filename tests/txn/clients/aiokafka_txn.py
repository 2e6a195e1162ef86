"""aiokafka in the transactions scenario of ``common.py``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # type: ignore[import-untyped]
from aiokafka.structs import OffsetAndMetadata  # type: ignore[import-untyped]

from tests.txn.clients.common import OFFSET_A, OFFSET_C, SETTLE_S, Args, emit, main

CLIENT = "aiokafka"


async def scenario(args: Args) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap, client_id=f"kw-txn-{CLIENT}", transactional_id=args.txn_id
    )
    await producer.start()
    committed: list[list[Any]] = []
    aborted: list[list[Any]] = []
    try:
        for phase, offset in (("A", OFFSET_A), ("B", None), ("C", OFFSET_C)):
            await producer.begin_transaction()
            records = args.records(CLIENT, phase)
            for partition, key, value in records:
                await producer.send_and_wait(
                    args.topic, value=value.encode(), key=key.encode(), partition=partition
                )
            if offset is not None:
                await producer.send_offsets_to_transaction(
                    {TopicPartition(args.source, 0): OffsetAndMetadata(offset, "")}, args.group
                )
                await producer.commit_transaction()
                committed += [[p, v] for p, _, v in records]
            else:
                await producer.abort_transaction()
                aborted += [[p, v] for p, _, v in records]
    finally:
        await producer.stop()
    emit("transacted", committed=committed, aborted=aborted)
    for isolation, expected in (("read_committed", len(committed)), ("read_uncommitted", 3 * args.count)):
        emit("consumed", isolation=isolation, records=await consume(args, isolation, expected))
    group = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group, enable_auto_commit=False)
    await group.start()
    try:
        offset = await group.committed(TopicPartition(args.source, 0))
    finally:
        await group.stop()
    emit("committed", offset=offset)


async def consume(args: Args, isolation: str, expected: int) -> list[list[Any]]:
    consumer = AIOKafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        client_id=f"kw-txn-{CLIENT}",
        group_id=f"{args.group}-{isolation}",
        isolation_level=isolation,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    records: list[list[Any]] = []
    settle_at: float | None = None
    try:
        while time.monotonic() < args.deadline and (settle_at is None or time.monotonic() < settle_at):
            batches = await consumer.getmany(timeout_ms=200)
            for got in batches.values():
                records += [[r.partition, r.offset, r.value.decode()] for r in got]
            if settle_at is None and len(records) >= expected:
                settle_at = time.monotonic() + SETTLE_S
    finally:
        await consumer.stop()
    return records


if __name__ == "__main__":
    main(lambda args: asyncio.run(scenario(args)))
