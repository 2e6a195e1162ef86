"""Names in a Kafka log directory: partition directories and segment files.

A partition's directory is ``<topic>-<partition>`` (``orders-3``). Its segments are named by their
base offset, zero-padded to 20 digits: ``00000000000000000042.log`` holds the batches,
``.index`` and ``.timeindex`` beside it the sparse indexes, and ``.txnindex`` the aborted
transactions whose markers it holds (only once there is one). A partition's producer state is
snapshotted in ``<offset>.snapshot`` files, named like segments. While the cleaner replaces a segment
its new files carry ``.cleaned`` then ``.swap`` after the usual suffix; a segment being removed
is renamed with ``.deleted``.
"""

from __future__ import annotations

from typing import Final

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
SUFFIXES: Final = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
TXN_INDEX_SUFFIX: Final = ".txnindex"
SNAPSHOT_SUFFIX: Final = ".snapshot"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
DELETED_SUFFIX: Final = ".deleted"
_OFFSET_DIGITS: Final = 20


def file_prefix(base_offset: int) -> str:
    """``00000000000000000042``: the 20-digit file name of a segment's base offset."""
    return f"{base_offset:0{_OFFSET_DIGITS}d}"


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for ``(42, ".log")``."""
    return f"{file_prefix(base_offset)}{suffix}"


def parse_segment_name(name: str) -> tuple[int, str] | None:
    """``(base offset, suffix)`` of a segment file name such as ``000…42.log.swap``; else None."""
    digits, dot, suffix = name.partition(".")
    if not dot or len(digits) != _OFFSET_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits), "." + suffix


def partition_dir(topic: str, partition: int) -> str:
    """``orders-3``: the directory of a topic-partition."""
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``orders-3`` -> ``("orders", 3)``; None for names that are not a partition directory
    (``orders-3.abc-delete``, ``orders-3-future``, ``orders-03``, ``cleaner-offset-checkpoint``)."""
    topic, dash, number = name.rpartition("-")
    if (
        not dash
        or not topic
        or not (number.isascii() and number.isdigit())
        or (len(number) > 1 and number[0] == "0")
    ):
        return None
    return topic, int(number)
