"""The one place the checker reads the engine's internals: small snapshots of a node's partition
replicas, its raft replica of ``__cluster_metadata`` and its metadata image, and the contents of a
replica's log. Everything here only reads; the invariants (``steps.py``, ``ends.py``) see these
snapshots and never the engine's classes, so a rename inside the engine is fixed here alone."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.cluster_view import LeaderRecoveryState
from kafka_wire.broker.controller.image import MetadataImage
from kafka_wire.broker.partition.roles import ReplicaRole
from kafka_wire.broker.raft.replica import KRaftReplica
from kafka_wire.errors import DecodeError, LocalProtocolError
from kafka_wire.records import RecordBatch, read_batches

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker
    from kafka_wire.broker.cluster_view import PartitionState
    from kafka_wire.broker.node import Node
    from kafka_wire.broker.partition.replica import PartitionReplica

#: Bytes read per step when a whole log is read at the end.
_READ_CHUNK: Final = 1 << 20
_LEADER: Final = ReplicaRole.LEADER
_RECOVERING: Final = LeaderRecoveryState.RECOVERING

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ReplicaSnap:
    """One partition replica on one node, as the per-step invariants need it."""

    node_id: int
    tp: TopicPartition
    is_leader: bool
    leader_epoch: int
    #: From the replica's registration (-1: none, a single-node replica).
    partition_epoch: int
    high_watermark: int
    log_end_offset: int
    log_start_offset: int
    #: The epoch cache's ``(epoch, start offset)`` entries (the engine's list, not a copy).
    epoch_entries: list[tuple[int, int]]
    #: Leader only: the committed ISR, the maximal ISR, the effective min ISR.
    isr: tuple[int, ...] = ()
    maximal_isr: tuple[int, ...] = ()
    min_isr: int = 0
    #: Leader only: each follower's log end offset as its last fetch told (-1: unknown).
    follower_leos: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class RaftSnap:
    node_id: int
    is_leader: bool
    epoch: int
    leader_id: int
    high_watermark: int
    log_end_offset: int
    voters: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogContents:
    """A replica's whole log: its records and its batches (base, last offset, epoch, CRC)."""

    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    records: tuple[tuple[int, str], ...]
    batches: tuple[tuple[int, int, int, int], ...]


def partition_replicas(broker: Broker | None) -> dict[TopicPartition, PartitionReplica]:
    """The running broker's partition replicas (empty while down or starting)."""
    if broker is None:
        return {}
    try:
        return broker.state.partitions
    except LocalProtocolError:  # not started yet
        return {}


def snap_replica(node_id: int, replica: PartitionReplica) -> ReplicaSnap:
    leadership = replica.leadership
    log = replica.log
    registration = replica.registration
    snap = ReplicaSnap(
        node_id,
        (replica.topic, replica.partition),
        leadership.role is _LEADER,
        leadership.epoch,
        -1 if registration is None else registration.partition_epoch,
        replica.high_watermark,
        log.log_end_offset,
        log.log_start_offset,
        leadership.cache.entries,
    )
    if snap.is_leader and registration is not None:
        snap.isr = registration.isr
        pending = replica.pending_isr
        snap.maximal_isr = (
            registration.isr
            if pending is None
            else registration.isr + tuple(r for r in pending if r not in registration.isr)
        )
        snap.min_isr = replica.effective_min_isr
        snap.follower_leos = tuple((f.node_id, f.log_end_offset) for f in replica.followers.states())
    return snap


def replica_snaps(node_id: int, broker: Broker | None) -> Iterator[ReplicaSnap]:
    for replica in partition_replicas(broker).values():
        yield snap_replica(node_id, replica)


#: What a replica looked like when last snapshotted (see :func:`changed_snaps`).
Fingerprint = tuple[object, ...]


def changed_snaps(
    node_id: int, broker: Broker | None, seen: dict[tuple[int, TopicPartition], Fingerprint]
) -> list[ReplicaSnap]:
    """Snapshots of the running broker's replicas that changed since ``seen`` (updated): their
    log end, high watermark, log start, role, epoch, registration, pending ISR or epoch cache.
    A leader's followers' fetch positions are not part of it: a follower's position only falls
    below the leader's HW by a truncation, which its own snapshot shows."""
    out: list[ReplicaSnap] = []
    for key, replica in partition_replicas(broker).items():
        leadership = replica.leadership
        log = replica.log
        entries = leadership.cache.entries
        at = (node_id, key)
        before = seen.get(at)
        # The fingerprint compared item by item (identity, then equality, as a tuple compares),
        # without building a new one for the replicas that did not change: most of them, as
        # this runs after every event.
        if (
            before is not None
            and log.log_end_offset == before[0]
            and replica.high_watermark == before[1]
            and log.log_start_offset == before[2]
            and leadership.role is before[3]
            and leadership.epoch == before[4]
            and (replica.registration is before[5] or replica.registration == before[5])
            and (replica.pending_isr is before[6] or replica.pending_isr == before[6])
            and (entries is before[7] or entries == before[7])
            and len(entries) == before[8]
        ):
            continue
        seen[at] = (
            log.log_end_offset,
            replica.high_watermark,
            log.log_start_offset,
            leadership.role,
            leadership.epoch,
            replica.registration,
            replica.pending_isr,
            entries,
            len(entries),
        )
        out.append(snap_replica(node_id, replica))
    return out


