"""Fit a response built in its newest shape to the version a client asked for.

Handlers fill every field they know; a field that the request's version lacks is reset to its
default before encoding, as if it were ignorable, and a null in a field that is not nullable at
that version becomes the field's default. (Kafka's handlers branch on the version instead; the
effect on the wire is the same, and the per-version facts that matter, such as ListOffsets v0's
``old_style_offsets``, are still set by the handlers.)
"""

from __future__ import annotations

from typing import TypeVar

from kafka_wire.codec.structs import Struct

S = TypeVar("S", bound=Struct)


def fit(message: S, version: int) -> S:
    """Reset, in place, what ``message`` cannot carry at ``version``; returns it."""
    for spec in type(message).FIELDS:
        value = getattr(message, spec.name)
        if version not in spec.versions:
            setattr(message, spec.name, spec.default())
        elif value is None:
            if version not in spec.nullable:
                setattr(message, spec.name, spec.default())
        elif spec.kind == "struct":
            fit(value, version)
        elif spec.kind == "array" and spec.struct is not None:
            for item in value:
                fit(item, version)
    return message
