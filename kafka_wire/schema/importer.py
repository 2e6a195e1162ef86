"""Rebuild ``schemas/`` from the upstream Kafka message definitions.

The upstream folder holds the two snapshots below (``kafka-message-schemas/`` and
``kafka-message-schemas-latest/``), and optionally Kafka's metadata record definitions
(``kafka-metadata-schemas/``, written to ``schemas/metadata/``) and the records Kafka stores outside
the protocol (``kafka-stored-schemas/``, written to ``schemas/stored/``). It is the one ``$KAFKA_WIRE_UPSTREAM_SCHEMAS`` names, else
``../shared/reference/`` beside the checkout. Where neither holds them (a plain clone), the
importer prints one line saying it did not run and why, and exits 0: ``schemas/`` is checked in,
and everything else (the generator and its ``--check`` included) works from it.

Two upstream snapshots are read: an older one that still defines versions newer Kafka removed,
and the latest one. Every version either defines is kept; where both define a version, the
latest definition wins. The two definitions of one message are merged into one field list whose
per-field version sets reproduce, for every version, exactly the fields (order, types,
nullability, tags) of the definition that wins that version; the importer checks this before it
writes anything.

Only facts are written: names, types, version sets, nullability, tags, defaults, map keys,
ignorable flags, entity types. Upstream comments and ``about`` texts are dropped.

Run ``python -m kafka_wire.schema.importer`` to rewrite ``schemas/``; ``--check`` fails on any
difference instead of writing. ``--reference DIR`` names the upstream folder explicitly (then it
must exist).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_wire.codec.versions import NO_VERSIONS, VersionSet
from kafka_wire.errors import SchemaError
from kafka_wire.schema.jsonc import loads

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Snapshot:
    """One upstream copy of the message folder."""

    label: str
    folder: str
    kafka_version: str
    commit: str


OLD = Snapshot("old", "kafka-message-schemas", "4.0.0-SNAPSHOT", "1eb7644349cb07139d6a3c1ad1986979647cac99")
LATEST = Snapshot(
    "latest", "kafka-message-schemas-latest", "4.5.0-SNAPSHOT", "d79bd502ec7fa49335afa422f442af80ed0ab8f6"
)
#: Newest first: the first snapshot that defines a version wins it.
SNAPSHOTS = (LATEST, OLD)
#: Kafka's metadata records (``metadata/src/main/resources/common/metadata/``, the records of the
#: ``__cluster_metadata`` log), imported into ``schemas/metadata/``. The folder is optional: where the
#: upstream folder lacks it, the files already in ``schemas/metadata/`` are kept as they are.
METADATA = Snapshot(
    "metadata", "kafka-metadata-schemas", "4.0.0-SNAPSHOT", "1eb7644349cb07139d6a3c1ad1986979647cac99"
)
#: Records Kafka stores outside the protocol, defined in its server modules (the transaction
#: coordinator's ``TransactionLogKey`` / ``TransactionLogValue`` of ``__transaction_state``, the
#: storage module's ``ProducerSnapshot`` of a partition's ``.snapshot`` files), imported into
#: ``schemas/stored/`` as data messages. Optional as ``metadata/`` is.
STORED = Snapshot(
    "stored", "kafka-stored-schemas", "4.0.0-SNAPSHOT", "1eb7644349cb07139d6a3c1ad1986979647cac99"
)
#: The optional upstream folders and the ``schemas/`` folder each is imported into.
OPTIONAL_FOLDERS = ((METADATA, "metadata"), (STORED, "stored"))

# Field attributes that change bytes on the wire or the generated API, in output order.
_FIELD_KEYS = (
    "name",
    "type",
    "versions",
    "nullable_versions",
    "tag",
    "tagged_versions",
    "flexible_versions",
    "default",
    "ignorable",
    "map_key",
    "entity_type",
    "zero_copy",
)


@dataclass
class SourceField:
    """A field of one upstream definition, normalised (quirks of the upstream loader applied)."""

    name: str
    type: str
    versions: VersionSet
    nullable: VersionSet
    tagged: VersionSet
    tag: int | None
    default: str | None
    ignorable: bool | None
    map_key: bool
    entity_type: str | None
    zero_copy: bool
    flexible: VersionSet | None

    @property
    def struct_name(self) -> str | None:
        element = self.type[2:] if self.type.startswith("[]") else self.type
        return element if element[:1].isupper() else None


@dataclass
class SourceMessage:
    """One upstream message file, with its struct registry."""

    snapshot: Snapshot
    file: str
    doc: dict[str, Any]
    valid: VersionSet
    flexible: VersionSet
    root: list[SourceField]
    structs: dict[str, list[SourceField]]
    common: set[str]

    @property
    def kind(self) -> str:
        return str(self.doc["type"])

    @property
    def name(self) -> str:
        return str(self.doc["name"])


def _default_text(raw: object) -> str | None:
    # Upstream's loader reads a default into a Java String, so JSON numbers and booleans become
    # their text; booleans are compared case-insensitively later, so lower case is exact.
    if raw is None:
        return None
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return str(raw)


def _parse_field(raw: dict[str, Any], where: str) -> SourceField:
    tagged = VersionSet.parse(raw["taggedVersions"]) if "taggedVersions" in raw else NO_VERSIONS
    if "versions" in raw:
        versions = VersionSet.parse(raw["versions"])
    elif tagged:
        versions = tagged
    else:
        raise SchemaError("field has neither versions nor taggedVersions", source=where)
    tag = raw.get("tag")
    return SourceField(
        name=raw["name"],
        type=raw["type"],
        versions=versions,
        nullable=VersionSet.parse(raw.get("nullableVersions", "none")),
        tagged=tagged,
        tag=None if tag is None else int(tag),  # one upstream tag is written as a string
        default=_default_text(raw.get("default")),
        ignorable=raw.get("ignorable"),
        map_key=bool(raw.get("mapKey", False)),
        entity_type=raw.get("entityType"),
        zero_copy=bool(raw.get("zeroCopy", False)),
        flexible=VersionSet.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
    )


def _read_message(snapshot: Snapshot, path: Path) -> SourceMessage:
    doc = loads(path.read_text(encoding="utf-8"))
    where = f"{snapshot.folder}/{path.name}"
    structs: dict[str, list[SourceField]] = {}
    common: set[str] = set()

    def parse_fields(raws: list[dict[str, Any]]) -> list[SourceField]:
        fields = []
        for raw in raws:
            f = _parse_field(raw, where)
            if "fields" in raw:
                struct = f.struct_name
                if struct is None or struct in structs:
                    raise SchemaError(f"struct {struct} defined twice or on a non-struct", source=where)
                structs[struct] = []
                structs[struct] = parse_fields(raw["fields"])
            fields.append(f)
        return fields

    for cs in doc.get("commonStructs", []):
        common.add(cs["name"])
        structs[cs["name"]] = parse_fields(cs["fields"])
    root = parse_fields(doc.get("fields", []))
    return SourceMessage(
        snapshot=snapshot,
        file=path.name,
        doc=doc,
        valid=VersionSet.parse(doc["validVersions"]),
        flexible=VersionSet.parse(doc.get("flexibleVersions", "none")),
        root=root,
        structs=structs,
        common=common,
    )


def _identity(msg: SourceMessage) -> tuple[str, int | str]:
    """Messages are matched across snapshots by (kind, api key), or by name when they have none."""
    if "apiKey" in msg.doc:
        return (msg.kind, int(msg.doc["apiKey"]))
    return (msg.kind, msg.name)


@dataclass
class MergedField:
    name: str
    type: str
    versions: set[int] = field(default_factory=set)
    nullable: set[int] = field(default_factory=set)
    tagged: set[int] = field(default_factory=set)
    tag: int | None = None
    flexible: VersionSet | None = None
    default: str | None = None
    ignorable: bool | None = None
    map_key: bool = False
    entity_type: str | None = None
    zero_copy: bool = False
    newest: Snapshot | None = None


class _Merger:
    """Merges the definitions of one message, version by version."""

    def __init__(self, sources: list[SourceMessage]) -> None:
        self.sources = sources
        self.valid = VersionSet()
        for s in sources:
            self.valid = self.valid | s.valid
        self.winner: dict[int, SourceMessage] = {}
        for v in self.valid:
            self.winner[v] = next(s for s in sources if v in s.valid)
        self.where = ", ".join(f"{s.snapshot.folder}/{s.file}" for s in sources)
        self.struct_versions: dict[str, set[int]] = {}
        self.struct_fields: dict[str, list[MergedField]] = {}
        self.struct_common: dict[str, bool] = {}

    def _fields_at(self, struct: str | None, v: int) -> list[SourceField]:
        src = self.winner[v]
        fields = src.root if struct is None else src.structs[struct]
        return [f for f in fields if v in f.versions]

    def merge(self) -> list[MergedField]:
        return self._merge_struct(None, set(self.valid))

    def _merge_struct(self, struct: str | None, versions: set[int]) -> list[MergedField]:
        per_version = {v: self._fields_at(struct, v) for v in sorted(versions)}
        order = self._order(struct, per_version)
        merged: dict[str, MergedField] = {}
        # Walk versions newest first so that version-independent attributes come from the
        # newest definition that has the field.
        for v in sorted(per_version, reverse=True):
            for f in per_version[v]:
                m = merged.get(f.name)
                if m is None:
                    m = merged[f.name] = MergedField(
                        name=f.name,
                        type=f.type,
                        tag=f.tag,
                        flexible=f.flexible,
                        default=f.default,
                        ignorable=f.ignorable,
                        map_key=f.map_key,
                        entity_type=f.entity_type,
                        zero_copy=f.zero_copy,
                        newest=self.winner[v].snapshot,
                    )
                self._check_same(struct, m, f, v)
                m.versions.add(v)
                if v in f.nullable:
                    m.nullable.add(v)
                if v in f.tagged:
                    m.tagged.add(v)
                    if m.tag is None:
                        m.tag = f.tag
        fields = [merged[name] for name in order]
        for m in fields:
            sub = self._struct_of(m.type)
            if sub is not None:
                self.struct_versions.setdefault(sub, set()).update(m.versions)
        for m in fields:
            sub = self._struct_of(m.type)
            if sub is not None and sub not in self.struct_fields:
                self.struct_common[sub] = any(sub in s.common for s in self.sources)
                self.struct_fields[sub] = []
                self.struct_fields[sub] = self._merge_struct(sub, self._struct_reach(sub))
        return fields

    def _struct_reach(self, struct: str) -> set[int]:
        return self.struct_versions[struct]

    @staticmethod
    def _struct_of(type_: str) -> str | None:
        element = type_[2:] if type_.startswith("[]") else type_
        return element if element[:1].isupper() else None

    def _check_same(self, struct: str | None, m: MergedField, f: SourceField, v: int) -> None:
        where = f"{self.where}: {struct or 'root'}.{f.name} v{v}"
        if m.type != f.type:
            raise SchemaError(f"type changes between definitions ({m.type} vs {f.type})", source=where)
        if m.default != f.default:
            raise SchemaError(
                f"default changes between definitions ({m.default} vs {f.default})", source=where
            )
        if v in f.tagged and m.tag is not None and f.tag != m.tag:
            raise SchemaError("tag changes between definitions", source=where)

    def _order(self, struct: str | None, per_version: dict[int, list[SourceField]]) -> list[str]:
        """One field order that agrees with the order of every version's definition."""
        rank: dict[str, int] = {}
        edges: dict[str, set[str]] = {}
        for v in sorted(per_version, reverse=True):
            names = [f.name for f in per_version[v]]
            for n in names:
                rank.setdefault(n, len(rank))
                edges.setdefault(n, set())
            for a, b in itertools.pairwise(names):
                edges[a].add(b)
        indegree = {n: 0 for n in rank}
        for a in edges:
            for b in edges[a]:
                indegree[b] += 1
        ready = sorted((n for n in rank if indegree[n] == 0), key=rank.__getitem__)
        order: list[str] = []
        while ready:
            n = ready.pop(0)
            order.append(n)
            for b in edges[n]:
                indegree[b] -= 1
                if indegree[b] == 0:
                    ready.append(b)
            ready.sort(key=rank.__getitem__)
        if len(order) != len(rank):
            raise SchemaError(f"no field order fits every version of {struct or 'root'}", source=self.where)
        return order


