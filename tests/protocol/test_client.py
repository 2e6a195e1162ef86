"""ClientConnection: negotiation, pipelining, acks=0, limits and errors, in every chunking."""

from __future__ import annotations

import struct

import pytest

from kafka_wire.errors import LocalProtocolError, RemoteProtocolError, UnsupportedVersionError
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ErrorCode,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    ResponseHeader,
)
from kafka_wire.protocol import (
    NEED_DATA,
    ClientConfig,
    ClientConnection,
    ClientState,
    ConnectionClosed,
    Response,
    VersionsNegotiated,
    api_versions_response,
)
from kafka_wire.protocol.framing import decode_request, encode_response
from tests.protocol.chunking import failure, outcome

BROKER = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (1, 9), ApiKey.PRODUCE: (3, 8), 9999: (0, 1)}
NEWEST_API_VERSIONS = max(ApiVersionsRequest.VERSIONS)


def answer(correlation_id: int, body: object, version: int) -> bytes:
    assert isinstance(body, ApiVersionsResponse | MetadataResponse | ProduceResponse)
    return encode_response(ResponseHeader(correlation_id=correlation_id), body, version)


def negotiated(versions: dict[int, tuple[int, int]] = BROKER) -> ClientConnection:
    conn = ClientConnection(ClientConfig(api_versions_version=3))
    conn.data_to_send()
    conn.receive_data(answer(0, api_versions_response(versions), 3))
    event = conn.next_event()
    assert isinstance(event, VersionsNegotiated)
    return conn


def test_first_bytes_are_an_api_versions_request_at_the_newest_version() -> None:
    conn = ClientConnection(ClientConfig(client_id="app", software_name="kw-test", software_version="1.2"))
    header, body = decode_request(conn.data_to_send())
    assert (header.request_api_key, header.request_api_version) == (ApiKey.API_VERSIONS, NEWEST_API_VERSIONS)
    assert (header.correlation_id, header.client_id) == (0, "app")
    assert isinstance(body, ApiVersionsRequest)
    assert (body.client_software_name, body.client_software_version) == ("kw-test", "1.2")
    assert conn.state is ClientState.NEGOTIATING


def test_negotiation_picks_the_highest_common_version_in_every_chunking() -> None:
    def make() -> ClientConnection:
        return ClientConnection(ClientConfig(api_versions_version=3))

    events, written = outcome(make, answer(0, api_versions_response(BROKER), 3))
    [event] = events
    assert isinstance(event, VersionsNegotiated)
    assert event.api_version == 3 and written == b""
    # Unknown api key 9999 is dropped; ranges are intersected with what kafka_wire knows.
    assert dict(event.api_versions) == {
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.METADATA: (1, 9),
        ApiKey.PRODUCE: (3, 8),
    }
    conn = negotiated()
    assert conn.version_for(ApiKey.METADATA) == 9
    assert conn.state is ClientState.READY


def test_unsupported_version_answer_makes_the_client_retry_with_the_version_the_broker_names() -> None:
    refusal = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    refusal.api_keys = api_versions_response({ApiKey.API_VERSIONS: (0, 2)}).api_keys
    retry_answer = answer(1, api_versions_response(BROKER), 2)

    def make() -> ClientConnection:
        return ClientConnection()

    # The broker answers in v0 (KIP-511), whatever version was asked.
    events, written = outcome(make, answer(0, refusal, 0) + retry_answer)
    assert [type(e) for e in events] == [VersionsNegotiated]
    assert isinstance(events[0], VersionsNegotiated) and events[0].api_version == 2
    header, body = decode_request(written)
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (18, 2, 1)
    assert isinstance(body, ApiVersionsRequest)


def test_unsupported_version_without_a_named_version_retries_with_v0() -> None:
    refusal = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    events, written = outcome(
        ClientConnection, answer(0, refusal, 0) + answer(1, api_versions_response(BROKER), 0)
    )
    assert isinstance(events[0], VersionsNegotiated) and events[0].api_version == 0
    header, _ = decode_request(written)
    assert header.request_api_version == 0


def test_refusal_of_v0_is_a_remote_error() -> None:
    refusal = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    events, _ = outcome(lambda: ClientConnection(ClientConfig(api_versions_version=0)), answer(0, refusal, 0))
    assert events == [(RemoteProtocolError, "the broker refused ApiVersions v0 as UNSUPPORTED_VERSION")]


