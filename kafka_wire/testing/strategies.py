"""Hypothesis strategies for every message at every version, built from the field tables.

``messages(cls, version)`` draws valid instances by construction (no filtering): exact integer
ranges, nullability per version, defaults for fields the version lacks, and (optionally) unknown
tagged fields in flexible versions. Use them for property tests and for fuzzing your own parsers.
"""

from __future__ import annotations

from typing import Any, TypeVar
from uuid import UUID

from hypothesis import strategies as st

from kafka_wire.codec.runtime import INT_RANGES, FieldSpec
from kafka_wire.codec.structs import Struct

T = TypeVar("T", bound=Struct)


def uuids() -> st.SearchStrategy[UUID]:
    """Any 128-bit value, the zero UUID included."""
    return st.one_of(st.just(UUID(int=0)), st.integers(0, (1 << 128) - 1).map(lambda i: UUID(int=i)))


def _scalar(kind: str, max_text: int, max_bytes: int) -> st.SearchStrategy[Any]:
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return uuids()
    if kind == "string":
        return st.text(max_size=max_text)
    if kind in ("bytes", "records"):
        return st.binary(max_size=max_bytes)
    raise ValueError(f"no scalar strategy for {kind}")


def messages(
    cls: type[T],
    version: int,
    *,
    max_list: int = 3,
    max_text: int = 12,
    max_bytes: int = 24,
    unknown_tags: bool = True,
) -> st.SearchStrategy[T]:
    """Valid instances of ``cls`` (any generated message or struct class) at ``version``."""
    if version not in cls.STRUCT_VERSIONS:
        raise ValueError(f"{cls.__name__} has no version {version}")
    opts = {"max_list": max_list, "max_text": max_text, "max_bytes": max_bytes, "unknown_tags": unknown_tags}
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for f in cls.FIELDS:
        if version not in f.versions:
            fields[f.name] = st.builds(f.default)
        else:
            fields[f.name] = _field(f, version, opts)
    if unknown_tags and version in cls.FLEXIBLE_VERSIONS:
        fields["unknown_tagged_fields"] = _unknown_tags(cls)
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


def _unknown_tags(cls: type[Struct]) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    known = {f.tag for f in cls.FIELDS if f.tag is not None}
    base = max(known, default=-1) + 1
    tags = st.lists(st.integers(base, base + 40), max_size=2, unique=True).map(sorted)
    return tags.flatmap(lambda ts: st.tuples(*(st.tuples(st.just(t), st.binary(max_size=8)) for t in ts)))


def _field(f: FieldSpec, version: int, opts: dict[str, Any]) -> st.SearchStrategy[Any]:
    if f.kind == "struct":
        inner: st.SearchStrategy[Any] = st.deferred(lambda: messages(f.struct_class(), version, **opts))
    elif f.kind == "array":
        assert f.element is not None
        if f.element == "struct":
            element: st.SearchStrategy[Any] = st.deferred(lambda: messages(f.struct_class(), version, **opts))
        else:
            element = _scalar(f.element, opts["max_text"], opts["max_bytes"])
        inner = st.lists(element, max_size=opts["max_list"])
    else:
        inner = _scalar(f.kind, opts["max_text"], opts["max_bytes"])
    if version in f.nullable:
        return st.one_of(st.none(), inner)
    return inner