def _field_json(m: MergedField, valid: VersionSet) -> dict[str, Any]:
    top = valid.highest

    def fmt(vs: set[int]) -> str:
        return VersionSet.of(vs).opened_at(top).format()

    out: dict[str, Any] = {"name": m.name, "type": m.type, "versions": fmt(m.versions)}
    if m.nullable:
        out["nullable_versions"] = fmt(m.nullable)
    if m.tagged:
        out["tag"] = m.tag
        out["tagged_versions"] = fmt(m.tagged)
    if m.flexible is not None:
        out["flexible_versions"] = m.flexible.format()
    if m.default is not None:
        out["default"] = m.default
    if m.ignorable is not None:
        out["ignorable"] = m.ignorable
    if m.map_key:
        out["map_key"] = True
    if m.entity_type is not None:
        out["entity_type"] = m.entity_type
    if m.zero_copy:
        out["zero_copy"] = True
    return {k: out[k] for k in _FIELD_KEYS if k in out}


def _message_json(sources: list[SourceMessage], newest_snapshot: Snapshot = LATEST) -> dict[str, Any]:
    latest = next((s.valid for s in sources if s.snapshot is newest_snapshot), VersionSet())
    # A newer placeholder that defines no version (ZooKeeper-era APIs 4-7) contributes nothing.
    sources = [s for s in sources if s.valid] or sources[:1]
    merger = _Merger(sources)
    root = merger.merge()
    flexibles = {s.flexible for s in sources}
    if len(flexibles) != 1:
        raise SchemaError("flexible versions differ between definitions", source=merger.where)
    newest = sources[0]
    valid = merger.valid
    out: dict[str, Any] = {
        "name": newest.name,
        "valid_versions": valid.format() if valid else "none",
        "flexible_versions": newest.flexible.format(),
    }
    removed = VersionSet.of(v for v in valid if v not in latest)
    if removed:
        out["removed_versions"] = removed.format()
    older_names = sorted({s.name for s in sources[1:] if s.name != newest.name})
    if older_names:
        out["former_names"] = older_names
    if "listeners" in newest.doc:
        out["listeners"] = list(newest.doc["listeners"])
    if newest.doc.get("latestVersionUnstable"):
        out["latest_version_unstable"] = True
    for s in sources:
        if "deprecatedVersions" in s.doc:
            out["deprecated_versions"] = s.doc["deprecatedVersions"]
            break
    out["sources"] = [
        {
            "kafka": s.snapshot.kafka_version,
            "commit": s.snapshot.commit,
            "file": s.file,
            "versions": VersionSet.of(v for v in valid if merger.winner[v] is s).format(),
        }
        for s in sources
    ]
    out["fields"] = [_field_json(m, valid) for m in root]
    structs: dict[str, Any] = {}
    for name in merger.struct_fields:
        entry: dict[str, Any] = {}
        if merger.struct_common[name]:
            entry["common"] = True
        entry["fields"] = [_field_json(m, valid) for m in merger.struct_fields[name]]
        structs[name] = entry
    out["structs"] = structs
    _verify(out, merger)
    return out


