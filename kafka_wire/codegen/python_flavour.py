"""The CPython-tuned flavour: schema model -> one Python module per API.

Each struct gets a slotted class; each (struct, version) gets one straight-line decode and one
encode function. Versions whose wire layout is identical share a function. Runs of fixed-width
fields (and, in non-flexible versions, the length prefix that follows them) are read and written
with one precompiled ``struct.Struct``.

:class:`ModuleEmitter` holds the node methods both flavours share (a field of each kind, arrays,
tagged blocks, class data, the module), parameterised by a :class:`Flavour` (names and words that
differ) and by the few per-value snippets that :mod:`~kafka_wire.codegen.mypyc_flavour` overrides.
Imports are collected as the code is written (:class:`~kafka_wire.codegen.writer.Imports`).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import ClassVar

from kafka_wire.codec.runtime import SMALL_ARRAY
from kafka_wire.codegen.writer import IDENTIFIER as _IDENTIFIER
from kafka_wire.codegen.writer import Imports, SourceWriter, names_from
from kafka_wire.errors import SchemaError
from kafka_wire.schema.model import FIXED_WIDTH, Field, Message, Struct

ARRAY_NAMES: dict[str, str] = {
    "?": "bool",
    "b": "i8",
    "h": "i16",
    "i": "i32",
    "q": "i64",
    "H": "u16",
    "I": "u32",
    "d": "f64",
}
STRUCT_CHARS: dict[str, str] = {
    "bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint16": "H", "uint32": "I", "float64": "d", "uuid": "16s",
}  # fmt: skip
PY_TYPES: dict[str, str] = {
    "bool": "bool", "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int",
    "uint32": "int", "float64": "float", "uuid": "UUID", "string": "str", "bytes": "bytes",
    "records": "bytes | memoryview",
}  # fmt: skip


def py_type(field: Field, classes: dict[str, str]) -> str:
    t = field.type
    if t.kind == "array":
        assert t.element is not None
        inner = classes[t.struct] if t.struct else PY_TYPES[t.element.kind]
        base = f"list[{inner}]"
    elif t.kind == "struct":
        assert t.struct is not None
        base = classes[t.struct]
    else:
        base = PY_TYPES[t.kind]
    return f"{base} | None" if field.nullable else base


def _int_default(text: str) -> int:
    text = text.strip()
    return int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)


def default_literal(field: Field, classes: dict[str, str]) -> str | None:
    """The default as an immutable Python literal, or None when it must be built fresh."""
    d = field.default
    kind = field.type.kind
    if d == "null":
        if not field.nullable:
            raise SchemaError(f"{field.name}: null default on a non-nullable field")
        return "None"
    if kind == "bool":
        return "True" if (d or "false").lower() == "true" else "False"
    if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return repr(_int_default(d)) if d else "0"
    if kind == "float64":
        return repr(float(d)) if d else "0.0"
    if kind == "uuid":
        if not d:
            return "ZERO_UUID"
        raw = base64.urlsafe_b64decode(d + "=" * (-len(d) % 4))
        return f"UUID(bytes={raw!r})"
    if kind == "string":
        return repr(d or "")
    if kind == "bytes":
        return 'b""'
    if kind == "records":
        return "None" if field.nullable else 'b""'
    return None  # arrays and structs


def fresh_default(field: Field, classes: dict[str, str]) -> str:
    """An expression that builds a fresh default value."""
    lit = default_literal(field, classes)
    if lit is not None:
        return lit
    if field.type.kind == "array":
        return "[]"
    assert field.type.struct is not None
    return f"{classes[field.type.struct]}()"


def nondefault_check(field: Field, value: str, classes: dict[str, str]) -> str:
    """An expression that is true when ``value`` is not the field's default (Kafka's rule)."""
    kind = field.type.kind
    if field.default == "null" or (kind == "records" and field.nullable):
        return f"{value} is not None"
    if kind in ("array", "bytes", "records"):
        return f"{value} is None or len({value}) != 0"
    if kind == "struct":
        assert field.type.struct is not None
        return f"{value} != _DEFAULT_{classes[field.type.struct]}"
    lit = default_literal(field, classes)
    if kind == "bool":
        return f"not {value}" if lit == "True" else f"bool({value})"
    return f"{value} != {lit}"


def response_class_name(msg: Message, messages: list[Message]) -> str | None:
    """The class name of a request's response (generated in the same module), else None."""
    if msg.kind != "request":
        return None
    for other in messages:
        if other.kind == "response" and other.api_key == msg.api_key:
            return other.root.class_name
    raise ValueError(f"{msg.name}: no response message in its module")


#: Names that both flavours' generated code uses, and where they are imported from.
COMMON_SYMBOLS: dict[str, tuple[str, str]] = {
    "builtins": ("builtins", ""),  # ``import builtins``
    **names_from("uuid", "UUID"),
    **names_from("kafka_wire.codec.runtime", "FieldSpec"),
    **names_from(
        "kafka_wire.codec.runtime",
        "class_data",
        "invalid",
        "truncated",
        "uuid_from_bytes",
        "write_tagged",
        private=True,
    ),
    **names_from("kafka_wire.codec.versions", "VersionSet"),
    **names_from("kafka_wire.errors", "EncodeError", "FieldNotInVersionError", "ValueOutOfRangeError"),
}


@dataclass(frozen=True)
class Flavour:
    """What differs between the generated flavours, where a node method writes a name or a word."""

    #: every name the generated code may use, and where it is imported from (``writer.Imports``)
    symbols: dict[str, tuple[str, str]]
    #: the functions are the compiled flavour's (``runtime.class_data``)
    compiled: bool
    #: locals are annotated at their first assignment
    annotate_locals: bool
    #: the local a nullable struct's marker byte is read into
    marker: str
    #: the unsigned-varint reader the decoders call, and the writer the encoders call
    uvarint: str
    uvarint_writer: str
    #: struct elements decoded and encoded by the parent's loop rather than by a call
    inline_elements: bool
    #: a byte to ``append`` (0, 1, 0xFF), a scratch buffer for a tagged field, that buffer's
    #: bytes, a bytes-like value made bytes (``str.format`` patterns) and the tagged-block writer
    bytes: dict[int, str]
    new_buffer: str
    buffer_bytes: str
    as_bytes: str
    tagged_writer: str


