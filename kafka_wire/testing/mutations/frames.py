"""Mutations of request and response frames: the header, the frame, or the body (by the value
and wire levels)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.codec.runtime import MAX_STRING_BYTES
from kafka_wire.codec.structs import Message
from kafka_wire.messages import REQUESTS, RequestHeader
from kafka_wire.testing.mutations.primitives import (
    BAD_UTF8,
    I16,
    I32,
    INT32_MAX,
    U32,
)
from kafka_wire.testing.mutations.values import clone
from kafka_wire.testing.mutations.wire import tag_section

if TYPE_CHECKING:
    from kafka_wire.testing.mutator import Mutator


class Frame:
    """A frame taken apart: header message and version, body message and version, trailing."""

    __slots__ = ("body", "header", "header_version", "trailing", "version")

    def __init__(self, header: Message, header_version: int, body: Message, version: int, trailing: bytes) -> None:  # fmt: skip
        self.header = header
        self.header_version = header_version
        self.body = body
        self.version = version
        self.trailing = trailing


def _assemble(header: bytes, body: bytes, trailing: bytes) -> bytes:
    return I32.pack(len(header) + len(body) + len(trailing)) + header + body + trailing


def _body_value(m: Mutator, fr: Frame) -> bytes:
    body = m.mutate_message(fr.body, fr.version)
    return _assemble(fr.header.encode(fr.header_version), body.encode(fr.version), fr.trailing)


def _body_wire(m: Mutator, fr: Frame) -> bytes:
    return _assemble(fr.header.encode(fr.header_version), m.mutate_encoding(fr.body, fr.version), fr.trailing)


def _header_wire(m: Mutator, fr: Frame) -> bytes:
    return _assemble(m.mutate_encoding(fr.header, fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _header_version_confusion(m: Mutator, fr: Frame) -> bytes:
    """The header written at another header version than the API version calls for."""
    others = [v for v in type(fr.header).VERSIONS if v != fr.header_version]
    hv = m.rng.choice(others)
    header = clone(fr.header)
    if hv == 0 and isinstance(header, RequestHeader):
        header.client_id = ""
    header.unknown_tagged_fields = ()
    return _assemble(header.encode(hv), fr.body.encode(fr.version), fr.trailing)


def _request_api_version(m: Mutator, fr: Frame) -> bytes:
    """The header names another version of the API (or one that does not exist)."""
    header = clone(fr.header)
    assert isinstance(header, RequestHeader)
    versions = REQUESTS[header.request_api_key].VERSIONS
    header.request_api_version = m.rng.choice((*versions, -1, versions[-1] + 1, 0x7FFF))
    return _assemble(header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _request_api_key(m: Mutator, fr: Frame) -> bytes:
    header = clone(fr.header)
    assert isinstance(header, RequestHeader)
    keys = list(REQUESTS)
    header.request_api_key = m.rng.choice((*keys, -1, 0x7FFF, max(keys) + 1))
    return _assemble(header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _client_id(m: Mutator, fr: Frame) -> bytes:
    """The client id null, long, not UTF-8, or with a length far past the frame's end."""
    header = fr.header
    assert isinstance(header, RequestHeader)
    if fr.header_version == 0:
        return _header_wire(m, fr)
    head = (
        I16.pack(header.request_api_key)
        + I16.pack(header.request_api_version)
        + I32.pack(header.correlation_id)
    )
    choice = m.rng.randrange(4)
    if choice == 0:
        client = b"\xff\xff"
    elif choice == 1:
        raw = (header.client_id or "c").encode() * m.rng.choice((100, 1000, 10000))
        client = I16.pack(min(len(raw), MAX_STRING_BYTES)) + raw[:MAX_STRING_BYTES]
    elif choice == 2:
        raw = b"client" + m.rng.choice(BAD_UTF8)
        client = I16.pack(len(raw)) + raw
    else:
        client = I16.pack(m.rng.choice((MAX_STRING_BYTES, -2, 1000)))
    tags = tag_section(0, ()) if fr.header_version >= 2 else b""
    return _assemble(head + client + tags, fr.body.encode(fr.version), fr.trailing)


def _correlation_id(m: Mutator, fr: Frame) -> bytes:
    header: Any = clone(fr.header)  # a RequestHeader or a ResponseHeader: both have the field
    neighbour = I32.unpack(U32.pack((header.correlation_id + 1) & 0xFFFFFFFF))[0]
    header.correlation_id = m.rng.choice((0, -1, INT32_MAX, -(1 << 31), neighbour))
    return _assemble(header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _frame_size(m: Mutator, fr: Frame) -> bytes:
    frame = bytearray(_assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing))
    size = len(frame) - 4
    I32.pack_into(frame, 0, m.rng.choice((size - 1, size + 1, 0, -1, INT32_MAX, -(1 << 31), size * 2)))
    return bytes(frame)


def _frame_truncated(m: Mutator, fr: Frame) -> bytes:
    frame = _assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)
    cut = frame[: m.rng.randrange(len(frame))]
    if len(cut) >= 4 and m.rng.random() < 0.5:  # the size prefix follows the cut
        return I32.pack(len(cut) - 4) + cut[4:]
    return cut


def _frame_trailing(m: Mutator, fr: Frame) -> bytes:
    extra = m.rng.randbytes(m.rng.choice((1, 4, 64)))
    return _assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing + extra)


def _frame_bytes(m: Mutator, fr: Frame) -> bytes:
    frame = _assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)
    return bytes_then_size(m, frame)


def bytes_then_size(m: Mutator, frame: bytes) -> bytes:
    out = m.mutate_bytes(frame)
    if len(out) >= 4 and m.rng.random() < 0.5:
        out = I32.pack(len(out) - 4) + out[4:]
    return out


FrameMutation = Callable[["Mutator", Frame], bytes]

#: Request frame mutations with their weights (body mutations dominate).
REQUEST_FRAME_MUTATIONS: Final[dict[str, tuple[FrameMutation, int]]] = {
    "body_value": (_body_value, 8),
    "body_wire": (_body_wire, 8),
    "header_wire": (_header_wire, 1),
    "header_version_confusion": (_header_version_confusion, 1),
    "header_api_version": (_request_api_version, 1),
    "header_api_key": (_request_api_key, 1),
    "header_client_id": (_client_id, 1),
    "header_correlation_id": (_correlation_id, 1),
    "frame_size": (_frame_size, 1),
    "frame_truncated": (_frame_truncated, 1),
    "frame_trailing": (_frame_trailing, 1),
    "frame_bytes": (_frame_bytes, 1),
}
#: Response frame mutations with their weights.
RESPONSE_FRAME_MUTATIONS: Final[dict[str, tuple[FrameMutation, int]]] = {
    "body_value": (_body_value, 8),
    "body_wire": (_body_wire, 8),
    "header_wire": (_header_wire, 1),
    "header_version_confusion": (_header_version_confusion, 1),
    "header_correlation_id": (_correlation_id, 1),
    "frame_size": (_frame_size, 1),
    "frame_truncated": (_frame_truncated, 1),
    "frame_trailing": (_frame_trailing, 1),
    "frame_bytes": (_frame_bytes, 1),
}


def weighted(m: Mutator, table: dict[str, tuple[FrameMutation, int]]) -> tuple[str, FrameMutation]:
    names = list(table)
    (name,) = m.rng.choices(names, weights=[table[n][1] for n in names])
    return name, table[name][0]