def _verify(out: dict[str, Any], merger: _Merger) -> None:
    """Check that the merged message projects, at every version, onto the winning definition."""

    def project_merged(fields: list[dict[str, Any]], v: int) -> list[tuple[Any, ...]]:
        rows = []
        for f in fields:
            if v not in VersionSet.parse(f["versions"]):
                continue
            sub = _Merger._struct_of(f["type"])
            nested = project_merged(out["structs"][sub]["fields"], v) if sub else None
            tagged = v in VersionSet.parse(f.get("tagged_versions", "none"))
            rows.append(
                (
                    f["name"],
                    f["type"],
                    v in VersionSet.parse(f.get("nullable_versions", "none")),
                    f.get("tag") if tagged else None,
                    f.get("default"),
                    f.get("flexible_versions"),
                    nested,
                )
            )
        return rows

    def project_source(src: SourceMessage, fields: list[SourceField], v: int) -> list[tuple[Any, ...]]:
        rows = []
        for f in fields:
            if v not in f.versions:
                continue
            sub = f.struct_name
            nested = project_source(src, src.structs[sub], v) if sub else None
            rows.append(
                (
                    f.name,
                    f.type,
                    v in f.nullable,
                    f.tag if v in f.tagged else None,
                    f.default,
                    f.flexible.format() if f.flexible is not None else None,
                    nested,
                )
            )
        return rows

    for v, src in merger.winner.items():
        if project_merged(out["fields"], v) != project_source(src, src.root, v):
            raise SchemaError(f"merged definition differs from the winning one at v{v}", source=merger.where)


