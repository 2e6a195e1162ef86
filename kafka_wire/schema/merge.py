"""Merging the definitions one message has in the upstream snapshots into the one that
``schemas/`` holds (:mod:`kafka_wire.schema.importer`): version by version, the definition of the
newest snapshot that defines a version wins it, and the merged field list is checked to reproduce
every winning definition exactly before anything is written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from kafka_wire.codec.versions import VersionSet
from kafka_wire.errors import SchemaError
from kafka_wire.schema.upstream import LATEST, Snapshot, SourceField, SourceMessage

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


def message_json(sources: list[SourceMessage], newest_snapshot: Snapshot = LATEST) -> dict[str, Any]:
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