#: The CPython-tuned flavour (``kafka_wire.messages``).
PURE = Flavour(
    symbols={
        **COMMON_SYMBOLS,
        **names_from("struct", "Struct", "pack", "unpack_from", private=True),
        **names_from("typing", "TYPE_CHECKING"),
        **names_from("kafka_wire.codec.runtime", "ARRAY_STRUCTS", "COUNTED_ARRAY_STRUCTS", "FRESH", "ZERO_UUID"),
        **names_from("kafka_wire.codec.runtime", "ZERO_UUID_BYTES", "TaggedFields"),
        **names_from("kafka_wire.codec.runtime", "put_records", "read_uvarint", "write_uvarint", private=True),
        **names_from("kafka_wire.codec.structs", "Message", "Struct"),
        "_new": ("kafka_wire.codec.structs", "new_instance"),
        **names_from("kafka_wire.flavour", "compiled_module"),
    },
    compiled=False, annotate_locals=False, marker="n", uvarint="_read_uvarint", uvarint_writer="_write_uvarint",
    inline_elements=True, bytes={0: "0", 1: "1", 0xFF: "0xFF"}, new_buffer="bytearray()", buffer_bytes="{}",
    as_bytes="{}", tagged_writer="_write_tagged",
)  # fmt: skip


@dataclass
class Layout:
    """What one version of a struct looks like on the wire (the key for sharing functions)."""

    flexible: bool
    present: tuple[tuple[object, ...], ...]
    tagged: tuple[tuple[object, ...], ...]


