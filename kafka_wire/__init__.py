"""kafka_wire: a Sans-IO Apache Kafka protocol library.

Generated: ``kafka_wire.messages`` (one class per message, straight-line per-version codecs, made
by ``kafka_wire.codegen`` from ``schemas/``). Hand-written: the primitives and runtime
(``kafka_wire.codec``), framing and connections (``kafka_wire.protocol``), records
(``kafka_wire.records``), errors (``kafka_wire.errors``).

The framing helpers below load the message classes on first use, so importing only
``kafka_wire.records`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kafka_wire.protocol.framing import (
        RequestFrame,
        decode_request,
        decode_request_frame,
        decode_response,
        encode_request,
        encode_response,
    )

__all__ = [
    "RequestFrame",
    "decode_request",
    "decode_request_frame",
    "decode_response",
    "encode_request",
    "encode_response",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kafka_wire.protocol import framing

        return getattr(framing, name)
    raise AttributeError(f"module 'kafka_wire' has no attribute {name!r}")
