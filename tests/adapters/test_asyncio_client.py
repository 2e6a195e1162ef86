"""``KafkaClient`` over a real socket: request timeouts come from the connection's
``handle_timer``, run by the client's loop (no ``asyncio.wait_for`` per request)."""

from __future__ import annotations

import asyncio

import pytest

from kafka_wire.adapters.asyncio import KafkaClient, serve
from kafka_wire.codec.structs import Message
from kafka_wire.errors import RequestTimeoutError, UnsupportedVersionError
from kafka_wire.messages import ApiKey, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka_wire.protocol import Request, ServerConfig, ServerSasl, all_api_versions, api_versions_response
from kafka_wire.protocol.sasl import PlainClient, PlainServer


async def _broker(request: Request, peer: tuple[str, int]) -> Message | None:
    """Answers ApiVersions, and Metadata only for topic lists that are not empty."""
    if request.api_key == ApiKey.API_VERSIONS:
        versions = dict(all_api_versions())
        versions.pop(ApiKey.PRODUCE)
        return api_versions_response(versions)
    assert isinstance(request.body, MetadataRequest)
    if request.body.topics == []:
        await asyncio.Event().wait()  # never answers
    return MetadataResponse()


def test_a_request_past_its_timeout_fails_and_closes_the_connection() -> None:
    async def main() -> None:
        async with (
            await serve(_broker) as server,
            await KafkaClient.connect("127.0.0.1", server.port) as client,
        ):
            assert isinstance(client.negotiated and client.negotiated.response, ApiVersionsResponse)
            assert isinstance(await client.request(MetadataRequest(topics=None)), MetadataResponse)
            with pytest.raises(UnsupportedVersionError):  # a question: the connection stays usable
                client.connection.version_for(ApiKey.PRODUCE)
            loop = asyncio.get_running_loop()
            started = loop.time()
            slow = asyncio.ensure_future(client.request(MetadataRequest(topics=[]), timeout_ms=200))
            other = asyncio.ensure_future(client.request(MetadataRequest(topics=None), timeout_ms=10_000))
            with pytest.raises(RequestTimeoutError):
                await slow
            assert 0.15 <= loop.time() - started < 5
            with pytest.raises(TimeoutError):  # pipelined behind it: it fails with the connection
                await other
            with pytest.raises(ConnectionError):
                await client.request(MetadataRequest(topics=None))

    asyncio.run(asyncio.wait_for(main(), 30))


def test_the_client_reauthenticates_from_its_loop() -> None:
    plain = ServerSasl(mechanisms={"PLAIN": lambda: PlainServer(lambda user, password: password == "secret")})
    logins: list[PlainClient] = []

    def mechanism() -> PlainClient:
        logins.append(PlainClient("alice", "secret"))
        return logins[-1]

    async def main() -> None:
        server = await serve(
            _broker, config=ServerConfig(max_reauth_ms=300, min_reauthentication_interval_ms=0), sasl=plain
        )
        async with server, await KafkaClient.connect("127.0.0.1", server.port, sasl=mechanism) as client:
            assert client.authenticated is not None and client.authenticated.session_lifetime_ms == 300
            for _ in range(8):  # 0.8 s: two re-authentications at 270 ms into each session
                assert isinstance(await client.request(MetadataRequest(topics=None)), MetadataResponse)
                await asyncio.sleep(0.1)
            assert client.authenticated.reauthentication and len(logins) >= 3

    asyncio.run(asyncio.wait_for(main(), 30))


def test_the_server_closes_a_session_that_was_not_renewed() -> None:
    plain = ServerSasl(mechanisms={"PLAIN": lambda: PlainServer(lambda user, password: password == "secret")})

    async def main() -> None:
        server = await serve(_broker, config=ServerConfig(max_reauth_ms=200), sasl=plain)
        async with (
            server,
            await KafkaClient.connect(
                "127.0.0.1", server.port, sasl=PlainClient("alice", "secret")
            ) as client,
        ):
            await client.request(MetadataRequest(topics=None))
            await asyncio.sleep(0.5)  # one mechanism object: the client cannot re-authenticate
            with pytest.raises(ConnectionError):
                await client.request(MetadataRequest(topics=None))

    asyncio.run(asyncio.wait_for(main(), 30))