class ModuleEmitter:
    """Emits one generated module holding one or more messages."""

    def __init__(
        self, messages: list[Message], banner: list[str], public_module: str, compiled_module: str | None
    ) -> None:
        self.messages = messages
        #: this module's name, and its compiled twin's when that is built (``kafka_wire._compiled``)
        self.public_module = public_module
        self.compiled_module = compiled_module
        self.banner = banner
        self.structs: dict[str, str] = {}  # format -> constant name
        self.body = SourceWriter()
        self.tables = SourceWriter()
        self.tables_used: dict[str, str] = {}  # module constant -> runtime array-struct table
        # Prepended to the names of an encoder's per-field locals (x_, b_, k_, e_) while an element
        # is written inline, so that they cannot clash with the parent's locals of another type.
        self.local_prefix = ""
        #: class name -> (message, struct) of each ``_fresh_<Class>`` function the decoders call
        self.fresh_structs: dict[str, tuple[Message, Struct]] = {}

    # ----------------------------------------------------------------- helpers
    def struct_const(self, fmt: str) -> str:
        name = self.structs.get(fmt)
        if name is None:
            name = self.structs[fmt] = f"_S{len(self.structs)}"
        return name

    def array_table(self, c: str, counted: bool) -> str:
        name = f"_{'C' if counted else 'A'}{ARRAY_NAMES[c]}"
        self.tables_used[name] = f"{'COUNTED_ARRAY_STRUCTS' if counted else 'ARRAY_STRUCTS'}[{c!r}]"
        return name

    def class_of(self, field: Field) -> str:
        assert field.type.struct is not None
        return self.msg_classes[field.type.struct]

    # ----------------------------------------------------------------- flavour snippets
    # The node methods below (fields, arrays, tagged blocks) are shared by both flavours; these are
    # the spots where the CPython flavour and the mypyc flavour (``mypyc_flavour``) write other code.

    #: the spots where this flavour writes other code than the other one
    FLAVOUR: ClassVar[Flavour] = PURE

    def typed(self, name: str, annotation: str) -> str:
        """The target of a local's first assignment (annotated in the mypyc flavour only)."""
        return f"{name}: {annotation}" if self.FLAVOUR.annotate_locals else name

    def put_bytes(self, out: str, data: str, kind: str) -> str:
        # a large records payload is not copied into the buffer by ``Struct.encode`` (runtime)
        return f"_put_records({out}, {data})" if kind == "records" else f"{out} += {data}"

    def unknown_target(self, obj: str) -> str:
        """Where a struct's unknown tagged fields are stored once read."""
        return f"{obj}.unknown_tagged_fields"

    def tagged_field_target(self, obj: str, f: Field) -> str:
        return f"{obj}.{f.py_name}"

    def loop_count(self, w: SourceWriter, n: str) -> str:
        """The count a ``for`` loop ranges over (the mypyc flavour copies it to a local)."""
        return n

    def read_fixed(self, w: SourceWriter, kind: str, target: str) -> None:
        """Read one fixed-width value at ``pos`` into ``target`` and advance ``pos``."""
        c = STRUCT_CHARS[kind]
        const = self.struct_const(">" + c)
        if c == "16s":
            w.line(f"raw, = {const}.unpack_from(buf, pos)")
            w.line(f"{target} = {_uuid_expr('raw')}")
        else:
            w.line(f"{target}, = {const}.unpack_from(buf, pos)")
        w.line(f"pos += {_char_size(c)}")

    def write_fixed(self, w: SourceWriter, kind: str, value: str, out: str) -> None:
        """Write one fixed-width value to ``out``."""
        if kind == "uuid":
            w.line(f"{out} += {value}.bytes")
        else:
            w.line(f"{out} += {self.struct_const('>' + STRUCT_CHARS[kind])}.pack({value})")

    def write_number_array(self, w: SourceWriter, f: Field, flexible: bool, out: str) -> bool:
        """Write an array of fixed-width numbers in one call; False when the flavour loops instead."""
        assert f.type.element is not None
        c = STRUCT_CHARS[f.type.element.kind]
        p = self.local_prefix + f.py_name
        w.line(f"k_{p} = len(x_{p})")
        if flexible:
            self.write_length(w, True, "array", f"k_{p}", out)
            table = self.array_table(c, counted=False)
            fallback = f"_Struct(f'>{{k_{p}}}{c}')"
            w.line(f"{out} += ({table}[k_{p}] if k_{p} < {SMALL_ARRAY} else {fallback}).pack(*x_{p})")
        else:
            table = self.array_table(c, counted=True)
            fallback = f"_Struct(f'>i{{k_{p}}}{c}')"
            w.line(f"{out} += ({table}[k_{p}] if k_{p} < {SMALL_ARRAY} else {fallback}).pack(k_{p}, *x_{p})")
        return True

    def array_items(self, w: SourceWriter, f: Field, p: str) -> str:
        """The local an encoder iterates over for array field ``f`` (its value is in ``x_<p>``)."""
        return f"x_{p}"

    # ----------------------------------------------------------------- classes
    def emit_class(self, w: SourceWriter, msg: Message, s: Struct) -> None:
        cls = s.class_name
        base = "Message" if s is msg.root else "Struct"
        w.line()
        w.line()
        with w.block(f"class {cls}({base}):"):
            names = ", ".join(repr(f.py_name) for f in s.fields)
            w.line(f"__slots__ = ({names}{',' if len(s.fields) == 1 else ''})")
            w.line()
            for f in s.fields:
                w.line(f"{f.py_name}: {py_type(f, self.msg_classes)}")
            if s.fields:
                w.line()
            self.emit_init(w, s, {f.py_name: py_type(f, self.msg_classes) for f in s.fields}, "TaggedFields")
            self.emit_response_class(w, msg, s)

    def emit_init(self, w: SourceWriter, s: Struct, types: dict[str, str], tags_type: str) -> None:
        """The keyword-only constructor (both flavours' classes): ``types`` are the annotations."""
        params = []
        for f in s.fields:
            lit = default_literal(f, self.msg_classes)
            params.append(f"{f.py_name}: {types[f.py_name]} = {lit if lit is not None else 'FRESH'}")
        params.append(f"unknown_tagged_fields: {tags_type} = ()")
        with w.block(f"def __init__(self, *, {', '.join(params)}) -> None:"):
            for f in s.fields:
                lit = default_literal(f, self.msg_classes)
                if lit is None:
                    fresh = fresh_default(f, self.msg_classes)
                    w.line(f"self.{f.py_name} = {fresh} if {f.py_name} is FRESH else {f.py_name}")
                else:
                    w.line(f"self.{f.py_name} = {f.py_name}")
            w.line("self.unknown_tagged_fields = unknown_tagged_fields")

    def emit_response_class(self, w: SourceWriter, msg: Message, s: Struct) -> None:
        """A request class's ``response_class()`` (both flavours): the type-level link to its
        response (``kafka_wire.codec.request_for``). A field called ``type`` hides the builtin in the
        class body, so the annotation then names ``builtins.type``."""
        response = response_class_name(msg, self.messages) if s is msg.root else None
        if response is None:
            return
        shadowed = any(f.py_name == "type" for f in s.fields)
        w.line()
        with w.block(f"def response_class(self) -> {'builtins.' if shadowed else ''}type[{response}]:"):
            w.line(f"return {response}")

    def decoder_default(self, msg: Message, f: Field) -> str:
        """``fresh_default``, except that a struct default is made by ``_fresh_<Class>()``, which
        fills the slots directly: about half the cost of the keyword constructor."""
        if f.type.kind != "struct" or default_literal(f, self.msg_classes) is not None:
            return fresh_default(f, self.msg_classes)
        assert f.type.struct is not None
        cls = self.class_of(f)
        self.fresh_structs.setdefault(cls, (msg, msg.structs[f.type.struct]))
        return f"_fresh_{cls}()"

    def emit_fresh_functions(self) -> None:
        """The ``_fresh_<Class>`` functions that decoders asked for (and those they need)."""
        done: set[str] = set()
        while len(done) < len(self.fresh_structs):
            cls = min(set(self.fresh_structs) - done)
            done.add(cls)
            msg, s = self.fresh_structs[cls]
            self.use_message(msg)
            w = self.body
            w.line()
            w.line()
            with w.block(f"def _fresh_{cls}() -> {cls}:"):
                w.line(f"o = _new({cls})")
                for f in s.fields:
                    w.line(f"o.{f.py_name} = {self.decoder_default(msg, f)}")
                w.line("o.unknown_tagged_fields = ()")
                w.line("return o")

    # ----------------------------------------------------------------- layouts
    def field_flexible(self, msg: Message, f: Field, v: int) -> bool:
        return v in (msg.flexible if f.flexible_override is None else f.flexible_override)

    def layout_key(self, msg: Message, s: Struct, v: int) -> tuple[object, ...]:
        def fkey(f: Field) -> tuple[object, ...]:
            # A struct-typed field also keys on the child's function, which differs by version.
            child = self.fn_table[(f.type.struct, v, False)] if f.type.struct else None
            return (
                f.py_name, f.type, f.is_nullable(v), self.field_flexible(msg, f, v),
                f.tag if f.is_tagged(v) else None, child,
            )  # fmt: skip

        present = tuple(fkey(f) for f in s.fields if f.present(v) and not f.is_tagged(v))
        tagged = tuple(fkey(f) for f in s.fields if f.present(v) and f.is_tagged(v))
        absent = tuple((f.py_name, f.ignorable) for f in s.fields if not f.present(v) or f.is_tagged(v))
        known_tags = tuple(sorted({f.tag for f in s.fields if f.tag is not None}))
        return (v in msg.flexible, present, tagged, absent, known_tags)

    # ----------------------------------------------------------------- decode
    def emit_decoder(self, msg: Message, s: Struct, v: int) -> str:
        w = SourceWriter()
        cls = s.class_name
        with w.block(f"def @NAME@(buf: bytes, pos: int) -> tuple[{cls}, int]:"):
            w.line("blen = len(buf)")
            w.line("mv = memoryview(buf)")  # for records fields, its own or inlined elements
            self.decode_body(w, msg, s, v, "o")
            w.line("return o, pos")
        text = w.text()
        # Drop the buffer-length and memoryview locals when nothing reads them.
        for local in ("blen", "mv"):
            if text.count(f"{local}") == 1 or len(re.findall(rf"\b{local}\b", text)) == 1:
                text = re.sub(rf"\n *{local} = [^\n]*", "", text, count=1)
        return text

    def decode_body(self, w: SourceWriter, msg: Message, s: Struct, v: int, obj: str) -> None:
        """Statements that read one ``s`` at ``pos`` into a new object ``obj`` and advance ``pos``.

        They use the locals ``buf``, ``pos``, ``blen`` (and ``mv`` for records fields) and may
        overwrite the scratch locals ``n``, ``end``, ``raw``, ``tag`` and ``size`` (an enclosing loop
        has evaluated its ``range(n)`` already, and reads ``tag`` and ``size`` afresh each turn).
        """
        w.line(f"{obj} = _new({s.class_name})")
        # Defaults first: absent fields and tagged fields.
        for f in s.fields:
            if not f.present(v) or f.is_tagged(v):
                w.line(f"{obj}.{f.py_name} = {self.decoder_default(msg, f)}")
        run: list[tuple[str, str]] = []  # (struct char, target)

        def flush() -> None:
            if not run:
                return
            fmt = ">" + "".join(c for c, _ in run)
            const = self.struct_const(fmt)
            targets = [t for _, t in run]
            size = sum(_char_size(c) for c, _ in run)
            lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
            w.line(f"{lhs} = {const}.unpack_from(buf, pos)")
            w.line(f"pos += {size}")
            for c, t in run:
                if c == "16s":
                    w.line(f"{obj}.{t[2:-4]} = {_uuid_expr(t)}")
            run.clear()

        for f in s.fields:
            if not f.present(v) or f.is_tagged(v):
                continue
            fflex = self.field_flexible(msg, f, v)
            kind = f.type.kind
            target = f"{obj}.{f.py_name}"
            if kind in STRUCT_CHARS:
                c = STRUCT_CHARS[kind]
                # uuids are read into a local and converted after the run
                run.append((c, f"u_{f.py_name}_raw" if c == "16s" else target))
                continue
            if not fflex and kind == "string" and not run:
                # Nothing to fuse the length with: read_length reads its two bytes directly.
                self.read_var(w, msg, f, v, target, fflex, have_length=False)
            elif not fflex and kind in ("string", "bytes", "records", "array"):
                run.append(("h" if kind == "string" else "i", "n"))
                flush()
                self.read_var(w, msg, f, v, target, fflex, have_length=True)
            elif kind == "struct" and f.is_nullable(v):
                run.append(("b", "n"))
                flush()
                self.read_struct(w, f, v, target, marker_loaded=True)
            else:
                flush()
                self.read_var(w, msg, f, v, target, fflex, have_length=False)
        flush()
        if v in msg.flexible:
            self.read_tagged(w, msg, s, v, obj)
        else:
            w.line(f"{obj}.unknown_tagged_fields = ()")

    def inlinable(self, msg: Message, s: Struct, v: int, decode: bool = False) -> bool:
        """Whether array elements of ``s`` are read (written) in the parent's loop instead of by a call.

        Leaf structs qualify: every field present at ``v`` is a number, bool, uuid, string, bytes or
        an array of fixed-width numbers, so their reading needs no locals beyond the scratch ones
        (see :meth:`decode_body`). This saves a call, a result tuple and a ``len(buf)`` per element.
        Decoders also inline records fields (read through the function's ``mv``).
        """
        for f in s.fields:
            if not f.present(v):
                continue
            kind = f.type.kind
            if kind == "array":
                assert f.type.element is not None
                ek = f.type.element.kind
                if ek not in STRUCT_CHARS or ek == "uuid":
                    return False
            elif (
                kind not in STRUCT_CHARS
                and kind not in ("string", "bytes")
                and not (decode and kind == "records")
            ):
                return False
        return True

    def read_length(self, w: SourceWriter, flexible: bool, kind: str, var: str = "n") -> str:
        """Read a length or count (minus one when compact) into the local ``var``; return the
        condition under which ``var`` means null."""
        if flexible:
            self.read_uvarint(w, var)
            w.line(f"{var} -= 1")
            return f"{var} < 0"
        return self.read_classic_length(w, kind, var)

    def read_uvarint(self, w: SourceWriter, var: str) -> None:
        """Read an unsigned varint into ``var``: one byte inline, longer ones by a call."""
        w.line(f"{var} = buf[pos]")
        with w.block(f"if {var} < 0x80:"):
            w.line("pos += 1")
        with w.block("else:"):
            w.line(f"{var}, pos = {self.FLAVOUR.uvarint}(buf, pos)")

    def read_classic_length(self, w: SourceWriter, kind: str, var: str) -> str:
        """A classic (int16 or int32) length. A string's is read as two bytes, unsigned (cheaper
        than a struct call): every value above 0x7FFF is a negative int16, that is null, so "too
        long" cannot happen."""
        if kind == "string":
            w.line(f"{var} = buf[pos] << 8 | buf[pos + 1]")
            w.line("pos += 2")
            return f"{var} > 0x7FFF"
        w.line(f"{var}, = {self.struct_const('>i')}.unpack_from(buf, pos)")
        w.line("pos += 4")
        return f"{var} < 0"

    def read_var(self, w: SourceWriter, msg: Message, f: Field, v: int, target: str, flexible: bool,
                 have_length: bool) -> None:  # fmt: skip
        kind = f.type.kind
        if kind == "struct":
            self.read_struct(w, f, v, target, marker_loaded=False)
            return
        null = "n < 0"
        if not have_length:
            null = self.read_length(w, flexible, kind)
        with w.block(f"if {null}:"):
            if f.is_nullable(v):
                w.line(f"{target} = None")
            else:
                w.line(f"raise _invalid('non-nullable field {f.name} was null')")
        with w.block("else:"):
            if kind == "array":
                self.read_array_body(w, msg, f, v, target, flexible)
                return
            read_sized(w, f, kind, target, check_string_length=null == "n < 0")

    def read_struct(self, w: SourceWriter, f: Field, v: int, target: str, marker_loaded: bool) -> None:
        """A struct field by its function; a nullable one after its marker byte (``marker_loaded``:
        already read, as a signed byte, into ``n``)."""
        fn = self.fn_ref(f.type.struct, v)
        if not f.is_nullable(v):
            self.read_child(w, fn, f, target)
            return
        null = "n < 0"
        if not marker_loaded:
            w.line(f"{self.FLAVOUR.marker} = buf[pos]")
            w.line("pos += 1")
            null = f"{self.FLAVOUR.marker} >= 0x80"
        with w.block(f"if {null}:"):
            w.line(f"{target} = None")
        with w.block("else:"):
            self.read_child(w, fn, f, target)

    def read_child(self, w: SourceWriter, fn: str, f: Field, target: str) -> None:
        w.line(f"{target}, pos = {fn}(buf, pos)")

    def read_array_body(
        self, w: SourceWriter, msg: Message, f: Field, v: int, target: str, flexible: bool
    ) -> None:
        """The elements of array ``f`` (its count, not null, is in ``n``) into ``target``."""
        elem = f.type.element
        assert elem is not None
        ek = elem.kind
        p = self.local_prefix + f.py_name
        if ek in FIXED_WIDTH and ek != "uuid" and self.read_number_array(w, f, target):
            return
        with w.block(
            f"if n * {FIXED_WIDTH[ek]} > blen - pos:" if ek in FIXED_WIDTH else "if n > blen - pos:"
        ):
            if ek in FIXED_WIDTH:
                w.line(f"raise _truncated('{f.name}')")
            else:
                w.line(f"raise _invalid('array {f.name} declares more elements than bytes remain')")
        w.line(f"lst_{p}: list[{self.elem_type(f)}] = []")
        append = self.appender(w, p)
        child = msg.structs[f.type.struct] if f.type.struct is not None else None
        with w.block(f"for _i_{p} in range(n):"):
            if ek in FIXED_WIDTH:
                self.read_fixed(w, ek, f"e_{p}")
                w.line(f"{append}(e_{p})")
            elif ek in ("string", "bytes"):
                self.read_blob_element(w, f, ek, flexible, append)
            elif (
                ek == "struct"
                and child is not None
                and self.FLAVOUR.inline_elements
                and self.inlinable(msg, child, v, decode=True)
            ):
                self.decode_body(w, msg, child, v, f"e_{p}")
                w.line(f"{append}(e_{p})")
            elif ek == "struct":
                w.line(f"x_{p}, pos = {self.fn_ref(f.type.struct, v)}(buf, pos)")
                w.line(f"{append}(x_{p})")
            else:
                raise SchemaError(f"arrays of {ek} are not supported")
        w.line(f"{target} = lst_{p}")

    def read_number_array(self, w: SourceWriter, f: Field, target: str) -> bool:
        """Read an array of fixed-width numbers in one call; False when the flavour loops instead."""
        assert f.type.element is not None
        ek = f.type.element.kind
        size = FIXED_WIDTH[ek]
        c = STRUCT_CHARS[ek]
        table = self.array_table(c, counted=False)
        # [*t] builds the list straight from the tuple, without a call to list(). A short
        # array needs no length check: unpack_from raises when the input ends too soon.
        with w.block(f"if n < {SMALL_ARRAY}:"):
            w.line(f"{target} = [*{table}[n].unpack_from(buf, pos)]")
        with w.block("else:"):
            with w.block(f"if n * {size} > blen - pos:"):
                w.line(f"raise _truncated('{f.name}')")
            w.line(f"{target} = [*_Struct(f'>{{n}}{c}').unpack_from(buf, pos)]")
        w.line(f"pos += n * {size}")
        return True

    def appender(self, w: SourceWriter, p: str) -> str:
        """What adds an element to the list ``lst_<p>``: a bound method kept in a local."""
        w.line(f"app_{p} = lst_{p}.append")
        return f"app_{p}"

    def read_blob_element(self, w: SourceWriter, f: Field, ek: str, flexible: bool, append: str) -> None:
        """Read one string or bytes element of array ``f`` and pass it to ``append``."""
        null = self.read_length(w, flexible, ek, "n2")
        with w.block(f"if {null}:"):
            w.line(f"raise _invalid('null element in {f.name}')")
        if ek == "string" and null == "n2 < 0":
            with w.block("if n2 > 0x7FFF:"):
                w.line(f"raise _invalid('string in {f.name} is too long')")
        w.line("end = pos + n2")
        with w.block("if end > blen:"):
            w.line(f"raise _truncated('{f.name}')")
        w.line(f"{append}(buf[pos:end].decode())" if ek == "string" else f"{append}(buf[pos:end])")
        w.line("pos = end")

    def elem_type(self, f: Field) -> str:
        elem = f.type.element
        assert elem is not None
        return self.msg_classes[f.type.struct] if f.type.struct else PY_TYPES[elem.kind]

    def read_tagged(self, w: SourceWriter, msg: Message, s: Struct, v: int, obj: str) -> None:
        """The tagged-field block of a flexible version: known tags into their fields, tags of
        other versions rejected, unknown ones kept (as ``(tag, bytes)`` pairs)."""
        tagged = sorted((f for f in s.fields if f.present(v) and f.is_tagged(v)), key=lambda f: f.tag or 0)
        valid = {f.tag for f in tagged}
        # An element read inline may sit inside its parent's tagged-field loop: its own list of
        # unknown fields must not replace the parent's.
        unknown = "unknown" if obj == "o" else f"unknown_{obj}"
        # Tags must ascend (KIP-482 writers sort them; Kafka's refuses raw tags that do not), so
        # a duplicate or out-of-order tag is refused here: what decodes always encodes again.
        previous = "prev_tag" if obj == "o" else f"prev_tag_{obj}"
        result = self.unknown_target(obj)
        other = sorted({f.tag for f in s.fields if f.tag is not None} - valid)
        self.read_uvarint(w, "n")
        w.line(f"{self.typed(result, 'Any')} = ()")
        with w.block("if n != 0:"):
            count = self.loop_count(w, "n")
            w.line(f"{self.typed(unknown, 'list[tuple[int, bytes]]')} = []")
            w.line(f"{self.typed(previous, 'int')} = -1")
            with w.block(f"for _i_tag in range({count}):"):
                w.line(f"tag, pos = {self.FLAVOUR.uvarint}(buf, pos)")
                with w.block(f"if tag <= {previous}:"):
                    w.line(f"raise _invalid(f'tag {{tag}} after tag {{{previous}}}: tags must ascend')")
                w.line(f"{previous} = tag")
                w.line(f"size, pos = {self.FLAVOUR.uvarint}(buf, pos)")
                first = True
                for f in tagged:
                    with w.block(f"{'if' if first else 'elif'} tag == {f.tag}:"):
                        target = self.tagged_field_target(obj, f)
                        if f.type.kind in FIXED_WIDTH:
                            self.read_fixed(w, f.type.kind, target)
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
                    w.line(f"{unknown}.append((tag, buf[pos:end]))")
                    w.line("pos = end")
            w.line(f"{result} = tuple({unknown})")

    # ----------------------------------------------------------------- encode
    def emit_encoder(self, msg: Message, s: Struct, v: int) -> str:
        w = SourceWriter()
        with w.block(f"def @NAME@(o: {s.class_name}, out: bytearray) -> None:"):
            self.encode_body(w, msg, s, v, "o", "out")
        return w.text()

    def encode_body(self, w: SourceWriter, msg: Message, s: Struct, v: int, obj: str, out: str) -> None:
        """Statements that append the object ``obj`` (an ``s``) to the bytearray ``out``.

        Besides locals named after its fields they may overwrite the scratch local ``m``; an
        element written inline names its tagged-field scratch after itself (see :meth:`write_tagged`).
        """
        for f in s.fields:
            if not f.present(v) and not f.ignorable:
                with w.block(f"if {nondefault_check(f, f'{obj}.{f.py_name}', self.msg_classes)}:"):
                    w.line(
                        f"raise FieldNotInVersionError('non-default {f.name} cannot be written', version={v})"
                    )
        run: list[tuple[str, str]] = []

        def flush() -> None:
            if not run:
                return
            fmt = ">" + "".join(c for c, _ in run)
            const = self.struct_const(fmt)
            w.line(f"{out} += {const}.pack({', '.join(e for _, e in run)})")
            run.clear()

        for f in s.fields:
            if not f.present(v) or f.is_tagged(v):
                continue
            kind = f.type.kind
            value = f"{obj}.{f.py_name}"
            if kind in STRUCT_CHARS:
                c = STRUCT_CHARS[kind]
                run.append((c, f"{value}.bytes" if c == "16s" else value))
                continue
            flush()
            self.write_value(w, msg, f, v, value, self.field_flexible(msg, f, v), out)
        flush()
        if v in msg.flexible:
            self.write_tagged(w, msg, s, v, obj, out)
        else:
            with w.block(f"if {obj}.unknown_tagged_fields:"):
                w.line(f"raise EncodeError('tagged fields cannot be written in version {v}')")

    def write_length(self, w: SourceWriter, flexible: bool, kind: str, n: str, out: str) -> None:
        """Write a length or count ``n`` (plus one, as a varint, when compact)."""
        if flexible:
            w.line(f"m = {n} + 1")
            with w.block("if m < 0x80:"):
                w.line(f"{out}.append({self.byte_of('m')})")
            with w.block("else:"):
                w.line(f"{self.FLAVOUR.uvarint_writer}({out}, m)")
        else:
            self.write_classic_length(w, kind, n, out)

    def byte_of(self, local: str) -> str:
        """A local known to hold 0-255, as ``append`` takes it."""
        return local

    def write_classic_length(self, w: SourceWriter, kind: str, n: str, out: str) -> None:
        c = "h" if kind == "string" else "i"
        w.line(f"{out} += {self.struct_const('>' + c)}.pack({n})")

    def write_null(self, w: SourceWriter, flexible: bool, kind: str, out: str) -> None:
        if flexible:
            w.line(f"{out}.append(0)")
        else:
            null = b"\xff\xff" if kind == "string" else b"\xff\xff\xff\xff"
            w.line(f"{out} += {null!r}")

    def write_value(self, w: SourceWriter, msg: Message, f: Field, v: int, value: str, flexible: bool,
                    out: str, known_not_none: bool = False) -> None:  # fmt: skip
        """Write field ``f``'s ``value`` to ``out``. ``known_not_none``: the caller checked ``value is
        not None`` (mypyc compiles dead code generically, so the null branch then only raises)."""
        kind = f.type.kind
        p = self.local_prefix + f.py_name
        if kind in FIXED_WIDTH:
            self.write_fixed(w, kind, value, out)
            return
        if kind == "struct":
            fn = self.fn_ref(f.type.struct, v, encode=True)
            if f.is_nullable(v):
                w.line(f"x_{p} = {value}")
                with w.block(f"if x_{p} is None:"):
                    w.line(f"{out}.append({self.FLAVOUR.bytes[0xFF]})")
                with w.block("else:"):
                    w.line(f"{out}.append({self.FLAVOUR.bytes[1]})")
                    w.line(f"{fn}(x_{p}, {out})")
            else:
                w.line(f"{fn}({value}, {out})")
            return
        w.line(f"{self.typed(f'x_{p}', 'str | None' if kind == 'string' else 'Any')} = {value}")
        with w.block(f"if x_{p} is None:"):
            if f.is_nullable(v) and not known_not_none:
                self.write_null(w, flexible, kind, out)
            else:
                w.line(f"raise ValueOutOfRangeError('non-nullable field {f.name} is None', version={v})")
        with w.block("else:"):
            if kind == "array":
                self.write_array_body(w, msg, f, v, flexible, out)
                return
            if kind == "string":
                w.line(f"b_{p} = x_{p}.encode()")
                with w.block(f"if len(b_{p}) > 0x7FFF:"):
                    w.line(f"raise ValueOutOfRangeError('string field {f.name} is too long', version={v})")
            else:
                w.line(f"b_{p} = {self.FLAVOUR.as_bytes.format(f'x_{p}')}")
            self.write_length(w, flexible, kind, f"len(b_{p})", out)
            w.line(self.put_bytes(out, f"b_{p}", kind))

    def write_array_body(
        self, w: SourceWriter, msg: Message, f: Field, v: int, flexible: bool, out: str
    ) -> None:
        elem = f.type.element
        assert elem is not None
        ek = elem.kind
        p = self.local_prefix + f.py_name
        if ek in FIXED_WIDTH and ek != "uuid" and self.write_number_array(w, f, flexible, out):
            return
        items = self.array_items(w, f, p)
        self.write_length(w, flexible, "array", f"len({items})", out)
        if ek in FIXED_WIDTH:
            with w.block(f"for e_{p} in {items}:"):
                self.write_fixed(w, ek, f"e_{p}", out)
        elif ek in ("string", "bytes"):
            with w.block(f"for e_{p} in {items}:"):
                if ek == "string":
                    w.line(f"b_{p} = e_{p}.encode()")
                    with w.block(f"if len(b_{p}) > 0x7FFF:"):
                        w.line(f"raise ValueOutOfRangeError('string in {f.name} is too long', version={v})")
                else:
                    w.line(f"b_{p} = {self.FLAVOUR.as_bytes.format(f'e_{p}')}")
                self.write_length(w, flexible, ek, f"len(b_{p})", out)
                w.line(self.put_bytes(out, f"b_{p}", ek))
        elif ek == "struct":
            assert f.type.struct is not None
            child = msg.structs[f.type.struct]
            fn = self.fn_ref(f.type.struct, v, encode=True)
            with w.block(f"for e_{p} in {items}:"):
                if self.FLAVOUR.inline_elements and self.inlinable(msg, child, v):
                    outer, self.local_prefix = self.local_prefix, f"{p}_"
                    self.encode_body(w, msg, child, v, f"e_{p}", out)
                    self.local_prefix = outer
                else:
                    w.line(f"{fn}(e_{p}, {out})")
        else:
            raise SchemaError(f"arrays of {ek} are not supported")

    def write_tagged(self, w: SourceWriter, msg: Message, s: Struct, v: int, obj: str, out: str) -> None:
        """The tagged-field block: known fields that differ from their defaults and the retained
        unknown ones, ascending by tag (``runtime.write_tagged``)."""
        tagged = sorted((f for f in s.fields if f.present(v) and f.is_tagged(v)), key=lambda f: f.tag or 0)
        known_tags = sorted({f.tag for f in tagged if f.tag is not None})
        if not tagged:
            with w.block(f"if {obj}.unknown_tagged_fields:"):
                w.line(f"{self.FLAVOUR.tagged_writer}({out}, [], {obj}.unknown_tagged_fields, frozenset())")
            with w.block("else:"):
                w.line(f"{out}.append({self.FLAVOUR.bytes[0]})")
            return
        # An element written inline may sit inside its parent's tagged field, which is being
        # written and collected in ``known``: its own scratch gets its own names.
        known = "known" if obj == "o" else f"known_{obj}"
        w.line(f"{known}: list[tuple[int, bytes | bytearray]] = []")
        for f in tagged:
            check = nondefault_check(f, f"{obj}.{f.py_name}", self.msg_classes)
            with w.block(f"if {check}:"):
                # one buffer variable per field: mypyc types a re-bound local as ``object``
                t = f"t_{f.py_name}" if obj == "o" else f"t_{obj}_{f.py_name}"
                w.line(f"{t} = {self.FLAVOUR.new_buffer}")
                self.write_value(w, msg, f, v, f"{obj}.{f.py_name}", True, t, check.endswith(" is not None"))
                w.line(f"{known}.append(({f.tag}, {self.FLAVOUR.buffer_bytes.format(t)}))")
        with w.block(f"if {obj}.unknown_tagged_fields or {known}:"):
            w.line(
                f"{self.FLAVOUR.tagged_writer}({out}, {known}, {obj}.unknown_tagged_fields, frozenset({known_tags!r}))"
            )
        with w.block("else:"):
            w.line(f"{out}.append({self.FLAVOUR.bytes[0]})")

    # ----------------------------------------------------------------- functions
    def fn_ref(self, struct_name: str | None, v: int, encode: bool = False) -> str:
        assert struct_name is not None
        return self.fn_table[(struct_name, v, encode)]

    def plan_functions(self, msg: Message) -> None:
        """Give every (struct, version, direction) a function name, sharing identical layouts."""
        for s in msg.all_structs():
            key_struct = None if s is msg.root else s.name
            by_layout: dict[tuple[object, ...], int] = {}
            for v in s.versions:
                layout = self.layout_key(msg, s, v)
                first = by_layout.setdefault(layout, v)
                name = s.name if key_struct is not None else msg.name
                self.fn_table[(name, v, False)] = f"_decode_{s.class_name}_v{first}"
                self.fn_table[(name, v, True)] = f"_encode_{s.class_name}_v{first}"

    def emit_functions(self, msg: Message) -> None:
        w = self.body
        for s in msg.all_structs():
            name = msg.name if s is msg.root else s.name
            done: set[str] = set()
            for v in s.versions:
                for encode in (False, True):
                    fn = self.fn_table[(name, v, encode)]
                    if fn in done:
                        continue
                    done.add(fn)
                    src = self.emit_encoder(msg, s, v) if encode else self.emit_decoder(msg, s, v)
                    w.line()
                    w.line()
                    for line in src.rstrip("\n").split("\n"):
                        w.line(line.replace("@NAME@", fn))

    def emit_tables(self, msg: Message, t: SourceWriter, compiled: bool = False) -> None:
        """Each class's data (``runtime.class_data``): fields, versions and function tables; and
        the ``_DEFAULT_<Class>`` instance of each nested struct (encoders compare with it)."""
        for s in msg.all_structs():
            name = msg.name if s is msg.root else s.name
            cls = s.class_name
            t.line()
            with t.block(f"_class_data({cls}, ("):
                for f in s.fields:
                    t.line(self.field_spec(f) + ",")
            dec = ", ".join(f"{v}: {self.fn_table[(name, v, False)]}" for v in s.versions)
            enc = ", ".join(f"{v}: {self.fn_table[(name, v, True)]}" for v in s.versions)
            t.line(f"), {msg.flexible.format()!r}, {s.versions.format()!r},")
            t.line(f"    {{{dec}}},")
            t.line(f"    {{{enc}}},")
            extra = []
            if compiled:
                extra.append(f"compiled=True, module={self.public_module!r}")
            if s is msg.root:
                extra.append(f"api_key={msg.api_key!r}, kind={msg.kind!r}, valid={tuple(msg.valid)!r}")
            if extra:
                t.line(f"    {', '.join(extra)},")
            t.line(")")
            if s is not msg.root:
                t.line(f"_DEFAULT_{cls} = {cls}()")

    def field_spec(self, f: Field) -> str:
        elem = f.type.element.kind if f.type.element is not None else None
        struct = self.msg_classes[f.type.struct] if f.type.struct else None
        fresh = fresh_default(f, self.msg_classes)
        override = (
            f"VersionSet.parse({f.flexible_override.format()!r})" if f.flexible_override is not None else None
        )
        return (
            f"FieldSpec({f.py_name!r}, {f.name!r}, {f.type.kind!r}, {elem!r}, {struct}, "
            f"VersionSet.parse({f.versions.format()!r}), VersionSet.parse({f.nullable.format()!r}), {f.tag!r}, "
            f"VersionSet.parse({f.tagged.format()!r}), {override}, lambda: {fresh}, {f.ignorable!r}, "
            f"{f.entity_type!r})"
        )

    # ----------------------------------------------------------------- module
    def emit(self) -> str:
        """The module's source: banner, the imports its code used, constants, classes, functions
        and class data (both flavours; the flavour adds its constants, classes and ending)."""
        self.imports = Imports(self.FLAVOUR.symbols)
        self.body = SourceWriter(imports=self.imports)
        self.tables = SourceWriter(imports=self.imports)
        classes = SourceWriter(imports=self.imports)
        self.fn_table: dict[tuple[str, int, bool], str] = {}
        for msg in self.messages:
            self.use_message(msg)
            for s in msg.all_structs():
                self.emit_class(classes, msg, s)
        for msg in self.messages:
            self.use_message(msg)
            self.plan_functions(msg)
            self.emit_functions(msg)
            self.emit_tables(msg, self.tables, compiled=self.FLAVOUR.compiled)
        self.emit_fresh_functions()
        ending = SourceWriter(imports=self.imports)
        self.emit_ending(ending)
        constants = SourceWriter(imports=self.imports)
        self.emit_constants(constants)
        head = SourceWriter()
        head.lines(self.banner)
        head.line()
        head.line("from __future__ import annotations")
        head.line()
        head.lines(self.imports.render())
        if constants.text():  # the classes start with their own two blank lines
            head.line()
        return (
            head.text()
            + constants.text()
            + classes.text()
            + self.body.text()
            + "\n"
            + self.tables.text()
            + ending.text()
        )

    def use_message(self, msg: Message) -> None:
        """Struct name -> class name for the message being emitted."""
        self.msg_classes = {s.name: s.class_name for s in msg.structs.values()}
        self.msg_classes[msg.name] = msg.root.class_name

    def emit_constants(self, w: SourceWriter) -> None:
        """Module constants: the precompiled ``struct.Struct`` objects the functions use."""
        for fmt, name in self.structs.items():
            w.line(f"{name} = _Struct({fmt!r})")
        for name, table in sorted(self.tables_used.items()):
            w.line(f"{name} = {table}")

    def emit_ending(self, w: SourceWriter) -> None:
        """The end of a module with a compiled twin: its classes (and the nested structs' defaults
        that the functions compare with) replace this module's own when it is built. The pure
        functions stay this module's, in ``_PURE_FUNCTIONS``: the runtime's fallback when a compiled
        function fails, and the encoder that records payload positions for zero-copy splicing."""
        if self.compiled_module is None:
            return
        structs = [s for m in self.messages for s in m.all_structs()]
        names = sorted(s.class_name for s in structs)
        # the defaults that the functions compare with (encoders of tagged struct fields)
        used = set(_IDENTIFIER.findall(self.body.text()))
        defaults = sorted(n for s in structs if (n := f"_DEFAULT_{s.class_name}") in used)
        w.line()
        w.line("#: Each class's pure functions by version (decoders, encoders), kept for its compiled twin.")
        with w.block("_PURE_FUNCTIONS = {"):
            for name in names:
                w.line(f"{name!r}: ({name}._decoders, {name}._encoders),")
        w.line("}")
        w.line()
        w.line(
            "# The compiled flavour (docs/internals/compiled.md), unless it is not built or KAFKA_WIRE_PURE is set."
        )
        with w.block(f"if not TYPE_CHECKING and compiled_module({self.compiled_module!r}) is not None:"):
            w.line(f"from {self.compiled_module} import (")
            for name in [*names, *defaults]:
                w.line(f"    {name},")
            w.line(")")


