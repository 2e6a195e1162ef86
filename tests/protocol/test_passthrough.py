"""Passthrough on both connections (a proxy's use): frames of the api keys asked for stay
undecoded, go out with the connection's own correlation id, and come back whole; input in any
chunking. Produce's acks is read from the frame at every header shape."""

from __future__ import annotations

import pytest

from kafka_wire.messages import (
    ApiKey,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    RequestHeader,
    ResponseHeader,
)
from kafka_wire.protocol import (
    NEED_DATA,
    ClientConfig,
    ClientConnection,
    Response,
    ServerConfig,
    ServerConnection,
)
from kafka_wire.protocol.events import RawRequest, RawResponse
from kafka_wire.protocol.framing import encode_request, encode_response
from tests.protocol.chunking import CHUNKINGS, split


@pytest.mark.parametrize("how", CHUNKINGS)
def test_a_server_hands_passthrough_requests_over_whole(how: str) -> None:
    server = ServerConnection(ServerConfig(passthrough=frozenset({ApiKey.METADATA})))
    frame = encode_request(RequestHeader(correlation_id=41, client_id="c"), MetadataRequest(topics=None), 12)
    for chunk in split(frame + frame, how):
        server.receive_data(chunk)
    events = [server.next_event(), server.next_event(), server.next_event()]
    assert events[2] is NEED_DATA
    raw = events[0]
    assert isinstance(raw, RawRequest) and raw.frame == frame
    assert (raw.api_key, raw.api_version, raw.correlation_id, raw.header.client_id) == (3, 12, 41, "c")
    answer = encode_response(ResponseHeader(correlation_id=999), MetadataResponse(cluster_id="x"), 12)
    out = server.send_raw(41, answer)
    assert out[:4] == answer[:4] and out[4:8] == (41).to_bytes(4, "big") and out[8:] == answer[8:]
    assert server.responses_owed == 1  # the second, still unanswered


@pytest.mark.parametrize(
    ("version", "transactional_id"), [(2, None), (3, None), (3, "tx"), (9, None), (9, "tx")]
)
def test_produce_acks_zero_is_read_from_the_frame(version: int, transactional_id: str | None) -> None:
    server = ServerConnection(ServerConfig(passthrough=frozenset({ApiKey.PRODUCE})))
    body = ProduceRequest(acks=0, timeout_ms=5, transactional_id=transactional_id if version >= 3 else None)
    server.receive_data(encode_request(RequestHeader(correlation_id=1), body, version))
    raw = server.next_event()
    assert isinstance(raw, RawRequest) and not raw.expects_response
    assert server.responses_owed == 0


def test_a_client_relays_a_frame_and_hands_back_the_answer() -> None:
    client = ClientConnection(ClientConfig(negotiate=False, first_correlation_id=100))
    frame = encode_request(
        RequestHeader(correlation_id=7, client_id="their-app"), MetadataRequest(topics=[]), 12
    )
    sent = client.send_raw(frame, context="raw")
    assert sent[8:12] == (100).to_bytes(4, "big") and sent[12:] == frame[12:]  # their client id kept
    client.send_raw(frame, decode=True, request=MetadataRequest(topics=[]), context="decoded")
    for correlation_id in (100, 101):
        client.receive_data(
            encode_response(ResponseHeader(correlation_id=correlation_id), MetadataResponse(), 12)
        )
    raw, decoded = client.next_event(), client.next_event()
    assert isinstance(raw, RawResponse) and (raw.correlation_id, raw.context, raw.api_key) == (100, "raw", 3)
    assert (
        isinstance(decoded, Response)
        and isinstance(decoded.body, MetadataResponse)
        and decoded.context == "decoded"
    )