#: The environment variable naming the upstream folder (the one holding the snapshot folders).
UPSTREAM_ENV = "KAFKA_WIRE_UPSTREAM_SCHEMAS"


def default_reference_dir() -> Path:
    """``$KAFKA_WIRE_UPSTREAM_SCHEMAS``, else ``../shared/reference`` beside the checkout."""
    named = os.environ.get(UPSTREAM_ENV)
    if named:
        return Path(named)
    return Path(__file__).resolve().parents[2].parent / "shared" / "reference"


def has_upstream(reference: Path) -> bool:
    """Whether ``reference`` holds any snapshot folder (one alone makes ``build`` fail, naming the other)."""
    return any((reference / snapshot.folder).is_dir() for snapshot in SNAPSHOTS)


def default_schemas_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "schemas"


def build(reference: Path) -> dict[str, str]:
    """Return ``{relative path: file text}`` for the whole ``schemas/`` folder."""
    groups: dict[tuple[str, int | str], list[SourceMessage]] = {}
    for snapshot in SNAPSHOTS:
        folder = reference / snapshot.folder
        if not folder.is_dir():
            raise SchemaError("upstream reference folder is missing", source=str(folder))
        for path in sorted(folder.glob("*.json")):
            msg = _read_message(snapshot, path)
            groups.setdefault(_identity(msg), []).append(msg)

    files: dict[str, str] = {}
    apis: dict[int, dict[str, Any]] = {}
    for (kind, ident), sources in sorted(groups.items(), key=lambda kv: (kv[0][0], str(kv[0][1]).zfill(4))):
        body = _message_json(sources)
        if kind in ("request", "response"):
            assert isinstance(ident, int)
            apis.setdefault(ident, {})[kind] = body
        else:
            subdir = "headers" if kind == "header" else "data"
            doc = {"format": FORMAT_VERSION, "kind": kind, **body}
            files[f"{subdir}/{body['name']}.json"] = _dump(doc)
    for api_key, pair in sorted(apis.items()):
        name = str(pair["request"]["name"]).removesuffix("Request")
        doc = {"format": FORMAT_VERSION, "kind": "api", "api_key": api_key, "name": name, **pair}
        files[f"apis/{api_key:02d}-{name}.json"] = _dump(doc)
    metadata = reference / METADATA.folder
    if metadata.is_dir():
        for path in sorted(metadata.glob("*.json")):
            msg = _read_message(METADATA, path)
            if msg.kind != "metadata":
                raise SchemaError("not a metadata record definition", source=f"{METADATA.folder}/{path.name}")
            body = _message_json([msg], METADATA)
            doc = {"format": FORMAT_VERSION, "kind": "metadata", "api_key": int(msg.doc["apiKey"]), **body}
            files[f"metadata/{body['name']}.json"] = _dump(doc)
    stored = reference / STORED.folder
    if stored.is_dir():
        for path in sorted(stored.glob("*.json")):
            msg = _read_message(STORED, path)
            if msg.kind != "data":
                raise SchemaError("not a data record definition", source=f"{STORED.folder}/{path.name}")
            body = _message_json([msg], STORED)
            files[f"stored/{body['name']}.json"] = _dump({"format": FORMAT_VERSION, "kind": "data", **body})
    return files


