"""The compiled message codec (``kafka_wire.messages_native``, built with ``make compile``) agrees
with the pure flavour: the same bytes, equal objects, and the same typed errors on bad input.

Every API x version (and the headers and data structures) is checked when its module is compiled.
A case whose module is not compiled, or every case under ``KAFKA_WIRE_PURE=1``, is *skipped* with
the reason shown (``pytest -ra``), never counted as a pass; ``test_compiled_flavour_state`` fails
when the build is half-installed (some modules compiled, others not), which would make the skips
silent gaps. ``tools/check_mypyc_c.py`` guards the generated C of the hot functions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.codec import runtime
from kafka_wire.codec.runtime import DECODE_FAILURES, Message, Struct
from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.flavour import is_compiled
from kafka_wire.messages import DATA, HEADERS, catalog
from kafka_wire.testing.strategies import messages

CASES = [
    pytest.param(cls, v, id=f"{cls.__name__}-v{v}")
    for api in catalog()
    for cls in (api.request, api.response)
    for v in api.versions
] + [pytest.param(cls, v, id=f"{cls.__name__}-v{v}") for cls in HEADERS + DATA for v in cls.VERSIONS]

_MEMORY = re.compile(r"<memory at 0x[0-9a-f]+>")
MODULES = sorted({p.values[0].__module__ for p in CASES})


def _compiled(module: str) -> bool:
    return is_compiled(module.replace("kafka_wire.messages.", "kafka_wire.messages_native.", 1))


def _require_native(cls: type[Struct]) -> None:
    if os.environ.get("KAFKA_WIRE_PURE"):
        pytest.skip("KAFKA_WIRE_PURE is set: the compiled flavour is off")
    if not cls._native_decoders:
        pytest.skip(f"{cls.__module__} is not compiled (make compile)")


def test_compiled_flavour_state() -> None:
    """All message modules compiled, or none: a partial build would hide untested APIs as skips."""
    if os.environ.get("KAFKA_WIRE_PURE"):
        pytest.skip("KAFKA_WIRE_PURE is set: the compiled flavour is off, every native case below is skipped")
    compiled = [m for m in MODULES if _compiled(m)]
    if not compiled:
        pytest.skip("compiled message codec not built (make compile): every native case below is skipped")
    assert compiled == MODULES, f"only {len(compiled)} of {len(MODULES)} message modules are compiled"


def _outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``, or the type and text of the error it raised (typed errors are the expected ones)."""
    try:
        return fn()
    except (DecodeError, EncodeError) as e:
        return (type(e), str(e))
    except Exception as e:  # compared too: both flavours must fail alike even where neither should
        return ("untyped", type(e), str(e))


def _flavour(native: bool, fn: Callable[[], Any]) -> Any:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runtime.NATIVE, "enabled", native)
        return _outcome(fn)


def _native_bytes(msg: Struct, version: int) -> bytes:
    from librt.strings import BytesWriter

    w = BytesWriter()
    msg._native_encoders[version](msg, w)
    data: bytes = w.getvalue()
    return data


@pytest.mark.parametrize(("cls", "version"), CASES)
@given(data=st.data())
def test_same_bytes_and_objects(cls: type[Message], version: int, data: st.DataObject) -> None:
    _require_native(cls)
    msg = data.draw(messages(cls, version))
    pure = bytearray()
    cls._encoders[version](msg, pure)
    # The compiled functions themselves (not the fallback to pure that the public API has).
    assert _native_bytes(msg, version) == pure
    native_obj, native_end = cls._native_decoders[version](bytes(pure), 0)
    pure_obj, pure_end = cls._decoders[version](bytes(pure), 0)
    assert (native_obj, native_end) == (pure_obj, pure_end) == (msg, len(pure))
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
@given(data=st.data())
def test_same_errors_on_bad_input(cls: type[Message], version: int, data: st.DataObject) -> None:
    _require_native(cls)
    good = data.draw(messages(cls, version)).encode(version)
    native_fn, pure_fn = cls._native_decoders[version], cls._decoders[version]
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
        def decode(b: bytes = bad) -> Message:
            return cls.decode(b, version)

        assert _same(_flavour(True, decode), _flavour(False, decode))


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
@given(data=st.data())
def test_same_encode_results_for_odd_values(cls: type[Message], version: int, data: st.DataObject) -> None:
    _require_native(cls)
    msg = data.draw(messages(cls, version))
    for name, value in _odd_values(msg, version):
        old = getattr(msg, name)
        setattr(msg, name, value)
        try:
            native = _flavour(True, lambda: msg.encode(version))
            pure = _flavour(False, lambda: msg.encode(version))
            assert _same(native, pure), f"{name}={value!r}"
        finally:
            setattr(msg, name, old)


def test_native_classes_are_the_public_ones() -> None:
    """With the compiled flavour in use, the public classes are its native classes, and they keep
    the pure classes' surface: isinstance against the runtime bases, keyword constructors with
    fresh defaults, equality, unhashability, repr, pickling, and any value accepted until encode."""
    import pickle

    from kafka_wire.messages import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic

    _require_native(MetadataResponse)
    assert type(MetadataResponse).__module__ != "kafka_wire.codec.runtime"  # a mypyc class, not StructType
    assert MetadataResponse.__module__ == "kafka_wire.messages.metadata"
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
    expected = _flavour(False, lambda: good.encode(1))
    bad = MetadataRequest(topics=[MetadataRequestTopic(name="b" * 300), MetadataRequestTopic(name=None)])
    for _ in range(10):
        assert isinstance(_outcome(lambda: bad.encode(1)), tuple)
        assert good.encode(1) == expected
    out = bytearray(b"head")
    good.encode_into(out, 1)
    assert bytes(out) == b"head" + expected