def read_sized(w: SourceWriter, f: Field, kind: str, target: str, *, check_string_length: bool) -> None:
    """Read ``n`` bytes at ``pos`` into ``target`` (a string, bytes or a records view) and move
    ``pos`` past them; both flavours emit this once the length ``n`` is known not to be null."""
    if kind == "string" and check_string_length:
        with w.block("if n > 0x7FFF:"):
            w.line(f"raise _invalid('string field {f.name} is too long')")
    w.line("end = pos + n")
    with w.block("if end > blen:"):
        w.line(f"raise _truncated('{f.name}')")
    if kind == "string":
        w.line(f"{target} = buf[pos:end].decode()")
    elif kind == "bytes":
        w.line(f"{target} = buf[pos:end]")
    else:
        w.line(f"{target} = mv[pos:end]")
    w.line("pos = end")


def _uuid_expr(raw: str) -> str:
    """The UUID of the 16 bytes in local ``raw``: the shared zero UUID (the usual value) or a new one."""
    return f"ZERO_UUID if {raw} == ZERO_UUID_BYTES else _uuid_from_bytes({raw})"


def _char_size(c: str) -> int:
    return {"?": 1, "b": 1, "h": 2, "i": 4, "q": 8, "H": 2, "I": 4, "d": 8, "16s": 16}[c]
