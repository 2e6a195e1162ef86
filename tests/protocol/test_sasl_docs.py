"""docs/sasl.md carries state diagrams generated from the SASL transition tables.

``python -m tests.protocol.test_sasl_docs`` rewrites the generated part; the test checks it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path

from kafka_wire.protocol import sasl
from kafka_wire.protocol.diagrams import mermaid

DOC = Path(__file__).resolve().parents[2] / "docs" / "sasl.md"
START = "<!-- generated: python -m tests.protocol.test_sasl_docs -->"
END = "<!-- end generated -->"
TABLES: dict[str, Mapping[tuple[enum.Enum, enum.Enum], enum.Enum]] = {
    "PlainClient": sasl.PLAIN_CLIENT_TRANSITIONS,  # type: ignore[dict-item]  # concrete enums as enum.Enum
    "PlainServer": sasl.PLAIN_SERVER_TRANSITIONS,  # type: ignore[dict-item]  # concrete enums as enum.Enum
    "ScramClient": sasl.SCRAM_CLIENT_TRANSITIONS,  # type: ignore[dict-item]  # concrete enums as enum.Enum
    "ScramServer": sasl.SCRAM_SERVER_TRANSITIONS,  # type: ignore[dict-item]  # concrete enums as enum.Enum
    "OAuthBearerClient": sasl.OAUTHBEARER_CLIENT_TRANSITIONS,  # type: ignore[dict-item]  # concrete enums as enum.Enum
    "OAuthBearerServer": sasl.OAUTHBEARER_SERVER_TRANSITIONS,  # type: ignore[dict-item]  # concrete enums as enum.Enum
}


def section() -> str:
    parts = [START]
    for name, table in TABLES.items():
        parts += ["", f"### {name}", "", mermaid(table)]
    parts += ["", END]
    return "\n".join(parts)


def render(text: str) -> str:
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return head + section() + tail


def test_sasl_doc_diagrams_are_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert START in text and END in text
    assert render(text) == text, "docs/sasl.md is stale: run python -m tests.protocol.test_sasl_docs"


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
