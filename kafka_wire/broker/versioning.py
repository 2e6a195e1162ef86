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
from operator import attrgetter
from typing import Any, TypeVar

from kafka_wire.codec.structs import Struct

S = TypeVar("S", bound=Struct)

#: A plan of a struct class at a version (:func:`_plan`): the fields to reset; the scalar
#: fields not nullable at the version (their defaults, and a getter of their values in one
#: call, None when there are none); the struct and array fields (their name, whether they are
#: nullable, whether an array, their default); and whether the plan does anything at all.
_Plan = tuple[
    tuple[tuple[str, Callable[[], Any]], ...],
    tuple[tuple[str, Callable[[], Any]], ...],
    Callable[[Any], tuple[Any, ...]] | None,
    tuple[tuple[str, bool, bool, Callable[[], Any]], ...],
    bool,
]
_PLANS: dict[tuple[type[Struct], int], _Plan] = {}


def _plan(cls: type[Struct], version: int) -> _Plan:
    resets: list[tuple[str, Callable[[], Any]]] = []
    not_null: list[tuple[str, Callable[[], Any]]] = []
    nested: list[tuple[str, bool, bool, Callable[[], Any]]] = []
    for spec in cls.FIELDS:
        if version not in spec.versions:
            resets.append((spec.name, spec.default))
            continue
        nullable = version in spec.nullable
        if spec.kind == "struct" or (spec.kind == "array" and spec.struct is not None):
            nested.append((spec.name, nullable, spec.kind == "array", spec.default))
        elif not nullable:
            not_null.append((spec.name, spec.default))
    getter: Callable[[Any], tuple[Any, ...]] | None = None
    if len(not_null) == 1:
        name = not_null[0][0]
        getter = lambda message: (getattr(message, name),)  # noqa: E731
    elif not_null:
        getter = attrgetter(*(name for name, _ in not_null))
    plan = _PLANS[cls, version] = (
        tuple(resets),
        tuple(not_null),
        getter,
        tuple(nested),
        bool(resets or not_null or nested),
    )
    return plan


def _plan_of(cls: type[Struct], version: int) -> _Plan:
    plan = _PLANS.get((cls, version))
    return _plan(cls, version) if plan is None else plan


def fit(message: S, version: int) -> S:
    """Reset, in place, what ``message`` cannot carry at ``version``; returns it.

    The scalar fields that may not be null are read in one call and looked at one by one only
    when one of them is null (seldom: a fitted answer is encoded at once)."""
    resets, not_null, getter, nested, _ = _plan_of(type(message), version)
    for name, default in resets:
        setattr(message, name, default())
    if getter is not None and None in getter(message):
        for name, default in not_null:
            if getattr(message, name) is None:
                setattr(message, name, default())
    for name, nullable, array, default in nested:
        value = getattr(message, name)
        if value is None:
            if not nullable:
                setattr(message, name, default())
        elif not array:
            fit(value, version)
        elif value and _plan_of(type(value[0]), version)[4]:
            # (an array of structs that need nothing at this version is left alone)
            for item in value:
                fit(item, version)
    return message
