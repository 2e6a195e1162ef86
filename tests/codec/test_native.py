"""The compiled message codec (``kafka_wire._compiled.messages``, built with ``make compile``)
agrees with the pure flavour: the same bytes, equal objects, and the same typed errors on bad input.

The compiled modules are the hot ones (``kafka_wire.codegen.generate.COMPILED_MODULES``); every
API x version of each is checked against the same module loaded as pure Python beside it
(:func:`pure_module`: its own classes, with ``KAFKA_WIRE_PURE`` set while it loads). Under
``KAFKA_WIRE_PURE=1`` or without a build the cases are *skipped* with the reason shown;
``test_compiled_flavour_state`` fails when the build is half-installed.
``tools/check_mypyc_c.py`` guards the generated C of the hot functions. The messages come from
:func:`kafka_wire.testing.generate.random_message` with a seed Hypothesis draws (far cheaper than
the ``messages`` strategy, which ``tests/codec/test_roundtrip.py`` checks).
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.codec.runtime import DECODE_FAILURES, value_names
from kafka_wire.codec.structs import Message, Struct
from kafka_wire.codegen.generate import COMPILED_MODULES
from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.flavour import is_compiled
from kafka_wire.messages import DATA, HEADERS, catalog
from kafka_wire.testing.generate import random_message

CASES = [
    pytest.param(cls, v, id=f"{cls.__name__}-v{v}")
    for cls in [c for api in catalog() for c in (api.request, api.response)] + [*HEADERS, *DATA]
    if cls.__module__.rpartition(".")[2] in COMPILED_MODULES
    for v in cls.VERSIONS
]

_MEMORY = re.compile(r"<memory at 0x[0-9a-f]+>")
_PURE: dict[str, ModuleType] = {}


def _compiled(module: str) -> bool:
    return is_compiled(f"kafka_wire._compiled.messages.{module}")


def pure_module(name: str) -> ModuleType:
    """The generated module ``name`` loaded once more as pure Python, with its own classes (not
    registered in ``sys.modules``)."""
    module = _PURE.get(name)
    if module is None:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with pytest.MonkeyPatch.context() as m:
            m.setenv("KAFKA_WIRE_PURE", "1")
            spec.loader.exec_module(module)
        _PURE[name] = module
    return module


def pure_class(cls: type[Struct]) -> Any:
    """The pure twin of the compiled class ``cls``."""
    return getattr(pure_module(cls.__module__), cls.__name__)


def to_flavour(value: Any, module: ModuleType) -> Any:
    """``value`` with every struct rebuilt as the class of the same name in ``module``."""
    if isinstance(value, Struct):
        cls = getattr(module, type(value).__name__)
        out = cls.__new__(cls)
        for name in value_names(cls):
            setattr(out, name, to_flavour(getattr(value, name), module))
        return out
    if isinstance(value, list):
        return [to_flavour(v, module) for v in value]
    if isinstance(value, tuple) and any(isinstance(v, Struct) for v in value):
        return tuple(to_flavour(v, module) for v in value)
    return value


def _require_native(cls: type[Struct]) -> None:
    if os.environ.get("KAFKA_WIRE_PURE"):
        pytest.skip("KAFKA_WIRE_PURE is set: the compiled flavour is off")
    if not cls._native_decoders:
        pytest.skip(f"{cls.__module__} is not compiled (make compile)")


def test_compiled_flavour_state() -> None:
    """All hot message modules compiled, or none: a partial build would hide untested APIs as skips."""
    if os.environ.get("KAFKA_WIRE_PURE"):
        pytest.skip("KAFKA_WIRE_PURE is set: the compiled flavour is off, every native case below is skipped")
    compiled = sorted(m for m in COMPILED_MODULES if _compiled(m))
    if not compiled:
        pytest.skip("compiled message codec not built (make compile): every native case below is skipped")
    assert compiled == sorted(COMPILED_MODULES), (
        f"only {len(compiled)} of {len(COMPILED_MODULES)} modules are compiled"
    )


def _outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``, or the type and text of the error it raised (typed errors are the expected ones)."""
    try:
        return fn()
    except (DecodeError, EncodeError) as e:
        return (type(e), str(e))
    except Exception as e:  # compared too: both flavours must fail alike even where neither should
        return ("untyped", type(e), str(e))


