"""Values and errors of the client's API: topic-partitions, the ListOffsets codes, call errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

EARLIEST: Final = -2
"""ListOffsets' code for the earliest offset (also Spark's, in its offset JSON)."""
LATEST: Final = -1
"""ListOffsets' code for the latest offset (also Spark's, in its offset JSON)."""
READ_UNCOMMITTED: Final = 0
READ_COMMITTED: Final = 1
"""Fetch and ListOffsets isolation levels."""


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class KafkaCallError(RuntimeError):
    """A request failed with an error code that retrying does not fix (or retries ran out)."""


class DataLossError(RuntimeError):
    """Offsets a read needs are no longer in the log (retention, DeleteRecords, a recreated
    topic). Raised unless the caller chose to skip them (Spark's ``failOnDataLoss=false``)."""
