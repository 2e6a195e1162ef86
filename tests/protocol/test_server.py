"""ServerConnection: requests to events, ordered responses, Kafka's answers to bad input."""

from __future__ import annotations

import struct

import pytest

from kafka_wire.errors import LocalProtocolError, RemoteProtocolError
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ErrorCode,
    FetchRequest,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceRequest,
    RequestHeader,
    ResponseHeader,
)
from kafka_wire.protocol import (
    NEED_DATA,
    ClientConfig,
    ClientConnection,
    ConnectionClosed,
    Request,
    Response,
    ServerConfig,
    ServerConnection,
    ServerState,
    UnsupportedRequest,
    VersionsNegotiated,
    api_versions_response,
)
from kafka_wire.protocol.framing import decode_response, encode_request, encode_response
from tests.protocol.chunking import failure, fed, outcome

VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.METADATA: (0, 12),
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
}


def server() -> ServerConnection:
    return ServerConnection(ServerConfig(api_versions=VERSIONS))


def request(body: object, version: int, correlation_id: int, client_id: str | None = "c") -> bytes:
    assert isinstance(body, ApiVersionsRequest | MetadataRequest | ProduceRequest | FetchRequest)
    return encode_request(RequestHeader(correlation_id=correlation_id, client_id=client_id), body, version)


def test_requests_become_typed_events_in_every_chunking() -> None:
    data = (
        request(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 0)
        + request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12, 1, None)
        + request(ProduceRequest(acks=0, timeout_ms=1), 9, 2)
    )
    events, written = outcome(server, data)
    assert written == b""
    assert [
        (type(e.body).__name__, e.api_version, e.correlation_id) for e in events if isinstance(e, Request)
    ] == [
        ("ApiVersionsRequest", 3, 0),
        ("MetadataRequest", 12, 1),
        ("ProduceRequest", 9, 2),
    ]
    assert [e.expects_response for e in events if isinstance(e, Request)] == [True, True, False]
    metadata = events[1]
    assert isinstance(metadata, Request) and isinstance(metadata.body, MetadataRequest)
    assert metadata.body.topics is not None and metadata.body.topics[0].name == "t"
    assert metadata.header.client_id is None


def test_trailing_bytes_are_kept_as_kafka_accepts_them() -> None:
    frame = request(MetadataRequest(), 4, 5)
    padded = struct.pack(">i", len(frame) - 4 + 2) + frame[4:] + b"\x00\x01"
    events, _ = outcome(server, padded)
    [event] = events
    assert isinstance(event, Request) and event.trailing == b"\x00\x01"
    strict = ServerConnection(ServerConfig(api_versions=VERSIONS, strict=True))
    strict.receive_data(padded)
    with pytest.raises(RemoteProtocolError, match="2 bytes left after the body"):
        strict.next_event()


def test_responses_leave_in_request_order_whatever_order_they_are_sent_in() -> None:
    data = (
        request(MetadataRequest(), 9, 10)
        + request(MetadataRequest(), 9, 11)
        + request(MetadataRequest(), 1, 12)
    )
    outputs = []
    for conn, events in fed(server, data):
        first, second, third = events
        assert isinstance(first, Request) and isinstance(second, Request) and isinstance(third, Request)
        assert conn.send(third.reply(MetadataResponse(cluster_id="3"))) == b""
        assert conn.send(second.reply(MetadataResponse(cluster_id="2"))) == b""
        outputs.append(conn.send(first.reply(MetadataResponse(cluster_id="1"))))
    out = outputs[0]
    assert all(o == out for o in outputs)
    frames, pos = [], 0
    while pos < len(out):
        (size,) = struct.unpack_from(">i", out, pos)
        frames.append(out[pos : pos + 4 + size])
        pos += 4 + size
    decoded = [decode_response(f, ApiKey.METADATA, v) for f, v in zip(frames, (9, 9, 1), strict=True)]
    assert [(h.correlation_id, b.cluster_id) for h, b in decoded] == [(10, "1"), (11, "2"), (12, None)]  # type: ignore[attr-defined]


