"""The mypyc-tuned flavour: the same schema model and plan as the CPython flavour, other snippets.

:class:`NativeModuleEmitter` reuses :class:`~kafka_wire.codegen.python_flavour.ModuleEmitter`'s
planning unchanged (which versions share a layout, the per-version function names and tables)
and replaces only the per-field snippets, with code that mypyc compiles into direct C:

* cursors, lengths and counts are ``i64`` locals; fixed-width integers are read and written with
  ``librt.strings`` (``read_i32_be``, ``write_i32_be``...), which check bounds and ranges and
  raise ``IndexError`` / ``ValueError`` like the ``struct`` calls they replace;
* varints are read by indexing ``bytes`` (one byte, then a small helper for longer ones) and
  written with ``BytesWriter.append`` of ``u8`` values only (other argument types take a slow
  generic path: ``tools/check_mypyc_c.py`` counts such calls);
* encoders write into a ``librt.strings.BytesWriter`` instead of a ``bytearray``.

Each module also defines the message classes as mypyc native classes (same names, keyword
constructors and fields as the pure ones, attributes typed ``Any`` so that any value is accepted
until it is encoded, as by the pure classes). Decoders read fields into locals and call the
constructor; encoders read attributes straight from the object's struct and move each value into
a typed local (a wrong type raises ``TypeError`` there, and the pure encoder decides). The module
ends by handing its classes and tables to :func:`kafka_wire.codec.runtime.install_native`, which
makes them the public classes (the pure module's names are rebound to them).

Run uncompiled, this source is slower than the CPython flavour and is never used: the pure
modules only load it when ``find_spec`` says it is a compiled extension.
"""

from __future__ import annotations

import re

from kafka_wire.codegen.python_flavour import (
    ModuleEmitter,
    emit_response_class,
    fresh_default,
    nondefault_check,
    read_sized,
)
from kafka_wire.codegen.writer import SourceWriter
from kafka_wire.errors import SchemaError
from kafka_wire.schema.model import FIXED_WIDTH, Field, Message, Struct

#: The Python type of each number kind (bools are ints), for typed locals in encoders.
NUMBER_TYPES: dict[str, str] = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int", "uint32": "int",
    "float64": "float",
}  # fmt: skip

#: ``librt.strings`` read/write suffix of each fixed-width integer kind.
INT_IO: dict[str, str] = {"int16": "i16", "int32": "i32", "int64": "i64", "float64": "f64"}


