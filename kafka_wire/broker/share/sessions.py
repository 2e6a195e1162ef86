"""Share sessions (KIP-932, Kafka's ``ShareSessionCache``): one per (group, member) on a broker,
holding the share-partitions the member fetches and the epoch its next request must carry.

A ShareFetch with epoch 0 opens a session (replacing the member's earlier one), refused with
SHARE_SESSION_LIMIT_REACHED while ``max.share.session.cache.size`` sessions are open; later
requests carry the session's epoch, which counts up from 1 (wrapping to 1 after 2^31 - 1): no
session is SHARE_SESSION_NOT_FOUND, another epoch INVALID_SHARE_SESSION_EPOCH. Epoch -1 closes it.
A session also ends with its client's connection (Kafka 4.1+), its records released.
"""

from __future__ import annotations

import uuid
from dataclasses import field
from typing import Final

from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
#: Kafka's ``max.share.session.cache.size`` default.
DEFAULT_MAX_SHARE_SESSIONS: Final = 1000

#: A share-partition of a session: (topic id, partition).
TopicIdPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    #: The epoch the next request must carry.
    epoch: int
    #: The connection the session was opened on.
    conn_id: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)


class ShareSessionCache:
    """The share sessions of a broker, by (group, member)."""

    def __init__(self, max_sessions: int = DEFAULT_MAX_SHARE_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def open(
        self, group_id: str, member_id: str, partitions: list[TopicIdPartition], conn_id: int
    ) -> ShareSession | None:
        """A new session at epoch 1 (None: the cache is full). The caller removed the member's
        earlier one first."""
        if len(self.sessions) >= self.max_sessions:
            return None
        session = ShareSession(
            group_id, member_id, next_epoch(INITIAL_EPOCH), conn_id, dict.fromkeys(partitions)
        )
        self.sessions[group_id, member_id] = session
        return session

    def check(self, group_id: str, member_id: str, epoch: int) -> ShareSession | ErrorCode:
        """The session a request of ``epoch`` (> 0) continues, moved to its next epoch, or the error."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND
        if session.epoch != epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        session.epoch = next_epoch(session.epoch)
        return session

    def of_connection(self, conn_id: int) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.conn_id == conn_id]
