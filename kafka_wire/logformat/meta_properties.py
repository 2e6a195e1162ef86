"""``meta.properties``: the file at the top of a KRaft log directory saying whose it is.

Java properties: ``version=1``, ``node.id``, ``cluster.id`` and ``directory.id`` (a Uuid in
Kafka's text form). Values are kept as text: a caller compares them with its own configuration
and names what it found when they differ.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.logformat.properties import parse_properties
from kafka_wire.quick_dataclass import dataclass

META_PROPERTIES: Final = "meta.properties"
KRAFT_VERSION: Final = "1"


@dataclass(frozen=True, slots=True)
class MetaProperties:
    node_id: str
    cluster_id: str
    directory_id: str | None = None


def format_meta_properties(*, node_id: int, cluster_id: str, directory_id: str) -> bytes:
    return (
        f"version={KRAFT_VERSION}\nnode.id={node_id}\ncluster.id={cluster_id}\ndirectory.id={directory_id}\n"
    ).encode("ascii")


def parse_meta_properties(text: str) -> MetaProperties | None:
    """The identity of a KRaft ``meta.properties`` (``version=1`` with ``node.id`` and a non-empty
    ``cluster.id``); None for anything else."""
    props = parse_properties(text)
    node_id, cluster_id = props.get("node.id"), props.get("cluster.id")
    if props.get("version") != KRAFT_VERSION or node_id is None or not cluster_id:
        return None
    return MetaProperties(node_id, cluster_id, props.get("directory.id"))
