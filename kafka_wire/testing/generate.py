"""Fast valid messages from the field tables, drawn from a seeded ``random.Random``.

:func:`random_message` builds a valid instance of any generated class at any version with the same
value ranges and nullability rules as :func:`kafka_wire.testing.strategies.messages`, without
Hypothesis: the network fuzzer and the atheris mutators need thousands of messages a second.
Boundary values (the type's minimum and maximum, 0, 1, -1) are drawn more often than a uniform
draw would; ``records`` fields hold either a small valid RecordBatch v2 or arbitrary bytes.
:func:`random_request` picks an API and a version too and gives the matching request header.

Everything here is pure given the ``rng``: the same seed gives the same messages. Each class and
version is turned once into a *plan* (one small generator function per field), cached, so a draw
is a walk over prebuilt closures.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar
from uuid import UUID

from kafka_wire.codec.runtime import INT_RANGES, ZERO_UUID, FieldSpec
from kafka_wire.codec.structs import Message, Struct, new_instance
from kafka_wire.messages import REQUESTS, RequestHeader
from kafka_wire.protocol.framing import request_header_version
from kafka_wire.records import NewRecord, build_batch

T = TypeVar("T", bound=Struct)

#: A field's value generator.
Gen = Callable[[random.Random], Any]

#: Chance that a nullable field is null, that a number is a boundary value, that a flexible
#: struct carries unknown tagged fields, that a records field is a valid batch.
NULL_CHANCE: Final = 0.125
BOUNDARY_CHANCE: Final = 0.25
UNKNOWN_TAGS_CHANCE: Final = 0.125
VALID_RECORDS_CHANCE: Final = 0.5

# Mostly ASCII, sometimes 2-, 3- and 4-byte UTF-8 and control characters (weights by repetition).
_ALPHABET: Final = tuple("abcdefghijklmnopqrstuvwxyz" * 3 + "ABCXYZ0123456789._-" * 2 + "\x00\n é€中😀\u0301")
_FLOAT_SPECIALS: Final = (
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    float("inf"),
    float("-inf"),
    1.7976931348623157e308,
    5e-324,
)
_DOUBLE: Final = struct.Struct(">d")

# (cls, version, max_list, max_text, max_bytes) -> ((attribute name, generator), ...)
_PLANS: dict[tuple[Any, ...], tuple[tuple[str, Gen], ...]] = {}


def random_message(
    cls: type[T],
    version: int,
    rng: random.Random,
    *,
    max_list: int = 3,
    max_text: int = 12,
    max_bytes: int = 24,
) -> T:
    """A valid instance of ``cls`` at ``version`` (same value ranges and nullability rules as
    :func:`kafka_wire.testing.strategies.messages`), drawn from ``rng``; boundary values
    (min, max, 0, -1) are drawn more often than uniform."""
    key = (cls, version, max_list, max_text, max_bytes)
    plan = _PLANS.get(key)
    if plan is None:
        if version not in cls.STRUCT_VERSIONS:
            raise ValueError(f"{cls.__name__} has no version {version}")
        plan = _PLANS[key] = _plan(cls, version, max_list, max_text, max_bytes)
    obj = new_instance(cls)
    for name, gen in plan:
        setattr(obj, name, gen(rng))
    return obj


def random_request(
    rng: random.Random,
    *,
    api_keys: Sequence[int] | None = None,
    versions: Mapping[int, tuple[int, int]] | None = None,
) -> tuple[RequestHeader, Message, int]:
    """``(header, body, version)``: an API from ``api_keys`` (default: every API), a version within
    ``versions[api_key]`` (inclusive; default: every version the codec knows), and a random
    request header of the version Kafka uses for it, naming that API and version."""
    keys = list(REQUESTS) if api_keys is None else list(api_keys)
    if not keys:
        raise ValueError("no api keys to choose from")
    api_key = keys[rng.randrange(len(keys))]
    cls = REQUESTS.get(api_key)
    if cls is None:
        raise ValueError(f"unknown api key {api_key}")
    choices = cls.VERSIONS
    if versions is not None and api_key in versions:
        lo, hi = versions[api_key]
        choices = tuple(v for v in choices if lo <= v <= hi)
        if not choices:
            raise ValueError(f"{cls.__name__} has no version in {lo}..{hi}")
    version = choices[rng.randrange(len(choices))]
    body = random_message(cls, version, rng)
    header = random_message(RequestHeader, request_header_version(api_key, version), rng)
    header.request_api_key = api_key
    header.request_api_version = version
    return header, body, version


# ------------------------------------------------------------------------------------ plans


def _plan(
    cls: type[Struct], version: int, max_list: int, max_text: int, max_bytes: int
) -> tuple[tuple[str, Gen], ...]:
    opts = (max_list, max_text, max_bytes)
    plan: list[tuple[str, Gen]] = []
    for f in cls.FIELDS:
        if version not in f.versions:
            plan.append((f.name, _default(f)))
        else:
            plan.append((f.name, _field(f, version, opts)))
    if version in cls.FLEXIBLE_VERSIONS:
        plan.append(("unknown_tagged_fields", _unknown_tags(cls)))
    else:
        plan.append(("unknown_tagged_fields", lambda rng: ()))
    return tuple(plan)


def _default(f: FieldSpec) -> Gen:
    default = f.default
    return lambda rng: default()


def _nested(struct_cls: type[Struct], version: int, opts: tuple[int, int, int]) -> Gen:
    max_list, max_text, max_bytes = opts

    def gen(rng: random.Random) -> Any:
        return random_message(
            struct_cls, version, rng, max_list=max_list, max_text=max_text, max_bytes=max_bytes
        )

    return gen


def _field(f: FieldSpec, version: int, opts: tuple[int, int, int]) -> Gen:
    inner: Gen
    if f.kind == "struct":
        inner = _nested(f.struct_class(), version, opts)
    elif f.kind == "array":
        assert f.element is not None
        element = (
            _nested(f.struct_class(), version, opts) if f.element == "struct" else _scalar(f.element, opts)
        )
        inner = _list(element, opts[0])
    else:
        inner = _scalar(f.kind, opts)
    if version in f.nullable:
        return _nullable(inner)
    return inner


def _nullable(inner: Gen) -> Gen:
    def gen(rng: random.Random) -> Any:
        return None if rng.random() < NULL_CHANCE else inner(rng)

    return gen


def _list(element: Gen, max_list: int) -> Gen:
    def gen(rng: random.Random) -> list[Any]:
        return [element(rng) for _ in range(rng.randint(0, max_list))]

    return gen


def _scalar(kind: str, opts: tuple[int, int, int]) -> Gen:
    if kind in INT_RANGES:
        return _integer(*INT_RANGES[kind])
    if kind == "bool":
        return lambda rng: rng.random() < 0.5
    if kind == "float64":
        return _float
    if kind == "uuid":
        return _uuid
    if kind == "string":
        return _text(opts[1])
    if kind == "bytes":
        return _bytes(opts[2])
    if kind == "records":
        return _records(opts[2])
    raise ValueError(f"no generator for {kind}")


def _integer(lo: int, hi: int) -> Gen:
    specials = tuple(sorted({x for x in (lo, hi, 0, 1, -1, lo + 1, hi - 1) if lo <= x <= hi}))
    span = hi - lo + 1
    bits = span.bit_length()

    def gen(rng: random.Random) -> int:
        r = rng.random()
        if r < BOUNDARY_CHANCE:
            return specials[int(r * len(specials) / BOUNDARY_CHANCE)]
        if r < 2 * BOUNDARY_CHANCE:  # small values: counts, indexes, versions
            return min(hi, max(lo, int((r - BOUNDARY_CHANCE) * 64 / BOUNDARY_CHANCE)))
        return lo + rng.getrandbits(bits) % span

    return gen


def _float(rng: random.Random) -> float:
    if rng.random() < BOUNDARY_CHANCE:
        return _FLOAT_SPECIALS[rng.randrange(len(_FLOAT_SPECIALS))]
    value: float = _DOUBLE.unpack(rng.randbytes(8))[0]
    return value if value == value else 0.0  # never NaN (it is not equal to itself)


def _uuid(rng: random.Random) -> UUID:
    if rng.random() < BOUNDARY_CHANCE:
        return ZERO_UUID
    return UUID(int=rng.getrandbits(128))


def _text(max_text: int) -> Gen:
    alphabet = _ALPHABET

    def gen(rng: random.Random) -> str:
        return "".join(rng.choices(alphabet, k=rng.randint(0, max_text)))

    return gen


def _bytes(max_bytes: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        return rng.randbytes(rng.randint(0, max_bytes))

    return gen


def _records(max_bytes: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        if rng.random() < VALID_RECORDS_CHANCE:
            return random_batch(rng, max_bytes=max_bytes)
        return rng.randbytes(rng.randint(0, max_bytes))

    return gen


def random_batch(rng: random.Random, *, max_records: int = 2, max_bytes: int = 24) -> bytes:
    """A small valid RecordBatch v2 (no compression): 0..``max_records`` records with short
    keys, values and headers; any offset and timestamp."""
    records = []
    for i in range(rng.randint(0, max_records)):
        key = rng.randbytes(rng.randint(0, max_bytes)) if rng.random() < 0.75 else None
        value = rng.randbytes(rng.randint(0, max_bytes)) if rng.random() < 0.9 else None
        headers = (("h", rng.randbytes(rng.randint(0, 4))),) if rng.random() < 0.25 else ()
        records.append(NewRecord(key, value, headers, 1_700_000_000_000 + i))
    batch: bytes = build_batch(records, base_offset=rng.getrandbits(20))
    return batch


def _unknown_tags(cls: type[Struct]) -> Gen:
    known = {f.tag for f in cls.FIELDS if f.tag is not None}
    base = max(known, default=-1) + 1

    def gen(rng: random.Random) -> tuple[tuple[int, bytes], ...]:
        if rng.random() >= UNKNOWN_TAGS_CHANCE:
            return ()
        tags = sorted(rng.sample(range(base, base + 41), rng.randint(1, 2)))
        return tuple((t, rng.randbytes(rng.randint(0, 8))) for t in tags)

    return gen


__all__ = ["random_batch", "random_message", "random_request"]
