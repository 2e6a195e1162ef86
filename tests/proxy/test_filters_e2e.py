"""The built-in filters with real clients through ``kafka-wire proxy`` to ``kafka-wire serve`` and
to Apache Kafka 4.4: tenants that never see each other, record encryption (no plaintext in the
segment files, plaintext through the proxy, ciphertext without it) and a JSON-lines log that
decodes every frame.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.messages import ApiKey
from kafka_wire.proxy.builtin.encryption import HEADER
from kafka_wire.records import read_batches
from tests.interop.harness import DriverOptions, run_driver
from tests.proxy.conftest import SHARED, Upstream
from tests.proxy.harness import ProxyProcess, proxy


@pytest.fixture(scope="module", params=["kafka_wire", "apache_kafka"])
def filtered_upstream(request: pytest.FixtureRequest) -> Upstream:
    """``kafka-wire serve`` and Apache Kafka 4.4: the session's nodes (see ``conftest.py``)."""
    upstream: Upstream = request.getfixturevalue(SHARED[request.param])
    return upstream


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.txt"
    path.write_text("# test keys\nk2=" + "22" * 32 + "\nk1=" + "11" * 32 + "\n")
    return path


@pytest.fixture(scope="module")
def logged_encrypting_proxy(
    filtered_upstream: Upstream, key_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ProxyProcess, Path]]:
    workdir = tmp_path_factory.mktemp("proxy-encrypt")
    log = workdir / "frames.jsonl"
    process = proxy(workdir, filtered_upstream.bootstrap, [f"log:path={log}", f"encrypt:key-file={key_file}"])
    try:
        process.start()
        yield process, log
    finally:
        process.close()


@pytest.fixture(scope="module")
def tenant_proxy(
    filtered_upstream: Upstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyProcess]:
    process = proxy(
        tmp_path_factory.mktemp("proxy-tenant"), filtered_upstream.bootstrap, ["tenant:by=client-id"]
    )
    try:
        process.start()
        yield process
    finally:
        process.close()


def _consume(
    bootstrap: str, topic: str, count: int, *, group: str | None, client_id: str = "reader"
) -> list[Message]:
    """Up to ``count`` records of ``topic`` (every partition from the start; in ``group`` when
    given), within 30 s."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": group or "unused",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": group is not None,
        }
    )
    try:
        if group is None:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            consumer.assign([TopicPartition(topic, p, 0) for p in sorted(partitions)])
        else:
            consumer.subscribe([topic])
        records: list[Message] = []
        deadline = time.monotonic() + 30
        while len(records) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                records.append(message)
        return records
    finally:
        consumer.close()


def _admin(bootstrap: str, client_id: str = "admin") -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "client.id": client_id})


def test_tenants_with_the_same_topic_never_meet(
    tenant_proxy: ProxyProcess, filtered_upstream: Upstream
) -> None:
    values = {"acme": [b"a-%d" % i for i in range(4)], "globex": [b"g-%d" % i for i in range(4)]}
    for tenant, mine in values.items():
        admin = _admin(tenant_proxy.bootstrap, f"{tenant}.admin")
        for future in admin.create_topics([NewTopic("orders", 2, 1)]).values():
            future.result(15)
        producer = Producer(
            {
                "bootstrap.servers": tenant_proxy.bootstrap,
                "client.id": f"{tenant}.app",
                "compression.type": "lz4",
            }
        )
        for value in mine:
            producer.produce("orders", value)
        assert producer.flush(20) == 0
    for tenant, mine in values.items():
        got = _consume(
            tenant_proxy.bootstrap, "orders", len(mine), group="shared-name", client_id=f"{tenant}.reader"
        )
        assert sorted(r.value() or b"" for r in got) == sorted(mine)
        admin = _admin(tenant_proxy.bootstrap, f"{tenant}.admin")
        assert set(admin.list_topics(timeout=10).topics) == {"orders"}
        groups = admin.list_consumer_groups().result(10)
        assert {g.group_id for g in groups.valid} == {"shared-name"}
    # The broker holds one topic and one group per tenant.
    direct = _admin(filtered_upstream.bootstrap)
    assert {"acme.orders", "globex.orders"} <= set(direct.list_topics(timeout=10).topics)
    groups = direct.list_consumer_groups().result(10)
    assert {"acme.shared-name", "globex.shared-name"} <= {g.group_id for g in groups.valid}


def test_encrypted_values_never_reach_the_disk(
    logged_encrypting_proxy: tuple[ProxyProcess, Path], filtered_upstream: Upstream
) -> None:
    process, _ = logged_encrypting_proxy
    for codec in ("gzip", "zstd"):
        topic = f"secret-{codec}"
        run = run_driver(
            "confluent",
            process.bootstrap,
            "create,produce,consume",
            topic=topic,
            count=5,
            timeout_s=30,
            options=DriverOptions(compression=codec, value_size=64, headers=True),
        ).check()
        sent = [v for v in run.event("consumed")["values"]]
        assert len(sent) == 5 and all(v.startswith("confluent-") for v in sent)  # plaintext through the proxy
        # Without the key: ciphertext and the envelope header.
        direct = _consume(filtered_upstream.bootstrap, topic, 5, group=None)
        assert len(direct) == 5
        for record in direct:
            assert not (record.value() or b"").startswith(b"confluent-")
            assert HEADER in dict(record.headers() or [])
        # On disk: the batches keep their codec, and no value is there in the clear.
        segments = list(filtered_upstream.data_dirs[0].glob(f"{topic}-0/*.log"))
        data = b"".join(p.read_bytes() for p in segments)
        assert data and b"confluent-" not in data
        assert {b.compression for b in read_batches(data)} == {codec}


def test_the_frame_log_decodes_every_frame(logged_encrypting_proxy: tuple[ProxyProcess, Path]) -> None:
    process, log = logged_encrypting_proxy
    before = {json.loads(line)["connection"] for line in log.read_text().splitlines()}  # earlier tests'
    run_driver(
        "kafka_python",
        process.bootstrap,
        "metadata,create,produce,consume",
        topic="logged",
        count=3,
        timeout_s=30,
    ).check()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines = [e for e in lines if e["connection"] not in before]
    requests = {(e["connection"], e["correlation_id"]) for e in lines if e["direction"] == "request"}
    responses = {(e["connection"], e["correlation_id"]) for e in lines if e["direction"] == "response"}
    apis = {e["api"] for e in lines}
    assert {"API_VERSIONS", "METADATA", "CREATE_TOPICS", "PRODUCE", "FETCH", "JOIN_GROUP"} <= apis
    assert all(isinstance(e["body"], dict) for e in lines)
    # Every request has its response in the log (nothing here produces with acks=0), but the one
    # a connection had in flight when the client closed it (a fetch waiting for records).
    unanswered = sorted(requests - responses)
    assert responses <= requests
    assert len(unanswered) == len({connection for connection, _ in unanswered}), unanswered
    produced = [e for e in lines if e["api"] == ApiKey.PRODUCE.name and e["direction"] == "request"]
    assert produced and all(p["body"]["topic_data"] for p in produced)
    # The log sees answers as the client gets them: brokers and coordinators at the proxy's port.
    answers = [e for e in lines if e["direction"] == "response"]
    ports = {b["port"] for e in answers if e["api"] == ApiKey.METADATA.name for b in e["body"]["brokers"]}
    coordinators = [e["body"] for e in answers if e["api"] == ApiKey.FIND_COORDINATOR.name]
    ports |= {
        c["port"] for body in coordinators for c in body.get("coordinators") or [body] if not c["error_code"]
    }
    assert coordinators and ports == set(process.routes), (ports, process.routes)
