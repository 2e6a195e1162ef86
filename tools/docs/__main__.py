"""``python -m tools.docs`` writes the generated pages of ``docs/``; ``--check`` only compares."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from tools.docs import configuration, coverage, state_machines

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: Page (relative to docs/) -> the function that writes it.
PAGES: dict[str, Callable[[], str]] = {
    coverage.PAGE: coverage.page,
    state_machines.PAGE: state_machines.page,
    configuration.PAGE: configuration.page,
}


def stale(docs: Path = DOCS) -> list[str]:
    """The pages whose file differs from what their generator writes now."""
    out = []
    for page, render in PAGES.items():
        path = docs / page
        if not path.exists() or path.read_text(encoding="utf-8") != render():
            out.append(page)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.docs", description="write the generated pages of docs/"
    )
    parser.add_argument("--check", action="store_true", help="fail, naming them, when pages are stale")
    args = parser.parse_args(argv)
    if args.check:
        pages = stale()
        for page in pages:
            print(f"docs/{page} is stale: run `make docs`", file=sys.stderr)
        return 1 if pages else 0
    for page, render in PAGES.items():
        path = DOCS / page
        text = render()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"docs/{page} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
