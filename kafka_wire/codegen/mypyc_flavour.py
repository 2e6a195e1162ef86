"""The mypyc-tuned flavour: the shared node methods of :class:`~kafka_wire.codegen.python_flavour.ModuleEmitter`
with the :data:`MYPYC` spelling and these per-value snippets, for code that mypyc compiles into direct C:

* cursors, lengths and counts are ``i64`` locals; fixed-width integers are read and written with
  ``librt.strings`` (``read_i32_be``, ``write_i32_be``...), which check bounds and ranges and
  raise ``IndexError`` / ``ValueError`` like the ``struct`` calls they replace;
* varints are read by indexing ``bytes`` (one byte, then a small helper for longer ones) and
  written with ``BytesWriter.append`` of ``u8`` values only (other argument types take a slow
  generic path: ``tools/check_mypyc_c.py`` counts such calls);
* encoders write into a ``librt.strings.BytesWriter`` instead of a ``bytearray``.

Each module defines the message classes as mypyc native classes deriving from the same
``Struct`` / ``Message`` as the pure classes (:mod:`kafka_wire._compiled.base`), with the same names,
keyword constructors and fields (attributes typed ``Any`` so that any value is accepted until it
is encoded). Decoders read fields into locals and call the constructor; encoders read attributes
straight from the object's struct and move each value into a typed local (a wrong type raises
``TypeError`` there, and the runtime decides). The public module (``kafka_wire.messages.<api>``)
imports these classes when the module is built.

Run uncompiled, this source is slower than the CPython flavour and is never used.
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from kafka_wire.codegen.emitter_core import (
    COMMON_SYMBOLS,
    PURE,
    Flavour,
    fresh_default,
    nondefault_check,
)
from kafka_wire.codegen.python_flavour import ModuleEmitter
from kafka_wire.codegen.writer import SourceWriter, names_from
from kafka_wire.schema.model import FIXED_WIDTH, Field, Message, Struct

#: The Python type of each number kind (bools are ints), for typed locals in encoders.
NUMBER_TYPES: dict[str, str] = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int", "uint32": "int",
    "float64": "float",
}  # fmt: skip

#: How each fixed-width kind is read at ``pos`` into ``{t}`` (``librt.strings`` checks bounds and
#: raises ``IndexError``, as ``struct`` does) and written to the ``BytesWriter`` ``{w}``.
_FIXED_READS: dict[str, tuple[str, ...]] = {
    "bool": ("{t} = buf[pos] != 0",),
    "int8": ("b8 = buf[pos]", "{t} = b8 - 256 if b8 >= 128 else b8"),
    "int16": ("{t} = read_i16_be(buf, pos)",),
    "int32": ("{t} = read_i32_be(buf, pos)",),
    "int64": ("{t} = read_i64_be(buf, pos)",),
    "float64": ("{t} = read_f64_be(buf, pos)",),
    "uint16": ("{t} = int(read_i16_be(buf, pos)) & 0xFFFF",),
    "uint32": ("{t} = int(read_i32_be(buf, pos)) & 0xFFFFFFFF",),
    "uuid": ("{t} = _uuid(buf, pos)",),
}
_FIXED_WRITES: dict[str, str] = {
    "bool": "{w}.append(_ONE if {v} else _ZERO)",
    "int8": "_put_i8({w}, {v})",
    "int16": "write_i16_be({w}, {v})",
    "int32": "write_i32_be({w}, {v})",
    "int64": "write_i64_be({w}, {v})",
    "float64": "write_f64_be({w}, {v})",
    "uint16": "_put_u16({w}, {v})",
    "uint32": "_put_u32({w}, {v})",
    "uuid": "_put_uuid({w}, {v})",
}


#: The mypyc-tuned flavour (``kafka_wire._compiled.messages``): the CPython one but for these spots.
MYPYC = dataclasses.replace(
    PURE,
    symbols={
        **COMMON_SYMBOLS,
        **names_from("typing", "Any", "Final"),
        **names_from("librt.strings", "BytesWriter", "read_f64_be", "read_i16_be", "read_i32_be", "read_i64_be"),
        **names_from("librt.strings", "write_f64_be", "write_i16_be", "write_i32_be", "write_i64_be"),
        **names_from("mypy_extensions", "i64", "u8"),
        **names_from("kafka_wire._compiled.base", "Message", "Struct"),
        "_runtime": ("kafka_wire.codec", "runtime"),
    },
    compiled=True, annotate_locals=True, marker="b8", uvarint="_uvarint", uvarint_writer="_put_uvarint",
    # mypyc types a local re-bound in several branches as ``object``: no inlined elements
    inline_elements=False, bytes={0: "_ZERO", 1: "_ONE", 0xFF: "_FF"}, new_buffer="BytesWriter()",
    buffer_bytes="{}.getvalue()", as_bytes="_as_bytes({})", tagged_writer="_put_tagged",
)  # fmt: skip


class NativeModuleEmitter(ModuleEmitter):
    """Emits the mypyc module twin of one CPython-flavour module."""

    def __init__(self, messages: list[Message], banner: list[str], public_module: str) -> None:
        super().__init__(messages, banner, public_module, None)

    # ----------------------------------------------------------------- flavour snippets
    FLAVOUR: ClassVar[Flavour] = MYPYC

    def put_bytes(self, out: str, data: str, kind: str) -> str:
        return f"{out}.write({data})"

    def unknown_target(self, obj: str) -> str:
        return "utf"

    def tagged_field_target(self, obj: str, f: Field) -> str:
        return f"f_{f.py_name}"

    def loop_count(self, w: SourceWriter, n: str) -> str:
        # compiled by mypyc, ``for ... in range(n)`` over an i64 local re-reads ``n`` at every
        # iteration, and the tagged fields' reads reassign ``n``: the count gets its own local
        w.line(f"ntags: i64 = {n}")
        return "ntags"

    def write_number_array(self, w: SourceWriter, f: Field, flexible: bool, out: str) -> bool:
        return False  # element by element: each write is a C call

    def array_items(self, w: SourceWriter, f: Field, p: str) -> str:
        # A list only: another sized iterable (a tuple, say) fails the cast with TypeError and the
        # message goes to the pure encoder, which takes it. (A call per array to copy other
        # iterables cost MetadataResponse v12 encode about 10%: 2,000 partitions, three arrays each.)
        w.line(f"l_{p}: list[{self.elem_type(f)}] = x_{p}")
        return f"l_{p}"

    # ----------------------------------------------------------------- fixed-width values
    def read_fixed(self, w: SourceWriter, kind: str, target: str) -> None:
        """Read one fixed-width value at ``pos`` into ``target`` and advance ``pos``."""
        w.lines([line.format(t=target) for line in _FIXED_READS[kind]])
        w.line(f"pos += {FIXED_WIDTH[kind]}")

    def write_fixed(self, w: SourceWriter, kind: str, value: str, out: str) -> None:
        """Write one fixed-width value to the ``BytesWriter`` named ``out``."""
        if kind in NUMBER_TYPES and "." in value:
            # The classes' attributes are untyped (``Any``): a typed local makes the write a C
            # call (its check raises TypeError for a wrong type, and the runtime decides).
            local = f"v_{value.rpartition('.')[2]}"
            w.line(f"{local}: {NUMBER_TYPES[kind]} = {value}")
            value = local
        w.line(_FIXED_WRITES[kind].format(w=out, v=value))

    # ----------------------------------------------------------------- decode
    def emit_decoder(self, msg: Message, s: Struct, v: int) -> str:
        """Fields are read into ``f_<name>`` locals and the object is made by its (native)
        constructor at the end: a direct C call, where attribute stores one by one would each
        check the object's type. Fields absent in ``v`` are left to the constructor's defaults."""
        w = SourceWriter()
        cls = s.class_name
        flexible = v in msg.flexible
        uses_mv = any(f.present(v) and f.type.kind == "records" for f in s.fields)
        with w.block(f"def @NAME@(buf: bytes, pos: i64) -> tuple[{cls}, i64]:"):
            w.line("blen: i64 = len(buf)")
            w.line("n: i64 = 0")
            w.line("end: i64 = 0")
            w.line("b8: int = 0")
            if uses_mv:
                w.line("mv = memoryview(buf)")
            present = [f for f in s.fields if f.present(v)]
            for f in present:
                if f.is_tagged(v):
                    w.line(f"f_{f.py_name}: Any = {fresh_default(f, self.msg_classes)}")
                else:
                    w.line(f"f_{f.py_name}: Any")
            for f in present:
                if f.is_tagged(v):
                    continue
                kind = f.type.kind
                target = f"f_{f.py_name}"
                if kind in FIXED_WIDTH:
                    self.read_fixed(w, kind, target)
                else:
                    self.read_var(w, msg, f, v, target, self.field_flexible(msg, f, v), have_length=False)
            if flexible:
                self.read_tagged(w, msg, s, v, "o")
            else:
                w.line("utf: Any = ()")
            args = [f"{f.py_name}=f_{f.py_name}" for f in present] + ["unknown_tagged_fields=utf"]
            w.line(f"return {cls}({', '.join(args)}), pos")
        text = w.text()
        for local in ("blen", "n", "end", "b8"):
            if len(re.findall(rf"\b{local}\b", text)) == 1:
                text = re.sub(rf"\n *{local}: [^\n]*", "", text, count=1)
        return text

    def read_classic_length(self, w: SourceWriter, kind: str, var: str) -> str:
        w.line(f"{var} = i64(read_{'i16' if kind == 'string' else 'i32'}_be(buf, pos))")
        w.line(f"pos += {2 if kind == 'string' else 4}")
        return f"{var} < 0"

    def read_child(self, w: SourceWriter, fn: str, f: Field, target: str) -> None:
        w.line(f"x_{f.py_name}, pos = {fn}(buf, pos)")
        w.line(f"{target} = x_{f.py_name}")

    def read_number_array(self, w: SourceWriter, f: Field, target: str) -> bool:
        return False  # element by element: each read is a C call

    def appender(self, w: SourceWriter, p: str) -> str:
        return f"lst_{p}.append"  # a direct C call on a list[...] local

    # ----------------------------------------------------------------- encode
    def emit_encoder(self, msg: Message, s: Struct, v: int) -> str:
        w = SourceWriter()
        cls = s.class_name
        flexible = v in msg.flexible
        with w.block(f"def @NAME@(o: {cls}, w: BytesWriter) -> None:"):
            for f in s.fields:
                if not f.present(v) and not f.ignorable:
                    value = f"o.{f.py_name}"
                    if f.type.kind in NUMBER_TYPES:
                        # a typed local: the comparison is then a C comparison, not a generic one
                        value = f"d_{f.py_name}"
                        w.line(f"{value}: {NUMBER_TYPES[f.type.kind]} = o.{f.py_name}")
                    with w.block(f"if {nondefault_check(f, value, self.msg_classes)}:"):
                        w.line(
                            f"raise FieldNotInVersionError('non-default {f.name} cannot be written', version={v})"
                        )
            for f in s.fields:
                if not f.present(v) or f.is_tagged(v):
                    continue
                self.write_value(w, msg, f, v, f"o.{f.py_name}", self.field_flexible(msg, f, v), "w")
            if flexible:
                self.write_tagged(w, msg, s, v, "o", "w")
            else:
                with w.block("if o.unknown_tagged_fields:"):
                    w.line(f"raise EncodeError('tagged fields cannot be written in version {v}')")
        return w.text()

    def byte_of(self, local: str) -> str:
        return f"u8({local})"  # any other argument type makes ``append`` a generic call

    def write_classic_length(self, w: SourceWriter, kind: str, n: str, out: str) -> None:
        w.line(f"write_{'i16' if kind == 'string' else 'i32'}_be({out}, {n})")

    def write_null(self, w: SourceWriter, flexible: bool, kind: str, out: str) -> None:
        if flexible:
            w.line(f"{out}.append(_ZERO)")
        elif kind == "string":
            w.line(f"write_i16_be({out}, -1)")
        else:
            w.line(f"write_i32_be({out}, -1)")

    # ----------------------------------------------------------------- classes
    def emit_class(self, w: SourceWriter, msg: Message, s: Struct) -> None:
        """The native twin of the pure class: same name, constructor and fields. Attributes are
        ``Any``, as the pure classes accept any value until it is encoded."""
        base = "Message" if s is msg.root else "Struct"
        w.line()
        w.line()
        with w.block(f"class {s.class_name}({base}):"):
            for f in s.fields:
                w.line(f"{f.py_name}: Any")
            if s.fields:
                w.line()
            self.emit_init(w, s, {f.py_name: "Any" for f in s.fields}, "Any")
            self.emit_response_class(w, msg, s)

    # ----------------------------------------------------------------- module
    def emit_constants(self, w: SourceWriter) -> None:
        """Module constants as static references (a name imported from another module is a dict
        lookup at every use in mypyc) and the helpers the functions call."""
        w.lines(_HELPERS)

    def emit_ending(self, w: SourceWriter) -> None:
        pass  # the public module imports the classes from here


_HELPERS = '''# Module constants as static references: a name imported from another module is a
# dict lookup at every use in mypyc.
FRESH: Final = _runtime.FRESH
ZERO_UUID: Final = _runtime.ZERO_UUID
ZERO_UUID_BYTES: Final = bytes(16)
_UUID_CACHE: Final = _runtime.UUID_CACHE
_ZERO: Final[u8] = 0
_ONE: Final[u8] = 1
_FF: Final[u8] = 0xFF


def _uvarint(buf: bytes, pos: i64) -> tuple[i64, i64]:
    """An unsigned varint of at most 5 bytes (32 bits), as ``runtime.read_uvarint``."""
    value: i64 = 0
    shift: i64 = 0
    while True:
        b: i64 = buf[pos]
        pos += 1
        if shift == 28:
            if b & 0x80:
                raise _invalid("unsigned varint longer than 5 bytes")
            return value | ((b & 0x0F) << 28), pos
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _uuid(buf: bytes, pos: i64) -> UUID:
    """The UUID at ``pos``: the shared zero UUID, else ``runtime.uuid_from_bytes`` (its cache)."""
    hi: i64 = read_i64_be(buf, pos)
    lo: i64 = read_i64_be(buf, pos + 8)
    if hi == 0 and lo == 0:
        return ZERO_UUID
    raw = buf[pos : pos + 16]
    u = _UUID_CACHE.get(raw)
    if u is None:
        u = _uuid_from_bytes(raw)
    return u


def _put_uvarint(w: BytesWriter, value: i64) -> None:
    """Append ``value`` (0 <= value < 2**32) as an unsigned varint."""
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        w.append(u8((value & 0x7F) | 0x80))
        value >>= 7
    w.append(u8(value))


def _put_i8(w: BytesWriter, value: int) -> None:
    if value < -0x80 or value > 0x7F:
        raise ValueOutOfRangeError("int8 out of range")
    w.append(u8(value & 0xFF))


def _put_u16(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFF:
        raise ValueOutOfRangeError("uint16 out of range")
    w.append(u8(value >> 8))
    w.append(u8(value & 0xFF))


def _put_u32(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueOutOfRangeError("uint32 out of range")
    write_i32_be(w, value - 0x100000000 if value > 0x7FFFFFFF else value)


def _put_uuid(w: BytesWriter, value: UUID) -> None:
    if value is ZERO_UUID:
        w.write(ZERO_UUID_BYTES)
    else:
        w.write(value.int.to_bytes(16, "big"))  # what ``UUID.bytes`` returns, without its Python frame


def _as_bytes(value: object) -> bytes:
    """``value`` (bytes, bytearray, memoryview...) as ``bytes``; copies only when it is not bytes."""
    if isinstance(value, bytes):
        return value
    return bytes(memoryview(value))  # type: ignore[arg-type]  # non-buffers raise TypeError


def _put_tagged(w: BytesWriter, known: list[tuple[int, bytes | bytearray]], unknown: tuple[tuple[int, bytes], ...],
                known_tags: frozenset[int]) -> None:  # fmt: skip
    """A tagged-field block, written by the runtime's own writer."""
    tmp = bytearray()
    _write_tagged(tmp, known, unknown, known_tags)
    w.write(tmp)'''.split("\n")
