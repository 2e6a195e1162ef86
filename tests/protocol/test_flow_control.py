"""Flow control: the server pauses at its in-flight limit (Kafka's muted channel) and resumes as
responses go out; the client holds requests beyond ``max_in_flight`` and writes them as
responses arrive."""

from __future__ import annotations

import pytest

from kafka_wire.messages import MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader
from kafka_wire.protocol import (
    NEED_DATA,
    ClientConfig,
    ClientConnection,
    Request,
    Response,
    ServerConfig,
    ServerConnection,
)
from kafka_wire.protocol.events import PAUSED
from kafka_wire.protocol.framing import decode_request, encode_request, encode_response


def _requests(count: int) -> bytes:
    return b"".join(
        encode_request(RequestHeader(correlation_id=cid, client_id="c"), MetadataRequest(topics=[]), 9)
        for cid in range(count)
    )


@pytest.mark.parametrize("limit", [1, 2])
def test_the_server_pauses_at_its_in_flight_limit_and_resumes(limit: int) -> None:
    server = ServerConnection(ServerConfig(max_in_flight_requests=limit))
    server.receive_data(_requests(limit + 2))
    held: list[Request] = []
    for _ in range(limit):
        event = server.next_event()
        assert isinstance(event, Request)
        held.append(event)
    assert server.paused
    assert server.next_event() is PAUSED and server.next_event() is PAUSED  # decodes nothing more
    assert server.buffered_bytes > 0  # the other requests wait, undecoded
    server.send(held.pop(0).reply(MetadataResponse()))
    assert not server.paused
    event = server.next_event()
    assert isinstance(event, Request) and event.correlation_id == limit  # the next one, in order
    held.append(event)
    assert server.next_event() is PAUSED
    for request in held:
        server.send(request.reply(MetadataResponse()))
    last = server.next_event()
    assert isinstance(last, Request) and last.correlation_id == limit + 1
    assert server.next_event() is PAUSED if limit == 1 else server.next_event() is NEED_DATA


def test_a_server_without_a_limit_never_pauses() -> None:
    server = ServerConnection()
    server.receive_data(_requests(50))
    events = [server.next_event() for _ in range(51)]
    assert all(isinstance(e, Request) for e in events[:50]) and events[50] is NEED_DATA
    assert not server.paused


def _answer(frame: bytes) -> bytes:
    header, _ = decode_request(frame)
    return encode_response(ResponseHeader(correlation_id=header.correlation_id), MetadataResponse(), 9)


def _frames(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        out.append(data[pos : pos + 4 + size])
        pos += 4 + size
    return out


def test_the_client_holds_requests_beyond_max_in_flight() -> None:
    client = ClientConnection(ClientConfig(negotiate=False, max_in_flight=2))
    written = [client.send(MetadataRequest(topics=[]), 9, context=n) for n in range(4)]
    assert [len(_frames(w)) for w in written] == [1, 1, 0, 0]
    assert client.held == 2 and client.in_flight == 2
    assert client.pending_contexts() == [0, 1, 2, 3]
    client.receive_data(_answer(written[0]))
    first = client.next_event()
    assert isinstance(first, Response) and first.context == 0
    # The first held request leaves now, with the next correlation id.
    [third] = _frames(client.data_to_send())
    header, _ = decode_request(third)
    assert header.correlation_id == 2 and client.held == 1 and client.in_flight == 2
    client.receive_data(_answer(written[1]) + _answer(third))
    contexts = []
    while isinstance(event := client.next_event(), Response):
        contexts.append(event.context)
    assert contexts == [1, 2]
    [fourth] = _frames(client.data_to_send())
    assert decode_request(fourth)[0].correlation_id == 3 and client.held == 0
