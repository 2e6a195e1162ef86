"""The parts of a generated module's emitter that the decoders, the encoders and the module
writer share: the per-kind tables, the :class:`Flavour` that names what differs between the
flavours, the layout key of a struct version, and :class:`EmitterCore`'s helpers and flavour
snippets (see :mod:`~kafka_wire.codegen.python_flavour`)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import ClassVar

from kafka_wire.codegen.writer import SourceWriter, names_from
from kafka_wire.errors import SchemaError
from kafka_wire.schema.model import Field, Message, Struct

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


class EmitterCore:
    """State and helpers of one module's emitter, shared by its decoder and encoder parts."""

    #: the struct names of the message being emitted -> their class names
    msg_classes: dict[str, str]
    #: (struct name, version, encode) -> the function that decodes or encodes it
    fn_table: dict[tuple[str, int, bool], str]

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

    #: the spots where this flavour writes other code than the other one
    FLAVOUR: ClassVar[Flavour] = PURE

    def typed(self, name: str, annotation: str) -> str:
        """The target of a local's first assignment (annotated in the mypyc flavour only)."""
        return f"{name}: {annotation}" if self.FLAVOUR.annotate_locals else name

    def unknown_target(self, obj: str) -> str:
        """Where a struct's unknown tagged fields are stored once read."""
        return f"{obj}.unknown_tagged_fields"

    def tagged_field_target(self, obj: str, f: Field) -> str:
        return f"{obj}.{f.py_name}"

    def loop_count(self, w: SourceWriter, n: str) -> str:
        """The count a ``for`` loop ranges over (the mypyc flavour copies it to a local)."""
        return n

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

    def fn_ref(self, struct_name: str | None, v: int, encode: bool = False) -> str:
        assert struct_name is not None
        return self.fn_table[(struct_name, v, encode)]


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
