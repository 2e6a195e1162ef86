"""The upstream Kafka message definitions the importer reads (:mod:`kafka_wire.schema.importer`):
which snapshots there are, and one definition file read into :class:`SourceMessage`, its fields
normalised as upstream's own loader reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_wire.codec.versions import NO_VERSIONS, VersionSet
from kafka_wire.errors import SchemaError
from kafka_wire.schema.jsonc import loads


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


def read_message(snapshot: Snapshot, path: Path) -> SourceMessage:
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


def identity(msg: SourceMessage) -> tuple[str, int | str]:
    """Messages are matched across snapshots by (kind, api key), or by name when they have none."""
    if "apiKey" in msg.doc:
        return (msg.kind, int(msg.doc["apiKey"]))
    return (msg.kind, msg.name)
