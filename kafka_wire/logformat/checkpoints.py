"""Checkpoint files: Kafka's, and kafka_wire's own one-line offset files.

Kafka's checkpoint files are text: a version line, a line with the number of entries, then one
entry per line, fields separated by a space. Version 0 is the only one in use.

- Per log directory, entries ``<topic> <partition> <offset>``: ``recovery-point-offset-checkpoint``
  (flushed up to), ``replication-offset-checkpoint`` (high watermarks),
  ``log-start-offset-checkpoint`` (after retention or DeleteRecords) and
  ``cleaner-offset-checkpoint`` (first offset not yet compacted).
- Per partition directory, entries ``<leader epoch> <start offset>``: ``leader-epoch-checkpoint``.

Reading follows Kafka's ``CheckpointFile``: an empty file (or one that ends after the version
line) holds no entries; an unknown version, a malformed line or a count that differs from the
number of entry lines is an error (:class:`CheckpointError`).

kafka_wire's broker keeps per-partition state in one-line files of its own inside each partition
directory, ``log-start-offset`` and ``cleaner-offset``: a decimal offset and a newline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from kafka_wire.errors import InvalidValueError

CHECKPOINT_VERSION: Final = 0
RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"

LOG_START_OFFSET_FILE: Final = "log-start-offset"
CLEANER_OFFSET_FILE: Final = "cleaner-offset"
STATE_FILES: Final = (LOG_START_OFFSET_FILE, CLEANER_OFFSET_FILE)
MAX_OFFSET_FILE_BYTES: Final = 32
"""Larger one-line offset files are not offset files (an int64 and a newline take at most 20 bytes)."""
_MAX_OFFSET_DIGITS: Final = 19
_INT32_MAX: Final = 2**31 - 1
_INT64_MAX: Final = 2**63 - 1


class CheckpointError(InvalidValueError):
    """A checkpoint file that Kafka would refuse to read; ``offset`` is the byte of the bad line."""

    def __init__(self, reason: str, *, offset: int = 0) -> None:
        super().__init__(reason, offset=offset, message="checkpoint")


# -- kafka_wire's one-line files --------------------------------------------------------------------
def parse_offset_file(data: bytes) -> int | None:
    """The offset of a one-line offset file; None when it is not one (too long, not a decimal)."""
    if len(data) > MAX_OFFSET_FILE_BYTES:
        return None
    text = data.strip()
    if not text.isdigit() or len(text) > _MAX_OFFSET_DIGITS:
        return None
    return int(text)


def format_offset_file(offset: int) -> bytes:
    return f"{offset}\n".encode("ascii")


# -- Kafka's checkpoint files -----------------------------------------------------------------------
def _number(field: str, limit: int) -> int | None:
    """A decimal as Java's ``parseInt``/``parseLong`` reads it (optional sign), within +-limit."""
    digits = field[1:] if field[:1] in ("-", "+") else field
    if not digits or not (digits.isascii() and digits.isdigit()):
        return None
    value = int(field)
    return value if -limit - 1 <= value <= limit else None


def _entry_lines(text: str) -> list[tuple[int, list[str]]]:
    """``(byte offset, fields)`` of each entry line, after checking the version and count lines."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    version = _number(lines[0].strip(), _INT32_MAX)
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"unrecognised checkpoint version {lines[0].strip()!r} (expected 0)")
    if len(lines) < 2:
        return []
    count = _number(lines[1].strip(), _INT32_MAX)
    at = len(lines[0].encode())
    if count is None or count < 0:
        raise CheckpointError(f"malformed entry count {lines[1].strip()!r}", offset=at)
    at += len(lines[1].encode())
    entries = []
    for line in lines[2:]:
        entries.append((at, line.split()))
        at += len(line.encode())
    if len(entries) != count:
        raise CheckpointError(f"expected {count} entries but found {len(entries)}", offset=at)
    return entries


def parse_partition_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """The ``(topic, partition) -> offset`` entries of a log directory's checkpoint file."""
    out: dict[tuple[str, int], int] = {}
    for at, fields in _entry_lines(text):
        partition = _number(fields[1], _INT32_MAX) if len(fields) == 3 else None
        offset = _number(fields[2], _INT64_MAX) if len(fields) == 3 else None
        if partition is None or offset is None:
            raise CheckpointError(
                f"malformed line {' '.join(fields)!r} (expected: topic partition offset)", offset=at
            )
        out[(fields[0], partition)] = offset
    return out


def format_partition_checkpoint(entries: Mapping[tuple[str, int], int]) -> str:
    """A log directory's checkpoint file of ``(topic, partition) -> offset`` entries, sorted."""
    lines = [f"{CHECKPOINT_VERSION}", f"{len(entries)}"]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(entries.items())]
    return "\n".join(lines) + "\n"


def parse_epoch_checkpoint(text: str) -> list[tuple[int, int]]:
    """The ``(leader epoch, start offset)`` entries of a ``leader-epoch-checkpoint``, in file order."""
    out: list[tuple[int, int]] = []
    for at, fields in _entry_lines(text):
        epoch = _number(fields[0], _INT32_MAX) if len(fields) == 2 else None
        offset = _number(fields[1], _INT64_MAX) if len(fields) == 2 else None
        if epoch is None or offset is None:
            raise CheckpointError(f"malformed line {' '.join(fields)!r} (expected: epoch offset)", offset=at)
        out.append((epoch, offset))
    return out


def format_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> str:
    """A ``leader-epoch-checkpoint`` of ``(leader epoch, start offset)`` entries, in the given order."""
    items = list(entries)
    lines = [f"{CHECKPOINT_VERSION}", f"{len(items)}"] + [f"{epoch} {offset}" for epoch, offset in items]
    return "\n".join(lines) + "\n"