def _native_bytes(msg: Struct, version: int) -> bytes:
    from librt.strings import BytesWriter

    w = BytesWriter()
    msg._native_encoders[version](msg, w)
    data: bytes = w.getvalue()
    return data


@pytest.mark.parametrize(("cls", "version"), CASES)
@given(seed=st.integers(0, 2**32 - 1))
def test_same_bytes_and_objects(cls: type[Message], version: int, seed: int) -> None:
    _require_native(cls)
    msg = random_message(cls, version, random.Random(seed))
    module = pure_module(cls.__module__)
    pure_msg = to_flavour(msg, module)
    pure = bytearray()
    type(pure_msg)._encoders[version](pure_msg, pure)
    # The compiled functions themselves (not the fallback that the public API has).
    assert _native_bytes(msg, version) == pure
    native_obj, native_end = cls._native_decoders[version](bytes(pure), 0)
    pure_obj, pure_end = type(pure_msg)._decoders[version](bytes(pure), 0)
    assert (native_end, pure_end) == (len(pure), len(pure))
    assert native_obj == msg and pure_obj == pure_msg == to_flavour(native_obj, module)
    assert type(native_obj) is cls
    # records fields decode as memoryview slices, whose repr is their address
    assert _MEMORY.sub("<memory>", repr(native_obj)) == _MEMORY.sub("<memory>", repr(pure_obj))


def _same(a: Any, b: Any) -> bool:
    """Equal, or equal but for float NaNs (which a corrupted float64 can decode to) and view addresses."""
    return bool(a == b) or _MEMORY.sub("<memory>", repr(a)) == _MEMORY.sub("<memory>", repr(b))


