"""The CPython-tuned flavour: schema model -> one Python module per API.

Each struct gets a slotted class; each (struct, version) gets one straight-line decode and one
encode function. Versions whose wire layout is identical share a function. Runs of fixed-width
fields (and, in non-flexible versions, the length prefix that follows them) are read and written
with one precompiled ``struct.Struct``.

:class:`ModuleEmitter` holds the node methods both flavours share, in three parts: the decoders
(:mod:`~kafka_wire.codegen.decoders`), the encoders (:mod:`~kafka_wire.codegen.encoders`) and, here,
the classes, function tables and the module itself; all three build on
:class:`~kafka_wire.codegen.emitter_core.EmitterCore`. They are parameterised by a
:class:`~kafka_wire.codegen.emitter_core.Flavour` (names and words that differ) and by the few
per-value snippets that :mod:`~kafka_wire.codegen.mypyc_flavour` overrides.
Imports are collected as the code is written (:class:`~kafka_wire.codegen.writer.Imports`).
"""

from __future__ import annotations

from kafka_wire.codegen.decoders import DecodeEmitter
from kafka_wire.codegen.emitter_core import (
    default_literal,
    fresh_default,
    py_type,
    response_class_name,
)
from kafka_wire.codegen.encoders import EncodeEmitter
from kafka_wire.codegen.writer import IDENTIFIER as _IDENTIFIER
from kafka_wire.codegen.writer import Imports, SourceWriter
from kafka_wire.schema.model import Field, Message, Struct


class ModuleEmitter(DecodeEmitter, EncodeEmitter):
    """Emits one generated module holding one or more messages."""

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

    def emit(self) -> str:
        """The module's source: banner, the imports its code used, constants, classes, functions
        and class data (both flavours; the flavour adds its constants, classes and ending)."""
        self.imports = Imports(self.FLAVOUR.symbols)
        self.body = SourceWriter(imports=self.imports)
        self.tables = SourceWriter(imports=self.imports)
        classes = SourceWriter(imports=self.imports)
        self.fn_table = {}
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
