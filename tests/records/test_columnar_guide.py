"""The examples of docs/guide/columnar.md run as written (pandas, Polars, DuckDB), in page order."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "columnar.md"


def test_guide_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert len(blocks) == 4
    scope: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(GUIDE), "exec"), scope)
