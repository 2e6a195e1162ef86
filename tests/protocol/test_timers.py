"""Time, driven by ``handle_timer(now_ms)`` alone (no clock, no event loop): request timeouts,
idle limits and KIP-368 re-authentication and session expiry."""

from __future__ import annotations

import pytest

from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    MetadataRequest,
    MetadataResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_wire.protocol import (
    NEED_DATA,
    Authenticated,
    ClientConfig,
    ClientConnection,
    ClientState,
    ConnectionClosed,
    Request,
    Response,
    ServerConfig,
    ServerConnection,
    ServerSasl,
    ServerState,
    api_versions_response,
)
from kafka_wire.protocol.events import PAUSED, ClientEvent, RequestTimedOut, ServerEvent
from kafka_wire.protocol.framing import decode_request, decode_response
from kafka_wire.protocol.sasl import PlainClient, PlainServer


def _state(client: ClientConnection) -> ClientState:
    return client.state  # read afresh (mypy keeps an earlier narrowing of the property)


def test_a_request_without_an_answer_by_its_deadline_times_out_and_closes() -> None:
    client = ClientConnection(ClientConfig(negotiate=False, request_timeout_ms=1000), now_ms=0)
    assert client.next_deadline_ms() is None
    client.send(MetadataRequest(), 9, context="slow", now_ms=100)
    client.send(MetadataRequest(), 9, context="fast", timeout_ms=300, now_ms=200)
    assert client.next_deadline_ms() == 500  # the per-request timeout comes first
    client.handle_timer(499)
    assert client.next_event() is NEED_DATA and client.state is ClientState.READY
    client.handle_timer(500)
    event = client.next_event()
    assert isinstance(event, RequestTimedOut)
    assert event.context == "fast" and event.correlation_id == 1
    assert event.contexts == ("slow", "fast") and len(event.unanswered) == 2  # all of them fail
    assert _state(client) is ClientState.CLOSED and client.next_deadline_ms() is None
    closed = client.next_event()
    assert isinstance(closed, ConnectionClosed) and closed.reason == "request timed out"
    client.receive_data(b"\x00\x00\x00\x08late")  # a late answer is dropped
    assert isinstance(client.next_event(), ConnectionClosed)


def test_an_answer_in_time_clears_the_deadline() -> None:
    client = ClientConnection(ClientConfig(negotiate=False, request_timeout_ms=1000))
    frame = client.send(MetadataRequest(), 9, now_ms=0)
    server = ServerConnection()
    server.receive_data(frame)
    request = server.next_event()
    assert isinstance(request, Request)
    client.receive_data(server.send(request.reply(MetadataResponse())), now_ms=999)
    assert isinstance(client.next_event(), Response)
    assert client.next_deadline_ms() is None
    client.handle_timer(5000)
    assert client.state is ClientState.READY


def test_the_handshake_requests_time_out_too() -> None:
    client = ClientConnection(ClientConfig(request_timeout_ms=50), now_ms=10)
    assert client.next_deadline_ms() == 60
    client.handle_timer(60)
    event = client.next_event()
    assert isinstance(event, RequestTimedOut) and event.request is not None
    assert event.request.API_KEY == ApiKey.API_VERSIONS and event.unanswered == ()


def test_a_request_in_flight_is_not_idleness() -> None:
    client = ClientConnection(
        ClientConfig(negotiate=False, max_idle_ms=500, request_timeout_ms=None), now_ms=0
    )
    assert client.next_deadline_ms() == 500
    client.send(MetadataRequest(), 9, now_ms=100)
    assert client.next_deadline_ms() is None  # a request in flight is not idleness
    client.handle_timer(10_000)
    assert client.state is ClientState.READY


def test_an_idle_client_connection_closes_at_its_deadline() -> None:
    client = ClientConnection(ClientConfig(negotiate=False, max_idle_ms=500), now_ms=0)
    client.handle_timer(499)
    assert client.state is ClientState.READY
    client.handle_timer(500)
    event = client.next_event()
    assert isinstance(event, ConnectionClosed) and event.reason == "idle"


def test_an_idle_server_connection_must_close() -> None:
    server = ServerConnection(ServerConfig(max_idle_ms=100), now_ms=0)
    server.receive_data(b"\x00", now_ms=50)
    assert server.next_deadline_ms() == 150
    server.handle_timer(149)
    assert server.state is ServerState.READY
    server.handle_timer(150)
    assert server.must_close
    event = server.next_event()
    assert isinstance(event, ConnectionClosed) and event.reason == "idle"


# -- KIP-368 -------------------------------------------------------------------------------------

USERS = {"alice": "secret", "bob": "secret"}


def _server(max_reauth_ms: int) -> ServerConnection:
    plain = ServerSasl(
        mechanisms={"PLAIN": lambda: PlainServer(lambda user, password: USERS.get(user) == password)}
    )
    return ServerConnection(ServerConfig(max_reauth_ms=max_reauth_ms), sasl=plain)


def _pump(
    client: ClientConnection, server: ServerConnection, now_ms: int, data: bytes = b""
) -> list[ClientEvent | ServerEvent]:
    """Carry bytes both ways at ``now_ms`` until both are quiet; the events both sides made."""
    events: list[ClientEvent | ServerEvent] = []
    data += client.data_to_send()
    for _ in range(8):
        server.receive_data(data, now_ms=now_ms)
        answers = b""
        while (event := server.next_event()) is not NEED_DATA and event is not PAUSED:
            events.append(event)
            if isinstance(event, Request):
                body = (
                    api_versions_response(server.api_versions)
                    if event.api_key == ApiKey.API_VERSIONS
                    else MetadataResponse()
                )
                answers += server.send(event.reply(body))
            if isinstance(event, ConnectionClosed):
                break
        client.receive_data(answers + server.data_to_send(), now_ms=now_ms)
        while (reply := client.next_event()) is not NEED_DATA:
            events.append(reply)
            if isinstance(reply, ConnectionClosed):
                break
        data = client.data_to_send()
    return events


