"""Real clients against kafka_wire's ``ServerConnection`` (through the tiny asyncio server in
``recording_server.py``).

Each client is asked to produce one record to topic ``t``. It must open with ApiVersions, fetch
Metadata, and, on our Metadata answer, go on to the next step of producing (InitProducerId for an
idempotent producer, then Produce): every one of those requests must decode cleanly into a typed
body, and the record it carries must read back with ``kafka_wire.records``. Then the ApiVersions
fallback: with the server accepting ApiVersions v0 only, a client that opens with a higher version
gets ``ServerConnection.reject``'s answer and retries lower.
"""

from __future__ import annotations

import pytest

from kafka_wire.messages import REQUESTS, ApiKey, ProduceRequest
from kafka_wire.records import read_records
from tests.interop.harness import Client, DriverRun, run_driver
from tests.interop.recording_server import RecordingServer, Seen, advertised_versions

#: The record each driver produces first (see clients/driver_common.py).
FIRST_VALUE = {
    "confluent": b"confluent-0",
    "kafka_python": b"kafka-python-0",
    "aiokafka": b"aiokafka-0",
    "kafkajs": b"kafkajs-0",
}
#: The ApiVersions version each pinned client opens with (they retry lower on UNSUPPORTED_VERSION).
FIRST_API_VERSIONS_VERSION = {"confluent": 3, "kafka_python": 4, "aiokafka": 0, "kafkajs": 2}


def describe(server: RecordingServer, run: DriverRun) -> str:
    requests = [
        f"conn {s.connection}: {ApiKey(s.api_key).name} v{s.api_version}{' (rejected)' if s.rejected else ''}"
        for s in server.seen
    ]
    return f"requests seen: {requests}\nserver errors: {server.errors}\n{run.describe()}"


def produce_through(server: RecordingServer, client: Client) -> DriverRun:
    run = run_driver(client, server.address.bootstrap, "produce", topic=server.topic, count=1)
    assert not server.errors, describe(server, run)
    return run


def check_proceeds_past_metadata(client: Client) -> None:
    with RecordingServer(advertised_versions()) as server:
        run = produce_through(server, client)
        seen = server.seen
        why = describe(server, run)

        # Every connection opens with ApiVersions, at the version this client starts with.
        firsts: dict[int, Seen] = {}
        for s in seen:
            firsts.setdefault(s.connection, s)
        assert firsts, why
        for first in firsts.values():
            assert (first.api_key, first.api_version) == (
                ApiKey.API_VERSIONS,
                FIRST_API_VERSIONS_VERSION[client],
            ), why
        # Nothing is refused when the server offers every version kafka_wire decodes.
        assert not [s for s in seen if s.rejected], why
        # Every request decoded into the typed body of its api key.
        for s in seen:
            assert type(s.body) is REQUESTS[s.api_key], why

        # Metadata, then (on our answer) the client goes on to something else.
        keys = [s.api_key for s in seen]
        assert ApiKey.METADATA in keys, why
        after = [
            k
            for k in keys[keys.index(ApiKey.METADATA) + 1 :]
            if k not in (ApiKey.API_VERSIONS, ApiKey.METADATA)
        ]
        assert after, why
        assert set(after) <= {ApiKey.INIT_PRODUCER_ID, ApiKey.PRODUCE}, why

        # The Produce request carries the record, readable by kafka_wire.records.
        produces = [s.body for s in seen if isinstance(s.body, ProduceRequest)]
        assert len(produces) == 1, why
        [topic] = produces[0].topic_data
        [partition] = topic.partition_data
        assert (topic.name, partition.index) == ("t", 0), why
        assert partition.records is not None, why
        records = list(read_records(partition.records))
        assert [(r.key, r.value) for r in records] == [(b"k0", FIRST_VALUE[client])], why

        # And the client took our Produce answer as a success.
        run.check()
        assert run.event("produced")["offsets"] == [0], why


def test_confluent_proceeds_past_metadata() -> None:
    check_proceeds_past_metadata("confluent")


def test_kafka_python_proceeds_past_metadata() -> None:
    check_proceeds_past_metadata("kafka_python")


def test_aiokafka_proceeds_past_metadata() -> None:
    check_proceeds_past_metadata("aiokafka")


def test_kafkajs_proceeds_past_metadata() -> None:
    check_proceeds_past_metadata("kafkajs")


# aiokafka opens with ApiVersions v0, which needs no fallback, so it is not in this list.
@pytest.mark.parametrize("client", ["confluent", "kafka_python", "kafkajs"])
def test_api_versions_too_high_is_rejected_then_retried(client: Client) -> None:
    with RecordingServer(advertised_versions({ApiKey.API_VERSIONS: (0, 0)})) as server:
        run = produce_through(server, client)
        why = describe(server, run)
        first_connection = [s for s in server.seen if s.connection == 0]
        api_versions = [s for s in first_connection if s.api_key == ApiKey.API_VERSIONS]
        # The first attempt is refused by reject() (ApiVersions v0, UNSUPPORTED_VERSION) ...
        assert api_versions and api_versions[0].rejected, why
        assert api_versions[0].api_version == FIRST_API_VERSIONS_VERSION[client], why
        # ... the client walks down (kafkajs one version at a time) until v0 is accepted ...
        assert all(s.rejected for s in api_versions[:-1]), why
        assert (api_versions[-1].api_version, api_versions[-1].rejected) == (0, False), why
        # ... and the connection carries on to Metadata.
        assert ApiKey.METADATA in [s.api_key for s in first_connection], why
        run.check()