def test_send_refuses_unknown_correlation_ids_acks_zero_and_wrong_apis() -> None:
    conn = server()
    conn.receive_data(request(ProduceRequest(acks=0), 9, 1))
    produce = conn.next_event()
    assert isinstance(produce, Request)
    with pytest.raises(LocalProtocolError, match="no request with correlation id 1 awaits a response"):
        conn.send(produce.reply(MetadataResponse()))
    assert conn.state is ServerState.ERROR

    conn = server()
    conn.receive_data(request(MetadataRequest(), 9, 1))
    metadata = conn.next_event()
    assert isinstance(metadata, Request)
    wrong = Response(body=ApiVersionsResponse(), api_key=ApiKey.METADATA, api_version=9, correlation_id=1)
    with pytest.raises(LocalProtocolError, match="got ApiVersionsResponse"):
        conn.send(wrong)


def test_unsupported_api_versions_version_is_answered_with_a_v0_error_response() -> None:
    events, _ = outcome(server, request(ApiVersionsRequest(), 4, 3))
    assert events == [
        UnsupportedRequest(
            api_key=18, api_version=4, correlation_id=3, reason="unsupported version: api 18 v4"
        )
    ]
    conn = server()
    conn.receive_data(request(ApiVersionsRequest(), 4, 3))
    event = conn.next_event()
    assert isinstance(event, UnsupportedRequest)
    header, body = decode_response(conn.reject(event), ApiKey.API_VERSIONS, 0, strict=True)
    assert header.correlation_id == 3
    assert isinstance(body, ApiVersionsResponse) and body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 3)]
    assert conn.state is ServerState.READY


def test_a_client_retries_after_the_servers_refusal() -> None:
    client, conn = ClientConnection(), server()
    conn.receive_data(client.data_to_send())
    refused = conn.next_event()
    assert isinstance(refused, UnsupportedRequest)
    client.receive_data(conn.reject(refused))
    assert client.next_event() is NEED_DATA
    conn.receive_data(client.data_to_send())
    retried = conn.next_event()
    assert isinstance(retried, Request) and retried.api_version == 3
    client.receive_data(conn.send(retried.reply(api_versions_response(VERSIONS))))
    negotiated = client.next_event()
    assert isinstance(negotiated, VersionsNegotiated) and negotiated.api_version == 3


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (request(FetchRequest(), 3, 7), "unsupported version: api 1 v3"),  # known to us, refused by config
        (struct.pack(">ihhi", 8, 3, 99, 7), "unsupported version: api 3 v99"),
        (struct.pack(">ihhi", 8, 999, 0, 7), "unsupported api key: api 999 v0"),
    ],
    ids=["refused-version", "unknown-version", "unknown-api"],
)
def test_other_unsupported_requests_close_the_connection(frame: bytes, reason: str) -> None:
    frame = struct.pack(">i", len(frame) - 4) + frame[4:]
    events, _ = outcome(server, frame)
    [event] = events
    assert isinstance(event, UnsupportedRequest) and event.correlation_id == 7 and event.reason == reason
    conn = server()
    conn.receive_data(frame)
    unsupported = conn.next_event()
    assert isinstance(unsupported, UnsupportedRequest)
    assert conn.reject(unsupported) == b""
    assert conn.state is ServerState.MUST_CLOSE and conn.must_close
    assert isinstance(conn.next_event(), ConnectionClosed)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (struct.pack(">i", -1), "negative frame size -1"),
        (struct.pack(">i", 4097), "frame of 4097 bytes is over the 4096-byte limit"),
        (struct.pack(">ih", 2, 3), "a request header needs 8 bytes"),
        (struct.pack(">ihhi", 9, 3, 1, 0) + b"\x01", "RequestHeader v1 at byte 12 (client_id)"),
    ],
    ids=["negative-size", "over-limit", "short-header", "cut-client-id"],
)
def test_garbage_is_a_remote_error(data: bytes, reason: str) -> None:
    events, _ = outcome(lambda: ServerConnection(ServerConfig(max_frame_bytes=4096)), data)
    kind, message = failure(events)
    assert kind is RemoteProtocolError and reason in message


def test_eof_lists_requests_left_unanswered() -> None:
    events, _ = outcome(
        server, request(MetadataRequest(), 9, 1) + request(ProduceRequest(acks=0), 9, 2), eof=True
    )
    assert [type(e) for e in events] == [Request, Request, ConnectionClosed]
    closed = events[-1]
    assert isinstance(closed, ConnectionClosed) and [type(r) for r in closed.unanswered] == [MetadataRequest]