def test_the_client_reauthenticates_before_its_session_ends_by_handle_timer_alone() -> None:
    client = ClientConnection(sasl=lambda: PlainClient("alice", "secret"), now_ms=0)
    server = _server(max_reauth_ms=10_000)
    events = _pump(client, server, 0)
    [first] = [e for e in events if isinstance(e, Authenticated) and not e.principal]
    assert first.session_lifetime_ms == 10_000 and not first.reauthentication
    assert client.next_deadline_ms() == 9_000 and server.next_deadline_ms() is None
    client.handle_timer(9_000)
    assert client.state is ClientState.REAUTHENTICATING
    handshake = client.data_to_send()
    assert isinstance(decode_request(handshake)[1], SaslHandshakeRequest)
    # A request sent meanwhile waits for the new session.
    assert client.send(MetadataRequest(topics=[]), context="during") == b"" and client.held == 1
    events = _pump(client, server, 9_100, handshake)
    again = [e for e in events if isinstance(e, Authenticated)]
    assert [(e.principal, e.reauthentication) for e in again] == [("alice", True), ("", True)]
    assert [e.context for e in events if isinstance(e, Response)] == ["during"]
    assert (client.state, server.state) == (ClientState.READY, ServerState.READY)
    assert client.next_deadline_ms() == 18_100 and server.next_deadline_ms() is None
    # The old session's end passed long ago: the new one counts.
    server.receive_data(client.send(MetadataRequest(topics=[])), now_ms=18_100)
    assert isinstance(server.next_event(), Request) and server.state is ServerState.READY


def test_the_server_closes_a_session_that_expired_at_its_next_request() -> None:
    """As Kafka's broker: no timer ends the session; the first request after its end (here at
    1,001 ms, one past it) closes the connection unanswered, and one at its last ms is served."""
    client = ClientConnection(
        sasl=PlainClient("alice", "secret"), now_ms=0
    )  # one mechanism: no re-authentication
    server = _server(max_reauth_ms=1_000)
    _pump(client, server, 0)
    assert client.next_deadline_ms() is None and server.next_deadline_ms() is None
    server.handle_timer(1_000)
    assert server.state is ServerState.READY
    server.receive_data(client.send(MetadataRequest(topics=[])), now_ms=1_000)
    request = server.next_event()
    assert isinstance(request, Request)
    server.send(request.reply(MetadataResponse()))
    server.receive_data(client.send(MetadataRequest(topics=[])), now_ms=1_001)
    event = server.next_event()
    assert isinstance(event, ConnectionClosed) and event.reason == "session expired"
    assert server.must_close and server.data_to_send() == b""


def test_a_handshake_after_the_session_ended_still_reauthenticates() -> None:
    """Kafka starts a re-authentication on a SaslHandshake whenever the session has an end, even
    past it; a second one within a second is an ordinary request (ILLEGAL_SASL_STATE)."""
    client = ClientConnection(sasl=lambda: PlainClient("alice", "secret"), now_ms=0)
    server = _server(max_reauth_ms=1_000)
    _pump(client, server, 0)
    client.handle_timer(5_000)  # late: the session ended at 1,000
    events = _pump(client, server, 5_000)
    assert [e.reauthentication for e in events if isinstance(e, Authenticated)] == [True, True]
    server.receive_data(client.send(SaslHandshakeRequest(mechanism="PLAIN"), 1), now_ms=5_500)
    assert server.next_event() is NEED_DATA
    _, body = decode_response(server.data_to_send(), ApiKey.SASL_HANDSHAKE, 1)
    assert isinstance(body, SaslHandshakeResponse) and body.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_sessions_do_not_expire_without_max_reauth_ms() -> None:
    client = ClientConnection(sasl=lambda: PlainClient("alice", "secret"))
    server = _server(max_reauth_ms=0)
    events = _pump(client, server, 0)
    assert all(e.session_lifetime_ms == 0 for e in events if isinstance(e, Authenticated))
    assert client.next_deadline_ms() is None and server.next_deadline_ms() is None


def test_reauthentication_may_not_change_the_principal() -> None:
    users = iter(["alice", "bob"])
    client = ClientConnection(sasl=lambda: PlainClient(next(users), "secret"))
    server = _server(max_reauth_ms=1_000)
    _pump(client, server, 0)
    client.handle_timer(900)
    with pytest.raises(AuthenticationError, match="Cannot change principals") as info:
        _pump(client, server, 900)
    assert info.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert client.state is ClientState.ERROR and server.must_close


def test_without_reauthentication_a_sasl_handshake_after_authentication_is_refused() -> None:
    client = ClientConnection(sasl=lambda: PlainClient("alice", "secret"))
    server = _server(max_reauth_ms=0)
    _pump(client, server, 0)
    server.receive_data(client.send(SaslHandshakeRequest(mechanism="PLAIN"), 1))
    assert server.next_event() is NEED_DATA
    _, body = decode_response(server.data_to_send(), ApiKey.SASL_HANDSHAKE, 1)
    assert isinstance(body, SaslHandshakeResponse) and body.error_code == ErrorCode.ILLEGAL_SASL_STATE
