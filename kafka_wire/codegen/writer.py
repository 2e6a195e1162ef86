"""A small indenting source writer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class SourceWriter:
    def __init__(self, indent: str = "    ") -> None:
        self._lines: list[str] = []
        self._level = 0
        self._indent = indent

    def line(self, text: str = "") -> None:
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
        return "\n".join(self._lines) + "\n"
