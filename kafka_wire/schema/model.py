"""Load ``schemas/`` into a typed model: APIs, messages, structs, fields and their wire types."""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kafka_wire.codec.versions import NO_VERSIONS, VersionSet
from kafka_wire.errors import SchemaError

Primitive = Literal[
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "float64",
    "uuid",
    "string",
    "bytes",
    "records",
]
PRIMITIVES: tuple[str, ...] = (
    "bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "uuid", "string", "bytes", "records",
)  # fmt: skip
FIXED_WIDTH: dict[str, int] = {
    "bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "uint32": 4, "float64": 8, "uuid": 16,
}  # fmt: skip

_CAMEL_1 = re.compile(r"(.)([A-Z][a-z]+)")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``ClientSoftwareName`` -> ``client_software_name``; keywords get a trailing underscore."""
    out = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", name)).lower()
    return out + "_" if keyword.iskeyword(out) else out


@dataclass(frozen=True)
class WireType:
    """A field's type: a primitive, a struct, or an array of either."""

    kind: str  # a primitive name, "struct" or "array"
    struct: str | None = None  # struct name for kind "struct", or for an array of structs
    element: WireType | None = None  # for arrays

    @classmethod
    def parse(cls, text: str) -> WireType:
        if text.startswith("[]"):
            inner = cls.parse(text[2:])
            if inner.kind == "array":
                raise SchemaError(f"nested arrays are not allowed: {text}")
            return cls("array", inner.struct, inner)
        if text in PRIMITIVES:
            return cls(text)
        if text[:1].isupper():
            return cls("struct", text)
        raise SchemaError(f"unknown type {text!r}")

    @property
    def is_fixed(self) -> bool:
        return self.kind in FIXED_WIDTH


@dataclass
class Field:
    name: str
    py_name: str
    type: WireType
    versions: VersionSet
    nullable: VersionSet
    tag: int | None
    tagged: VersionSet
    flexible_override: VersionSet | None
    default: str | None
    ignorable: bool
    map_key: bool
    entity_type: str | None
    zero_copy: bool

    def present(self, v: int) -> bool:
        return v in self.versions

    def is_tagged(self, v: int) -> bool:
        return v in self.tagged

    def is_nullable(self, v: int) -> bool:
        return v in self.nullable


@dataclass
class Struct:
    name: str
    class_name: str
    fields: list[Field]
    common: bool = False
    versions: VersionSet = NO_VERSIONS  # the versions in which the struct is reached


@dataclass
class Message:
    """One request, response, header or data message, with its nested structs."""

    name: str
    kind: str  # request | response | header | data | metadata (a __cluster_metadata record; api_key is its type)
    api_key: int | None
    valid: VersionSet
    flexible: VersionSet
    root: Struct
    structs: dict[str, Struct]
    removed: VersionSet
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    sources: tuple[dict[str, str], ...]
    former_names: tuple[str, ...] = ()
    schema_file: str = ""

    def all_structs(self) -> list[Struct]:
        """The nested structs, children before parents, then the root."""
        order: list[Struct] = []
        seen: set[str] = set()

        def visit(s: Struct) -> None:
            for f in s.fields:
                if f.type.struct is not None and f.type.struct not in seen:
                    seen.add(f.type.struct)
                    visit(self.structs[f.type.struct])
            order.append(s)

        visit(self.root)
        return order


@dataclass
class Api:
    api_key: int
    name: str
    request: Message
    response: Message
    schema_file: str = ""

    @property
    def versions(self) -> VersionSet:
        return self.request.valid


@dataclass
class SchemaSet:
    apis: list[Api] = field(default_factory=list)
    headers: list[Message] = field(default_factory=list)
    data: list[Message] = field(default_factory=list)

    def messages(self) -> list[Message]:
        out = [m for a in self.apis for m in (a.request, a.response)]
        return out + self.headers + self.data


def _strip_prefix(struct_name: str, *prefixes: str) -> str:
    for prefix in prefixes:
        if struct_name.startswith(prefix) and struct_name[len(prefix) : len(prefix) + 1].isupper():
            return struct_name[len(prefix) :]
    return struct_name


