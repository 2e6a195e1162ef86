"""Every API the broker serves, at every version, answers default and random requests without
crashing: a response (or, for acks=0, silence), never an exception out of the engine."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.codec.structs import Message
from kafka_wire.messages import REQUESTS, ApiKey, DescribeAclsRequest, ProduceRequest
from kafka_wire.protocol.events import expects_response
from kafka_wire.testing.strategies import messages
from tests.broker.engine import Client, Engine

CASES = [
    (key, version)
    for key, (lo, hi) in sorted(SUPPORTED.items())
    if key not in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.API_VERSIONS)
    for version in range(lo, hi + 1)
]


def ask(client: Client, body: Message, version: int) -> None:
    if not expects_response(body):
        client.send(body, version)
        return
    response = client.request(body, version)
    assert response.api_key == body.API_KEY and response.api_version == version


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{REQUESTS[k].__name__}-v{v}" for k, v in CASES])
def test_default_request_at_every_version(key: int, version: int) -> None:
    engine = Engine()
    client = Client(engine, 1)
    body = REQUESTS[key]()
    if isinstance(body, ProduceRequest):
        body.acks = 1
    if isinstance(body, DescribeAclsRequest):  # its defaults name UNKNOWN: Kafka closes on that
        body.resource_type_filter = body.operation = body.permission_type = 1  # ANY
    ask(client, body, version)
    assert 1 not in engine.closed


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None
)
@given(data=st.data(), case=st.sampled_from(CASES))
def test_random_requests_never_break_the_engine(data: st.DataObject, case: tuple[int, int]) -> None:
    key, version = case
    engine = Engine()
    client = Client(engine, 1)
    body = data.draw(messages(REQUESTS[key], version, max_list=2, unknown_tags=False))
    if isinstance(body, ProduceRequest) and body.acks == 0:
        body.acks = 1
    client.send(body, version)
    engine.advance(60_000)  # let held requests (fetch waits, joins) time out
    # Either answered or the connection was closed as Kafka would; the engine itself survived:
    other = Client(engine, 2)
    assert other.request(REQUESTS[ApiKey.METADATA](), 9).api_key == ApiKey.METADATA
