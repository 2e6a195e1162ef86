"""The decoder part of a generated module's emitter: one straight-line decode function per
struct version, its fields, arrays and tagged blocks (see :mod:`~kafka_wire.codegen.python_flavour`)."""

from __future__ import annotations

import re

from kafka_wire.codec.runtime import SMALL_ARRAY
from kafka_wire.codegen.emitter_core import (
    PY_TYPES,
    STRUCT_CHARS,
    EmitterCore,
    _char_size,
    _uuid_expr,
    default_literal,
    fresh_default,
    read_sized,
)
from kafka_wire.codegen.writer import SourceWriter
from kafka_wire.errors import SchemaError
from kafka_wire.schema.model import FIXED_WIDTH, Field, Message, Struct


class DecodeEmitter(EmitterCore):
    """Writes the decode functions of a module (with the flavour's snippets)."""

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

    def decoder_default(self, msg: Message, f: Field) -> str:
        """``fresh_default``, except that a struct default is made by ``_fresh_<Class>()``, which
        fills the slots directly: about half the cost of the keyword constructor."""
        if f.type.kind != "struct" or default_literal(f, self.msg_classes) is not None:
            return fresh_default(f, self.msg_classes)
        assert f.type.struct is not None
        cls = self.class_of(f)
        self.fresh_structs.setdefault(cls, (msg, msg.structs[f.type.struct]))
        return f"_fresh_{cls}()"

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
