"""Fit a response built in its newest shape to the version a client asked for.

Handlers fill every field they know; a field that the request's version lacks is reset to its
default before encoding, as if it were ignorable, and a null in a field that is not nullable at
that version becomes the field's default. (Kafka's handlers branch on the version instead; the
effect on the wire is the same, and the per-version facts that matter, such as ListOffsets v0's
``old_style_offsets``, are still set by the handlers.)

What to do with each field depends only on the struct's class and the version, so it is worked
out once per pair (:func:`_plan`) and reused: fitting is on every answer's path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from kafka_wire.codec.structs import Struct

S = TypeVar("S", bound=Struct)

#: What a plan step does with its field: always reset it; reset a null; fit the struct it holds;
#: fit each struct of the array it holds (the last three test the value first).
_RESET: Final = 0
_NOT_NULL: Final = 1
_STRUCT: Final = 2
_ARRAY: Final = 4

_Step = tuple[str, int, Callable[[], Any]]
_PLANS: dict[tuple[type[Struct], int], tuple[_Step, ...]] = {}


def _plan(cls: type[Struct], version: int) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    for spec in cls.FIELDS:
        if version not in spec.versions:
            steps.append((spec.name, _RESET, spec.default))
            continue
        action = 0 if version in spec.nullable else _NOT_NULL
        if spec.kind == "struct":
            action |= _STRUCT
        elif spec.kind == "array" and spec.struct is not None:
            action |= _ARRAY
        if action:
            steps.append((spec.name, action, spec.default))
    plan = _PLANS[cls, version] = tuple(steps)
    return plan


def _plan_of(cls: type[Struct], version: int) -> tuple[_Step, ...]:
    plan = _PLANS.get((cls, version))
    return _plan(cls, version) if plan is None else plan


def fit(message: S, version: int) -> S:
    """Reset, in place, what ``message`` cannot carry at ``version``; returns it."""
    for name, action, default in _plan_of(type(message), version):
        if action == _RESET:
            setattr(message, name, default())
            continue
        value = getattr(message, name)
        if value is None:
            if action & _NOT_NULL:
                setattr(message, name, default())
        elif action & _STRUCT:
            fit(value, version)
        elif action & _ARRAY and value and _plan_of(type(value[0]), version):
            # (an array of structs that need nothing at this version is left alone)
            for item in value:
                fit(item, version)
    return message