class NativeModuleEmitter(ModuleEmitter):
    """Emits the mypyc module twin of one CPython-flavour module."""

    def __init__(self, messages: list[Message], banner: list[str], pure_module: str) -> None:
        super().__init__(messages, banner, {})
        self.pure_module = pure_module

    # ----------------------------------------------------------------- fixed-width values
    def read_fixed(self, w: SourceWriter, kind: str, target: str) -> None:
        """Read one fixed-width value at ``pos`` into ``target`` and advance ``pos``."""
        size = FIXED_WIDTH[kind]
        if kind == "bool":
            w.line(f"{target} = buf[pos] != 0")
        elif kind == "int8":
            w.line("b8 = buf[pos]")
            w.line(f"{target} = b8 - 256 if b8 >= 128 else b8")
        elif kind in INT_IO:
            w.line(f"{target} = read_{INT_IO[kind]}_be(buf, pos)")
        elif kind == "uint16":
            w.line(f"{target} = int(read_i16_be(buf, pos)) & 0xFFFF")
        elif kind == "uint32":
            w.line(f"{target} = int(read_i32_be(buf, pos)) & 0xFFFFFFFF")
        elif kind == "uuid":
            w.line(f"{target} = _uuid(buf, pos)")
        else:
            raise SchemaError(f"not a fixed-width kind: {kind}")
        w.line(f"pos += {size}")

    def write_fixed(self, w: SourceWriter, kind: str, value: str, out: str = "w") -> None:
        """Write one fixed-width value to the ``BytesWriter`` named ``out``."""
        if kind == "bool":
            w.line(f"{out}.append(_ONE if {value} else _ZERO)")
        elif kind == "int8":
            w.line(f"_put_i8({out}, {value})")
        elif kind in INT_IO:
            w.line(f"write_{INT_IO[kind]}_be({out}, {value})")
        elif kind == "uint16":
            w.line(f"_put_u16({out}, {value})")
        elif kind == "uint32":
            w.line(f"_put_u32({out}, {value})")
        elif kind == "uuid":
            w.line(f"_put_uuid({out}, {value})")
        else:
            raise SchemaError(f"not a fixed-width kind: {kind}")

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
                self.native_read_tagged(w, msg, s, v)
            else:
                w.line("utf: Any = ()")
            args = [f"{f.py_name}=f_{f.py_name}" for f in present] + ["unknown_tagged_fields=utf"]
            w.line(f"return {cls}({', '.join(args)}), pos")
        text = w.text()
        for local in ("blen", "n", "end", "b8"):
            if len(re.findall(rf"\b{local}\b", text)) == 1:
                text = re.sub(rf"\n *{local}: [^\n]*", "", text, count=1)
        return text

    def native_read_length(self, w: SourceWriter, flexible: bool, kind: str, var: str = "n") -> None:
        if flexible:
            w.line(f"{var} = buf[pos]")
            with w.block(f"if {var} < 0x80:"):
                w.line("pos += 1")
            with w.block("else:"):
                w.line(f"{var}, pos = _uvarint(buf, pos)")
            w.line(f"{var} -= 1")
        elif kind == "string":
            w.line(f"{var} = i64(read_i16_be(buf, pos))")
            w.line("pos += 2")
        else:
            w.line(f"{var} = i64(read_i32_be(buf, pos))")
            w.line("pos += 4")

    def read_var(self, w: SourceWriter, msg: Message, f: Field, v: int, target: str, flexible: bool,
                 have_length: bool) -> None:  # fmt: skip
        kind = f.type.kind
        if kind == "struct":
            self.read_struct(w, f, v, target, marker_loaded=False)
            return
        self.native_read_length(w, flexible, kind)
        with w.block("if n < 0:"):
            if f.is_nullable(v):
                w.line(f"{target} = None")
            else:
                w.line(f"raise _invalid('non-nullable field {f.name} was null')")
        with w.block("else:"):
            if kind == "array":
                self.native_read_array_body(w, f, v, target, flexible)
                return
            read_sized(w, f, kind, target, check_string_length=True)

    def read_struct(self, w: SourceWriter, f: Field, v: int, target: str, marker_loaded: bool) -> None:
        fn = self.fn_ref(f.type.struct, v)
        if f.is_nullable(v):
            w.line("b8 = buf[pos]")
            w.line("pos += 1")
            with w.block("if b8 >= 0x80:"):
                w.line(f"{target} = None")
            with w.block("else:"):
                w.line(f"x_{f.py_name}, pos = {fn}(buf, pos)")
                w.line(f"{target} = x_{f.py_name}")
        else:
            w.line(f"x_{f.py_name}, pos = {fn}(buf, pos)")
            w.line(f"{target} = x_{f.py_name}")

    def native_read_array_body(self, w: SourceWriter, f: Field, v: int, target: str, flexible: bool) -> None:
        elem = f.type.element
        assert elem is not None
        ek = elem.kind
        p = f.py_name
        if ek in FIXED_WIDTH and ek != "uuid":
            size = FIXED_WIDTH[ek]
            with w.block(f"if n * {size} > blen - pos:"):
                w.line(f"raise _truncated('{f.name}')")
            w.line(f"lst_{p}: list[{self.elem_type(f)}] = []")
            with w.block(f"for _i_{p} in range(n):"):
                self.read_fixed(w, ek, f"e_{p}")
                w.line(f"lst_{p}.append(e_{p})")
            w.line(f"{target} = lst_{p}")
            return
        with w.block("if n > blen - pos:"):
            w.line(f"raise _invalid('array {f.name} declares more elements than bytes remain')")
        w.line(f"lst_{p}: list[{self.elem_type(f)}] = []")
        with w.block(f"for _i_{p} in range(n):"):
            if ek == "uuid":
                self.read_fixed(w, "uuid", f"e_{p}")
                w.line(f"lst_{p}.append(e_{p})")
            elif ek in ("string", "bytes"):
                self.native_read_length(w, flexible, ek, "n2")
                with w.block("if n2 < 0:"):
                    w.line(f"raise _invalid('null element in {f.name}')")
                if ek == "string":
                    with w.block("if n2 > 0x7FFF:"):
                        w.line(f"raise _invalid('string in {f.name} is too long')")
                w.line("end = pos + n2")
                with w.block("if end > blen:"):
                    w.line(f"raise _truncated('{f.name}')")
                w.line(f"lst_{p}.append(buf[pos:end].decode())" if ek == "string" else f"lst_{p}.append(buf[pos:end])")
                w.line("pos = end")
            elif ek == "struct":
                w.line(f"x_{p}, pos = {self.fn_ref(f.type.struct, v)}(buf, pos)")
                w.line(f"lst_{p}.append(x_{p})")
            else:
                raise SchemaError(f"arrays of {ek} are not supported")
        w.line(f"{target} = lst_{p}")

    def native_read_tagged(self, w: SourceWriter, msg: Message, s: Struct, v: int) -> None:
        tagged = sorted((f for f in s.fields if f.present(v) and f.is_tagged(v)), key=lambda f: f.tag or 0)
        valid = {f.tag for f in tagged}
        other = sorted({f.tag for f in s.fields if f.tag is not None} - valid)
        w.line("n = buf[pos]")
        with w.block("if n < 0x80:"):
            w.line("pos += 1")
        with w.block("else:"):
            w.line("n, pos = _uvarint(buf, pos)")
        w.line("utf: Any = ()")
        with w.block("if n != 0:"):
            # The count gets its own local: compiled by mypyc, ``for ... in range(n)`` over an i64
            # local re-reads ``n`` at every iteration, and the tagged fields' reads reassign ``n``.
            w.line("ntags: i64 = n")
            w.line("unknown: list[tuple[int, bytes]] = []")
            with w.block("for _i_tag in range(ntags):"):
                w.line("tag, pos = _uvarint(buf, pos)")
                w.line("size, pos = _uvarint(buf, pos)")
                first = True
                for f in tagged:
                    with w.block(f"{'if' if first else 'elif'} tag == {f.tag}:"):
                        kind = f.type.kind
                        target = f"f_{f.py_name}"
                        if kind in FIXED_WIDTH:
                            self.read_fixed(w, kind, target)
                        else:
                            self.read_var(w, msg, f, v, target, True, have_length=False)
                    first = False
                if other:
                    cond = " or ".join(f"tag == {t}" for t in other)
                    with w.block(f"{'if' if first else 'elif'} {cond}:"):
                        w.line(f"raise _invalid(f'tag {{tag}} is not valid in version {v}')")
                    first = False
                with w.block("else:" if not first else "if True:"):
                    w.line("end = pos + size")
                    with w.block("if end > blen:"):
                        w.line("raise _truncated('a tagged field')")
                    w.line("unknown.append((tag, buf[pos:end]))")
                    w.line("pos = end")
            w.line("utf = tuple(unknown)")

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
                        w.line(f"raise FieldNotInVersionError('non-default {f.name} cannot be written', version={v})")
            for f in s.fields:
                if not f.present(v) or f.is_tagged(v):
                    continue
                self.write_value(w, msg, f, v, f"o.{f.py_name}", self.field_flexible(msg, f, v), "w")
            if flexible:
                self.native_write_tagged(w, msg, s, v)
            else:
                with w.block("if o.unknown_tagged_fields:"):
                    w.line(f"raise EncodeError('tagged fields cannot be written in version {v}')")
        return w.text()

    def write_length(self, w: SourceWriter, flexible: bool, kind: str, n: str, out: str) -> None:
        if flexible:
            w.line(f"m = {n} + 1")
            with w.block("if m < 0x80:"):
                w.line(f"{out}.append(u8(m))")
            with w.block("else:"):
                w.line(f"_put_uvarint({out}, m)")
        elif kind == "string":
            w.line(f"write_i16_be({out}, {n})")
        else:
            w.line(f"write_i32_be({out}, {n})")

    def write_null(self, w: SourceWriter, flexible: bool, kind: str, out: str) -> None:
        if flexible:
            w.line(f"{out}.append(_ZERO)")
        elif kind == "string":
            w.line(f"write_i16_be({out}, -1)")
        else:
            w.line(f"write_i32_be({out}, -1)")

    def write_value(self, w: SourceWriter, msg: Message, f: Field, v: int, value: str, flexible: bool,
                    out: str, known_not_none: bool = False) -> None:  # fmt: skip
        """``known_not_none``: the caller checked ``value is not None``, so the null branch is dead
        code, which mypyc compiles generically: it then raises instead of writing a null."""
        kind = f.type.kind
        p = f.py_name
        if kind in FIXED_WIDTH:
            if kind in NUMBER_TYPES:
                # The classes' attributes are untyped (``Any``): a typed local makes the write a
                # C call (its check raises TypeError for a wrong type, and the pure encoder decides).
                w.line(f"v_{p}: {NUMBER_TYPES[kind]} = {value}")
                value = f"v_{p}"
            self.write_fixed(w, kind, value, out)
            return
        if kind == "struct":
            fn = self.fn_ref(f.type.struct, v, encode=True)
            if f.is_nullable(v):
                w.line(f"x_{p} = {value}")
                with w.block(f"if x_{p} is None:"):
                    w.line(f"{out}.append(_FF)")
                with w.block("else:"):
                    w.line(f"{out}.append(_ONE)")
                    w.line(f"{fn}(x_{p}, {out})")
            else:
                w.line(f"{fn}({value}, {out})")
            return
        w.line(f"x_{p}: {'str | None' if kind == 'string' else 'Any'} = {value}")
        with w.block(f"if x_{p} is None:"):
            if f.is_nullable(v) and not known_not_none:
                self.write_null(w, flexible, kind, out)
            else:
                w.line(f"raise ValueOutOfRangeError('non-nullable field {f.name} is None', version={v})")
        with w.block("else:"):
            if kind == "array":
                self.native_write_array_body(w, f, v, flexible, out)
                return
            if kind == "string":
                w.line(f"b_{p} = x_{p}.encode()")
                with w.block(f"if len(b_{p}) > 0x7FFF:"):
                    w.line(f"raise ValueOutOfRangeError('string field {f.name} is too long', version={v})")
            else:
                w.line(f"b_{p} = _as_bytes(x_{p})")
            self.write_length(w, flexible, kind, f"len(b_{p})", out)
            w.line(f"{out}.write(b_{p})")

    def native_write_array_body(self, w: SourceWriter, f: Field, v: int, flexible: bool, out: str) -> None:
        elem = f.type.element
        assert elem is not None
        ek = elem.kind
        p = f.py_name
        w.line(f"l_{p}: list[{self.elem_type(f)}] = x_{p}")
        self.write_length(w, flexible, "array", f"len(l_{p})", out)
        if ek in FIXED_WIDTH:
            with w.block(f"for e_{p} in l_{p}:"):
                self.write_fixed(w, ek, f"e_{p}", out)
        elif ek in ("string", "bytes"):
            with w.block(f"for e_{p} in l_{p}:"):
                if ek == "string":
                    w.line(f"b_{p} = e_{p}.encode()")
                    with w.block(f"if len(b_{p}) > 0x7FFF:"):
                        w.line(f"raise ValueOutOfRangeError('string in {f.name} is too long', version={v})")
                else:
                    w.line(f"b_{p} = _as_bytes(e_{p})")
                self.write_length(w, flexible, ek, f"len(b_{p})", out)
                w.line(f"{out}.write(b_{p})")
        elif ek == "struct":
            fn = self.fn_ref(f.type.struct, v, encode=True)
            with w.block(f"for e_{p} in l_{p}:"):
                w.line(f"{fn}(e_{p}, {out})")
        else:
            raise SchemaError(f"arrays of {ek} are not supported")

    def native_write_tagged(self, w: SourceWriter, msg: Message, s: Struct, v: int) -> None:
        tagged = sorted((f for f in s.fields if f.present(v) and f.is_tagged(v)), key=lambda f: f.tag or 0)
        known_tags = sorted({f.tag for f in tagged if f.tag is not None})
        if not tagged:
            with w.block("if o.unknown_tagged_fields:"):
                w.line("_put_tagged(w, [], o.unknown_tagged_fields, frozenset())")
            with w.block("else:"):
                w.line("w.append(_ZERO)")
            return
        w.line("known: list[tuple[int, bytes | bytearray]] = []")
        for f in tagged:
            with w.block(f"if {nondefault_check(f, 'o.' + f.py_name, self.msg_classes)}:"):
                # one writer variable per field: mypyc types a re-bound local as ``object``
                t = f"t_{f.py_name}"
                w.line(f"{t} = BytesWriter()")
                check = nondefault_check(f, "o." + f.py_name, self.msg_classes)
                self.write_value(w, msg, f, v, f"o.{f.py_name}", True, t, check.endswith(" is not None"))
                w.line(f"known.append(({f.tag}, {t}.getvalue()))")
        with w.block("if o.unknown_tagged_fields or known:"):
            w.line(f"_put_tagged(w, known, o.unknown_tagged_fields, frozenset({known_tags!r}))")
        with w.block("else:"):
            w.line("w.append(_ZERO)")

    # ----------------------------------------------------------------- classes
    def emit_native_class(self, w: SourceWriter, msg: Message, s: Struct) -> None:
        """The native twin of the pure class: same name, constructor and fields. Attributes are
        ``Any``, as the pure classes accept any value until it is encoded."""
        base = "_NativeMessage" if s is msg.root else "_NativeStruct"
        w.line()
        w.line()
        with w.block(f"class {s.class_name}({base}):"):
            for f in s.fields:
                w.line(f"{f.py_name}: Any")
            if s.fields:
                w.line()
            self.emit_init(w, s, {f.py_name: "Any" for f in s.fields}, "Any")
            if s is msg.root and emit_response_class(w, msg, self.messages):
                self.needs_builtins = True

    # ----------------------------------------------------------------- module
    def emit(self) -> str:
        self.fn_table: dict[tuple[str, int, bool], str] = {}
        classes = SourceWriter()
        defaults: list[str] = []
        table = SourceWriter()
        for msg in self.messages:
            self.msg_classes = {s.name: s.class_name for s in msg.structs.values()}
            self.msg_classes[msg.name] = msg.root.class_name
            for s in msg.all_structs():
                self.emit_native_class(classes, msg, s)
                if s is not msg.root:
                    defaults.append(f"_DEFAULT_{s.class_name} = {s.class_name}()")
            self.plan_functions(msg)
            self.emit_functions(msg)
            for s in msg.all_structs():
                name = msg.name if s is msg.root else s.name
                dec = ", ".join(f"{v}: {self.fn_table[(name, v, False)]}" for v in s.versions)
                enc = ", ".join(f"{v}: {self.fn_table[(name, v, True)]}" for v in s.versions)
                table.line(f"({s.class_name}, {{{dec}}}, {{{enc}}}),")
        head = SourceWriter()
        head.lines(self.banner)
        head.line()
        head.line("from __future__ import annotations")
        head.line()
        if self.needs_builtins:
            head.line("import builtins")
        head.line("from typing import Any, Final")
        head.line("from uuid import UUID")
        head.line()
        head.line("from librt.strings import (")
        for prim in ("BytesWriter", "read_f64_be", "read_i16_be", "read_i32_be", "read_i64_be",
                     "write_f64_be", "write_i16_be", "write_i32_be", "write_i64_be"):  # fmt: skip
            head.line(f"    {prim},")
        head.line(")")
        head.line("from mypy_extensions import i64, u8")
        head.line()
        head.line("from kafka_wire.codec.native_base import Message as _NativeMessage")
        head.line("from kafka_wire.codec.native_base import Struct as _NativeStruct")
        head.line("from kafka_wire.codec.runtime import FRESH, UUID_CACHE, ZERO_UUID, install_native")
        head.line("from kafka_wire.codec.runtime import invalid as _invalid")
        head.line("from kafka_wire.codec.runtime import truncated as _truncated")
        head.line("from kafka_wire.codec.runtime import uuid_from_bytes as _uuid_from_bytes")
        head.line("from kafka_wire.codec.runtime import write_tagged as _write_tagged")
        head.line("from kafka_wire.errors import EncodeError, FieldNotInVersionError, ValueOutOfRangeError")
        head.line()
        head.line("# Module constants as static references: a name imported from another module is a")
        head.line("# dict lookup at every use in mypyc.")
        head.line("_FRESH: Final = FRESH")
        head.line("_ZERO_UUID: Final = ZERO_UUID")
        head.line("_ZERO_UUID_BYTES: Final = bytes(16)")
        body = classes.text()
        if defaults:
            body += "\n\n" + "\n".join(defaults) + "\n"
        body += self.body.text()
        body = "\n".join(_HELPERS) + body
        body = re.sub(r"(?<![\w.])(FRESH|ZERO_UUID)\b", r"_\1", body)
        tail = SourceWriter()
        tail.line()
        tail.line()
        tail.line("#: (class, {version: decoder}, {version: encoder}) for every struct of the module.")
        with tail.block("TABLES: Final[tuple[tuple[Any, dict[int, Any], dict[int, Any]], ...]] = ("):
            tail.lines(table.text().rstrip("\n").split("\n"))
        tail.line(")")
        tail.line()
        tail.line(f"install_native({self.pure_module!r}, TABLES)")
        text = head.text() + body + tail.text()
        return _tidy(text)