def _bad_inputs(good: bytes) -> list[bytes]:
    """Every truncation and single-byte corruption of ``good`` (sampled when it is long)."""
    step = max(1, len(good) // 48)
    out = [good[:i] for i in range(0, len(good), step)]
    for i in range(0, len(good), step):
        for byte in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            out.append(good[:i] + bytes((byte,)) + good[i + 1 :])
    return out


@pytest.mark.parametrize(("cls", "version"), CASES)
@settings(max_examples=3)
@given(seed=st.integers(0, 2**32 - 1))
def test_same_errors_on_bad_input(cls: type[Message], version: int, seed: int) -> None:
    _require_native(cls)
    good = random_message(cls, version, random.Random(seed)).encode(version)
    pure_cls = pure_class(cls)
    native_fn, pure_fn = cls._native_decoders[version], pure_cls._decoders[version]
    for bad in _bad_inputs(good):
        try:
            expected: Any = pure_fn(bad, 0)
        except DECODE_FAILURES:
            expected = None
        try:
            got: Any = native_fn(bad, 0)
        except DECODE_FAILURES:
            got = None  # any other exception escapes and fails the test
        assert _same(got, expected), f"native and pure decoders disagree on {bad.hex()}"
        # Through the public API: the same value or the same typed error, message included.
        assert _same(
            _outcome(lambda b=bad: cls.decode(b, version)),  # type: ignore[misc]
            _outcome(lambda b=bad: pure_cls.decode(b, version)),  # type: ignore[misc]
        )


def _odd_values(msg: Message, version: int) -> list[tuple[str, Any]]:
    """Field values a caller might pass that are out of range, of the wrong type, or merely unusual."""
    out: list[tuple[str, Any]] = []
    for f in type(msg).FIELDS:
        if version not in f.versions:
            continue
        if f.kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            out += [(f.name, 1 << 70), (f.name, -(1 << 70)), (f.name, "7"), (f.name, True)]
        elif f.kind == "string":
            out += [(f.name, b"bytes"), (f.name, "\udc80"), (f.name, "x" * 0x8000)]
        elif f.kind in ("bytes", "records"):
            out += [(f.name, bytearray(b"ab")), (f.name, memoryview(b"cd")), (f.name, 5), (f.name, "text")]
        elif f.kind == "array":
            value = getattr(msg, f.name)
            out += [(f.name, tuple(value or ())), (f.name, 3)]
        elif f.kind in ("bool", "float64", "uuid", "struct"):
            out += [(f.name, 2), (f.name, None)]
    return out


@pytest.mark.parametrize(("cls", "version"), CASES)
@settings(max_examples=2)
@given(seed=st.integers(0, 2**32 - 1))
def test_same_encode_results_for_odd_values(cls: type[Message], version: int, seed: int) -> None:
    _require_native(cls)
    msg = random_message(cls, version, random.Random(seed))
    pure_msg = to_flavour(msg, pure_module(cls.__module__))
    for name, value in _odd_values(msg, version):
        old = getattr(msg, name)
        setattr(msg, name, value)
        setattr(pure_msg, name, to_flavour(value, pure_module(cls.__module__)))
        try:
            native = _outcome(lambda: msg.encode(version))
            pure = _outcome(lambda: pure_msg.encode(version))
            assert _same(native, pure), f"{name}={value!r}"
        finally:
            setattr(msg, name, old)
            setattr(pure_msg, name, to_flavour(old, pure_module(cls.__module__)))


def test_native_classes_are_the_public_ones() -> None:
    """With the compiled flavour in use, the public classes are its native classes, and they keep
    the pure classes' surface: isinstance against the runtime bases, keyword constructors with
    fresh defaults, equality, unhashability, repr, pickling, and any value accepted until encode."""
    import pickle

    from kafka_wire.messages import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic

    _require_native(MetadataResponse)
    assert type(MetadataResponse) is type  # no metaclass: the bases really are the same classes
    assert MetadataResponse.__module__ == "kafka_wire.messages.metadata"
    assert MetadataResponse.__mro__[1:] == (Message, Struct, object)
    msg = MetadataResponse(topics=[MetadataResponseTopic(name="t", partitions=[MetadataResponsePartition()])])
    assert isinstance(msg, Message) and isinstance(msg, Struct)
    assert issubclass(MetadataResponse, Message) and not isinstance(object(), Struct)
    assert MetadataResponse().topics is not MetadataResponse().topics  # a fresh list each time
    assert msg == pickle.loads(pickle.dumps(msg)) and msg != MetadataResponse()
    with pytest.raises(TypeError):
        hash(msg)
    assert repr(msg).startswith("MetadataResponse(throttle_time_ms=0, brokers=[], ")
    assert MetadataResponse.FIELDS[4].struct is MetadataResponseTopic  # class data points at native classes
    msg.controller_id = "not a number"  # type: ignore[assignment]  # accepted, as by the pure class; encode reports it
    with pytest.raises(EncodeError):
        msg.encode(1)


def test_writer_pool_after_failures() -> None:
    """Encoders write into pooled writers: a failed encode leaves nothing behind for the next one."""
    from kafka_wire.messages import MetadataRequest, MetadataRequestTopic

    _require_native(MetadataRequest)
    good = MetadataRequest(topics=[MetadataRequestTopic(name="a" * 300)])
    expected = to_flavour(good, pure_module(MetadataRequest.__module__)).encode(1)
    bad = MetadataRequest(topics=[MetadataRequestTopic(name="b" * 300), MetadataRequestTopic(name=None)])
    for _ in range(10):
        assert isinstance(_outcome(lambda: bad.encode(1)), tuple)
        assert good.encode(1) == expected
    out = bytearray(b"head")
    good.encode_into(out, 1)
    assert bytes(out) == b"head" + expected
