"""The generated pages of docs/ are what ``make docs`` (``python -m tools.docs``) writes now,
and every relative link between docs pages and from the README points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.messages import ApiKey
from tests.conftest import ROOT
from tools.docs.__main__ import DOCS, PAGES
from tools.docs.mermaid import state_diagram

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_generated_page_is_current(page: str) -> None:
    path = DOCS / page
    assert path.exists(), f"docs/{page} is missing: run `make docs`"
    assert path.read_text(encoding="utf-8") == PAGES[page](), f"docs/{page} is stale: run `make docs`"


def test_state_diagram_draws_one_arrow_per_move_pair() -> None:
    table = {("A", "go"): "B", ("A", "jump"): "B", ("B", "back"): "A"}
    assert state_diagram(table) == "\n".join(
        ["```mermaid", "stateDiagram-v2", "    A --> B: go, jump", "    B --> A: back", "```"]
    )


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if "://" not in t and not t.startswith("mailto:")]
    missing = [t for t in targets if not (path.parent / t).exists()]
    assert missing == [], f"{path.relative_to(ROOT)} links to missing files: {missing}"


def test_index_links_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {(DOCS / t).resolve() for t in LINK.findall(index)}
    pages = {p.resolve() for p in DOCS.rglob("*.md") if p.name != "README.md"}
    assert sorted(str(p.relative_to(DOCS)) for p in pages - linked) == []


def test_every_api_served_has_its_handler_in_the_broker_internals() -> None:
    """docs/internals/broker.md's table names the handler of every API the broker serves."""
    text = (DOCS / "internals" / "broker.md").read_text(encoding="utf-8")
    table = text.split("## Where each API is answered", 1)[1].split("\n## ", 1)[0]
    names = {
        name.strip()
        for row in table.splitlines()
        if row.startswith("| ")
        for name in row.split("|")[1].split(",")
    }
    served = {"".join(part.title() for part in ApiKey(key).name.split("_")) for key in SUPPORTED}
    assert sorted(served - {n.removeprefix("on a controller listener: ") for n in names}) == []
