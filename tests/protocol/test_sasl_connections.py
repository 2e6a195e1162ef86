"""SASL through the connections: a ClientConnection and a gated ServerConnection authenticate each
other with PLAIN and SCRAM over SaslHandshake v1 (SaslAuthenticate) and v0 (raw tokens); wrong
passwords fail clearly on both sides. Every byte stream is also fed in every chunking."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable

import pytest

from kafka_wire.adapters.asyncio import KafkaClient, serve
from kafka_wire.errors import AuthenticationError, RemoteProtocolError
from kafka_wire.messages import ApiKey, ErrorCode, MetadataRequest, MetadataResponse
from kafka_wire.protocol import (
    NEED_DATA,
    Authenticated,
    AuthenticationFailed,
    ClientConfig,
    ClientConnection,
    ClientState,
    Request,
    ServerConfig,
    ServerConnection,
    ServerSasl,
    ServerState,
    UnsupportedRequest,
    VersionsNegotiated,
    api_versions_response,
)
from kafka_wire.protocol.sasl import PlainClient, PlainServer, ScramClient, ScramCredential, ScramServer
from kafka_wire.protocol.sasl.base import SaslClientMechanism
from tests.protocol.chunking import fed

VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.METADATA: (0, 12),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}
USERS = {"alice": "alice-secret", "bob=,x": "b0b"}


def credential(mechanism: str, password: str) -> ScramCredential:
    return ScramCredential.from_password(
        mechanism, password, hashlib.sha256(password.encode()).digest(), 4096
    )


def gate() -> ServerSasl:
    scram = {m: {u: credential(m, p) for u, p in USERS.items()} for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}
    return ServerSasl(
        mechanisms={
            "PLAIN": lambda: PlainServer(lambda user, password: USERS.get(user) == password),
            "SCRAM-SHA-256": lambda: ScramServer(
                "SCRAM-SHA-256", scram["SCRAM-SHA-256"].get, "server-nonce-256"
            ),
            "SCRAM-SHA-512": lambda: ScramServer(
                "SCRAM-SHA-512", scram["SCRAM-SHA-512"].get, "server-nonce-512"
            ),
        }
    )


def mechanism(name: str, user: str, password: str) -> SaslClientMechanism:
    if name == "PLAIN":
        return PlainClient(user, password)
    return ScramClient(name, user, password, "client-nonce")


class Pair:
    """A client and a gated server wired back to back; the server answers ApiVersions and Metadata."""

    def __init__(self, make_client: Callable[[], ClientConnection]) -> None:
        self.client = make_client()
        self.server = ServerConnection(ServerConfig(api_versions=VERSIONS), sasl=gate())
        self.client_events: list[object] = []
        self.server_events: list[object] = []

    def run(self, first: bytes = b"") -> None:
        """Shuttle bytes (starting with ``first`` from the client) until both sides are quiet."""
        for _ in range(20):
            data, first = first + self.client.data_to_send(), b""
            if data:
                self.server.receive_data(data)
            reply = b""
            while (event := self.server.next_event()) is not NEED_DATA:
                self.server_events.append(event)
                if isinstance(event, Request):
                    body = (
                        api_versions_response(VERSIONS)
                        if event.api_key == ApiKey.API_VERSIONS
                        else MetadataResponse()
                    )
                    reply += self.server.send(event.reply(body))
                elif isinstance(event, UnsupportedRequest):
                    reply += self.server.reject(event)
                if self.server.must_close:
                    break
            reply += self.server.data_to_send()
            if not data and not reply:
                return
            if reply:
                self.client.receive_data(reply)
            while (answer := self.client.next_event()) is not NEED_DATA:
                self.client_events.append(answer)


@pytest.mark.parametrize("name", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("handshake", [None, 0], ids=["handshake-v1", "handshake-v0"])
@pytest.mark.parametrize("user", list(USERS))
def test_client_and_server_authenticate_each_other(name: str, handshake: int | None, user: str) -> None:
    pair = Pair(
        lambda: ClientConnection(
            ClientConfig(sasl_handshake_version=handshake), sasl=mechanism(name, user, USERS[user])
        )
    )
    pair.run()
    assert [type(e) for e in pair.client_events] == [VersionsNegotiated, Authenticated]
    assert pair.client.state is ClientState.READY
    server_auth = [e for e in pair.server_events if isinstance(e, Authenticated)]
    assert server_auth == [Authenticated(mechanism=name, principal=user)]
    assert pair.server.state is ServerState.READY and pair.server.principal == user
    # Now requests flow.
    pair.run(pair.client.send(MetadataRequest()))
    assert type(pair.client_events[-1]).__name__ == "Response"


@pytest.mark.parametrize("name", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_fails_clearly_on_both_sides(name: str) -> None:
    pair = Pair(lambda: ClientConnection(sasl=mechanism(name, "alice", "not-her-password")))
    with pytest.raises(AuthenticationError) as failure:
        pair.run()
    assert failure.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert str(failure.value).startswith("Authentication failed: ")  # the broker's message, passed on
    assert "invalid" in str(failure.value).lower()
    assert pair.client.state is ClientState.ERROR
    [failed] = [e for e in pair.server_events if isinstance(e, AuthenticationFailed)]
    assert failed.mechanism == name and failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert pair.server.must_close


def test_wrong_password_over_raw_tokens_closes_without_an_answer() -> None:
    pair = Pair(
        lambda: ClientConnection(
            ClientConfig(sasl_handshake_version=0), sasl=mechanism("SCRAM-SHA-256", "alice", "x")
        )
    )
    pair.run()
    assert any(isinstance(e, AuthenticationFailed) for e in pair.server_events)
    assert pair.server.must_close
    pair.client.receive_eof()
    closed = pair.client.next_event()
    assert type(closed).__name__ == "ConnectionClosed"


def test_a_mechanism_the_server_does_not_enable_is_refused() -> None:
    class Other:
        name = "GSSAPI"
        complete = False

        def initial_response(self) -> bytes:
            return b""

        def step(self, challenge: bytes) -> bytes | None:
            return None

    pair = Pair(lambda: ClientConnection(sasl=Other()))
    with pytest.raises(
        AuthenticationError, match=r"refused SASL mechanism GSSAPI.*PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
    ):
        pair.run()


def test_requests_before_authentication_close_the_connection() -> None:
    server = ServerConnection(ServerConfig(api_versions=VERSIONS), sasl=gate())
    client = ClientConnection(ClientConfig(negotiate=False))
    server.receive_data(client.send(MetadataRequest(), 9))
    with pytest.raises(
        RemoteProtocolError, match="MetadataRequest is not allowed in state AWAITING_HANDSHAKE"
    ):
        server.next_event()


def test_the_whole_server_side_exchange_is_identical_in_every_chunking() -> None:
    """Record what a client sends during a SCRAM login, then replay it to fresh servers in pieces."""
    pair = Pair(
        lambda: ClientConnection(
            ClientConfig(api_versions_version=3), sasl=mechanism("SCRAM-SHA-256", "alice", USERS["alice"])
        )
    )
    sent = bytearray()
    original = pair.client.data_to_send

    def tap() -> bytes:
        data = original()
        sent.extend(data)
        return data

    pair.client.data_to_send = tap  # type: ignore[method-assign]  # record the client's bytes
    pair.run()
    assert any(isinstance(e, Authenticated) for e in pair.client_events)

    def make() -> ServerConnection:
        return ServerConnection(ServerConfig(api_versions=VERSIONS), sasl=gate())

    # Responses wait behind the ApiVersions answer, which is the application's to give.
    outputs = []
    for conn, events in fed(make, bytes(sent)):
        assert [type(e).__name__ for e in events] == ["Request", "Authenticated"]
        request = events[0]
        assert isinstance(request, Request)
        outputs.append(conn.send(request.reply(api_versions_response(VERSIONS))))
    assert outputs[0] and all(o == outputs[0] for o in outputs)


def test_asyncio_client_and_server_authenticate_with_scram() -> None:
    async def handler(request: Request, peer: tuple[str, int]) -> object:
        if request.api_key == ApiKey.API_VERSIONS:
            return api_versions_response(VERSIONS)
        return MetadataResponse(cluster_id="sasl-ok")

    async def main() -> None:
        async with await serve(handler, config=ServerConfig(api_versions=VERSIONS), sasl=gate()) as server:  # type: ignore[arg-type]
            client = await KafkaClient.connect(
                "127.0.0.1", server.port, sasl=ScramClient("SCRAM-SHA-512", "alice", USERS["alice"], "abc123")
            )
            async with client:
                assert client.authenticated is not None and client.authenticated.mechanism == "SCRAM-SHA-512"
                reply = await client.request(MetadataRequest())
                assert isinstance(reply, MetadataResponse) and reply.cluster_id == "sasl-ok"
            with pytest.raises(AuthenticationError):
                await KafkaClient.connect("127.0.0.1", server.port, sasl=PlainClient("alice", "wrong"))

    asyncio.run(asyncio.wait_for(main(), 30))
