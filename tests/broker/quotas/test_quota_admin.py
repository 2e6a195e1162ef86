"""AlterClientQuotas (forwarded to the controller's quota part, written as ClientQuotaRecords)
and DescribeClientQuotas (answered from the broker's image), through the engine."""

from __future__ import annotations

from kafka_wire.broker.controller.image import MetadataImage
from kafka_wire.broker.controller.records import decode_record, encode_record
from kafka_wire.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntityData,
    AlterClientQuotasRequestEntryData,
    AlterClientQuotasRequestOpData,
    AlterClientQuotasResponse,
    ClientQuotaRecord,
    ClientQuotaRecordEntityData,
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponentData,
    DescribeClientQuotasResponse,
    ErrorCode,
)
from tests.broker.engine import Client, Engine


def entry(entity: dict[str, str | None], ops: dict[str, float | None]) -> AlterClientQuotasRequestEntryData:
    return AlterClientQuotasRequestEntryData(
        entity=[AlterClientQuotasRequestEntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[
            AlterClientQuotasRequestOpData(key=k, value=0.0 if v is None else v, remove=v is None)
            for k, v in ops.items()
        ],
    )


def alter(
    client: Client, *entries: AlterClientQuotasRequestEntryData, validate_only: bool = False
) -> list[tuple[int, str | None]]:
    response = client.request(AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only))
    body = response.body
    assert isinstance(body, AlterClientQuotasResponse)
    return [(e.error_code, e.error_message) for e in body.entries]


def describe(
    client: Client, *components: tuple[str, int, str | None], strict: bool = False
) -> DescribeClientQuotasResponse:
    response = client.request(
        DescribeClientQuotasRequest(
            components=[
                DescribeClientQuotasRequestComponentData(entity_type=t, match_type=m, match=n)
                for t, m, n in components
            ],
            strict=strict,
        )
    )
    assert isinstance(response.body, DescribeClientQuotasResponse)
    return response.body


def described(
    body: DescribeClientQuotasResponse,
) -> list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]]:
    assert body.error_code == ErrorCode.NONE and body.entries is not None
    return [
        (tuple((e.entity_type, e.entity_name) for e in x.entity), {v.key: v.value for v in x.values})
        for x in body.entries
    ]


def test_the_record_round_trips() -> None:
    record = ClientQuotaRecord(
        entity=[ClientQuotaRecordEntityData(entity_type="user", entity_name=None)],
        key="producer_byte_rate",
        value=1024.0,
        remove=False,
    )
    assert decode_record(encode_record(record)) == record
    assert encode_record(record)[:3] == b"\x01\x0e\x00"  # frame version 1, record type 14, version 0


def test_set_describe_remove() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert (
        alter(
            client,
            entry({"client-id": "c1"}, {"producer_byte_rate": 1_000_000.0}),
            entry(
                {"user": "alice", "client-id": None},
                {"consumer_byte_rate": 2048.0, "request_percentage": 12.5},
            ),
            entry({"user": None}, {"producer_byte_rate": 10.0}),
        )
        == [(0, None)] * 3
    )
    everything = described(describe(client))
    assert everything == [
        (
            (("client-id", None), ("user", "alice")),
            {"consumer_byte_rate": 2048.0, "request_percentage": 12.5},
        ),
        ((("client-id", "c1"),), {"producer_byte_rate": 1_000_000.0}),
        ((("user", None),), {"producer_byte_rate": 10.0}),
    ]
    assert described(describe(client, ("user", 0, "alice"))) == everything[:1]
    assert described(describe(client, ("user", 1, None))) == everything[2:]
    assert described(describe(client, ("user", 2, None))) == [everything[0], everything[2]]
    assert described(describe(client, ("user", 2, None), strict=True)) == everything[2:]
    assert (
        described(describe(client, ("client-id", 1, None), ("user", 2, None), strict=True)) == everything[:1]
    )
    # The values live in the metadata image, so the broker enforces them.
    assert engine.broker.state.quotas.quota("producer_byte_rate", "bob", "c1") is not None
    assert alter(client, entry({"client-id": "c1"}, {"producer_byte_rate": None})) == [(0, None)]
    assert alter(client, entry({"client-id": "c1"}, {"producer_byte_rate": None})) == [
        (0, None)
    ]  # absent: no-op
    assert described(describe(client, ("client-id", 0, "c1"))) == []


