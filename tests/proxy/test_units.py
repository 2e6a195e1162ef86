"""The proxy's parts without sockets: address paths read from the schemas, the address book, and
the built-in filters on real message classes and record batches of every codec."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import pytest

from kafka_wire.messages import (
    RESPONSES,
    ApiKey,
    ErrorCode,
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseTopic,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    RequestHeader,
)
from kafka_wire.proxy import FORWARD, AddressBook, Answer, Call, ConnectionInfo, Delay, address_paths
from kafka_wire.proxy.builtin import make_filter
from kafka_wire.proxy.builtin.encryption import HEADER, KeyFile, RecordEncryption
from kafka_wire.proxy.builtin.faults import FaultFilter
from kafka_wire.proxy.builtin.policy import ProducePolicy, rules
from kafka_wire.proxy.builtin.tenants import TenantFilter
from kafka_wire.records import build_batch, read_batches
from tests.interop.harness import COMPRESSIONS

INFO = ConnectionInfo(1, "c", 9192, "b:9092")


def _call(body: object, key: int, version: int, client_id: str = "acme.app") -> Call:
    header = RequestHeader(
        request_api_key=key, request_api_version=version, correlation_id=1, client_id=client_id
    )
    return Call(INFO, header, body)  # type: ignore[arg-type]


def test_address_paths_come_from_the_schemas() -> None:
    latest = {key: max(cls.VERSIONS) for key, cls in RESPONSES.items()}
    carrying = {key for key, version in latest.items() if address_paths(key, version)}
    expected = {
        ApiKey.METADATA,
        ApiKey.FIND_COORDINATOR,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
    }
    assert expected <= carrying
    assert address_paths(ApiKey.FIND_COORDINATOR, 3) == ((),)  # the response itself
    assert address_paths(ApiKey.FIND_COORDINATOR, 4) == (("coordinators",),)
    assert address_paths(ApiKey.PRODUCE, 9) == () and address_paths(ApiKey.PRODUCE, 10) == (
        ("node_endpoints",),
    )
    assert address_paths(ApiKey.FETCH, 15) == () and address_paths(ApiKey.FETCH, 16) == (("node_endpoints",),)


def test_the_address_book_keeps_one_port_per_upstream() -> None:
    ports = iter([9300, 9301, 9302])
    book = AddressBook("proxy.example", lambda: next(ports))
    first = book.add("b1", 9092, 9300)  # the bootstrap asked for 9300: the allocator's 9300 is skipped
    assert book.add("b1", 9092) is first
    assert book.add("b2", 9092).port == 9301
    response = MetadataResponse()
    assert not book.rewrite(response, ApiKey.METADATA, 12)


# -- encryption ---------------------------------------------------------------------------------


def _encryption(key_id: str = "k1") -> RecordEncryption:
    keys = KeyFile({key_id: b"\x01" * 32}, os.urandom)
    return RecordEncryption(keys, os.urandom)


@pytest.mark.parametrize("codec", COMPRESSIONS)
def test_encryption_round_trips_and_keeps_the_batch(codec: str) -> None:
    records = [(b"k%d" % i, b"value-%d" % i * 10, [("h", b"x")], 1700000000000 + i) for i in range(5)]
    records.append((b"tombstone", None, [], 1700000000005))  # type: ignore[arg-type]
    batch = build_batch(
        records, compression=codec, producer_id=7, producer_epoch=1, base_sequence=10, base_offset=0
    )
    filt = _encryption()
    encrypted = filt.encrypt(batch)
    assert b"value-" not in bytes(encrypted) and encrypted != batch
    (sealed,) = read_batches(encrypted)
    assert sealed.compression == codec
    assert (sealed.producer_id, sealed.producer_epoch, sealed.base_sequence) == (7, 1, 10)
    values = [r.value for r in sealed]
    assert values[-1] is None  # a tombstone stays one
    assert all(HEADER in dict(r.headers) for r in list(sealed)[:-1])
    opened = filt.decrypt(encrypted)
    (plain,) = read_batches(opened)
    assert [(r.key, r.value, list(r.headers)) for r in plain] == [(k, v, list(h)) for k, v, h, _ in records]
    assert plain.compression == codec


def test_values_whose_key_is_unknown_stay_encrypted() -> None:
    encrypted = _encryption("k1").encrypt(build_batch([(None, b"secret", [], 1)]))
    other = _encryption("k2")
    assert other.decrypt(encrypted) == encrypted


def test_encryption_filter_on_produce_and_fetch() -> None:
    filt = _encryption()
    produce = ProduceRequest(
        acks=-1,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequestPartitionProduceData(
                        index=0, records=build_batch([(None, b"plain", [], 1)])
                    )
                ],
            )
        ],
    )
    call = _call(produce, ApiKey.PRODUCE, 9)
    assert filt.on_request(call) is FORWARD
    stored = produce.topic_data[0].partition_data[0].records
    assert stored is not None and b"plain" not in bytes(stored)
    fetched = FetchResponse(
        responses=[
            FetchResponseFetchableTopicResponse(
                topic_id=uuid.uuid4(), partitions=[FetchResponsePartitionData(records=stored)]
            )
        ]
    )
    call.response = fetched
    assert filt.on_response(call) is FORWARD
    (batch,) = read_batches(fetched.responses[0].partitions[0].records or b"")
    assert [r.value for r in batch] == [b"plain"]


# -- tenants ------------------------------------------------------------------------------------


def test_tenant_names_are_prefixed_and_others_dropped() -> None:
    filt = TenantFilter.from_options({"by": "client-id"})
    request = MetadataRequest(topics=[MetadataRequestTopic(name="orders")])
    call = _call(request, ApiKey.METADATA, 12)
    assert filt.on_request(call) is FORWARD
    assert [t.name for t in request.topics or []] == ["acme.orders"]
    call.response = MetadataResponse(
        topics=[
            MetadataResponseTopic(name="acme.orders"),
            MetadataResponseTopic(name="globex.orders"),
            MetadataResponseTopic(name="__consumer_offsets"),
        ]
    )
    filt.on_response(call)
    assert [t.name for t in call.response.topics] == ["orders"]
    groups = _call(object(), ApiKey.LIST_GROUPS, 4)
    groups.response = ListGroupsResponse(
        groups=[
            ListGroupsResponseListedGroup(group_id="acme.g"),
            ListGroupsResponseListedGroup(group_id="b.g"),
        ]
    )
    filt.on_response(groups)
    assert [g.group_id for g in groups.response.groups] == ["g"]


def test_a_client_id_without_a_tenant_is_refused() -> None:
    filt = TenantFilter.from_options({"by": "client-id"})
    outcome = filt.on_request(_call(MetadataRequest(topics=None), ApiKey.METADATA, 12, client_id="anonymous"))
    assert not isinstance(outcome, Answer) and outcome is not FORWARD


# -- policy and faults --------------------------------------------------------------------------


def test_policy_refuses_one_partition_and_merges_its_answer() -> None:
    filt = ProducePolicy(rules(max_value_bytes=10))
    good = build_batch([(None, b"ok", [], 1)])
    bad = build_batch([(None, b"ok", [], 1), (None, b"x" * 11, [], 2)])
    produce = ProduceRequest(
        acks=-1,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequestPartitionProduceData(index=0, records=good),
                    ProduceRequestPartitionProduceData(index=1, records=bad),
                ],
            )
        ],
    )
    call = _call(produce, ApiKey.PRODUCE, 9)
    assert filt.on_request(call) is FORWARD
    assert [p.index for p in produce.topic_data[0].partition_data] == [0]
    call.response = ProduceResponse()
    filt.on_response(call)
    (partition,) = call.response.responses[0].partition_responses
    assert (partition.index, partition.error_code) == (1, ErrorCode.INVALID_RECORD)
    assert partition.record_errors[0].batch_index == 1 and "over 10" in (partition.error_message or "")


def test_faults_answer_in_the_request_shape_then_delay() -> None:
    filt = make_filter(
        "faults",
        {"errors": "METADATA:NOT_CONTROLLER", "latency-ms": "30", "latency-api": "metadata"},
        _no_sink,
        os.urandom,
    )
    assert isinstance(filt, FaultFilter)
    call = _call(MetadataRequest(topics=None), ApiKey.METADATA, 12)
    answer = filt.on_request(call)
    assert isinstance(answer, Answer) and answer.body.error_code == ErrorCode.NOT_CONTROLLER  # type: ignore[attr-defined]
    assert filt.on_request(call) == Delay(30)


def _no_sink(path: str) -> Callable[[str], None]:
    return lambda line: None


def test_unknown_filters_are_refused() -> None:
    with pytest.raises(ValueError, match="no filter"):
        make_filter("nope", {}, _no_sink, os.urandom)
