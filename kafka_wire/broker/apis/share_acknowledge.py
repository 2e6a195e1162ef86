"""ShareAcknowledge (v1-v2, KIP-932).

Behaviour: a share group member acknowledges records it acquired by ShareFetch, without fetching:
ACCEPT (done), RELEASE (available again, or archived at ``group.share.delivery.count.limit``),
REJECT (archived, never delivered again), GAP (no record there); v2's RENEW (with
``is_renew_ack``) holds them for another lock duration. The share session must exist
(SHARE_SESSION_NOT_FOUND) and the request carry its epoch (INVALID_SHARE_SESSION_EPOCH; 0 is
always that), except -1, which acknowledges and then closes the session, releasing what the
member still holds in it. These errors, and an empty member id (INVALID_REQUEST), answer the whole
request with ``acquisition_lock_timeout_ms`` 0, as Kafka's. Each partition's acknowledgements are applied all or nothing:
INVALID_RECORD_STATE for a record the member does not hold (never acquired, acquired by another
member, its lock expired), INVALID_REQUEST for malformed batches (out of order, overlapping, a
type list neither one long nor one per offset, an unknown type), UNKNOWN_TOPIC_OR_PARTITION for a
partition the group never fetched here, UNKNOWN_TOPIC_ID for a topic that does not exist. The
answer leaves once the acknowledgements' writes to the share coordinator are stored; a failed one
answers its partition with the persister's error (``share.manager.write_outcome``).
Version notes: v2 adds ``is_renew_ack`` and the answer's ``acquisition_lock_timeout_ms``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafka_wire.broker.apis.share_fetch import share_manager
from kafka_wire.broker.share.manager import AckBatch, write_outcome
from kafka_wire.broker.share.persister import WRITE_TIMEOUT_MS, Ticket
from kafka_wire.broker.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, TopicIdPartition
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponsePartitionData,
    ShareAcknowledgeResponseTopicResponse,
)


def handle(ctx: Context, request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse | AckWait:
    state, now = ctx.state, ctx.now_ms
    share = share_manager(state)
    group_id, member_id = request.group_id or "", request.member_id or ""
    lock_ms = share.lock_duration_ms(group_id) if ctx.api_version >= 2 else 0
    if not member_id.strip():
        return ShareAcknowledgeResponse(error_code=ErrorCode.INVALID_REQUEST)
    epoch = request.share_session_epoch
    sessions = share.sessions
    if epoch == INITIAL_EPOCH:
        return ShareAcknowledgeResponse(error_code=ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    if epoch == FINAL_EPOCH:
        session = sessions.get(group_id, member_id)
        if session is None:
            return ShareAcknowledgeResponse(error_code=ErrorCode.SHARE_SESSION_NOT_FOUND)
    else:
        checked = sessions.check(group_id, member_id, epoch)
        if isinstance(checked, ErrorCode):
            return ShareAcknowledgeResponse(error_code=checked)
        session = checked
    renew = ctx.api_version >= 2 and request.is_renew_ack
    acks: dict[TopicIdPartition, list[AckBatch]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            batches = acks.setdefault((topic.topic_id, p.partition_index), [])
            batches += [
                (b.first_offset, b.last_offset, b.acknowledge_types) for b in p.acknowledgement_batches
            ]
    topics: dict[uuid.UUID, ShareAcknowledgeResponseTopicResponse] = {}
    tickets: list[tuple[ShareAcknowledgeResponsePartitionData, Ticket]] = []
    for (topic_id, index), batches in acks.items():
        ticket = None
        if state.topic_with_id(topic_id) is None:
            error = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            error, ticket = share.acknowledge(
                group_id, member_id, (group_id, topic_id, index), batches, renew, now
            )
        answered = topics.get(topic_id)
        if answered is None:
            answered = topics[topic_id] = ShareAcknowledgeResponseTopicResponse(topic_id=topic_id)
        data = ShareAcknowledgeResponsePartitionData(partition_index=index, error_code=error)
        answered.partitions.append(data)
        if ticket is not None:
            tickets.append((data, ticket))
    if epoch == FINAL_EPOCH:
        sessions.remove(group_id, member_id)
        share.release_session(session, now)
    wait = AckWait(
        ShareAcknowledgeResponse(acquisition_lock_timeout_ms=lock_ms, responses=list(topics.values())),
        tickets,
        now + WRITE_TIMEOUT_MS,
    )
    answer = wait.poll(now)
    return wait if answer is None else answer


@dataclass(slots=True)
class AckWait:
    """The answer, held until the acknowledgements' writes settle."""

    answer: ShareAcknowledgeResponse
    tickets: list[tuple[ShareAcknowledgeResponsePartitionData, Ticket]]
    deadline_ms: int

    def poll(self, now_ms: int) -> ShareAcknowledgeResponse | None:
        outcomes = [write_outcome(ticket) for _, ticket in self.tickets]
        if now_ms < self.deadline_ms and any(o is None for o in outcomes):
            return None
        for (data, _), outcome in zip(self.tickets, outcomes, strict=True):
            data.error_code = ErrorCode.REQUEST_TIMED_OUT if outcome is None else outcome
        return self.answer