def kept_folders(reference: Path) -> tuple[str, ...]:
    """The ``schemas/`` folders ``build`` leaves alone: those whose optional upstream folder
    (``metadata/``, ``stored/``) is absent."""
    return tuple(
        f"{folder}/" for snapshot, folder in OPTIONAL_FOLDERS if not (reference / snapshot.folder).is_dir()
    )


def _dump(doc: dict[str, Any]) -> str:
    """Indented JSON with one field definition per line, so a diff shows one field per change."""

    def render(value: Any, indent: str) -> str:
        if isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values()):
            inner = indent + "  "
            items = [f"{inner}{json.dumps(k)}: {render(v, inner)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + indent + "}"
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            inner = indent + "  "
            return "[\n" + ",\n".join(inner + render(v, inner) for v in value) + "\n" + indent + "]"
        return json.dumps(value, ensure_ascii=False)

    return render(doc, "") + "\n"


def write(files: dict[str, str], target: Path, keep: tuple[str, ...] = ()) -> list[str]:
    """Write ``files`` under ``target``, delete stale ``*.json`` (except under the folders in
    ``keep``); return the paths that changed."""
    changed = []
    for rel, text in files.items():
        path = target / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(rel)
    for path in sorted(target.rglob("*.json")):
        rel = path.relative_to(target).as_posix()
        if rel not in files and not rel.startswith(keep):
            path.unlink()
            changed.append(rel)
    return changed


