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
writes anything. The snapshots are read by :mod:`kafka_wire.schema.upstream` and merged by
:mod:`kafka_wire.schema.merge`; this module builds the files, compares and writes them.

Only facts are written: names, types, version sets, nullability, tags, defaults, map keys,
ignorable flags, entity types. Upstream comments and ``about`` texts are dropped.

Run ``python -m kafka_wire.schema.importer`` to rewrite ``schemas/``; ``--check`` fails on any
difference instead of writing. ``--reference DIR`` names the upstream folder explicitly (then it
must exist).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kafka_wire.errors import SchemaError
from kafka_wire.schema.merge import message_json
from kafka_wire.schema.upstream import (
    LATEST,
    METADATA,
    OLD,
    OPTIONAL_FOLDERS,
    SNAPSHOTS,
    STORED,
    Snapshot,
    SourceMessage,
    identity,
    read_message,
)

FORMAT_VERSION = 1

__all__ = [
    "FORMAT_VERSION",
    "LATEST",
    "METADATA",
    "OLD",
    "OPTIONAL_FOLDERS",
    "SNAPSHOTS",
    "STORED",
    "UPSTREAM_ENV",
    "Snapshot",
    "build",
    "default_reference_dir",
    "default_schemas_dir",
    "diff",
    "has_upstream",
    "kept_folders",
    "main",
    "write",
]


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
            msg = read_message(snapshot, path)
            groups.setdefault(identity(msg), []).append(msg)

    files: dict[str, str] = {}
    apis: dict[int, dict[str, Any]] = {}
    for (kind, ident), sources in sorted(groups.items(), key=lambda kv: (kv[0][0], str(kv[0][1]).zfill(4))):
        body = message_json(sources)
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
            msg = read_message(METADATA, path)
            if msg.kind != "metadata":
                raise SchemaError("not a metadata record definition", source=f"{METADATA.folder}/{path.name}")
            body = message_json([msg], METADATA)
            doc = {"format": FORMAT_VERSION, "kind": "metadata", "api_key": int(msg.doc["apiKey"]), **body}
            files[f"metadata/{body['name']}.json"] = _dump(doc)
    stored = reference / STORED.folder
    if stored.is_dir():
        for path in sorted(stored.glob("*.json")):
            msg = read_message(STORED, path)
            if msg.kind != "data":
                raise SchemaError("not a data record definition", source=f"{STORED.folder}/{path.name}")
            body = message_json([msg], STORED)
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
