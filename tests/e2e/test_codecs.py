"""Every client with every compression codec, against the target broker.

Each client creates a one-partition topic, produces N records (keys ``k<i>``, 100-byte compressible
values, headers ``i`` and ``client``) compressed with the codec, and reads them back through a
consumer group: offsets, order, keys, values and headers must all come back as sent. Then, per
codec, one client reads what another wrote (a ring over the clients, so each codec crosses a
different pair of implementations).

Codec support (all five with every client): confluent-kafka, kafka-python (python-snappy, lz4,
zstandard from the project's dependencies), aiokafka (cramjam), the Java client in both its
releases (3.9.1 and 4.4.0; snappy-java, lz4-java, zstd-jni) natively; kafkajs does gzip itself and
snappy, lz4 and zstd through the codec plugins in package.json (see clients/kafkajs_driver.js).
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from tests.e2e.brokers import BrokerProcess
from tests.interop.clients.driver_common import pad
from tests.interop.harness import (
    ALL_CLIENTS,
    COMPRESSIONS,
    Client,
    DriverOptions,
    DriverRun,
    run_driver,
)

COUNT = 40
VALUE_SIZE = 100
TIMEOUT_S = 60.0
#: The name each driver gives itself in values and the ``client`` header.
CLIENT_NAME: dict[Client, str] = {
    "confluent": "confluent",
    "kafka_python": "kafka-python",
    "aiokafka": "aiokafka",
    "kafkajs": "kafkajs",
    "java": "java",
    "java4": "java4",
}
#: Per codec: who writes, who reads.
CROSS: dict[str, tuple[Client, Client]] = {
    "none": ("kafkajs", "java"),
    "gzip": ("java", "kafka_python"),
    "snappy": ("kafka_python", "confluent"),
    "lz4": ("confluent", "aiokafka"),
    "zstd": ("aiokafka", "kafkajs"),
}


def expected_records(writer: Client, count: int = COUNT) -> list[list[Any]]:
    name = CLIENT_NAME[writer]
    return [
        [0, i, f"k{i}", pad(f"{name}-{i}", VALUE_SIZE), [["i", str(i)], ["client", name]]]
        for i in range(count)
    ]


def check_produced(run: DriverRun, count: int = COUNT) -> None:
    produced = run.event("produced")
    assert produced["records"] == [[0, i] for i in range(count)], run.describe()


def check_consumed(run: DriverRun, writer: Client) -> None:
    consumed = run.event("consumed")["records"]
    expected = expected_records(writer)
    assert len(consumed) == len(expected), run.describe()
    for got, want in zip(consumed, expected, strict=True):
        assert got == want, f"record {want[1]}: got {got}, want {want}. {run.describe()}"


#: On kafka-wire: every client with every codec, but the 3.9.1 Java client with one: its codecs are
#: the 4.4 client's (the same snappy-java, lz4-java and zstd-jni, the same batch builder); what it
#: adds is its older requests (up to Produce v11, Fetch v17 and Metadata v12, where 4.4 goes to v13,
#: v18 and v13), which one codec covers.
ROUND_TRIPS: Final = [
    (client, codec) for client in ALL_CLIENTS for codec in COMPRESSIONS if client != "java" or codec == "none"
]
#: On Apache Kafka 4.4 and Tansu, which these tests hold to the same assertions (the reference, and
#: the other implementation): each client once, the five codecs spread over them; with
#: :func:`test_cross_client` every codec is written by one client and read by another there too.
REFERENCE_ROUND_TRIPS: Final = [
    ("confluent", "zstd"),
    ("kafka_python", "gzip"),
    ("aiokafka", "snappy"),
    ("kafkajs", "lz4"),
    ("java", "none"),
    ("java4", "zstd"),
]
CASES: Final = [
    pytest.param(target, client, codec, id=f"{target}-{client}-{codec}")
    for target in ("apache_kafka", "tansu", "kafka_wire")
    for client, codec in (ROUND_TRIPS if target == "kafka_wire" else REFERENCE_ROUND_TRIPS)
]


@pytest.mark.parametrize(("target", "client", "codec"), CASES, indirect=["target"])
def test_round_trip(target: BrokerProcess, client: Client, codec: str) -> None:
    topic = f"codec-{client}-{codec}"
    options = DriverOptions(compression=codec, headers=True, value_size=VALUE_SIZE)
    run = run_driver(
        client,
        target.bootstrap,
        "create,produce,consume",
        topic=topic,
        count=COUNT,
        timeout_s=TIMEOUT_S,
        options=options,
    ).check()
    assert run.event("created") == {"event": "created", "topic": topic}, run.describe()
    check_produced(run)
    check_consumed(run, client)


@pytest.mark.parametrize("codec", COMPRESSIONS)
def test_cross_client(target: BrokerProcess, codec: str) -> None:
    writer, reader = CROSS[codec]
    topic = f"codec-cross-{codec}"
    options = DriverOptions(compression=codec, headers=True, value_size=VALUE_SIZE)
    written = run_driver(
        writer,
        target.bootstrap,
        "create,produce",
        topic=topic,
        count=COUNT,
        timeout_s=TIMEOUT_S,
        options=options,
    ).check()
    check_produced(written)
    read = run_driver(
        reader, target.bootstrap, "consume", topic=topic, count=COUNT, timeout_s=TIMEOUT_S
    ).check()
    check_consumed(read, writer)