def test_truncated_frame_at_eof_is_a_remote_error() -> None:
    events, _ = outcome(server, request(MetadataRequest(), 9, 1)[:-2], eof=True)
    kind, message = failure(events)
    assert kind is RemoteProtocolError and "middle of a frame" in message


def test_client_and_server_talk_through_every_chunking() -> None:
    """A whole exchange, each direction fed in every chunking."""
    client = ClientConnection(ClientConfig(client_id="kw"))

    def make() -> ServerConnection:
        return server()

    events, _ = outcome(make, client.data_to_send())
    refused = events[0]
    assert isinstance(refused, UnsupportedRequest)
    conn = server()
    conn.receive_data(ClientConnection(ClientConfig(client_id="kw")).data_to_send())
    event = conn.next_event()
    assert isinstance(event, UnsupportedRequest)
    refusal = conn.reject(event)
    client_events, retry = outcome(lambda: ClientConnection(ClientConfig(client_id="kw")), refusal)
    assert client_events == []
    conn.receive_data(retry)
    retried = conn.next_event()
    assert isinstance(retried, Request)
    answer = conn.send(retried.reply(api_versions_response(VERSIONS)))

    def negotiating() -> ClientConnection:
        c = ClientConnection(ClientConfig(client_id="kw"))
        c.data_to_send()
        c.receive_data(refusal)
        assert c.next_event() is NEED_DATA
        return c

    client_events, _ = outcome(negotiating, answer)
    [negotiated] = client_events
    assert isinstance(negotiated, VersionsNegotiated)
    assert negotiated.api_versions == VERSIONS


def test_spliced_responses_keep_request_order_and_their_parts() -> None:
    from kafka_wire.messages import (
        FetchResponse,
        FetchResponseFetchableTopicResponse,
        FetchResponsePartitionData,
    )
    from kafka_wire.protocol.server import Splice

    conn = server()
    conn.receive_data(request(FetchRequest(), 12, 1) + request(MetadataRequest(), 9, 2))
    fetch_event, metadata_event = conn.next_event(), conn.next_event()
    assert isinstance(fetch_event, Request) and isinstance(metadata_event, Request)
    region = object()  # stands for 68 bytes the driver sends itself
    splice = Splice(size=70, parts=(b"ab", region))
    # Another partition's records hold the same bytes as the placeholder: only the placeholder
    # object itself is replaced (the encoder records where each records payload lands).
    twin = bytes(70)
    body = FetchResponse(
        responses=[
            FetchResponseFetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponsePartitionData(partition_index=0, records=twin),
                    FetchResponsePartitionData(partition_index=1, records=splice.placeholder),
                ],
            )
        ]
    )
    assert conn.send(metadata_event.reply(MetadataResponse())) == b""  # waits behind the fetch
    parts = conn.parts_to_send()
    assert parts == []
    parts = conn.send_spliced(fetch_event.reply(body), [splice])
    full_fetch = encode_response(ResponseHeader(correlation_id=1), body, 12)
    full_metadata = encode_response(ResponseHeader(correlation_id=2), MetadataResponse(), 9)
    body.responses[0].partitions[1].records = b"\xab" * 70
    at = encode_response(ResponseHeader(correlation_id=1), body, 12).index(b"\xab" * 70)
    assert full_fetch.index(bytes(70)) < at  # the twin comes first and stays
    # The fetch frame with its placeholder span replaced, then the metadata frame that waited.
    assert parts == [full_fetch[:at] + b"ab", region, full_fetch[at + 70 :] + full_metadata]
    assert parts[1] is region


def test_a_splice_whose_placeholder_is_not_in_the_response_fails_the_connection() -> None:
    from kafka_wire.errors import EncodeError
    from kafka_wire.messages import FetchResponse
    from kafka_wire.protocol.server import Splice

    conn = server()
    conn.receive_data(request(FetchRequest(), 12, 1))
    event = conn.next_event()
    assert isinstance(event, Request)
    with pytest.raises(EncodeError, match="not records of the response"):
        conn.send_spliced(event.reply(FetchResponse()), [Splice(size=3, parts=(b"abc",))])
    assert conn.state is ServerState.ERROR
    assert conn.data_to_send() == b"" and conn.parts_to_send() == []