def diff(files: dict[str, str], target: Path, keep: tuple[str, ...] = ()) -> list[str]:
    """The relative paths whose content on disk differs from ``files`` (or that are stale, outside
    the folders in ``keep``)."""
    out = [
        rel
        for rel, text in files.items()
        if not (target / rel).exists() or (target / rel).read_text("utf-8") != text
    ]
    out += [
        p.relative_to(target).as_posix()
        for p in target.rglob("*.json")
        if p.relative_to(target).as_posix() not in files
        and not p.relative_to(target).as_posix().startswith(keep)
    ]
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--reference",
        type=Path,
        default=None,
        help=f"the upstream folder (default: ${UPSTREAM_ENV}, else ../shared/reference)",
    )
    parser.add_argument("--out", type=Path, default=default_schemas_dir())
    parser.add_argument("--check", action="store_true", help="fail on any difference instead of writing")
    args = parser.parse_args(argv)
    reference: Path | None = args.reference
    if reference is None:
        reference = default_reference_dir()
        if not has_upstream(reference):
            what = "schema import check" if args.check else "schema import"
            print(
                f"{what} not run: no upstream definitions in {reference} "
                f"(set {UPSTREAM_ENV} or place ../shared beside the checkout)"
            )
            return 0
    files = build(reference)
    if args.check:
        stale = diff(files, args.out, kept_folders(reference))
        for rel in stale:
            print(f"schemas/{rel} is not what the importer builds", file=sys.stderr)
        return 1 if stale else 0
    changed = write(files, args.out, kept_folders(reference))
    print(f"{len(files)} schema files, {len(changed)} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
