"""Fetch (v4 to latest).

Behaviour: reads stored batches as they are (never re-encoded) from each partition's fetch offset
up to the high watermark, or the last stable offset for read_committed; at most
``partition_max_bytes`` per partition and ``max_bytes`` in all (capped by the broker's
``fetch.max.bytes``), except that the first partition with data returns at least one whole batch
(KIP-74). When fewer than ``min_bytes`` are ready the request is held until enough arrive or
``max_wait_ms`` passes. Fetch sessions (v7+, KIP-227) make later requests and responses
incremental. An offset outside the log is OFFSET_OUT_OF_RANGE; a ``current_leader_epoch`` other
than ours is fenced; unknown topics get UNKNOWN_TOPIC_OR_PARTITION (by name) or UNKNOWN_TOPIC_ID
(v13+, by id).
Every partition of an answer carries records, empty when there are none (never null, as from
Kafka). Clients read only from the leader: NOT_LEADER_OR_FOLLOWER elsewhere, also on a broker that
holds no replica of the partition; from v16 (KIP-951) that error and FENCED_LEADER_EPOCH name the
leader this broker knows of in ``current_leader`` and its endpoint in ``node_endpoints``, as
Kafka's do. read_committed answers list the aborted transactions overlapping the records
(read_uncommitted ones null, as from Kafka). A fetch with a replica id
(``replica_id`` before v15, ``replica_state`` from v15) from one of the partition's replicas is a
follower's: it reads up to the log end offset instead of the high watermark, updates that
follower's fetch state on the leader (which may move the high watermark and grow the ISR), and
gets DivergingEpoch (v12+) instead of records when its ``last_fetched_epoch`` shows its log
diverged from the leader's. A replica id that is not one of the partition's replicas gets
UNKNOWN_LEADER_EPOCH when it named a leader epoch, else NOT_LEADER_OR_FOLLOWER (as Kafka).
Held follower fetches answer as soon as the log end moves; client ones when the high watermark
does.
Authorization (with an authorizer): READ on each topic (TOPIC_AUTHORIZATION_FAILED for its
partitions; by id, an unknown id stays UNKNOWN_TOPIC_ID), CLUSTER_ACTION on the cluster for a
follower's fetch (else every partition TOPIC_AUTHORIZATION_FAILED), as Kafka checks.
Version notes: sessions from v7, ``current_leader_epoch`` v9, ``last_fetched_epoch`` and
``diverging_epoch`` v12, topic ids v13, ``replica_state`` v15, the follower's
``high_watermark`` v18 (its held fetch answers as soon as the leader's high watermark is ahead).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Final, cast

from kafka_wire.broker.apis.cluster_facts import LiveBroker, current_leader, missing_replica_error
from kafka_wire.broker.apis.list_offsets import epoch_error
from kafka_wire.broker.effects import FileRegion
from kafka_wire.broker.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, SessionPartition
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.partition.replica import READ_COMMITTED, PartitionReplica
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed, topic_allowed
from kafka_wire.broker.state import BrokerState, Context, Spliced
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import (
    ErrorCode,
    FetchRequest,
    FetchResponse,
    FetchResponseAbortedTransaction,
    FetchResponseFetchableTopicResponse,
    FetchResponseNodeEndpoint,
    FetchResponsePartitionData,
)
from kafka_wire.protocol.server import Splice

#: Errors whose partitions name the leader this broker knows of (Kafka's ``KafkaApis``, v16+).
_LEADER_HINTED: Final = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


@dataclass(slots=True)
class _Wanted:
    key: str
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    entry: SessionPartition | None = None
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    #: The follower's high watermark (v18+): its fetch answers at once when the leader's is ahead.
    high_watermark: int = 2**63 - 1
    #: A follower's fetch state was updated for this request.
    recorded: bool = False


def handle(ctx: Context, request: FetchRequest) -> FetchResponse | Spliced | FetchWait:
    state = ctx.state
    by_id = ctx.api_version >= 13
    wanted = [
        _Wanted(
            str(topic.topic_id) if by_id else topic.topic,
            topic.topic_id if by_id else ZERO_UUID,
            p.partition,
            p.fetch_offset,
            p.partition_max_bytes,
            p.current_leader_epoch,
            last_fetched_epoch=p.last_fetched_epoch,
            log_start_offset=p.log_start_offset,
            high_watermark=p.high_watermark,
        )
        for topic in request.topics
        for p in topic.partitions
    ]
    if ctx.api_version >= 15:
        replica_id, replica_epoch = request.replica_state.replica_id, request.replica_state.replica_epoch
    else:
        replica_id, replica_epoch = request.replica_id, -1
    session: FetchSession | None = None
    incremental = False
    if ctx.api_version >= 7:
        sessions = state.fetch_sessions
        if request.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if request.session_id:
                sessions.remove(request.session_id)
            if request.session_epoch == INITIAL_EPOCH:
                # A follower's fetch (a replica id) opens a privileged session, as in Kafka.
                follower = max(request.replica_id, request.replica_state.replica_id) >= 0
                session = sessions.create(ctx.now_ms, privileged=follower, size=len(wanted))
                if session is not None:
                    for item in wanted:
                        item.entry = session.partitions.setdefault((item.key, item.partition), _entry(item))
                    sessions.touch(session, ctx.now_ms)
        else:
            session = sessions.get(request.session_id)
            if session is None:
                return FetchResponse(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
            if session.next_epoch != request.session_epoch:
                return FetchResponse(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=0)
            session.next_epoch = session.next_epoch + 1 if session.next_epoch < 2**31 - 1 else 1
            for forgotten in request.forgotten_topics_data:
                key = str(forgotten.topic_id) if by_id else forgotten.topic
                for index in forgotten.partitions:
                    session.partitions.pop((key, index), None)
            for item in wanted:
                entry = session.partitions.get((item.key, item.partition))
                if entry is None:
                    entry = session.partitions[item.key, item.partition] = _entry(item)
                else:
                    entry.fetch_offset, entry.max_bytes = item.fetch_offset, item.max_bytes
                    entry.current_leader_epoch = item.current_leader_epoch
            if session.partitions:
                sessions.touch(session, ctx.now_ms)
                wanted = [
                    _Wanted(
                        e.topic,
                        e.topic_id,
                        e.partition,
                        e.fetch_offset,
                        e.max_bytes,
                        e.current_leader_epoch,
                        e,
                    )
                    for e in session.partitions.values()
                ]
                incremental = True
            else:  # nothing left in it: Kafka closes the session and answers without one
                sessions.remove(session.session_id)
                session = None
    wait = FetchWait(
        denied=_denied(ctx, wanted, by_id, follower=replica_id >= 0),
        state=state,
        request=request,
        api_version=ctx.api_version,
        wanted=wanted,
        session_id=session.session_id if session is not None else 0,
        incremental=incremental,
        deadline_ms=ctx.now_ms + max(request.max_wait_ms, 0),
        replica_id=replica_id,
        replica_epoch=replica_epoch,
        listener=ctx.listener,
    )
    response = wait.poll(ctx.now_ms)
    return wait if response is None else response


def _denied(ctx: Context, wanted: list[_Wanted], by_id: bool, *, follower: bool) -> frozenset[str]:
    """The keys of the topics the connection may not read: a follower's fetch needs
    CLUSTER_ACTION on the cluster, a consumer's READ on each topic (as Kafka's ``KafkaApis``)."""
    if ctx.state.authorizer is None:
        return frozenset()
    if follower:
        if cluster_allowed(ctx, AclOperation.CLUSTER_ACTION):
            return frozenset()
        return frozenset(item.key for item in wanted)
    denied: set[str] = set()
    for key, topic_id in dict.fromkeys((item.key, item.topic_id) for item in wanted):
        topic = ctx.state.topic_with_id(topic_id) if by_id else None
        name = topic.name if topic is not None else key
        if (topic is not None or not by_id) and not topic_allowed(ctx, AclOperation.READ, name):
            denied.add(key)
    return frozenset(denied)


def _read_from(topic: TopicInfo | None, replica: PartitionReplica | None) -> tuple[object, ...]:
    """What a poll's outcome for a partition depends on (see ``FetchWait._unchanged``; the topic
    and the replica are compared by identity there)."""
    if topic is None or replica is None:
        return (topic, replica)
    log = replica.log
    return (
        topic,
        replica,
        topic.topic_id,
        replica.registration,
        replica.leadership.epoch,
        replica.leadership.role,
        log.log_end_offset,
        log.log_start_offset,
        replica.high_watermark,
        replica.last_stable_offset,
    )


def _entry(item: _Wanted) -> SessionPartition:
    return SessionPartition(
        topic=item.key,
        topic_id=item.topic_id,
        partition=item.partition,
        fetch_offset=item.fetch_offset,
        max_bytes=item.max_bytes,
        current_leader_epoch=item.current_leader_epoch,
    )


@dataclass(slots=True)
class FetchWait:
    """A Fetch held for ``min_bytes``; ``poll`` answers once enough is ready or time is up."""

    state: BrokerState
    request: FetchRequest
    api_version: int
    wanted: list[_Wanted]
    session_id: int
    incremental: bool
    deadline_ms: int
    #: A follower's node id (>= 0 only in a cluster), and its broker epoch (-1: not sent).
    replica_id: int = -1
    replica_epoch: int = -1
    #: The listener the request came in on (whose endpoints ``node_endpoints`` gives).
    listener: str = ""
    #: The keys of the topics the connection may not read (TOPIC_AUTHORIZATION_FAILED).
    denied: frozenset[str] = frozenset()
    #: After a poll that held the request: per partition, what its outcome was read from (see
    #: ``_unchanged``); None when the next poll must read.
    seen: list[tuple[object, ...]] | None = field(default=None, init=False, repr=False)

    def poll(self, now_ms: int) -> FetchResponse | Spliced | None:
        if self.seen is not None and now_ms < self.deadline_ms and self._unchanged():
            return None
        state, request = self.state, self.request
        by_id = self.api_version >= 13
        seen: list[tuple[object, ...]] = []
        budget = (
            min(request.max_bytes, state.config.fetch_max_bytes)
            if self.api_version >= 3
            else state.config.fetch_max_bytes
        )
        total = 0
        errors = False
        #: A follower has a high watermark to learn (KIP-1166: Fetch v18 sends the follower's).
        news = False
        zero_copy = state.config.zero_copy_fetch
        results: list[tuple[_Wanted, FetchResponsePartitionData]] = []
        regions: dict[int, tuple[FileRegion | bytes, ...]] = {}
        leaders: dict[int, LiveBroker] = {}
        for item in self.wanted:
            # Every partition carries records, empty where there are none: Kafka never sends
            # null records (librdkafka rejects them as a message set of size -1). Errors found
            # by reading the partition (Kafka's ReplicaManager) leave the offsets at -1 and the
            # aborted transactions null; those found before (an unknown topic) an empty list.
            data = FetchResponsePartitionData(
                partition_index=item.partition, high_watermark=-1, last_stable_offset=-1, records=b""
            )
            topic = state.topic_with_id(item.topic_id) if by_id else state.topic_named(item.key)
            replica = state.replica(topic.name, item.partition) if topic is not None else None
            if item.key in self.denied:
                data.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif replica is None:
                if topic is None:
                    data.error_code = (
                        ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                else:
                    data.error_code = missing_replica_error(state, topic.name, item.partition)
                    if data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                        data.aborted_transactions = None
            elif error := epoch_error(item.current_leader_epoch, replica.leader_epoch):
                data.error_code = error
                data.aborted_transactions = None
            elif not replica.is_leader:
                data.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                data.aborted_transactions = None
            elif self.replica_id >= 0 and self.replica_id not in replica.replicas:
                data.error_code = (
                    ErrorCode.UNKNOWN_LEADER_EPOCH
                    if item.current_leader_epoch >= 0
                    else ErrorCode.NOT_LEADER_OR_FOLLOWER
                )
                data.aborted_transactions = None
            elif self.replica_id >= 0 and replica.stale_follower_fetch(self.replica_id, self.replica_epoch):
                data.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                data.aborted_transactions = None
            elif self.replica_id >= 0 and (
                diverging := replica.diverging(item.fetch_offset, item.last_fetched_epoch)
            ):
                data.diverging_epoch.epoch, data.diverging_epoch.end_offset = diverging
                data.high_watermark = replica.high_watermark
                data.last_stable_offset = replica.last_stable_offset
                data.log_start_offset = replica.log_start_offset
                data.aborted_transactions = None
            else:
                if self.replica_id >= 0 and not item.recorded and item.fetch_offset <= replica.log_end_offset:
                    item.recorded = True
                    replica.record_follower_fetch(
                        self.replica_id,
                        item.fetch_offset,
                        now_ms,
                        log_start=item.log_start_offset,
                        broker_epoch=self.replica_epoch,
                    )
                outcome = replica.read(
                    item.fetch_offset,
                    min(item.max_bytes, budget - total),
                    isolation_level=request.isolation_level,
                    min_one_batch=total == 0,
                    zero_copy=zero_copy,
                    to_log_end=self.replica_id >= 0,
                )
                data.error_code = outcome.error_code
                # read_committed lists the aborted transactions overlapping the records;
                # read_uncommitted (and a failed read) gets null, as from Kafka.
                data.aborted_transactions = (
                    None
                    if outcome.aborted is None or outcome.error_code
                    else [
                        FetchResponseAbortedTransaction(
                            producer_id=t.producer_id, first_offset=t.first_offset
                        )
                        for t in outcome.aborted
                    ]
                )
                if not outcome.error_code:
                    data.high_watermark = outcome.high_watermark
                    data.last_stable_offset = outcome.last_stable_offset
                    data.log_start_offset = outcome.log_start_offset
                    data.records = outcome.records
                if any(isinstance(part, FileRegion) for part in outcome.parts):
                    regions[len(results)] = outcome.parts
                elif outcome.parts:
                    data.records = b"".join(p for p in outcome.parts if isinstance(p, bytes))
                total += outcome.size
                news = news or (self.replica_id >= 0 and item.high_watermark < outcome.high_watermark)
            if self.api_version >= 16 and data.error_code in _LEADER_HINTED and topic is not None:
                # KIP-951: the leader this broker knows of, and its endpoint (Kafka: v16+).
                found = current_leader(state, self.listener, topic.name, item.partition)
                data.current_leader.leader_id = found.leader_id
                data.current_leader.leader_epoch = found.leader_epoch
                if found.node is not None:
                    leaders[found.node.node_id] = found.node
            errors = errors or data.error_code != ErrorCode.NONE or data.diverging_epoch.end_offset >= 0
            results.append((item, data))
            seen.append(_read_from(topic, replica))
        if total < request.min_bytes and not errors and not news and now_ms < self.deadline_ms:
            self.seen = seen
            return None
        self.seen = None
        splices = []
        for index, parts in regions.items():
            # The records field holds the splice's placeholder until the connection encodes the
            # response: the encoder records where it lands, and the regions go there.
            size = sum(p.size if isinstance(p, FileRegion) else len(p) for p in parts)
            if not size:
                results[index][1].records = b""
                continue
            splice = Splice(size=size, parts=parts)
            results[index][1].records = splice.placeholder
            splices.append(splice)
        response = self._respond(results, by_id, leaders)
        return Spliced(response, tuple(splices)) if splices else response

    def _unchanged(self) -> bool:
        """Whether every partition is as the last poll read it, so that polling again would hold
        the request again (only the deadline is left to answer it otherwise). The topic and the
        replica must still be the ones found then (topic ids are unique, so the topic still under
        its name is the one its id finds), with the same registration, leader epoch and role, and
        log start offset; and the offset the read ends at must not have moved:

        * a follower reads to the log end offset, and is answered when the high watermark it sent
          is behind (KIP-1166): both are compared;
        * a consumer reads to the high watermark (``read_uncommitted``) or the last stable offset
          (``read_committed``), and only that one is compared: below it a leader's log does not
          change while its epoch stays, so the log end offset growing cannot answer it. A log
          end offset that fell (a truncation) wakes it all the same, as does any move of it while
          the planted ``serve-above-hw`` bug lets consumers read to it.

        Kafka's DelayedFetch compares a consumer's position with the same bound. What a held poll
        leaves out (the last stable offset of a follower's or an uncommitted read, the high
        watermark of a committed one) is read only when the request is answered. The fields are
        compared one by one, without building ``_read_from``'s tuple (a tuple compares its items
        by identity first, then by equality: so does this); held fetches are tested after every
        engine call, so this is on the path of every event."""
        assert self.seen is not None
        topics, partitions = self.state.metadata.topics, self.state.partitions
        consumer = self.replica_id < 0
        committed = consumer and self.request.isolation_level == READ_COMMITTED
        for item, before in zip(self.wanted, self.seen, strict=True):
            topic, replica = before[0], before[1]
            if topic is None or replica is None:
                return False
            assert isinstance(topic, TopicInfo) and isinstance(replica, PartitionReplica)
            if (
                topics.get(topic.name) is not topic
                or partitions.get((topic.name, item.partition)) is not replica
            ):
                return False
            log, leadership = replica.log, replica.leadership
            end = log.log_end_offset
            if end != before[6] and (
                not consumer or end < cast(int, before[6]) or replica.hooks.planted("serve-above-hw")
            ):
                return False
            if (
                log.log_start_offset != before[7]
                or leadership.epoch != before[4]
                or leadership.role is not before[5]
                or (replica.registration is not before[3] and replica.registration != before[3])
                or (topic.topic_id is not before[2] and topic.topic_id != before[2])
            ):
                return False
            if committed:
                if replica.last_stable_offset != before[9]:
                    return False
            elif replica.high_watermark != before[8]:
                return False
        return True

    def _respond(
        self,
        results: list[tuple[_Wanted, FetchResponsePartitionData]],
        by_id: bool,
        leaders: dict[int, LiveBroker],
    ) -> FetchResponse:
        topics: list[FetchResponseFetchableTopicResponse] = []
        for item, data in results:
            entry = item.entry
            if entry is not None:
                keep = (
                    not self.incremental
                    or data.records
                    or data.error_code != ErrorCode.NONE
                    or entry.changed(data.high_watermark, data.last_stable_offset, data.log_start_offset)
                )
                entry.remember(data.high_watermark, data.last_stable_offset, data.log_start_offset)
                if not keep:
                    continue
            if not topics or (topics[-1].topic_id if by_id else topics[-1].topic) != (
                item.topic_id if by_id else item.key
            ):
                topics.append(
                    FetchResponseFetchableTopicResponse(
                        topic="" if by_id else item.key, topic_id=item.topic_id if by_id else ZERO_UUID
                    )
                )
            topics[-1].partitions.append(data)
        return FetchResponse(
            session_id=self.session_id,
            responses=topics,
            node_endpoints=[
                FetchResponseNodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                for _, b in sorted(leaders.items())
            ],
        )
