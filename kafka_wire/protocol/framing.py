"""Size-prefixed frames: request and response headers plus bodies.

A frame is an int32 size followed by that many bytes: the header, then the body. Header versions
follow Kafka's rules (``request_header_version`` / ``response_header_version``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

from kafka_wire.codec.runtime import Output, encode_message_into
from kafka_wire.codec.structs import Message
from kafka_wire.errors import EncodeError, InvalidValueError, TruncatedError, UnsupportedApiError
from kafka_wire.messages import REQUESTS, RESPONSES, ApiKey, RequestHeader, ResponseHeader
from kafka_wire.quick_dataclass import dataclass

_SIZE: Final = struct.Struct(">i")
_KEY_VERSION_CORRELATION: Final = struct.Struct(">hhi")
_INT16: Final = struct.Struct(">h")

Buffer = bytes | bytearray | memoryview


def request_header_version(api_key: int, api_version: int) -> int:
    """RequestHeader v2 for flexible versions, v1 otherwise, v0 for ControlledShutdown v0."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    cls = REQUESTS.get(api_key)
    return 2 if cls is not None and api_version in cls.FLEXIBLE_VERSIONS else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """ResponseHeader v1 for flexible versions, v0 otherwise; ApiVersions is always v0 (KIP-511)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    cls = RESPONSES.get(api_key)
    return 1 if cls is not None and api_version in cls.FLEXIBLE_VERSIONS else 0


@dataclass(frozen=True, slots=True)
class RequestFrame:
    """A decoded request frame, with any bytes the client sent after the body."""

    header: RequestHeader
    body: Message
    trailing: bytes = b""


def _frame(
    header: Message, header_version: int, body: Message, version: int, trailing: Buffer = b""
) -> bytes:
    out = bytearray(4)
    header.encode_into(out, header_version)
    body.encode_into(out, version)
    out += trailing
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_request(header: RequestHeader, body: Message, version: int, *, trailing: Buffer = b"") -> bytes:
    """A size-prefixed request frame; the header's api key and version are taken from ``body``.

    ``trailing`` bytes are written after the body (to reproduce a frame exactly, see
    :func:`decode_request_frame`).
    """
    if body.KIND != "request" or body.API_KEY is None:
        raise EncodeError(f"{type(body).__name__} is not a request", version=version)
    header_version = request_header_version(body.API_KEY, version)
    # Header v0 (ControlledShutdown v0) has no client id; Kafka's writer drops it.
    client_id = header.client_id if header_version > 0 else ""
    if (header.request_api_key, header.request_api_version, header.client_id) != (
        body.API_KEY,
        version,
        client_id,
    ):
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=header.correlation_id,
            client_id=client_id,
            unknown_tagged_fields=header.unknown_tagged_fields,
        )
    return _frame(header, header_version, body, version, trailing)


def encode_response(header: ResponseHeader, body: Message, version: int) -> bytes:
    """A size-prefixed response frame."""
    if body.KIND != "response" or body.API_KEY is None:
        raise EncodeError(f"{type(body).__name__} is not a response", version=version)
    return _frame(header, response_header_version(body.API_KEY, version), body, version)


def encode_response_spliced(
    header: ResponseHeader, body: Message, version: int, splices: Sequence[tuple[bytes, Sequence[object]]]
) -> list[object]:
    """A size-prefixed response frame as parts: each ``(placeholder, parts)`` pair puts ``parts``
    where the records payload ``placeholder`` (the very object, in a records field of ``body``)
    lands. The encoder records each records payload's position, so nothing is searched for;
    ``parts`` must stand for ``len(placeholder)`` bytes. Raises :class:`EncodeError` when a
    placeholder is not in the encoded body."""
    if body.KIND != "response" or body.API_KEY is None:
        raise EncodeError(f"{type(body).__name__} is not a response", version=version)
    wanted = {id(placeholder): parts for placeholder, parts in splices}
    out = Output(4)
    out.keep_from = 1  # every records payload is kept aside, with its position
    header.encode_into(out, response_header_version(body.API_KEY, version))
    encode_message_into(body, out, version)  # the pure encoder or the interpreter: they record the positions
    kept = out.payloads or []
    _SIZE.pack_into(out, 0, len(out) - 4 + sum(len(payload) for _, payload in kept))
    parts: list[object] = []
    start = 0
    for at, payload in kept:
        parts.append(bytes(out[start:at]))
        replacement = wanted.pop(id(payload), None)
        if replacement is None:
            parts.append(bytes(payload))
        else:
            parts.extend(replacement)
        start = at
    parts.append(bytes(out[start:]))
    if wanted:
        raise EncodeError(
            f"{len(wanted)} splice placeholder(s) are not records of the response", version=version
        )
    return parts


def produce_acks(frame: Buffer, pos: int, api_version: int) -> int:
    """The ``acks`` of a Produce request whose body starts at ``pos``, read without decoding the
    body: it follows the transactional id (v3+: a nullable string, compact from v9)."""
    if api_version >= 9:
        length, shift = 0, 0
        while True:  # an unsigned varint: the length plus one, 0 for null
            if pos >= len(frame) or shift > 28:
                raise TruncatedError("a Produce request ends in its transactional id", offset=pos)
            byte = frame[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        pos += max(length - 1, 0)
    elif api_version >= 3:
        if pos + 2 > len(frame):
            raise TruncatedError("a Produce request ends in its transactional id", offset=pos)
        (length,) = _INT16.unpack_from(frame, pos)
        pos += 2 + max(length, 0)
    if pos + 2 > len(frame):
        raise TruncatedError("a Produce request ends before its acks", offset=pos)
    acks: int = _INT16.unpack_from(frame, pos)[0]
    return acks


def _open_frame(frame: Buffer) -> bytes:
    data = frame if type(frame) is bytes else bytes(frame)
    if len(data) < 4:
        raise TruncatedError("a frame needs a 4-byte size", offset=0)
    (size,) = _SIZE.unpack_from(data, 0)
    if size != len(data) - 4:
        error = TruncatedError if size > len(data) - 4 else InvalidValueError
        raise error(f"frame size says {size} bytes, {len(data) - 4} follow", offset=0)
    return data


def _check_end(data: bytes, end: int, strict: bool, api_key: int, version: int, name: str) -> None:
    if strict and end != len(data):
        raise InvalidValueError(
            f"{len(data) - end} bytes left after the body",
            offset=end,
            api_key=api_key,
            version=version,
            message=name,
        )


def decode_request(frame: Buffer, *, strict: bool = False) -> tuple[RequestHeader, Message]:
    """Decode a size-prefixed request frame; the api key and version come from its header.

    Bytes after the body are accepted, as Kafka accepts them (librdkafka sends some), unless
    ``strict``.
    """
    decoded = decode_request_frame(frame, strict=strict)
    return decoded.header, decoded.body


def decode_request_frame(frame: Buffer, *, strict: bool = False) -> RequestFrame:
    """Like :func:`decode_request`, keeping the bytes after the body."""
    data = _open_frame(frame)
    if len(data) < 12:
        raise TruncatedError("a request header needs 8 bytes", offset=len(data))
    api_key, api_version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(data, 4)
    cls = REQUESTS.get(api_key)
    if cls is None or api_version not in cls.VERSIONS:
        what = "api key" if cls is None else "version"
        raise UnsupportedApiError(
            f"unsupported {what}: api {api_key} v{api_version}",
            api_key=api_key,
            version=api_version,
            correlation_id=correlation_id,
        )
    header, pos = RequestHeader.decode_from(data, 4, request_header_version(api_key, api_version))
    body, end = cls.decode_from(data, pos, api_version)
    _check_end(data, end, strict, api_key, api_version, cls.__name__)
    return RequestFrame(header, body, data[end:])


def decode_response(
    frame: Buffer, api_key: int, api_version: int, *, strict: bool = False
) -> tuple[ResponseHeader, Message]:
    """Decode a size-prefixed response frame to the request ``api_key`` at ``api_version``."""
    data = _open_frame(frame)
    cls = RESPONSES.get(api_key)
    if cls is None or api_version not in cls.VERSIONS:
        raise InvalidValueError(
            f"unsupported api {api_key} v{api_version}", api_key=api_key, version=api_version
        )
    header, pos = ResponseHeader.decode_from(data, 4, response_header_version(api_key, api_version))
    body, end = cls.decode_from(data, pos, api_version)
    _check_end(data, end, strict, api_key, api_version, cls.__name__)
    return header, body