def raft_of(node: Node | None) -> KRaftReplica | None:
    """The node's raft replica of ``__cluster_metadata`` (None: down or not started)."""
    if node is None:
        return None
    try:
        raft = node.parts.raft
    except LocalProtocolError:  # not started yet
        return None
    return raft if isinstance(raft, KRaftReplica) else None


def raft_print(raft: KRaftReplica) -> tuple[int, object, int, int, int]:
    """What the raft invariants read, to tell whether it moved since the last event."""
    return (raft.epoch, raft.role, raft.leader_id, raft.high_watermark, raft.log_end_offset)


def snap_raft(node_id: int, node: Node | None) -> RaftSnap | None:
    raft = raft_of(node)
    return None if raft is None else raft_snap(node_id, raft)


def raft_snap(node_id: int, raft: KRaftReplica) -> RaftSnap:
    return RaftSnap(
        node_id,
        raft.is_leader,
        raft.epoch,
        raft.leader_id,
        raft.high_watermark,
        raft.log_end_offset,
        raft.config.voter_ids,
    )


def image_of(node: Node | None) -> MetadataImage | None:
    """The node's metadata image (None: down or not started)."""
    if node is None:
        return None
    try:
        image = node.parts.image
    except LocalProtocolError:
        return None
    return image if isinstance(image, MetadataImage) else None


def is_fenced(image: MetadataImage, node_id: int) -> bool:
    """Whether the image has ``node_id`` fenced (or not registered at all)."""
    info = image.broker(node_id)
    return info is None or info.fenced


def is_recovering(state: PartitionState) -> bool:
    """Led after an unclean election and not yet recovered."""
    return state.leader_recovery_state == _RECOVERING


def is_active_controller(node: Node | None) -> bool:
    raft = raft_of(node)
    return raft is not None and raft.leader_ready and node is not None and node.parts.controller is not None


def _log_batches(replica: PartitionReplica, *, verify_crc: bool | None) -> Iterator[RecordBatch[bytes]]:
    """The v2 batches of a replica's log, from its start to its end (up to the first that cannot
    be read)."""
    log = replica.log
    offset, end = log.log_start_offset, log.log_end_offset
    while offset < end:
        result = log.read(offset, _READ_CHUNK, max_offset=end, min_one_batch=True)
        data = log.read_bytes(result)
        if result.error_code or not data:
            return
        start = offset
        try:
            for batch in read_batches(data, verify_crc=verify_crc):
                if isinstance(batch, RecordBatch):
                    yield batch
                offset = max(offset, batch.next_offset)
        except DecodeError:
            return
        if offset == start:
            return


def read_log(replica: PartitionReplica) -> LogContents:
    """Every record of a replica's log (values as str), and its batches."""
    log = replica.log
    records: list[tuple[int, str]] = []
    batches: list[tuple[int, int, int, int]] = []
    for batch in _log_batches(replica, verify_crc=None):
        batches.append((batch.base_offset, batch.last_offset, batch.partition_leader_epoch, batch.crc))
        if not batch.is_control:
            for record in batch:
                value = record.value
                text = "" if value is None else bytes(value).decode("utf-8", "replace")
                records.append((record.offset, text))
    return LogContents(
        log.log_start_offset, log.log_end_offset, replica.high_watermark, tuple(records), tuple(batches)
    )


def producers_unknown(replica: PartitionReplica) -> list[str]:
    """Idempotent producers whose last batch in the replica's log its producer state does not
    know (a missing entry, or a last sequence behind the log's): a retry of that batch would be
    appended again. Kafka rebuilds this state from the log when a replica opens."""
    last: dict[int, tuple[int, int, int]] = {}
    for batch in _log_batches(replica, verify_crc=False):
        if batch.producer_id < 0:
            continue
        if batch.is_control:
            # A transaction marker has no sequence; one of a newer epoch (transaction version 2
            # bumps it at every end) starts the producer's sequences again.
            seen = last.get(batch.producer_id)
            if seen is not None and seen[2] != batch.producer_epoch:
                del last[batch.producer_id]
        elif batch.base_sequence >= 0:
            last[batch.producer_id] = (batch.last_sequence, batch.last_offset, batch.producer_epoch)
    missing: list[str] = []
    for producer_id, (sequence, at, epoch) in sorted(last.items()):
        entry = replica.producers.entry(producer_id)
        if entry is not None and entry.epoch != epoch:
            continue  # a newer epoch's sequences start again (a retry of the old one is fenced)
        known = None if entry is None else entry.last_sequence
        if known is None or known < sequence:
            missing.append(f"producer {producer_id} sequence {sequence} at offset {at} (state: {known})")
    return missing


def leader_of(replicas: Sequence[ReplicaSnap]) -> ReplicaSnap | None:
    """The leader with the highest epoch among live replicas of one partition."""
    best: ReplicaSnap | None = None
    for snap in replicas:
        if snap.is_leader and (best is None or snap.leader_epoch > best.leader_epoch):
            best = snap
    return best