def _message(doc: dict[str, Any], kind: str, api_key: int | None, api_name: str, source: str) -> Message:
    name = doc["name"]
    valid = VersionSet.parse(doc["valid_versions"])
    flexible = VersionSet.parse(doc["flexible_versions"])

    def make_fields(raws: list[dict[str, Any]], pointer: str) -> list[Field]:
        fields = []
        for i, raw in enumerate(raws):
            try:
                wire = WireType.parse(raw["type"])
            except SchemaError as exc:
                raise SchemaError(str(exc), source=source, pointer=f"{pointer}/{i}") from None
            fields.append(
                Field(
                    name=raw["name"],
                    py_name=snake_case(raw["name"]),
                    type=wire,
                    versions=VersionSet.parse(raw["versions"]),
                    nullable=VersionSet.parse(raw.get("nullable_versions", "none")),
                    tag=raw.get("tag"),
                    tagged=VersionSet.parse(raw.get("tagged_versions", "none")),
                    flexible_override=VersionSet.parse(raw["flexible_versions"])
                    if "flexible_versions" in raw
                    else None,
                    default=raw.get("default"),
                    ignorable=bool(raw.get("ignorable", False)),
                    map_key=bool(raw.get("map_key", False)),
                    entity_type=raw.get("entity_type"),
                    zero_copy=bool(raw.get("zero_copy", False)),
                )
            )
        return fields

    root = Struct(name, name, make_fields(doc["fields"], "/fields"), versions=valid)
    structs: dict[str, Struct] = {}
    # Qualify nested classes by the message name; drop a repeated API-name prefix
    # (FetchRequest + FetchTopic -> FetchRequestTopic) unless that makes two names collide.
    stripped = {s: _strip_prefix(s, name, api_name) for s in doc["structs"]}
    clash = len(set(stripped.values())) != len(stripped) or name.removeprefix(api_name) in stripped.values()
    for sname, sdoc in doc["structs"].items():
        cls_name = name + (sname if clash else stripped[sname])
        structs[sname] = Struct(
            sname, cls_name, make_fields(sdoc["fields"], f"/structs/{sname}/fields"), bool(sdoc.get("common"))
        )

    # The versions in which each struct is reached, from its parents' field versions.
    def reach(s: Struct, versions: VersionSet) -> None:
        for f in s.fields:
            if f.type.struct is not None:
                child = structs[f.type.struct]
                child.versions = child.versions | (f.versions & versions)
                reach(child, f.versions & versions)

    reach(root, valid)
    return Message(
        name=name,
        kind=kind,
        api_key=api_key,
        valid=valid,
        flexible=flexible,
        root=root,
        structs=structs,
        removed=VersionSet.parse(doc.get("removed_versions", "none")),
        listeners=tuple(doc.get("listeners", ())),
        latest_version_unstable=bool(doc.get("latest_version_unstable", False)),
        sources=tuple(doc.get("sources", ())),
        former_names=tuple(doc.get("former_names", ())),
        schema_file=source,
    )


def load(schemas_dir: Path) -> SchemaSet:
    """Load every schema file under ``schemas_dir``."""
    out = SchemaSet()
    for path in sorted(schemas_dir.glob("*/*.json")):
        rel = path.relative_to(schemas_dir).as_posix()
        doc = json.loads(path.read_text(encoding="utf-8"))
        kind = doc.get("kind")
        if kind == "api":
            name = doc["name"]
            out.apis.append(
                Api(
                    api_key=doc["api_key"],
                    name=name,
                    request=_message(doc["request"], "request", doc["api_key"], name, rel),
                    response=_message(doc["response"], "response", doc["api_key"], name, rel),
                    schema_file=rel,
                )
            )
        elif kind in ("header", "data"):
            name = doc["name"]
            msg = _message(doc, kind, None, name, rel)
            (out.headers if kind == "header" else out.data).append(msg)
        elif kind == "metadata":
            out.data.append(_message(doc, kind, doc["api_key"], doc["name"], rel))
        else:
            raise SchemaError(f"unknown schema kind {kind!r}", source=rel)
    out.apis.sort(key=lambda a: a.api_key)
    names: dict[str, str] = {}
    for msg in out.messages():
        for s in [msg.root, *msg.structs.values()]:
            if s.class_name in names:
                raise SchemaError(
                    f"class name {s.class_name} also made by {names[s.class_name]}", source=msg.schema_file
                )
            names[s.class_name] = msg.schema_file
    return out
