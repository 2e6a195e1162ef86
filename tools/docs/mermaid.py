"""Mermaid state diagrams from transition tables (``(state, input) -> state`` mappings)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

S = TypeVar("S")
In = TypeVar("In")


def label(move: object) -> str:
    """How an input is written on an arrow: an enum's value, a class's name, else its text."""
    if isinstance(move, enum.Enum):
        return str(move.value)
    if isinstance(move, type):
        return move.__name__
    return str(move)


def name(state: object) -> str:
    """How a state is written: an enum member's name, else its text."""
    return state.name if isinstance(state, enum.Enum) else str(state)


def state_diagram(table: Mapping[tuple[S, In], S]) -> str:
    """A fenced Mermaid diagram: one arrow per (from, to) pair, labelled with its inputs in table order."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for (state, move), target in table.items():
        arrows.setdefault((name(state), name(target)), []).append(label(move))
    lines = ["```mermaid", "stateDiagram-v2"]
    lines += [f"    {a} --> {b}: {', '.join(moves)}" for (a, b), moves in arrows.items()]
    lines.append("```")
    return "\n".join(lines)
