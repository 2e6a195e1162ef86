"""The encoder part of a generated module's emitter: one straight-line encode function per
struct version, its fields, arrays and tagged blocks (see :mod:`~kafka_wire.codegen.python_flavour`)."""

from __future__ import annotations

from kafka_wire.codec.runtime import SMALL_ARRAY
from kafka_wire.codegen.emitter_core import (
    STRUCT_CHARS,
    EmitterCore,
    nondefault_check,
)
from kafka_wire.codegen.writer import SourceWriter
from kafka_wire.errors import SchemaError
from kafka_wire.schema.model import FIXED_WIDTH, Field, Message, Struct


class EncodeEmitter(EmitterCore):
    """Writes the encode functions of a module (with the flavour's snippets)."""

    def put_bytes(self, out: str, data: str, kind: str) -> str:
        # a large records payload is not copied into the buffer by ``Struct.encode`` (runtime)
        return f"_put_records({out}, {data})" if kind == "records" else f"{out} += {data}"

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
            self.write_blob(w, f"x_{p}", p, kind, f"string field {f.name}", v, flexible, out)

    def write_blob(
        self, w: SourceWriter, value: str, p: str, kind: str, what: str, v: int, flexible: bool, out: str
    ) -> None:
        """Write the string or bytes in local ``value`` (not None) with its length; ``what`` names
        it in the error of a string over 32,767 bytes."""
        if kind == "string":
            w.line(f"b_{p} = {value}.encode()")
            with w.block(f"if len(b_{p}) > 0x7FFF:"):
                w.line(f"raise ValueOutOfRangeError('{what} is too long', version={v})")
        else:
            w.line(f"b_{p} = {self.FLAVOUR.as_bytes.format(value)}")
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
                self.write_blob(w, f"e_{p}", p, ek, f"string in {f.name}", v, flexible, out)
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
