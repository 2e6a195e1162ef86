"""Fetch sessions (KIP-227): the partitions a consumer fetches, remembered between requests.

A full fetch with epoch 0 opens a session (when a cache slot is free); later requests carry only
what changed (new offsets, added partitions, ``forgotten_topics_data``) with the next epoch, and
their responses hold only partitions with something new: records, an error, or a changed high
watermark, last stable offset or log start offset. Epoch -1 closes a session. Session ids come from
the broker's injected random generator.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Final

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1


@dataclass(slots=True)
class SessionPartition:
    topic: str
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    #: What the client was last told, so incremental responses can leave unchanged partitions out.
    sent_high_watermark: int = -1
    sent_last_stable_offset: int = -1
    sent_log_start_offset: int = -1

    def changed(self, high_watermark: int, last_stable_offset: int, log_start_offset: int) -> bool:
        return (high_watermark, last_stable_offset, log_start_offset) != (
            self.sent_high_watermark,
            self.sent_last_stable_offset,
            self.sent_log_start_offset,
        )

    def remember(self, high_watermark: int, last_stable_offset: int, log_start_offset: int) -> None:
        self.sent_high_watermark = high_watermark
        self.sent_last_stable_offset = last_stable_offset
        self.sent_log_start_offset = log_start_offset


@dataclass(slots=True)
class FetchSession:
    session_id: int
    #: The epoch the next incremental request must carry.
    next_epoch: int = 1
    #: Keyed by (topic name, partition), in the order they were added.
    partitions: dict[tuple[str, int], SessionPartition] = field(default_factory=dict)


class FetchSessionCache:
    """At most ``slots`` sessions; when full, new sessions are not created (fetches go sessionless)."""

    def __init__(self, slots: int, rng: random.Random) -> None:
        self._slots = slots
        self._rng = rng
        self._sessions: dict[int, FetchSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def create(self) -> FetchSession | None:
        if len(self._sessions) >= self._slots:
            return None
        while True:
            session_id = self._rng.randrange(1, 2**31)
            if session_id not in self._sessions:
                session = self._sessions[session_id] = FetchSession(session_id)
                return session
