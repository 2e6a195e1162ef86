"""What a replica hands its owner from :meth:`KRaftReplica.take_committed
<kafka_wire.broker.raft.replica.KRaftReplica.take_committed>`: committed batches, or a snapshot to load."""

from __future__ import annotations

from kafka_wire.broker.raft.snapshots import SnapshotId
from kafka_wire.quick_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """Committed records of one batch (control batches are not handed out)."""

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    records: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class SnapshotLoad:
    """Replace the state built so far by a snapshot's (at start, or after FetchSnapshot)."""

    snapshot_id: SnapshotId
    records: tuple[bytes, ...]


Committed = CommittedBatch | SnapshotLoad