def test_other_api_versions_errors_are_remote_errors() -> None:
    failed = ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    events, _ = outcome(lambda: ClientConnection(ClientConfig(api_versions_version=3)), answer(0, failed, 3))
    kind, message = failure(events)
    assert kind is RemoteProtocolError and "INVALID_REQUEST" in message


def test_no_common_version_is_a_question_that_leaves_the_connection_usable() -> None:
    conn = negotiated({ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (40, 41)})
    with pytest.raises(UnsupportedVersionError, match="no MetadataRequest version in common"):
        conn.version_for(ApiKey.METADATA)
    with pytest.raises(UnsupportedVersionError, match="does not support ProduceRequest"):
        conn.version_for(ApiKey.PRODUCE)
    assert conn.state is ClientState.READY
    # An explicit version is used as given.
    header, _ = decode_request(conn.send(MetadataRequest(), 4))
    # send raising (here for want of a version) is a failure inside the connection: ERROR.
    with pytest.raises(UnsupportedVersionError):
        conn.send(ProduceRequest(acks=1))
    assert conn.state.name == "ERROR"  # (mypy keeps the READY narrowing above)
    assert (header.request_api_version, header.correlation_id) == (4, 1)


def test_pipelined_requests_are_answered_in_order_with_their_context() -> None:
    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(MetadataRequest(topics=None), context="first")
        conn.send(ProduceRequest(acks=1, timeout_ms=5), context=("second", 2))
        conn.send(MetadataRequest(topics=[]), 1, context=3)
        return conn

    data = (
        answer(1, MetadataResponse(cluster_id="a"), 9)
        + answer(2, ProduceResponse(throttle_time_ms=7), 8)
        + answer(3, MetadataResponse(), 1)
    )
    events, _ = outcome(make, data)
    assert [
        (e.correlation_id, e.api_key, e.api_version, e.context) for e in events if isinstance(e, Response)
    ] == [
        (1, ApiKey.METADATA, 9, "first"),
        (2, ApiKey.PRODUCE, 8, ("second", 2)),
        (3, ApiKey.METADATA, 1, 3),
    ]
    assert isinstance(events[0], Response) and isinstance(events[0].request, MetadataRequest)
    assert isinstance(events[1], Response) and isinstance(events[1].body, ProduceResponse)
    assert events[1].body.throttle_time_ms == 7


def test_acks_zero_produce_expects_no_response() -> None:
    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(ProduceRequest(acks=0))
        assert conn.in_flight == 0
        conn.send(MetadataRequest(), context="m")
        assert conn.in_flight == 1
        return conn

    events, _ = outcome(make, answer(2, MetadataResponse(), 9))
    assert [(type(e), getattr(e, "context", None)) for e in events] == [(Response, "m")]


def test_a_stray_answer_to_acks_zero_is_dropped() -> None:
    """Pinned leniency: Tansu answers acks=0 Produce requests; Kafka never does."""

    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(ProduceRequest(acks=0))
        conn.send(MetadataRequest(), context="m")
        return conn

    events, _ = outcome(make, answer(1, ProduceResponse(), 8) + answer(2, MetadataResponse(), 9))
    assert [getattr(e, "context", None) for e in events] == ["m"]


def test_mismatched_correlation_id_is_a_remote_error_and_the_connection_is_dead() -> None:
    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(MetadataRequest())
        return conn

    events, _ = outcome(make, answer(7, MetadataResponse(), 9))
    assert events == [
        (
            RemoteProtocolError,
            "response correlation id 7 does not match the oldest request in flight "
            "(MetadataRequest v9, correlation id 1)",
        )
    ]
    conn = make()
    conn.receive_data(answer(7, MetadataResponse(), 9))
    with pytest.raises(RemoteProtocolError):
        conn.next_event()
    assert conn.state is ClientState.ERROR
    for call in (conn.next_event, lambda: conn.send(MetadataRequest()), lambda: conn.receive_data(b"x")):
        with pytest.raises(LocalProtocolError):
            call()


def test_unsolicited_response_is_a_remote_error() -> None:
    events, _ = outcome(negotiated, answer(1, MetadataResponse(), 9))
    assert events == [
        (RemoteProtocolError, "unsolicited response (correlation id 1): no request is in flight")
    ]


def test_frame_size_is_checked_before_the_body_is_buffered() -> None:
    conn = ClientConnection(ClientConfig(max_frame_bytes=1000))
    conn.receive_data(struct.pack(">i", 1001))  # only the size: no body has arrived
    with pytest.raises(RemoteProtocolError, match="over the 1000-byte limit") as info:
        conn.next_event()
    assert info.value.__cause__ is not None
    assert conn.state is ClientState.ERROR


