"""A small indenting source writer, and the import set it fills as code is written."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Standard-library modules that generated code imports from (the rest is third party or ours).
_STDLIB = frozenset({"__future__", "builtins", "struct", "typing", "uuid"})


class Imports:
    """The imports of one generated module, collected as its lines are written.

    ``symbols`` maps each name that generated code may use to the ``(module, name)`` it is
    imported as (``{"_invalid": ("kafka_wire.codec.runtime", "invalid")}``; an empty name imports the
    module itself: ``{"builtins": ("builtins", "")}``); every line written
    through a :class:`SourceWriter` that shares this set adds the symbols it mentions.
    """

    def __init__(self, symbols: Mapping[str, tuple[str, str]]) -> None:
        self.symbols = symbols
        self.used: set[str] = set()

    def note(self, text: str) -> None:
        self.used.update(name for name in IDENTIFIER.findall(text) if name in self.symbols)

    def render(self, line_length: int = 110) -> list[str]:
        """The import block, in the order ruff's isort rule keeps (sections, modules, names)."""
        by_module: dict[str, list[str]] = {}
        for local in self.used:
            module = self.symbols[local][0]
            by_module.setdefault(module, []).append(local)
        sections: list[list[str]] = [[], [], []]
        for module in sorted(by_module):
            section = 0 if module.split(".")[0] in _STDLIB else 2 if module.startswith("kafka_wire") else 1
            if self.symbols[by_module[module][0]][1] == "":
                sections[section].insert(0, f"import {module}")  # isort: ``import x`` before ``from``
                continue
            plain = sorted((n for n in by_module[module] if self.symbols[n][1] == n), key=_isort_key)
            aliased = sorted(
                (n for n in by_module[module] if self.symbols[n][1] != n),
                key=lambda n: _isort_key(self.symbols[n][1]),
            )
            lines = sections[section]
            if plain:
                line = f"from {module} import {', '.join(plain)}"
                if len(line) > line_length:
                    lines += [f"from {module} import (", *(f"    {n}," for n in plain), ")"]
                else:
                    lines.append(line)
            lines += [f"from {module} import {self.symbols[n][1]} as {n}" for n in aliased]
        out: list[str] = []
        for lines in sections:
            if lines:
                out += [*lines, ""]
        return out[:-1]


def names_from(module: str, *names: str, private: bool = False) -> dict[str, tuple[str, str]]:
    """Symbols for :class:`Imports`: ``names`` from ``module``, used as ``_name`` when ``private``."""
    return {f"_{n}" if private else n: (module, n) for n in names}


def _isort_key(name: str) -> tuple[int, str]:
    """CONSTANTS, then Classes, then other names (isort's ``order-by-type``)."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


class SourceWriter:
    def __init__(self, indent: str = "    ", imports: Imports | None = None) -> None:
        self._lines: list[str] = []
        self._level = 0
        self._indent = indent
        self.imports = imports

    def line(self, text: str = "") -> None:
        if self.imports is not None:
            self.imports.note(text)
        self._lines.append(f"{self._indent * self._level}{text}" if text else "")

    def lines(self, texts: list[str]) -> None:
        for text in texts:
            self.line(text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header)
        self._level += 1
        try:
            yield
        finally:
            self._level -= 1

    def text(self) -> str:
        return "\n".join(self._lines) + "\n" if self._lines else ""
