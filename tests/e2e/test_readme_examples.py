"""The README's Python examples as a user copies them: every ```python block is written out as a
module, checked with ``mypy --strict`` and run against a real ``kafka-wire serve``.

An example that talks to a broker names the broker's address on one line,
``BOOTSTRAP = "127.0.0.1:9092"`` (where ``make run`` serves); the test rewrites that line to the
address of the broker it started. mypy runs with the project's configuration (so with its cache)
from the repository root, so the examples are checked against this checkout's ``kafka_wire``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.conftest import ROOT
from tests.e2e.brokers import BrokerProcess

#: The line an example that needs a broker starts from; the test points it at its own broker.
PLACEHOLDER: Final = 'BOOTSTRAP = "127.0.0.1:9092"'
_BLOCK: Final = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Example:
    """One ```python block: where it starts (``README.md:31``) and its code."""

    where: str
    code: str

    @property
    def needs_broker(self) -> bool:
        return PLACEHOLDER in self.code

    def module(self, directory: Path, index: int, bootstrap: str | None = None) -> Path:
        """Write the example as ``readme_example_<index>.py``, pointed at ``bootstrap`` if given."""
        code = (
            self.code if bootstrap is None else self.code.replace(PLACEHOLDER, f'BOOTSTRAP = "{bootstrap}"')
        )
        path = directory / f"readme_example_{index}.py"
        path.write_text(f"# {self.where}\n{code}", encoding="utf-8")
        return path


def examples(page: Path = ROOT / "README.md") -> list[Example]:
    text = page.read_text(encoding="utf-8")
    return [
        Example(f"{page.name}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1))
        for m in _BLOCK.finditer(text)
    ]


def test_the_readme_has_a_codec_and_a_client_example() -> None:
    found = examples()
    assert len(found) >= 2
    [client] = [e for e in found if "KafkaClient.connect" in e.code]
    assert client.needs_broker, f"{client.where} names its broker without {PLACEHOLDER!r}"
    assert len([line for line in client.code.splitlines() if line.strip()]) <= 22  # "a 20-line example"


def test_the_readme_examples_pass_mypy_strict(tmp_path: Path) -> None:
    modules = [example.module(tmp_path, i) for i, example in enumerate(examples(), 1)]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            *map(str, modules),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_readme_examples_run(kafka_wire_broker: BrokerProcess, tmp_path: Path) -> None:
    address = kafka_wire_broker.address
    for i, example in enumerate(examples(), 1):
        module = example.module(tmp_path, i, bootstrap=address.bootstrap)
        run = subprocess.run(
            [sys.executable, str(module)], capture_output=True, text=True, timeout=60, cwd=ROOT
        )
        assert run.returncode == 0, f"{example.where}:\n{run.stderr}"
        if example.needs_broker:
            lines = run.stdout.splitlines()
            assert re.fullmatch(r"Metadata v\d+ agreed", lines[0]), run.stdout
            assert lines[1].startswith("cluster "), run.stdout
            assert f"at {address.host}:{address.port}" in lines[2], run.stdout