def test_undecodable_body_is_a_remote_error_caused_by_a_decode_error() -> None:
    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(MetadataRequest())
        return conn

    frame = answer(1, MetadataResponse(), 9)
    bad = struct.pack(">i", len(frame) - 4 + 3) + frame[4:] + b"\xff\xff\xff"  # trailing bytes are fine...
    events, _ = outcome(make, bad)
    assert [type(e) for e in events] == [Response]
    broken = frame[:12] + b"\x7f\xff\xff\xff" + frame[16:]  # ...a huge brokers count is not
    events, _ = outcome(make, broken)
    kind, message = failure(events)
    assert kind is RemoteProtocolError and "MetadataResponse v9" in message


def test_strict_mode_refuses_trailing_bytes() -> None:
    def make() -> ClientConnection:
        conn = ClientConnection(ClientConfig(negotiate=False, strict=True))
        conn.send(MetadataRequest(), 9)
        return conn

    frame = answer(0, MetadataResponse(), 9)
    events, _ = outcome(make, struct.pack(">i", len(frame) - 4 + 1) + frame[4:] + b"\x00")
    kind, message = failure(events)
    assert kind is RemoteProtocolError and "1 bytes left after the body" in message


def test_eof_reports_unanswered_requests() -> None:
    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(MetadataRequest(topics=None))
        conn.send(ProduceRequest(acks=-1))
        return conn

    events, _ = outcome(make, answer(1, MetadataResponse(), 9), eof=True)
    assert [type(e) for e in events] == [Response, ConnectionClosed]
    closed = events[1]
    assert isinstance(closed, ConnectionClosed) and [type(r) for r in closed.unanswered] == [ProduceRequest]


def test_eof_in_the_middle_of_a_frame_is_a_remote_error() -> None:
    def make() -> ClientConnection:
        conn = negotiated()
        conn.send(MetadataRequest())
        return conn

    events, _ = outcome(make, answer(1, MetadataResponse(), 9)[:-1], eof=True)
    kind, message = failure(events)
    assert kind is RemoteProtocolError and "in the middle of a frame" in message


def test_without_negotiation_send_uses_the_newest_version_and_is_ready_at_once() -> None:
    conn = ClientConnection(ClientConfig(negotiate=False, first_correlation_id=0x7FFFFFFF))
    assert conn.state is ClientState.READY and conn.data_to_send() == b""
    header, _ = decode_request(conn.send(MetadataRequest()))
    assert header.request_api_version == max(MetadataRequest.VERSIONS)
    header, _ = decode_request(conn.send(MetadataRequest()))
    assert header.correlation_id == 0  # wraps like Kafka's client
    assert conn.next_event() is NEED_DATA


def test_send_refuses_responses_and_calls_in_the_wrong_state() -> None:
    conn = ClientConnection()
    with pytest.raises(LocalProtocolError, match="'request sent' is not allowed in state NEGOTIATING"):
        conn.send(MetadataRequest())
    assert conn.state is ClientState.ERROR
    conn = ClientConnection(ClientConfig(negotiate=False))
    with pytest.raises(LocalProtocolError, match="send takes a request"):
        conn.send(MetadataResponse())


def test_receive_data_after_eof_is_a_local_error() -> None:
    conn = ClientConnection(ClientConfig(negotiate=False))
    conn.receive_eof()
    with pytest.raises(LocalProtocolError, match="after receive_eof"):
        conn.receive_data(b"\x00")


@pytest.mark.parametrize(
    "config",
    [
        {"api_versions_version": 99},
        {"sasl_handshake_version": 5},
        {"max_frame_bytes": 4},
        {"first_correlation_id": -1},
    ],
)
def test_config_is_validated(config: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ClientConfig(**config)  # type: ignore[arg-type]  # deliberately bad values


def test_bytes_after_an_oversized_size_prefix_are_not_buffered() -> None:
    conn = ClientConnection(ClientConfig(negotiate=False, max_frame_bytes=1000))
    conn.receive_data(struct.pack(">i", 10**8))
    for _ in range(100):
        conn.receive_data(b"\x00" * 10_000)
    assert conn._reader.buffered == 4
    with pytest.raises(RemoteProtocolError, match="over the 1000-byte limit"):
        conn.next_event()