def test_validate_only_changes_nothing() -> None:
    client = Client(Engine(), 1)
    assert alter(
        client, entry({"ip": "10.0.0.1"}, {"connection_creation_rate": 5.0}), validate_only=True
    ) == [(0, None)]
    assert described(describe(client)) == []


def test_bad_entries_fail_alone_with_invalid_request() -> None:
    client = Client(Engine(), 1)
    results = alter(
        client,
        entry({"group": "g"}, {"producer_byte_rate": 1.0}),
        entry({}, {"producer_byte_rate": 1.0}),
        entry({"user": ""}, {"producer_byte_rate": 1.0}),
        entry({"user": "a", "ip": "1.2.3.4"}, {"producer_byte_rate": 1.0}),
        entry({"ip": "not an address"}, {"connection_creation_rate": 1.0}),
        entry({"user": "a"}, {"connection_creation_rate": 1.0}),
        entry({"user": "b"}, {"producer_byte_rate": 0.0}),
        entry({"user": "c"}, {"producer_byte_rate": 1.5}),
        entry({"ip": "1.2.3.4"}, {"connection_creation_rate": 3e9}),
        entry({"user": "d"}, {"request_percentage": 0.5}),
        entry({"client-id": "x", "user": None}, {"request_percentage": 1.0}),
        entry({"user": None, "client-id": "x"}, {"request_percentage": 2.0}),
    )
    assert [code for code, _ in results] == [ErrorCode.INVALID_REQUEST] * 9 + [ErrorCode.NONE] + [
        ErrorCode.INVALID_REQUEST
    ]
    # An entity named twice: one answer for both entries, naming it as Kafka prints its map.
    assert results[10][1] == "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=x, user=null})"
    assert results[0][1] == "Unhandled client quota entity type: group"
    assert results[6][1] == "Quota producer_byte_rate must be greater than 0"
    assert results[7][1] == "producer_byte_rate cannot be a fractional value."


def test_bad_filters() -> None:
    client = Client(Engine(), 1)
    cases: list[tuple[list[tuple[str, int, str | None]], ErrorCode]] = [
        ([("", 2, None)], ErrorCode.INVALID_REQUEST),
        ([("user", 2, None), ("user", 1, None)], ErrorCode.INVALID_REQUEST),
        ([("group", 2, None)], ErrorCode.UNSUPPORTED_VERSION),
        ([("user", 0, None)], ErrorCode.INVALID_REQUEST),
        ([("user", 1, "x")], ErrorCode.INVALID_REQUEST),
        ([("user", 2, "x")], ErrorCode.INVALID_REQUEST),
        ([("user", 7, None)], ErrorCode.INVALID_REQUEST),
        ([("ip", 2, None), ("user", 2, None)], ErrorCode.INVALID_REQUEST),
    ]
    for components, code in cases:
        body = describe(client, *components)
        assert (body.error_code, body.entries is None) == (code, True), components


def test_quotas_survive_a_restart_and_a_snapshot() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert alter(client, entry({"user": "alice", "client-id": None}, {"producer_byte_rate": 4096.0})) == [
        (0, None)
    ]
    engine.drain()
    engine._apply(engine.broker.shutdown(engine.now_ms))
    engine.drain()
    restarted = Engine(storage=engine.storage)  # the metadata log is replayed
    expected = [((("client-id", None), ("user", "alice")), {"producer_byte_rate": 4096.0})]
    assert described(describe(Client(restarted, 1))) == expected
    image = MetadataImage()
    image.load_snapshot(0, [r for r in restarted.broker.state.quotas.values.snapshot_records()])
    assert image.client_quotas.quotas == restarted.broker.state.quotas.values.quotas
