"""The README's broker example, run as written against a real broker."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT
from tests.interop.harness import Address


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    [code] = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "KafkaClient.connect" in block]
    return code


def test_readme_example_is_twenty_lines_or_so() -> None:
    assert len([line for line in readme_example().splitlines() if line.strip()]) <= 22


def test_readme_example_prints_the_cluster_metadata(tansu: Address) -> None:
    run = subprocess.run(
        [sys.executable, "-c", readme_example(), tansu.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert re.fullmatch(r"Metadata v\d+ agreed", lines[0])
    assert lines[1].startswith("cluster ")
    assert f"at {tansu.host}:{tansu.port}" in lines[2]
