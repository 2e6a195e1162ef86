"""The harness itself: every real client talks to the Tansu broker.

Each client creates a topic, produces three records and reads them back through a consumer group;
one more test crosses clients (kafkajs writes, kafka-python reads). A failure here means a peer or
the broker is broken or missing, not kafka_wire.
"""

from __future__ import annotations

import pytest

from tests.interop.harness import CLIENTS, Address, Client, Tansu, run_driver

CLIENT_VALUE_PREFIX = {
    "confluent": "confluent",
    "kafka_python": "kafka-python",
    "aiokafka": "aiokafka",
    "kafkajs": "kafkajs",
}


def test_tansu_starts_quickly(tansu_broker: Tansu) -> None:
    assert tansu_broker.process.poll() is None, tansu_broker.log()
    assert tansu_broker.startup_s < 5.0, tansu_broker.log()
    assert "listening on" in tansu_broker.log()


@pytest.mark.parametrize("client", CLIENTS)
def test_client_round_trip_through_tansu(tansu: Address, client: Client) -> None:
    topic = f"smoke-{client}"
    run = run_driver(client, tansu.bootstrap, "metadata,create,produce,consume", topic=topic, count=3).check()

    metadata = run.event("metadata")
    # One broker, advertised at the address we gave it (Tansu's node id is its own choice).
    assert [tuple(b[1:]) for b in metadata["brokers"]] == [tuple(tansu)], run.describe()
    assert run.event("created") == {"event": "created", "topic": topic}
    produced = run.event("produced")
    assert (produced["partition"], produced["offsets"]) == ([0], [0, 1, 2]), run.describe()
    prefix = CLIENT_VALUE_PREFIX[client]
    assert run.event("consumed")["values"] == [f"{prefix}-{i}" for i in range(3)], run.describe()


def test_records_cross_clients(tansu: Address) -> None:
    topic = "smoke-cross"
    written = run_driver("kafkajs", tansu.bootstrap, "create,produce", topic=topic, count=2).check()
    assert written.event("produced")["offsets"] == [0, 1], written.describe()
    read = run_driver("kafka_python", tansu.bootstrap, "consume", topic=topic, count=2).check()
    assert read.event("consumed")["values"] == ["kafkajs-0", "kafkajs-1"], read.describe()
