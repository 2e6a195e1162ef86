"""The connection state machines: every (state, call) pair, and random call sequences.

A call is legal exactly when the (state, input) pair of the event it makes is in the transition
table; an illegal call raises LocalProtocolError and leaves the connection in ERROR, where every
later call fails too (``close`` excepted: closing is always allowed). ``next_event`` is legal in
every state but ERROR.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafka_wire.errors import AuthenticationError, LocalProtocolError, RemoteProtocolError
from kafka_wire.messages import ApiKey, MetadataRequest, MetadataResponse, ProduceRequest
from kafka_wire.protocol import (
    CLIENT_TRANSITIONS,
    NEED_DATA,
    SERVER_TRANSITIONS,
    ClientConfig,
    ClientConnection,
    ClientInput,
    ClientState,
    Request,
    RequestTimedOut,
    Response,
    ServerConfig,
    ServerConnection,
    ServerInput,
    ServerSasl,
    ServerState,
    UnsupportedRequest,
    api_versions_response,
)

VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.METADATA: (0, 12),
    ApiKey.PRODUCE: (3, 9),
}


class _EchoClient:
    """A one-round mechanism: enough to put a client in AUTHENTICATING."""

    name = "TEST"
    complete = False

    def initial_response(self) -> bytes:
        return b"hello"

    def step(self, challenge: bytes) -> bytes | None:
        self.complete = True
        return None


class _EchoServer:
    name = "TEST"
    complete = False
    principal = ""
    credential_expires_ms = None

    def step(self, response: bytes) -> bytes:
        self.complete, self.principal = True, response.decode("ascii", "replace")
        return b""


def pump(client: ClientConnection, server: ServerConnection) -> None:
    """Carry bytes both ways until neither side has anything to say."""
    for _ in range(8):
        server.receive_data(client.data_to_send())
        while server.next_event() is not NEED_DATA:
            pass
        client.receive_data(server.data_to_send())
        while client.next_event() is not NEED_DATA:
            pass


def reauthenticating_pair() -> tuple[ClientConnection, ServerConnection]:
    """A client re-authenticating (KIP-368) and its server once it has read the new SaslHandshake."""
    client = ClientConnection(ClientConfig(negotiate=False), sasl=_EchoClient)
    sasl = ServerSasl(mechanisms={"TEST": _EchoServer})
    server = ServerConnection(
        ServerConfig(api_versions=VERSIONS, max_reauth_ms=1000, min_reauthentication_interval_ms=0), sasl=sasl
    )
    pump(client, server)
    assert (client.state, server.state) == (ClientState.READY, ServerState.READY)
    assert client.next_deadline_ms() == 900
    client.handle_timer(900)
    server.receive_data(client.data_to_send())
    assert server.next_event() is NEED_DATA
    assert (client.state, server.state) == (ClientState.REAUTHENTICATING, ServerState.REAUTHENTICATING)
    return client, server


def _client_in(state: ClientState) -> ClientConnection:
    if state is ClientState.REAUTHENTICATING:
        return reauthenticating_pair()[0]
    if state is ClientState.NEGOTIATING:
        return ClientConnection()
    if state is ClientState.AUTHENTICATING:
        return ClientConnection(ClientConfig(negotiate=False), sasl=_EchoClient())
    conn = ClientConnection(ClientConfig(negotiate=False))
    if state is ClientState.CLOSED:
        conn.close()
    elif state is ClientState.ERROR:
        conn.close()
        with pytest.raises(LocalProtocolError):
            conn.send(MetadataRequest())
    assert conn.state is state
    return conn


CLIENT_CALLS: dict[ClientInput, Callable[[ClientConnection], object]] = {
    ClientInput.REQUEST_SENT: lambda c: c.send(MetadataRequest(), 9),
    ClientInput.DATA_RECEIVED: lambda c: c.receive_data(b""),
    ClientInput.EOF_RECEIVED: lambda c: c.receive_eof(),
    ClientInput.CLOSE: lambda c: c.close(),
}


@pytest.mark.parametrize("state", list(ClientState), ids=lambda s: s.name)
@pytest.mark.parametrize("move", list(CLIENT_CALLS), ids=lambda m: m.name)
def test_every_client_state_and_call(state: ClientState, move: ClientInput) -> None:
    conn = _client_in(state)
    if (state, move) in CLIENT_TRANSITIONS or (state, move) == (ClientState.ERROR, ClientInput.CLOSE):
        CLIENT_CALLS[move](conn)
        assert conn.state is CLIENT_TRANSITIONS.get((state, move), ClientState.ERROR)
    else:
        with pytest.raises(LocalProtocolError, match=f"in state {state.name}"):
            CLIENT_CALLS[move](conn)
        assert conn.state is ClientState.ERROR


@pytest.mark.parametrize("state", list(ClientState), ids=lambda s: s.name)
def test_client_next_event_is_legal_but_in_error(state: ClientState) -> None:
    conn = _client_in(state)
    if state is ClientState.ERROR:
        with pytest.raises(LocalProtocolError, match="in state ERROR"):
            conn.next_event()
    else:
        assert conn.next_event() is NEED_DATA or state is ClientState.CLOSED
        assert conn.state is state


def _server_in(state: ServerState) -> ServerConnection:
    if state is ServerState.REAUTHENTICATING:
        return reauthenticating_pair()[1]
    sasl = ServerSasl(mechanisms={"TEST": _EchoServer})
    gated = state in (ServerState.AWAITING_HANDSHAKE, ServerState.AUTHENTICATING, ServerState.AWAITING_TOKEN)
    conn = ServerConnection(ServerConfig(api_versions=VERSIONS), sasl=sasl if gated else None)
    if state in (ServerState.AUTHENTICATING, ServerState.AWAITING_TOKEN):
        client = ClientConnection(
            ClientConfig(
                negotiate=False, sasl_handshake_version=0 if state is ServerState.AWAITING_TOKEN else 1
            ),
            sasl=_EchoClient(),
        )
        conn.receive_data(client.data_to_send())
        assert conn.next_event() is NEED_DATA
    elif state is ServerState.MUST_CLOSE:
        conn.receive_data(b"\x00\x00\x00\x08\x03\xe7\x00\x00\x00\x00\x00\x01")  # api 999
        event = conn.next_event()
        assert isinstance(event, UnsupportedRequest)
        conn.reject(event)
    elif state is ServerState.CLOSED:
        conn.close()
    elif state is ServerState.ERROR:
        conn.close()
        with pytest.raises(LocalProtocolError):
            conn.reject(UnsupportedRequest(api_key=1, api_version=0, correlation_id=0, reason=""))
    assert conn.state is state
    return conn


SERVER_CALLS: dict[ServerInput, Callable[[ServerConnection], object]] = {
    ServerInput.DATA_RECEIVED: lambda c: c.receive_data(b""),
    ServerInput.EOF_RECEIVED: lambda c: c.receive_eof(),
    ServerInput.CLOSE: lambda c: c.close(),
}


@pytest.mark.parametrize("state", list(ServerState), ids=lambda s: s.name)
@pytest.mark.parametrize("move", list(SERVER_CALLS), ids=lambda m: m.name)
def test_every_server_state_and_call(state: ServerState, move: ServerInput) -> None:
    conn = _server_in(state)
    if (state, move) in SERVER_TRANSITIONS or (state, move) == (ServerState.ERROR, ServerInput.CLOSE):
        SERVER_CALLS[move](conn)
        assert conn.state is SERVER_TRANSITIONS.get((state, move), ServerState.ERROR)
    else:
        with pytest.raises(LocalProtocolError, match=f"in state {state.name}"):
            SERVER_CALLS[move](conn)
        assert conn.state is ServerState.ERROR


@pytest.mark.parametrize("state", list(ServerState), ids=lambda s: s.name)
def test_send_is_legal_only_in_open_states(state: ServerState) -> None:
    conn = _server_in(state)
    response = Response(body=MetadataResponse(), api_key=ApiKey.METADATA, api_version=9, correlation_id=0)
    with pytest.raises(LocalProtocolError):  # no request awaits it, so it fails either way...
        conn.send(response)
    assert conn.state is ServerState.ERROR
    legal = (state, ServerInput.RESPONSE_SENT) in SERVER_TRANSITIONS
    expected = "no request with correlation id 0" if legal else "allowed in state"
    conn = _server_in(state)
    with pytest.raises(LocalProtocolError, match=expected):  # ...but for the reason the table gives
        conn.send(response)


T = TypeVar("T")


def _guarded(conn: ClientConnection | ServerConnection, legal: bool, call: Callable[[], T]) -> T | None:
    """Run ``call``; check it fails with LocalProtocolError exactly when it is illegal."""
    try:
        result = call()
    except LocalProtocolError:
        assert not legal, "a legal call raised LocalProtocolError"
        assert conn.state.name == "ERROR"
        return None
    except (RemoteProtocolError, AuthenticationError):
        assert conn.state.name == "ERROR"
        return None
    assert legal, "an illegal call did not raise"
    return result


class ClientMachine(RuleBasedStateMachine):
    """Random calls on a client talking to a scripted broker."""

    def __init__(self) -> None:
        super().__init__()
        self.conn = ClientConnection(
            ClientConfig(api_versions_version=3, request_timeout_ms=100, max_in_flight=2)
        )
        self.broker = ServerConnection(ServerConfig(api_versions=VERSIONS))
        self.now = 0
        self.timed_out = False
        self.to_client = bytearray()
        self.eof = False
        self.sent: list[int] = []
        self.answered: list[int] = []
        self._pass(self.conn.data_to_send())

    def _pass(self, data: bytes) -> None:
        """Let the broker answer every request it can read."""
        self.broker.receive_data(data)
        while isinstance(event := self.broker.next_event(), Request):
            if isinstance(event.body, MetadataRequest):
                self.to_client += self.broker.send(
                    event.reply(MetadataResponse(throttle_time_ms=event.correlation_id))
                )
            elif event.api_key == ApiKey.API_VERSIONS:
                self.to_client += self.broker.send(event.reply(api_versions_response(VERSIONS)))

    def _legal(self, move: ClientInput) -> bool:
        return (self.conn.state, move) in CLIENT_TRANSITIONS

    @rule(acks=st.sampled_from([0, 1]))
    def send(self, acks: int) -> None:
        legal = self._legal(ClientInput.REQUEST_SENT)
        request = MetadataRequest() if acks else ProduceRequest(acks=0)
        data = _guarded(self.conn, legal, lambda: self.conn.send(request, now_ms=self.now))
        if isinstance(data, bytes):
            if acks:
                self.sent.append(len(self.sent))
            self._pass(data)

    @rule(size=st.integers(1, 64))
    def deliver(self, size: int) -> None:
        chunk, self.to_client[:size] = bytes(self.to_client[:size]), b""
        legal = self._legal(ClientInput.DATA_RECEIVED) and not self.eof
        _guarded(self.conn, legal, lambda: self.conn.receive_data(chunk))

    @rule(junk=st.binary(min_size=1, max_size=12))
    def garbage(self, junk: bytes) -> None:
        legal = self._legal(ClientInput.DATA_RECEIVED) and not self.eof
        _guarded(self.conn, legal, lambda: self.conn.receive_data(junk))

    @rule()
    def next_event(self) -> None:
        event = _guarded(self.conn, self.conn.state is not ClientState.ERROR, self.conn.next_event)
        if isinstance(event, Response):
            assert isinstance(event.body, MetadataResponse)
            self.answered.append(event.body.throttle_time_ms)
        elif isinstance(event, RequestTimedOut):
            assert self.conn.state is ClientState.CLOSED
            self.timed_out = True
        self._pass(self.conn.data_to_send())  # held requests leave as responses arrive

    @rule(elapsed=st.integers(0, 150))
    def time_passes(self, elapsed: int) -> None:
        self.now += elapsed
        deadline = self.conn.next_deadline_ms()
        legal = self.conn.state is not ClientState.ERROR
        _guarded(self.conn, legal, lambda: self.conn.handle_timer(self.now))
        if legal and deadline is not None and deadline <= self.now:
            assert self.conn.state is ClientState.CLOSED  # a request timed out: the connection closed

    @rule()
    def receive_eof(self) -> None:
        legal = self._legal(ClientInput.EOF_RECEIVED)
        _guarded(self.conn, legal, self.conn.receive_eof)
        self.eof = self.eof or legal

    @precondition(lambda self: self.conn.state is not ClientState.ERROR)
    @rule()
    def close(self) -> None:
        _guarded(self.conn, self._legal(ClientInput.CLOSE), self.conn.close)

    @invariant()
    def in_flight_stays_within_the_limit(self) -> None:
        users = sum(1 for f in self.conn._requests.in_flight if f.kind.name == "USER")
        assert users <= 2

    @invariant()
    def responses_arrive_in_order(self) -> None:
        # The broker echoes each Metadata's correlation id: they must come back sorted, once each.
        assert self.answered == sorted(set(self.answered))

    @invariant()
    def error_is_final(self) -> None:
        if self.conn.state is ClientState.ERROR:
            for call in (self.conn.next_event, lambda: self.conn.receive_data(b"")):
                with pytest.raises(LocalProtocolError):
                    call()


class ServerMachine(RuleBasedStateMachine):
    """Random calls on a server fed by a real client; responses always leave in request order."""

    def __init__(self) -> None:
        super().__init__()
        self.conn = ServerConnection(ServerConfig(api_versions=VERSIONS))
        self.client = ClientConnection(ClientConfig(negotiate=False))
        self.pending: list[Request] = []
        self.out = bytearray()
        self.eof = False

    def _legal(self, move: ServerInput) -> bool:
        return (self.conn.state, move) in SERVER_TRANSITIONS

    @rule(acks=st.sampled_from([0, 1]), version=st.integers(0, 14))
    def client_sends(self, acks: int, version: int) -> None:
        request = MetadataRequest(topics=[]) if acks else ProduceRequest(acks=0)
        frame = self.client.send(request, min(version, 13) if acks else 9)
        legal = self._legal(ServerInput.DATA_RECEIVED) and not self.eof
        _guarded(self.conn, legal, lambda: self.conn.receive_data(frame))

    @rule(junk=st.binary(min_size=1, max_size=12))
    def garbage(self, junk: bytes) -> None:
        legal = self._legal(ServerInput.DATA_RECEIVED) and not self.eof
        _guarded(self.conn, legal, lambda: self.conn.receive_data(junk))

    @rule()
    def next_event(self) -> None:
        event = _guarded(self.conn, self.conn.state is not ServerState.ERROR, self.conn.next_event)
        if isinstance(event, Request) and event.expects_response:
            self.pending.append(event)
        elif isinstance(event, UnsupportedRequest):
            data = _guarded(
                self.conn, self._legal(ServerInput.RESPONSE_SENT), lambda: self.conn.reject(event)
            )
            self.out += data if isinstance(data, bytes) else b""

    @precondition(lambda self: bool(self.pending))
    @rule(pick=st.integers(0, 100))
    def answer(self, pick: int) -> None:
        request = self.pending.pop(pick % len(self.pending))
        body = MetadataResponse(throttle_time_ms=request.correlation_id)
        legal = self._legal(ServerInput.RESPONSE_SENT)
        data = _guarded(self.conn, legal, lambda: self.conn.send(request.reply(body)))
        if isinstance(data, bytes):
            self.out += data

    @rule()
    def receive_eof(self) -> None:
        legal = self._legal(ServerInput.EOF_RECEIVED)
        _guarded(self.conn, legal, self.conn.receive_eof)
        self.eof = self.eof or legal

    @precondition(lambda self: self.conn.state is not ServerState.ERROR)
    @rule()
    def close(self) -> None:
        _guarded(self.conn, self._legal(ServerInput.CLOSE), self.conn.close)

    @invariant()
    def written_responses_follow_request_order(self) -> None:
        ids: list[int] = []
        pos = 0
        while pos + 8 <= len(self.out):
            size = int.from_bytes(self.out[pos : pos + 4], "big")
            ids.append(int.from_bytes(self.out[pos + 4 : pos + 8], "big", signed=True))
            pos += 4 + size
        assert ids == sorted(ids)

    @invariant()
    def responses_owed_counts_the_unanswered_requests(self) -> None:
        assert self.conn.responses_owed == sum(1 for slot in self.conn._responses.slots if slot.data is None)


TestClientMachine = ClientMachine.TestCase
TestServerMachine = ServerMachine.TestCase
