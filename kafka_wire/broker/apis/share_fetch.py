"""ShareFetch (v1-v2, KIP-932).

Behaviour: a share group member's fetch from the partitions this broker leads. The share session
(``kafka_wire.broker.share.sessions``) comes first: epoch 0 opens one (acknowledgements then are
INVALID_REQUEST), -1 closes it, any other epoch continues it, adding the partitions named and
dropping the forgotten ones; these errors (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
SHARE_SESSION_LIMIT_REACHED) answer the whole request, with ``acquisition_lock_timeout_ms`` 0 as
Kafka's (an empty member id is INVALID_REQUEST; an empty group id is a group as any other). The
acknowledgements it carries are applied next, each partition's all or nothing, the outcome in
``acknowledge_error_code``. Then the session's partitions are fetched: from each share-partition's
next available offset, whole batches up to the partition's high watermark (the last stable offset
when the group's ``share.isolation.level`` is read_committed, read at each request as Kafka 4.4
reads it: the records of aborted transactions are then archived, not acquired), ``max_bytes`` in all
(the first batch always whole) and at most ``max_records`` records acquired, each for the lock
duration (the answer's ``acquisition_lock_timeout_ms``), listed with their delivery counts in
``acquired_records``; records of the batches that are not acquired (held by another member, done
with) are not for this member. With nothing acquired and no error, the request is held until
records can be acquired or ``max_wait_ms`` passes, or its share session ends (closed, or replaced by
the member's new one: the connection it came on is likely gone, so it acquires nothing more; found
by ``kafka-wire simulate --workload share-strict --seed 17``, a fetch held on a connection reset
only on the client's side acquired a released record for no one). A closing fetch (-1) releases what the member
holds in the session's partitions. Every change of a share-partition (an acquisition, an
acknowledgement) is written to the share coordinator (``share.persister``), and the answer leaves
once it is stored: a partition whose write failed answers the persister's error (mapped as Kafka's
``SharePartition`` does: COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, FENCED_STATE_EPOCH,
...) in ``error_code`` without its records, or in ``acknowledge_error_code``. Records
are never null (empty bytes where there are none, as from Kafka). A share-partition that cannot
start (``share.auto.offset.reset=by_duration:...`` and no record recent enough) answers
OFFSET_NOT_AVAILABLE, as Kafka 4.4's failed initialization, and is tried again at the next
fetch. Unknown topic ids get
UNKNOWN_TOPIC_ID, partitions not led here NOT_LEADER_OR_FOLLOWER with the leader in
``current_leader``.
Version notes: v2 adds ``share_acquire_mode`` (the record limit is kept in both modes) and
``is_renew_ack`` (RENEW acknowledgements, and then nothing is fetched).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_wire.broker.apis.cluster_facts import current_leader, missing_replica_error
from kafka_wire.broker.share.manager import AckBatch, ShareManager, write_outcome
from kafka_wire.broker.share.persister import WRITE_TIMEOUT_MS, Ticket
from kafka_wire.broker.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, TopicIdPartition
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.logformat.batch_header import parse_header
from kafka_wire.logformat.txn_index import AbortedTxn
from kafka_wire.messages import (
    ErrorCode,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchResponseAcquiredRecords,
    ShareFetchResponseNodeEndpoint,
    ShareFetchResponsePartitionData,
    ShareFetchResponseShareFetchableTopicResponse,
)
from kafka_wire.records import read_batches
from kafka_wire.records.aborted import AbortedFilter, is_abort_marker
from kafka_wire.records.constants import CONTROL_MASK, TRANSACTIONAL_MASK

if TYPE_CHECKING:
    from kafka_wire.broker.partition.replica import PartitionReplica

#: ``share.isolation.level``: read_uncommitted (the default) reads up to the high watermark,
#: read_committed up to the last stable offset (Kafka's fetch isolation of a ShareFetch).
_READ_UNCOMMITTED = 0
_READ_COMMITTED = 1


def share_manager(state: BrokerState) -> ShareManager:
    share = state.share
    assert share is not None, "the broker builds its share manager at start"
    return share


def ack_batches_of(request: ShareFetchRequest) -> dict[TopicIdPartition, list[AckBatch]]:
    out: dict[TopicIdPartition, list[AckBatch]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            if p.acknowledgement_batches:
                batches = out.setdefault((topic.topic_id, p.partition_index), [])
                batches += [
                    (b.first_offset, b.last_offset, b.acknowledge_types) for b in p.acknowledgement_batches
                ]
    return out


def handle(ctx: Context, request: ShareFetchRequest) -> ShareFetchResponse | ShareFetchWait:
    state, now = ctx.state, ctx.now_ms
    share = share_manager(state)
    group_id, member_id = request.group_id or "", request.member_id or ""
    if not member_id.strip():
        return ShareFetchResponse(error_code=ErrorCode.INVALID_REQUEST)
    wanted = list(
        dict.fromkeys((t.topic_id, p.partition_index) for t in request.topics for p in t.partitions)
    )
    acks = ack_batches_of(request)
    epoch = request.share_session_epoch
    sessions = share.sessions
    if epoch == FINAL_EPOCH:
        session = sessions.get(group_id, member_id)
        error = ErrorCode.SHARE_SESSION_NOT_FOUND if session is None else None
    elif epoch == INITIAL_EPOCH:
        session, error = None, ErrorCode.INVALID_REQUEST if acks else None
        if error is None:
            old = sessions.remove(group_id, member_id)
            if old is not None:
                share.release_session(old, now)
            session = sessions.open(group_id, member_id, wanted, ctx.conn_id)
            if session is None:
                error = ErrorCode.SHARE_SESSION_LIMIT_REACHED
    else:
        checked = sessions.check(group_id, member_id, epoch)
        session, error = (None, checked) if isinstance(checked, ErrorCode) else (checked, None)
        if session is not None:
            for key in wanted:
                session.partitions[key] = None
            for forgotten in request.forgotten_topics_data:
                for index in forgotten.partitions:
                    session.partitions.pop((forgotten.topic_id, index), None)
    if error is not None or session is None:
        return ShareFetchResponse(error_code=error or ErrorCode.UNKNOWN_SERVER_ERROR)
    renew = ctx.api_version >= 2 and request.is_renew_ack
    acknowledged: dict[TopicIdPartition, ErrorCode] = {}
    ack_tickets: dict[TopicIdPartition, Ticket] = {}
    for key, batches in acks.items():
        error, ticket = share.acknowledge(group_id, member_id, (group_id, *key), batches, renew, now)
        acknowledged[key] = error
        if ticket is not None:
            ack_tickets[key] = ticket
    fetch: list[TopicIdPartition] = []
    if epoch == FINAL_EPOCH:
        sessions.remove(group_id, member_id)
        share.release_session(session, now)
    elif not renew:
        fetch = list(session.partitions) if epoch != INITIAL_EPOCH else wanted
    wait = ShareFetchWait(
        state=state,
        share=share,
        group_id=group_id,
        member_id=member_id,
        listener=ctx.listener,
        fetch=fetch,
        acknowledged=acknowledged,
        ack_tickets=ack_tickets,
        full=epoch == INITIAL_EPOCH,
        max_bytes=min(request.max_bytes, state.config.fetch_max_bytes),
        max_records=request.max_records,
        min_bytes=request.min_bytes,
        deadline_ms=now + max(request.max_wait_ms, 0),
        session=None if epoch == FINAL_EPOCH else session,
    )
    response = wait.poll(now)
    return wait if response is None else response


def aborted_batches(records: bytes, aborted: tuple[AbortedTxn, ...]) -> list[tuple[int, int]]:
    """The ``(base, last)`` offsets of the batches of ``records`` (a read_committed read) that
    belong to the ``aborted`` transactions: Kafka 4.4's ``SharePartition`` walks the batches in
    order, a producer's aborted transaction opening at its first offset and closing at the
    producer's ABORT marker, and a transactional data batch of a producer with one open is aborted
    (the marker itself is not)."""
    rule = AbortedFilter((t.producer_id, t.first_offset) for t in aborted)
    out: list[tuple[int, int]] = []
    for batch in read_batches(records):
        if batch.magic != 2 or not batch.attributes & (CONTROL_MASK | TRANSACTIONAL_MASK):
            continue
        control = bool(batch.attributes & CONTROL_MASK)
        marker = control and is_abort_marker(batch)
        if rule.skip(batch.producer_id, batch.last_offset, control, marker) and not control:
            out.append((batch.base_offset, batch.last_offset))
    return out


def _find_offset(replica: PartitionReplica) -> Callable[[int], int | None]:
    """The first offset of ``replica``'s log whose timestamp is at or after a time (Kafka 4.4's
    share-partition looks it up in the whole local log, as ``UnifiedLog.fetchOffsetByTimestamp``)."""

    def find(timestamp_ms: int) -> int | None:
        hit = replica.log.offset_for_timestamp(timestamp_ms)
        return None if hit is None else hit[0]

    return find


def _last_offset(records: bytes) -> int:
    """The last offset of the whole batches in ``records`` (-1: none)."""
    at, last = 0, -1
    while (header := parse_header(records, at, at)) is not None and at + header.size <= len(records):
        last = header.last_offset
        at += header.size
    return last


@dataclass(slots=True)
class ShareFetchWait:
    """A ShareFetch held until records can be acquired; ``poll`` answers once some are, or at the
    deadline."""

    state: BrokerState
    share: ShareManager
    group_id: str
    member_id: str
    listener: str
    fetch: list[TopicIdPartition]
    acknowledged: dict[TopicIdPartition, ErrorCode]
    #: A session's first fetch: every partition is in the answer.
    full: bool
    max_bytes: int
    max_records: int
    min_bytes: int
    deadline_ms: int
    ack_tickets: dict[TopicIdPartition, Ticket] = field(default_factory=dict)
    endpoints: dict[int, ShareFetchResponseNodeEndpoint] = field(default_factory=dict)
    #: The writes of the records acquired, by partition.
    acquired_tickets: dict[TopicIdPartition, Ticket] = field(default_factory=dict)
    #: The answer's partitions once records were acquired (or the wait ended): the answer leaves
    #: when their writes settle.
    built: list[tuple[TopicIdPartition, ShareFetchResponsePartitionData]] | None = None
    #: The share session it fetches for: once that ends (closed, or replaced by a new one of the
    #: member's), it acquires nothing more and is answered.
    session: ShareSession | None = None
    #: Share-partitions that could not start (``by_duration`` found no offset), seen while
    #: waiting: answered with the error.
    start_errors: dict[TopicIdPartition, ErrorCode] = field(default_factory=dict)

    def _session_ended(self) -> bool:
        return (
            self.session is not None
            and self.share.sessions.get(self.group_id, self.member_id) is not self.session
        )

    def _ready(self, now_ms: int) -> bool:
        """Whether a poll would acquire something or answer an error."""
        if self._session_ended():
            return True
        state = self.state
        for topic_id, index in self.fetch:
            topic = state.topic_with_id(topic_id)
            replica = state.replica(topic.name, index) if topic is not None else None
            if replica is None or not replica.is_leader:
                return True
            found = self.share.partition(
                (self.group_id, topic_id, index),
                replica.log_start_offset,
                replica.high_watermark,
                now_ms,
                replica.leader_epoch,
                find_offset=_find_offset(replica),
            )
            if isinstance(found, ErrorCode):
                self.start_errors[(topic_id, index)] = found
                return True
            if found is not None and found.can_acquire(self._fetchable(replica), now_ms):
                return True
        return False

    def _fetchable(self, replica: PartitionReplica) -> int:
        """Where acquisition stops: the last stable offset with ``share.isolation.level`` =
        read_committed, else the high watermark."""
        if self.share.read_committed(self.group_id):
            return replica.last_stable_offset
        return replica.high_watermark

    def poll(self, now_ms: int) -> ShareFetchResponse | None:
        if self.built is None:
            self.built = self._fetch(now_ms)
            if self.built is None:
                return None
            # the writes its answer reports: stored (or failed) before it leaves
            self.deadline_ms = max(self.deadline_ms, now_ms + WRITE_TIMEOUT_MS)
        tickets = [*self.ack_tickets.values(), *self.acquired_tickets.values()]
        if now_ms < self.deadline_ms and any(write_outcome(t) is None for t in tickets):
            return None
        for key, ticket in self.ack_tickets.items():
            error = write_outcome(ticket)
            if self.acknowledged.get(key) == ErrorCode.NONE:
                self.acknowledged[key] = ErrorCode.REQUEST_TIMED_OUT if error is None else error
        for key, data in self.built:
            if key in self.acquired_tickets:
                error = write_outcome(self.acquired_tickets[key])
                if error != ErrorCode.NONE:  # not stored: not delivered
                    data.error_code = ErrorCode.REQUEST_TIMED_OUT if error is None else error
                    data.records, data.acquired_records = b"", []
        return self._respond(self.built)

    def _fetch(self, now_ms: int) -> list[tuple[TopicIdPartition, ShareFetchResponsePartitionData]] | None:
        if now_ms < self.deadline_ms and not self.acknowledged and not self._ready(now_ms):
            return None
        results: list[tuple[TopicIdPartition, ShareFetchResponsePartitionData]] = []
        if self._session_ended():  # its answer is likely for a connection gone: acquire nothing
            return results
        bytes_left, records_left = self.max_bytes, self.max_records
        acquired_any = errors = False
        for key in self.fetch:
            data = self._partition(key, now_ms, bytes_left, records_left, first=bytes_left == self.max_bytes)
            count = sum(a.last_offset - a.first_offset + 1 for a in data.acquired_records)
            records_left -= count
            assert data.records is not None
            bytes_left -= len(data.records)
            acquired_any = acquired_any or count > 0
            errors = errors or data.error_code != ErrorCode.NONE
            results.append((key, data))
        if not acquired_any and not errors and not self.acknowledged and now_ms < self.deadline_ms:
            return None
        return results

    @property
    def lock_duration_ms(self) -> int:
        return self.share.lock_duration_ms(self.group_id)

    def _partition(
        self, key: TopicIdPartition, now_ms: int, bytes_left: int, records_left: int, *, first: bool
    ) -> ShareFetchResponsePartitionData:
        topic_id, index = key
        data = ShareFetchResponsePartitionData(partition_index=index, records=b"")
        state = self.state
        topic = state.topic_with_id(topic_id)
        if topic is None:
            data.error_code = ErrorCode.UNKNOWN_TOPIC_ID
            return data
        replica = state.replica(topic.name, index)
        if replica is None or not replica.is_leader:
            data.error_code = (
                missing_replica_error(state, topic.name, index)
                if replica is None
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            if data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                found = current_leader(state, self.listener, topic.name, index)
                data.current_leader.leader_id = found.leader_id
                data.current_leader.leader_epoch = found.leader_epoch
                if found.node is not None:
                    node = found.node
                    self.endpoints[node.node_id] = ShareFetchResponseNodeEndpoint(
                        node_id=node.node_id, host=node.host, port=node.port, rack=node.rack
                    )
            return data
        share_key = (self.group_id, topic_id, index)
        start_error = self.start_errors.pop(key, None)
        partition = (
            self.share.partition(
                share_key,
                replica.log_start_offset,
                replica.high_watermark,
                now_ms,
                replica.leader_epoch,
                find_offset=_find_offset(replica),
            )
            if start_error is None
            else start_error
        )
        if isinstance(partition, ErrorCode):
            data.error_code = partition
            return data
        if partition is None:  # its state is not readable yet: nothing to acquire
            return data
        committed = self.share.read_committed(self.group_id)
        fetchable = self._fetchable(replica)
        if records_left <= 0 or bytes_left <= 0 or not partition.can_acquire(fetchable, now_ms):
            return data
        offset = max(partition.next_fetch_offset(), replica.log_start_offset)
        isolation = _READ_COMMITTED if committed else _READ_UNCOMMITTED
        outcome = replica.read(
            offset, bytes_left, isolation_level=isolation, min_one_batch=first, zero_copy=False
        )
        if outcome.error_code:
            data.error_code = outcome.error_code
            return data
        last = _last_offset(outcome.records)
        if last < 0:
            return data
        acquired = partition.acquire(self.member_id, min(fetchable, last + 1), records_left, now_ms)
        changed = bool(acquired)
        if acquired and outcome.aborted:  # read_committed: aborted transactions are archived
            acquired = partition.archive_aborted(acquired, aborted_batches(outcome.records, outcome.aborted))
        self.share.rearm(share_key)
        if changed:
            ticket = self.share.persist(share_key, now_ms)  # the delivery counts
            if ticket is not None:
                self.acquired_tickets[key] = ticket
        if acquired:
            data.records = outcome.records
            data.acquired_records = [
                ShareFetchResponseAcquiredRecords(
                    first_offset=a.first, last_offset=a.last, delivery_count=a.delivery_count
                )
                for a in acquired
            ]
        return data

    def _respond(
        self, results: list[tuple[TopicIdPartition, ShareFetchResponsePartitionData]]
    ) -> ShareFetchResponse:
        by_key = dict(results)
        for key, error in self.acknowledged.items():
            data = by_key.get(key)
            if data is None:
                data = by_key[key] = ShareFetchResponsePartitionData(partition_index=key[1], records=b"")
            data.acknowledge_error_code = error
        topics: dict[uuid.UUID, ShareFetchResponseShareFetchableTopicResponse] = {}
        for (topic_id, _), data in by_key.items():
            keep = (
                self.full
                or data.acquired_records
                or data.error_code
                or (topic_id, data.partition_index) in self.acknowledged
            )
            if keep:
                topic = topics.get(topic_id)
                if topic is None:
                    topic = topics[topic_id] = ShareFetchResponseShareFetchableTopicResponse(
                        topic_id=topic_id
                    )
                topic.partitions.append(data)
        return ShareFetchResponse(
            acquisition_lock_timeout_ms=self.lock_duration_ms,
            responses=list(topics.values()),
            node_endpoints=[self.endpoints[n] for n in sorted(self.endpoints)],
        )
