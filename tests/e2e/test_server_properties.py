"""``kafka-wire serve --config`` with Apache Kafka 4's example KRaft ``server.properties``.

The file (``tests/data/kafka-4.0-server.properties``: the example's key=value lines) starts the
broker as it is, with only the port and the data directory given on the command line: its
listener binds 127.0.0.1 (an empty host), clients are told ``localhost`` (its
``advertised.listeners``) with the port of the command line, and its other settings are accepted.
A real client (confluent-kafka) then creates a topic, produces 10 records and reads them back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.brokers import KafkaWireBroker, kafka_wire, kafka_wire_cli
from tests.interop.harness import DriverOptions, run_driver

STOCK = Path(__file__).parent.parent / "data" / "kafka-4.0-server.properties"
COUNT = 10
TIMEOUT_S = 60.0


class StockPropertiesBroker(KafkaWireBroker):
    """``kafka-wire serve --config <Kafka's example> --port P --data-dir D``: no ``--host``."""

    def command(self) -> list[str]:
        return [
            str(kafka_wire_cli()),
            "serve",
            "--config",
            str(STOCK),
            "--port",
            str(self.address.port),
            "--data-dir",
            str(self.data_dir),
            "--log-level",
            "INFO",
        ]


@pytest.fixture
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StockPropertiesBroker]:
    plain = kafka_wire(tmp_path_factory.mktemp("stock"))
    server = StockPropertiesBroker(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    server.start()
    yield server
    server.close()


def test_kafka_4_example_server_properties_serve_a_real_client(broker: StockPropertiesBroker) -> None:
    produced = run_driver(
        "confluent",
        broker.bootstrap,
        "metadata,create,produce",
        topic="stock",
        count=COUNT,
        timeout_s=TIMEOUT_S,
    ).check()
    assert produced.event("metadata")["brokers"] == [
        [1, "localhost", broker.address.port]
    ]  # node.id, advertised
    assert len(produced.event("produced")["records"]) == COUNT
    consumed = run_driver(
        "confluent",
        broker.bootstrap,
        "consume",
        topic="stock",
        count=COUNT,
        timeout_s=TIMEOUT_S,
        options=DriverOptions(group="stock-readers"),
    ).check()
    assert consumed.event("consumed")["values"] == [f"confluent-{i}" for i in range(COUNT)]
    log = broker.log()
    assert (
        "is not opened: without controller.quorum.voters the node is its own one-voter quorum" in log
    )  # INFO
    assert "unknown broker property" not in log and "removed in Kafka" not in log  # no WARNING line
    assert broker.stop() == 0
