"""A data directory of the previous release (a single node with ``kafka-wire-metadata.json``, no
metadata log) is imported once by ``kafka-wire serve`` and served unchanged, checked with
librdkafka (confluent-kafka) and raw requests.

The directory is ``tests/data/legacy-single-node`` (its ``.toml`` says how that release made it:
``orders`` with 3 partitions and two config overrides, ``events`` compacted, 20 and 5 records
from two idempotent producers, group ``readers`` committed at 11, 2 and 7). A copy is served:
the topics keep their ids, partition counts and configs, every record and committed offset is
there, the next producer id comes after the ones the old node handed out; the directory now has
``__cluster_metadata-0`` and ``kafka-wire-metadata.json.imported``, and a restart serves the same
from the metadata log alone. The clients run in a child process (as in ``test_sasl.py``).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from kafka_wire.messages import InitProducerIdRequest, InitProducerIdResponse, RequestHeader
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.broker.engine import LEGACY_DATA_DIR
from tests.e2e.brokers import KafkaWireBroker, kafka_wire
from tests.e2e.raw import exchange

TIMEOUT_S = 60

CLIENT = r"""
import json, sys, time
import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, ConfigResource
bootstrap = sys.argv[1]
admin = AdminClient({"bootstrap.servers": bootstrap})
out = {"topics": {}}
for name, description in admin.describe_topics(
    ck.TopicCollection(["orders", "events", "__consumer_offsets"])
).items():
    d = description.result(30)
    out["topics"][name] = {"id": str(d.topic_id), "partitions": len(d.partitions)}
configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "orders")])
entries = list(configs.values())[0].result(30)
out["configs"] = {k: e.value for k, e in entries.items() if k in ("retention.ms", "max.message.bytes")}
consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "readers"})
found = consumer.committed([ck.TopicPartition("orders", p) for p in range(3)], timeout=30)
out["committed"] = {tp.partition: tp.offset for tp in found}
consumer.close()
reader = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
reader.assign([ck.TopicPartition("orders", p, ck.OFFSET_BEGINNING) for p in range(3)]
              + [ck.TopicPartition("events", 0, ck.OFFSET_BEGINNING)])
values, deadline = [], time.monotonic() + 40
while len(values) < 25 and time.monotonic() < deadline:
    message = reader.poll(0.5)
    if message is not None and message.error() is None:
        values.append(message.value().decode())
reader.close()
out["values"] = sorted(values)
print(json.dumps(out))
"""


def served(broker: KafkaWireBroker) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 2,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def next_producer_id(broker: KafkaWireBroker) -> int:
    header = RequestHeader(request_api_key=22, request_api_version=4, correlation_id=7, client_id="legacy")
    request = encode_request(
        header, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1), 4
    )
    outcome = exchange(broker.address, request, probe="InitProducerId")
    _, body = decode_response(outcome.reply, 22, 4)
    assert isinstance(body, InitProducerIdResponse) and body.error_code == 0, body
    return body.producer_id


def test_a_previous_releases_data_directory_is_imported_and_served(tmp_path: Path) -> None:
    old = json.loads((LEGACY_DATA_DIR / "kafka-wire-metadata.json").read_text())
    ids = {t["name"]: t["topic_id"] for t in old["topics"]}
    broker = kafka_wire(tmp_path)
    shutil.copytree(LEGACY_DATA_DIR, broker.data_dir)
    broker.start()
    try:
        found = served(broker)
        assert found["topics"] == {
            "orders": {"id": _kafka_id(ids["orders"]), "partitions": 3},
            "events": {"id": _kafka_id(ids["events"]), "partitions": 1},
            "__consumer_offsets": {"id": _kafka_id(ids["__consumer_offsets"]), "partitions": 5},
        }
        assert found["configs"] == {"retention.ms": "3153600000000", "max.message.bytes": "500000"}
        assert found["committed"] == {"0": 11, "1": 2, "2": 7}
        assert found["values"] == sorted(
            [f"orders-{i}" for i in range(20)] + [f"events-{i}" for i in range(5)]
        )
        assert next_producer_id(broker) >= old["next_producer_id"]  # never one the old node handed out
    finally:
        assert broker.stop() == 0
    names = {p.name for p in broker.data_dir.iterdir()}
    assert {"__cluster_metadata-0", "kafka-wire-metadata.json.imported", "meta.properties"} <= names
    assert "kafka-wire-metadata.json" not in names
    assert (broker.data_dir / "meta.properties").read_text() == (
        LEGACY_DATA_DIR / "meta.properties"
    ).read_text()
    broker.start()  # from the metadata log alone
    try:
        again = served(broker)
        assert again["topics"] == found["topics"] and again["committed"] == found["committed"]
    finally:
        assert broker.stop() == 0


def _kafka_id(text: str) -> str:
    """A UUID as confluent-kafka prints a topic id (base64 of its 16 bytes, unpadded)."""
    return base64.b64encode(uuid.UUID(text).bytes).decode().rstrip("=")
