"""Envelope (KIP-590): a broker's forwarded request with the client's principal.

A Kafka broker forwards the admin requests it does not answer to the active controller inside an
EnvelopeRequest: the client's request (header and body, as the client sent them), its principal
(``DefaultKafkaPrincipalBuilder``'s serialization: an int16 version, then DefaultPrincipalData v0:
type, name, token-authenticated) and its address. The controller answers in an EnvelopeResponse
holding the serialized response (header and body) at the client's version. kafka_wire's brokers
forward this way the requests whose controller part needs the principal: the delegation tokens'
(:func:`seal_request`); the others travel bare (``apis/forward.py``).

:func:`serve_envelope` is the controller's side: an envelope it cannot open is answered with the
envelope's error (INVALID_REQUEST for a request that does not decode or is not a controller API
that takes a principal, PRINCIPAL_DESERIALIZATION_FAILURE for a principal that does not).
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.controller.tokens_image import Principal
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, KafkaWireError
from kafka_wire.messages import (
    DefaultPrincipalData,
    EnvelopeRequest,
    EnvelopeResponse,
    ErrorCode,
    RequestHeader,
    ResponseHeader,
)
from kafka_wire.protocol.framing import decode_request, decode_response, encode_request, encode_response

if TYPE_CHECKING:
    from kafka_wire.broker.state import Waiting

_VERSION: Final = struct.Struct(">h")
#: The address an envelope names when the client's is not an IP address (a test's "client").
_NO_ADDRESS: Final = bytes(4)


@dataclass(frozen=True, slots=True)
class Opened:
    """An envelope's request and principal."""

    api_key: int
    api_version: int
    correlation_id: int
    body: Message
    principal: Principal
    token_authenticated: bool


def serialize_principal(principal: Principal, token_authenticated: bool) -> bytes:
    data = DefaultPrincipalData(type=principal[0], name=principal[1], token_authenticated=token_authenticated)
    return _VERSION.pack(0) + data.encode(0)


def seal_request(
    body: Message, api_version: int, principal: Principal, token_authenticated: bool, client_host: str
) -> EnvelopeRequest:
    """The envelope of a client's request (at the client's version)."""
    frame = encode_request(RequestHeader(client_id="kafka-wire"), body, api_version)
    try:
        address = ipaddress.ip_address(client_host).packed
    except ValueError:
        address = _NO_ADDRESS
    return EnvelopeRequest(
        request_data=frame[4:],
        request_principal=serialize_principal(principal, token_authenticated),
        client_host_address=address,
    )


def open_response(envelope: Message | None, api_key: int, api_version: int) -> Message | int | None:
    """The controller's answer inside ``envelope``: the response, or the envelope's error code
    (None: no envelope, or one that does not decode)."""
    if not isinstance(envelope, EnvelopeResponse):
        return None
    if envelope.error_code:
        return envelope.error_code
    if envelope.response_data is None:
        return None
    data = envelope.response_data
    try:
        _, body = decode_response(len(data).to_bytes(4, "big") + data, api_key, api_version)
    except KafkaWireError:
        return None
    return body


def serve_envelope(
    envelope: EnvelopeRequest,
    accepts: Callable[[int], bool],
    handle: Callable[[Opened], Message | Waiting],
) -> Message | Waiting:
    """The controller's answer to ``envelope``: ``handle`` answers the request inside (when
    ``accepts`` its api key), and its answer is sealed in an EnvelopeResponse."""
    data = envelope.request_data
    try:
        header, body = decode_request(len(data).to_bytes(4, "big") + data)
    except (DecodeError, KafkaWireError):
        return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
    if not accepts(header.request_api_key):
        return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
    principal = _principal(envelope.request_principal)
    if principal is None:
        return EnvelopeResponse(error_code=ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)
    opened = Opened(
        api_key=header.request_api_key,
        api_version=header.request_api_version,
        correlation_id=header.correlation_id,
        body=body,
        principal=(principal.type, principal.name),
        token_authenticated=principal.token_authenticated,
    )
    answer = handle(opened)
    if isinstance(answer, Message):
        return seal_response(answer, opened)
    return _Sealed(answer, opened)


def seal_response(body: Message, opened: Opened) -> EnvelopeResponse:
    frame = encode_response(ResponseHeader(correlation_id=opened.correlation_id), body, opened.api_version)
    return EnvelopeResponse(response_data=frame[4:])


def _principal(data: bytes | None) -> DefaultPrincipalData | None:
    if data is None or len(data) < 2:
        return None
    (version,) = _VERSION.unpack_from(data, 0)
    if version != 0:
        return None
    try:
        principal, end = DefaultPrincipalData.decode_from(data, 2, 0)
    except DecodeError:
        return None
    return principal if end == len(data) else None


class _Sealed:
    """A held controller answer, sealed in an EnvelopeResponse once it is ready (a Waiting)."""

    def __init__(self, inner: Waiting, opened: Opened) -> None:
        self._inner = inner
        self._opened = opened
        self.deadline_ms = inner.deadline_ms

    def poll(self, now_ms: int) -> Message | None:
        body = self._inner.poll(now_ms)
        self.deadline_ms = self._inner.deadline_ms
        if body is None:
            return None
        assert isinstance(body, Message)  # a controller answer is never spliced
        return seal_response(body, self._opened)
