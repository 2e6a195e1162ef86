"""Turn decoded messages into JSON-ready values (for the CLI and for logging)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from kafka_wire.codec.structs import Struct


def to_jsonable(value: Any) -> Any:
    """Messages become dicts in wire order; bytes become hex; uuids their canonical text."""
    if isinstance(value, Struct):
        out: dict[str, Any] = {f.name: to_jsonable(getattr(value, f.name)) for f in value.FIELDS}
        if value.unknown_tagged_fields:
            out["unknown_tagged_fields"] = [[tag, data.hex()] for tag, data in value.unknown_tagged_fields]
        return out
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    return value
