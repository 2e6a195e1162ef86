"""Group configs checked against the broker's bounds, on ``kafka-wire serve`` and on Apache Kafka
4.4, which must give the same answer to each: one IncrementalAlterConfigs (``validate_only``) of
many groups, each setting values inside, at and outside a bound of Kafka 4.4's
``GroupConfig.validate`` (both brokers run with their defaults but ``brokers.QUICK_GROUPS``:
``group.consumer.min.heartbeat.interval.ms=1000``)."""

from __future__ import annotations

import asyncio
import uuid

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.messages import (
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from tests.e2e.brokers import BrokerProcess

E = ErrorCode


def in_range(name: str, low: int, high: int) -> str:
    return f"{name} must be in the range {low} to {high} inclusive."


def bounded(name: str, low: int, high: int) -> list[tuple[dict[str, str], str | None]]:
    """One value below, at and above each end of ``low``-``high``."""
    message = in_range(name, low, high)
    return [
        ({name: str(low - 1)}, message),
        ({name: str(low)}, None),
        ({name: str(high)}, None),
        ({name: str(high + 1)}, message),
    ]


#: (a group's configs, the error message expected with INVALID_CONFIG, None for NONE).
CASES: list[tuple[dict[str, str], str | None]] = [
    *bounded("consumer.session.timeout.ms", 45_000, 60_000),
    *bounded("consumer.heartbeat.interval.ms", 1_000, 15_000),  # QUICK_GROUPS's minimum
    *bounded("share.session.timeout.ms", 45_000, 60_000),
    *bounded("share.heartbeat.interval.ms", 5_000, 15_000),
    *bounded("share.record.lock.duration.ms", 15_000, 60_000),
    *bounded("share.delivery.count.limit", 2, 10)[1:],  # 1 is below the type's own minimum
    *bounded("share.partition.max.record.locks", 100, 4_000)[1:],  # so is 99
    *bounded("streams.session.timeout.ms", 45_000, 60_000),
    *bounded("streams.heartbeat.interval.ms", 5_000, 15_000),
    *bounded("consumer.assignment.interval.ms", 0, 15_000)[1:],
    *bounded("share.assignment.interval.ms", 0, 15_000)[1:],
    *bounded("streams.assignment.interval.ms", 0, 15_000)[1:],
    ({"streams.num.standby.replicas": "2"}, None),
    ({"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to 2"),
    ({"streams.num.warmup.replicas": "21"}, "streams.num.warmup.replicas must be less than or equal to 20"),
    ({"streams.task.offset.interval.ms": "15000"}, None),
    (
        {"streams.task.offset.interval.ms": "14999"},
        "streams.task.offset.interval.ms must be greater than or equal to 15000",
    ),
    ({"streams.assignor.name": "sticky"}, None),
    (
        {"streams.assignor.name": "range"},
        "streams.assignor.name 'range' is not a registered task assignor. Registered assignors are: [sticky].",
    ),
    (
        {"streams.rack.aware.assignment.tags": "zone,rack,zone"},
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
    ),
    (
        {"errors.deadletterqueue.topic.name": "__dlq"},
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
    ),
    # The consumer heartbeat interval may reach 15 s, under the 45 s session timeout.
    ({"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "15000"}, None),
    # The type check comes first (Kafka's message carries the range too: compared by code).
    ({"share.delivery.count.limit": "1"}, ""),
    ({"share.record.lock.duration.ms": "999"}, ""),
]


async def answers(target: BrokerProcess) -> list[tuple[int, str | None]]:
    host, port = target.bootstrap.rsplit(":", 1)
    prefix = f"bounds-{uuid.uuid4().hex[:8]}"
    client = await KafkaClient.connect(host, int(port))
    try:
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=32,  # GROUP
                    resource_name=f"{prefix}-{i}",
                    configs=[
                        IncrementalAlterConfigsRequestAlterableConfig(
                            name=name, config_operation=0, value=value
                        )
                        for name, value in configs.items()
                    ],
                )
                for i, (configs, _) in enumerate(CASES)
            ],
            validate_only=True,
        )
        reply = await client.request(request, 1)
        by_name = {r.resource_name: (r.error_code, r.error_message) for r in reply.responses}
        return [by_name[f"{prefix}-{i}"] for i in range(len(CASES))]
    finally:
        await client.close()


def test_group_configs_are_checked_against_the_brokers_bounds(disk_target: BrokerProcess) -> None:
    got = asyncio.run(answers(disk_target))
    for (configs, message), (code, text) in zip(CASES, got, strict=True):
        if message is None:
            assert (code, text) == (E.NONE, None), configs
        elif message == "":
            assert code == E.INVALID_CONFIG, configs
        else:
            assert (code, text) == (E.INVALID_CONFIG, message), configs
