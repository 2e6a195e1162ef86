"""AlterClientQuotas and DescribeClientQuotas, the same requests to Apache Kafka 4.4 and to
``kafka-wire serve``: the same answers (error codes and messages per entry, the entities and
values described, sorted: Kafka's own order is its hash map's)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntityData,
    AlterClientQuotasRequestEntryData,
    AlterClientQuotasRequestOpData,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponentData,
    DescribeClientQuotasResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.e2e.brokers import BrokerProcess
from tests.e2e.raw import exchange

ALTER, DESCRIBE = 49, 48
Entity = dict[str, str | None]


def _ask(broker: BrokerProcess, body: Message, api_key: int, version: int = 1) -> Message:
    frame = encode_request(RequestHeader(correlation_id=5, client_id="quota-diff"), body, version)
    outcome = exchange(broker.address, frame, probe="quotas", timeout_s=30.0)
    assert outcome.whole_frame, outcome.describe()
    _, answer = decode_response(outcome.reply, api_key, version)
    return answer


def _entry(entity: Entity, ops: dict[str, float | None]) -> AlterClientQuotasRequestEntryData:
    return AlterClientQuotasRequestEntryData(
        entity=[AlterClientQuotasRequestEntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[
            AlterClientQuotasRequestOpData(key=k, value=0.0 if v is None else v, remove=v is None)
            for k, v in ops.items()
        ],
    )


def _alter(
    broker: BrokerProcess, entries: list[AlterClientQuotasRequestEntryData], validate_only: bool
) -> object:
    answer = _ask(broker, AlterClientQuotasRequest(entries=entries, validate_only=validate_only), ALTER)
    assert isinstance(answer, AlterClientQuotasResponse)
    return sorted(  # Kafka answers in its hash map's order
        (
            sorted((x.entity_type, x.entity_name or "<default>") for x in e.entity),
            e.error_code,
            e.error_message,
        )
        for e in answer.entries
    )


def _describe(broker: BrokerProcess, components: list[tuple[str, int, str | None]], strict: bool) -> object:
    request = DescribeClientQuotasRequest(
        components=[
            DescribeClientQuotasRequestComponentData(entity_type=t, match_type=m, match=n)
            for t, m, n in components
        ],
        strict=strict,
    )
    answer = _ask(broker, request, DESCRIBE)
    assert isinstance(answer, DescribeClientQuotasResponse)
    entries = None
    if answer.entries is not None:
        entries = sorted(
            (
                sorted((e.entity_type, e.entity_name or "<default>") for e in x.entity),
                sorted((v.key, v.value) for v in x.values),
            )
            for x in answer.entries
        )
    return answer.error_code, answer.error_message, entries


def _applied(
    broker: BrokerProcess, components: list[tuple[str, int, str | None]], done: Callable[[Any], bool]
) -> None:
    """Wait until the broker describes ``components`` as ``done`` wants: a Kafka broker answers
    DescribeClientQuotas from its metadata image, which may trail the controller's answer to the
    AlterClientQuotas before it (kafka-wire's node has applied the records when it answers)."""
    deadline = time.monotonic() + 30.0
    while not done(_describe(broker, components, strict=False)):
        assert time.monotonic() < deadline, f"{broker.name} never applied the quotas of {components}"
        time.sleep(0.05)


def _scenario(broker: BrokerProcess, tag: str) -> list[object]:
    """Quotas for entities named after ``tag`` (the session's Kafka node is shared), then
    filters that see only those entities (and the error answers, which see none)."""
    user, client, other = f"u-{tag}", f"c-{tag}", f"o-{tag}"
    answers: list[object] = []
    answers.append(
        _alter(
            broker,
            [
                _entry({"user": user}, {"producer_byte_rate": 1024.0, "request_percentage": 20.5}),
                _entry({"user": user, "client-id": client}, {"consumer_byte_rate": 4096.0}),
                _entry({"user": user, "client-id": None}, {"controller_mutation_rate": 3.5}),
                _entry({"client-id": client}, {"producer_byte_rate": 2048.0}),
                _entry({"client-id": other}, {"producer_byte_rate": 99.0}),
            ],
            validate_only=False,
        )
    )
    _applied(broker, [("client-id", 0, other)], lambda answer: bool(answer[2]))
    bad = [  # each entity once: Kafka answers an entity named twice with one "duplicate" error
        _entry({"group": user}, {"producer_byte_rate": 1.0}),
        _entry({}, {"producer_byte_rate": 1.0}),
        _entry({"user": ""}, {"producer_byte_rate": 1.0}),
        _entry({"user": user, "ip": "127.0.0.1"}, {"producer_byte_rate": 1.0}),
        _entry({"ip": "127.0.0.2"}, {"producer_byte_rate": 1.0}),
        _entry({"user": f"o1-{tag}"}, {"connection_creation_rate": 1.0}),
        _entry({"user": f"o2-{tag}"}, {"producer_byte_rate": 0.0}),
        _entry({"user": f"o3-{tag}"}, {"producer_byte_rate": -5.0}),
        _entry({"user": f"o4-{tag}"}, {"producer_byte_rate": 1.5}),
        _entry({"user": f"o5-{tag}"}, {"no_such_key": 1.0}),
        _entry({"ip": "127.0.0.3"}, {"connection_creation_rate": 3e9}),
        _entry({"ip": "127.0.0.4"}, {"connection_creation_rate": 2.5}),
        _entry({"ip": None}, {"connection_creation_rate": 7.0}),
        _entry({"user": other}, {"consumer_byte_rate": 7.0}),
        _entry({"client-id": f"x-{tag}", "user": None}, {"request_percentage": 1.0}),
        _entry({"user": None, "client-id": f"x-{tag}"}, {"request_percentage": 2.0}),
    ]
    answers.append(_alter(broker, bad, validate_only=True))
    answers.append(_describe(broker, [("user", 0, other)], strict=False))  # validate_only wrote nothing
    answers.append(_describe(broker, [("user", 0, user)], strict=False))
    answers.append(_describe(broker, [("user", 0, user)], strict=True))
    answers.append(_describe(broker, [("user", 0, user), ("client-id", 1, None)], strict=True))
    answers.append(_describe(broker, [("user", 0, user), ("client-id", 2, None)], strict=False))
    answers.append(_describe(broker, [("client-id", 0, client)], strict=False))
    answers.append(_describe(broker, [("client-id", 0, client)], strict=True))
    answers.append(
        _alter(broker, [_entry({"client-id": client}, {"producer_byte_rate": None})], validate_only=False)
    )
    answers.append(
        _alter(broker, [_entry({"client-id": client}, {"producer_byte_rate": None})], validate_only=False)
    )
    _applied(  # the client id's own quota is gone (its user's stays)
        broker,
        [("client-id", 0, client)],
        lambda answer: all(("producer_byte_rate", 2048.0) not in values for _, values in answer[2] or []),
    )
    answers.append(_describe(broker, [("client-id", 0, client)], strict=False))
    filters: list[list[tuple[str, int, str | None]]] = [
        [("", 2, None)],
        [("user", 2, None), ("user", 1, None)],
        [("group", 2, None)],
        [("user", 0, None)],
        [("user", 1, "x")],
        [("user", 2, "x")],
        [("user", 9, None)],
        [("ip", 2, None), ("user", 0, user)],
    ]
    for components in filters:
        answers.append(_describe(broker, components, strict=False))
    return answers


def test_the_same_answers_as_kafka(apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess) -> None:
    tag = uuid.uuid4().hex[:8]
    expected = _scenario(apache_kafka_node, tag)
    got = _scenario(kafka_wire_node, tag)
    mismatches = [(i, e, g) for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
    for i, e, g in mismatches:
        print(f"#{i}\n kafka {e}\n wire  {g}")
    assert mismatches == []