_HELPERS = '''_UUID_CACHE: Final = UUID_CACHE
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
        raise ValueError("int8 out of range")
    w.append(u8(value & 0xFF))


def _put_u16(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFF:
        raise ValueError("uint16 out of range")
    w.append(u8(value >> 8))
    w.append(u8(value & 0xFF))


def _put_u32(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError("uint32 out of range")
    write_i32_be(w, value - 0x100000000 if value > 0x7FFFFFFF else value)


def _put_uuid(w: BytesWriter, value: UUID) -> None:
    if value is _ZERO_UUID:
        w.write(_ZERO_UUID_BYTES)
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


def _tidy(text: str) -> str:
    """Drop imported names the module does not use (keeps generated modules lint-clean)."""
    start = text.index("# Module constants as static references")
    head, body = text[:start], text[start:]
    out: list[str] = []
    lines = head.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.endswith(" import ("):
            names = []
            i += 1
            while lines[i] != ")":
                names.append(lines[i].strip().rstrip(","))
                i += 1
            used = [n for n in names if _uses(body, n)]
            if used:
                out.append(line)
                out += [f"    {n}," for n in used]
                out.append(")")
        elif line.startswith(("from ", "import ")) and " import " in line and "__future__" not in line:
            prefix, names_text = line.split(" import ", 1)
            used = [p.strip() for p in names_text.split(",") if _uses(body, p.strip().split(" as ")[-1])]
            if used:
                out.append(f"{prefix} import {', '.join(used)}")
        else:
            out.append(line)
        i += 1
    return "\n".join(out) + body


def _uses(body: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", body) is not None
