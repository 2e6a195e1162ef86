"""Value-level mutations: one field of a message changed; the message still encodes.

A field is reached by its path from the message (attributes and list indexes); the structs and
lists on that path are copied, so the input is left as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

from kafka_wire.codec.runtime import INT_RANGES, MAX_STRING_BYTES, FieldSpec, value_names
from kafka_wire.codec.structs import Message, Struct, new_instance
from kafka_wire.testing.generate import random_message
from kafka_wire.testing.mutations.primitives import (
    INT32_MAX,
    UVARINT_MAX,
)

if TYPE_CHECKING:
    from kafka_wire.testing.mutator import Mutator


# A slot is a path from the root to a field: ((attribute, list index or None), ...), and the field.
Slot = tuple[tuple[tuple[str, int | None], ...], FieldSpec | None]


def _slots(obj: Struct, v: int, prefix: tuple[tuple[str, int | None], ...], out: list[Slot]) -> None:
    cls = type(obj)
    for f in cls.FIELDS:
        if v not in f.versions:
            continue
        here = (*prefix, (f.name, None))
        out.append((here, f))
        value = getattr(obj, f.name)
        if f.kind == "struct" and value is not None:
            _slots(value, v, here, out)
        elif f.kind == "array" and f.element == "struct" and value:
            for i, item in enumerate(value):
                _slots(item, v, (*prefix, (f.name, i)), out)
    if v in cls.FLEXIBLE_VERSIONS:
        out.append(((*prefix, ("unknown_tagged_fields", None)), None))


def clone(obj: Struct) -> Struct:
    cls = type(obj)
    new = new_instance(cls)
    for name in value_names(cls):
        setattr(new, name, getattr(obj, name))
    return new


def _int_value(m: Mutator, kind: str, value: int) -> int:
    lo, hi = INT_RANGES[kind]
    r = m.rng.random()
    if r < 0.4:
        candidates = [x for x in (lo, hi, 0, -1, 1, lo + 1, hi - 1) if lo <= x <= hi]
        return m.rng.choice(candidates)
    if r < 0.8:
        return min(hi, max(lo, value + m.rng.choice((-1, 1, -2, 2))))
    return m.rng.randint(lo, hi)


def _scalar_value(m: Mutator, kind: str, value: Any, version: int, f: FieldSpec) -> Any:
    rng = m.rng
    if kind in INT_RANGES:
        return _int_value(m, kind, value if isinstance(value, int) else 0)
    if kind == "bool":
        return not value
    if kind == "float64":
        return rng.choice((0.0, -0.0, float("inf"), float("-inf"), -1.0, 1e308, 5e-324))
    if kind == "uuid":
        return UUID(int=rng.choice((0, (1 << 128) - 1, rng.getrandbits(128))))
    if kind == "string":
        text = value if isinstance(value, str) else ""
        choice = rng.randrange(4)
        if choice == 0:
            return ""
        if choice == 1:  # longer, up to the int16 limit now and then
            target = rng.choice((64, 255, 256, 1000, MAX_STRING_BYTES // 3))
            return (text or "x") * (target // max(1, len(text)) + 1)
        if choice == 2:
            return text + "".join(rng.choices("\x00é€中😀\u202e\ufeff", k=rng.randint(1, 4)))
        return text[: rng.randint(0, len(text))]
    if kind == "records":
        return m.mutate_records(bytes(value) if value is not None else b"")
    if kind == "bytes":
        data = bytes(value) if value is not None else b""
        choice = rng.randrange(3)
        if choice == 0:
            return b""
        if choice == 1:
            return data + rng.randbytes(rng.choice((1, 16, 255, 1024)))
        return m.mutate_bytes(data) if data else b"\x00"
    raise ValueError(kind)  # pragma: no cover


def _array_value(m: Mutator, f: FieldSpec, value: list[Any] | None, version: int) -> list[Any]:
    rng = m.rng
    items = list(value or ())
    choice = rng.randrange(5)
    if choice == 0 and items:  # drop
        del items[rng.randrange(len(items))]
    elif choice == 1 and items:  # duplicate
        at = rng.randrange(len(items))
        items.insert(at, items[at])
    elif choice == 2 and items:  # many copies
        items = items * rng.choice((8, 64))
    elif choice == 3:
        items = []
    else:  # insert a new one
        items.insert(rng.randint(0, len(items)), _new_element(m, f, version))
    return items


def _new_element(m: Mutator, f: FieldSpec, version: int) -> Any:
    element = f.element
    assert element is not None
    if element == "struct":
        return random_message(f.struct_class(), version, m.rng)
    return _scalar_value(m, element, None if element in ("string", "bytes") else 0, version, f)


def _unknown_tags_value(m: Mutator, obj: Struct) -> tuple[tuple[int, bytes], ...]:
    known = {f.tag for f in type(obj).FIELDS if f.tag is not None}
    current = dict(obj.unknown_tagged_fields)
    tag = max(known, default=-1) + 1 + m.rng.randrange(64)
    if m.rng.random() < 0.2:
        tag = m.rng.choice((0x7FFF, INT32_MAX, UVARINT_MAX))
    if tag not in current and tag not in known:
        current[tag] = m.rng.randbytes(m.rng.choice((0, 1, 8, 300)))
    return tuple(sorted(current.items()))


def _new_value(m: Mutator, slot: Slot, parent: Struct, version: int) -> Any:
    path, f = slot
    name = path[-1][0]
    if f is None:
        m.applied.append("value_unknown_tag")
        return _unknown_tags_value(m, parent)
    value = getattr(parent, name)
    if version in f.nullable and value is not None and m.rng.random() < 0.25:
        m.applied.append("value_null")
        return None
    kind = f.kind
    m.applied.append(f"value_{_VALUE_KINDS.get(kind, 'int')}")
    if kind == "struct":
        return random_message(f.struct_class(), version, m.rng)
    if kind == "array":
        return _array_value(m, f, value, version)
    return _scalar_value(m, kind, value, version, f)


_VALUE_KINDS: Final = {
    "struct": "struct",
    "array": "array",
    "string": "string",
    "bytes": "bytes",
    "records": "records",
    "bool": "bool",
    "float64": "float",
    "uuid": "uuid",
}

#: What value-level mutations do (``value_<kind>``: the field of that kind changed).
VALUE_MUTATIONS: Final = (
    "value_int",
    "value_bool",
    "value_float",
    "value_uuid",
    "value_string",
    "value_bytes",
    "value_records",
    "value_array",
    "value_struct",
    "value_null",
    "value_unknown_tag",
)


def mutate_value(m: Mutator, msg: Message, version: int) -> Message:
    """A copy of ``msg`` with one field (drawn from all of them) given a new value."""
    slots: list[Slot] = []
    _slots(msg, version, (), slots)
    root = clone(msg)
    if not slots:
        return root  # type: ignore[return-value]  # a clone of a Message is one
    slot = slots[m.rng.randrange(len(slots))]
    path = slot[0]
    parent: Any = root
    for name, index in path[:-1]:
        child = getattr(parent, name)
        if index is None:
            child = clone(child)
            setattr(parent, name, child)
        else:
            items = list(child)
            setattr(parent, name, items)
            items[index] = child = clone(items[index])
        parent = child
    name, index = path[-1]
    assert index is None
    setattr(parent, name, _new_value(m, slot, parent, version))
    return root  # type: ignore[return-value]  # a clone of a Message is one
