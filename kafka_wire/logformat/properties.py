"""Java's properties text format, as Kafka's files use it (``server.properties``,
``meta.properties``, ``partition.metadata``): pure parsing, the caller reads the text.

A line is ``key=value``, ``key: value`` or ``key value`` (the first ``=``, ``:`` or run of blanks
separates, blanks around it are dropped); ``#`` and ``!`` start comment lines; a line ending in
an odd number of backslashes continues on the next, whose leading blanks are dropped.
"""

from __future__ import annotations

import re
from typing import Final

#: ``re`` compiles (and keeps) it on its first use, not at import.
_SEPARATOR: Final = r"\s*[=:]\s*|\s+"


def parse_properties(text: str) -> dict[str, str]:
    """The properties of ``text``, in order (a key given twice keeps its last value)."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line.startswith(("#", "!"))):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending = line[:-1]
            continue
        pending = ""
        _add(props, line)
    if pending:
        _add(props, pending)
    return props


def _add(props: dict[str, str], line: str) -> None:
    key, value = ([*re.split(_SEPARATOR, line.strip(), maxsplit=1), ""])[:2]
    props[key] = value
