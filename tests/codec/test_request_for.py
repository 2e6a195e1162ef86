"""Each request class names its response class, for the type checker and at run time."""

from __future__ import annotations

from typing import TypeVar

from kafka_wire.messages import REQUESTS, RESPONSES, MetadataRequest, MetadataResponse, RequestFor, catalog

R = TypeVar("R")


def response_of(request: RequestFor[R]) -> type[R]:
    return request.response_class()


def test_every_request_names_its_response() -> None:
    for api in catalog():
        request = REQUESTS[api.api_key]()
        assert request.response_class() is RESPONSES[api.api_key], api.name  # type: ignore[attr-defined]


def test_the_link_is_typed() -> None:
    cls: type[MetadataResponse] = response_of(MetadataRequest())
    assert cls(throttle_time_ms=5).throttle_time_ms == 5
