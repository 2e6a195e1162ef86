"""KafkaClient.request is typed by its request; exchange gives the whole Response event."""

from __future__ import annotations

import asyncio
from typing import assert_type

import pytest

from kafka_wire.adapters.asyncio import KafkaClient, serve
from kafka_wire.codec.runtime import Message
from kafka_wire.messages import ApiKey, MetadataRequest, MetadataResponse
from kafka_wire.protocol import Request, ServerConfig, api_versions_response

VERSIONS: dict[int, tuple[int, int]] = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 12)}


async def _answer(request: Request, peer: tuple[str, int]) -> Message:
    if request.api_key == ApiKey.API_VERSIONS:
        return api_versions_response(VERSIONS)
    return MetadataResponse(cluster_id="typed")


class _NotAMessage:
    """Has the type-level link of a request, but is no message the connection can send."""

    def response_class(self) -> type[MetadataResponse]:
        return MetadataResponse


def test_request_returns_the_response_body_of_its_class_and_exchange_the_event() -> None:
    async def main() -> None:
        async with await serve(_answer, config=ServerConfig(api_versions=VERSIONS)) as server:
            async with await KafkaClient.connect("127.0.0.1", server.port) as client:
                body = await client.request(MetadataRequest())
                assert isinstance(assert_type(body, MetadataResponse), MetadataResponse)
                assert body.cluster_id == "typed"
                event = await client.exchange(MetadataRequest(), 9)
                assert isinstance(event.body, MetadataResponse) and event.api_version == 9
                assert event.header is not None and event.correlation_id == event.header.correlation_id
                with pytest.raises(TypeError, match="_NotAMessage"):
                    await client.request(_NotAMessage())

    asyncio.run(asyncio.wait_for(main(), 30))
