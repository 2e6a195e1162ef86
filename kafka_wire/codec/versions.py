"""Version sets: the ``"3+"``, ``"0-4"``, ``"none"`` and ``"0-2,5+"`` strings of the schemas."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kafka_wire.errors import SchemaError

#: Upstream reads an open-ended range ``"N+"`` as reaching ``Short.MAX_VALUE``.
OPEN_END = 0x7FFF
#: The sets parsed so far, by their text (:meth:`VersionSet.parse`).
_PARSED: dict[str, VersionSet] = {}


class VersionSet:
    """An immutable set of versions held as sorted, disjoint, non-adjacent inclusive ranges."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        self._ranges: tuple[tuple[int, int], ...] = tuple(merged)

    @classmethod
    def parse(cls, text: str) -> VersionSet:
        """The set ``text`` writes. The sets are immutable, so one text's is made once: the
        generated message modules parse some 500 version strings as they load, of a few dozen
        distinct ones."""
        known = _PARSED.get(text)
        if known is not None and type(known) is cls:
            return known
        made = cls._parse(text)
        _PARSED[text] = made
        return made

    @classmethod
    def _parse(cls, text: str) -> VersionSet:
        text = text.strip()
        if text in ("", "none"):
            return cls()
        ranges: list[tuple[int, int]] = []
        for part in text.split(","):
            part = part.strip()
            try:
                if part.endswith("+"):
                    ranges.append((int(part[:-1]), OPEN_END))
                elif "-" in part:
                    lo, hi = part.split("-", 1)
                    ranges.append((int(lo), int(hi)))
                else:
                    ranges.append((int(part), int(part)))
            except ValueError:
                raise SchemaError(f"bad version range {text!r}") from None
        if any(lo < 0 or hi < lo for lo, hi in ranges):
            raise SchemaError(f"bad version range {text!r}")
        return cls(ranges)

    @classmethod
    def of(cls, versions: Iterable[int]) -> VersionSet:
        return cls((v, v) for v in versions)

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        return self._ranges

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        for lo, hi in self._ranges:
            if lo <= version <= hi:
                return True
        return False

    def __iter__(self) -> Iterator[int]:
        for lo, hi in self._ranges:
            yield from range(lo, hi + 1)

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VersionSet) and self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash(self._ranges)

    def __repr__(self) -> str:
        return f"VersionSet({self.format()!r})"

    def __and__(self, other: VersionSet) -> VersionSet:
        out = []
        for alo, ahi in self._ranges:
            for blo, bhi in other._ranges:
                lo, hi = max(alo, blo), min(ahi, bhi)
                if lo <= hi:
                    out.append((lo, hi))
        return VersionSet(out)

    def __or__(self, other: VersionSet) -> VersionSet:
        return VersionSet(self._ranges + other._ranges)

    def __sub__(self, other: VersionSet) -> VersionSet:
        return VersionSet.of(v for v in self.bounded(OPEN_END) if v not in other)

    def issubset(self, other: VersionSet) -> bool:
        return (self & other) == self

    def bounded(self, highest: int) -> VersionSet:
        """The versions up to ``highest`` (for iterating an open-ended set)."""
        return self & VersionSet([(0, highest)])

    @property
    def lowest(self) -> int:
        return self._ranges[0][0]

    @property
    def highest(self) -> int:
        return self._ranges[-1][1]

    @property
    def is_open(self) -> bool:
        return bool(self._ranges) and self._ranges[-1][1] == OPEN_END

    def opened_at(self, highest: int) -> VersionSet:
        """Make a range that reaches ``highest`` open-ended (``"3-13"`` with 13 -> ``"3+"``)."""
        if self._ranges and self._ranges[-1][1] >= highest:
            return VersionSet((*self._ranges[:-1], (self._ranges[-1][0], OPEN_END)))
        return self

    def format(self) -> str:
        if not self._ranges:
            return "none"
        parts = []
        for lo, hi in self._ranges:
            if hi == OPEN_END:
                parts.append(f"{lo}+")
            elif lo == hi:
                parts.append(str(lo))
            else:
                parts.append(f"{lo}-{hi}")
        return ",".join(parts)


NO_VERSIONS = VersionSet()
ALL_VERSIONS = VersionSet([(0, OPEN_END)])
