"""BrokerRegistration, BrokerHeartbeat (fencing, unfencing, controlled shutdown) and
AllocateProducerIds, for :class:`~kafka_wire.broker.controller.controller.QuorumController`.

Each handler takes the controller, the request version, the request and ``now_ms``, and returns
the answer or a held answer (``Waiting``) that comes once its records are committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.broker.controller.heartbeats import BrokerState, HeartbeatInput, next_state
from kafka_wire.broker.controller.image import (
    UNFENCE,
)
from kafka_wire.broker.controller.settings import (
    METADATA_VERSION_FEATURE,
    PRODUCER_ID_BLOCK_SIZE,
)
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationChangeRecord,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ErrorCode,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
)

if TYPE_CHECKING:
    from kafka_wire.broker.controller.controller import QuorumController


def broker_registration(
    c: QuorumController, version: int, req: BrokerRegistrationRequest, now_ms: int
) -> Message | Waiting:
    def fail(code: int) -> Message:
        return BrokerRegistrationResponse(error_code=code, broker_epoch=-1)

    if req.cluster_id != c.config.cluster_id:
        return fail(ErrorCode.INCONSISTENT_CLUSTER_ID)
    existing = c.image.registration(req.broker_id)
    if existing is not None and c.has_session(req.broker_id, now_ms):
        if existing.incarnation_id != req.incarnation_id:
            return fail(ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    if req.is_migrating_zk_broker:
        return fail(ErrorCode.BROKER_ID_NOT_REGISTERED)
    if not req.log_dirs or len(set(req.log_dirs)) != len(req.log_dirs) or ZERO_UUID in req.log_dirs:
        return fail(ErrorCode.INVALID_REGISTRATION)
    features = [(f.name, f.min_supported_version, f.max_supported_version) for f in req.features]
    if all(name != METADATA_VERSION_FEATURE for name, _, _ in features):
        features.append((METADATA_VERSION_FEATURE, 1, 1))  # MINIMUM_KRAFT_VERSION, as Kafka assumes
    for name, low, high in features:
        level = c.image.features.get(name)
        if level is not None and not low <= level <= high:
            return fail(ErrorCode.UNSUPPORTED_VERSION)
    records: list[Message] = []
    amend = existing is not None and existing.incarnation_id == req.incarnation_id
    if amend and existing is not None:
        # The same incarnation again (a retry): epoch, fencing and shutdown state stay.
        epoch, fenced, shutdown = (
            existing.info.epoch,
            existing.info.fenced,
            existing.info.in_controlled_shutdown,
        )
    else:
        # A new incarnation: Kafka's broker epoch is the offset of the first record written for
        # it. With ELR, the old incarnation may have lost data (an unclean shutdown): it leaves
        # every ISR and ELR first, and its leaderships move.
        epoch, fenced, shutdown = c.raft.log_end_offset, True, False
        if c.config.elr_enabled:
            c.leader_and_isr_updates(records, unclean_shutdown=req.broker_id)
        elif existing is not None and not existing.info.fenced:
            # Its session ended but it was not fenced yet: the new incarnation starts fenced, so
            # the old one leaves every ISR and its leaderships move first.
            c.leader_and_isr_updates(records, remove=req.broker_id)
    records.append(
        RegisterBrokerRecord(
            broker_id=req.broker_id,
            incarnation_id=req.incarnation_id,
            broker_epoch=epoch,
            end_points=[
                RegisterBrokerRecordBrokerEndpoint(
                    name=lst.name, host=lst.host, port=lst.port, security_protocol=lst.security_protocol
                )
                for lst in req.listeners
            ],
            features=[
                RegisterBrokerRecordBrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                for n, lo, hi in features
            ],
            rack=req.rack,
            fenced=fenced,
            in_controlled_shutdown=shutdown,
            log_dirs=list(req.log_dirs),
        )
    )
    c.contact_ms[req.broker_id] = now_ms
    if not amend:
        c.shutdown_offset.pop(req.broker_id, None)
    return c.answer_when_committed(
        records, lambda: BrokerRegistrationResponse(broker_epoch=epoch), fail, now_ms
    )


def _broker_state(c: QuorumController, broker: int) -> BrokerState:
    info = c.image.broker(broker)
    if info is None or info.fenced:
        return BrokerState.FENCED
    return BrokerState.CONTROLLED_SHUTDOWN if info.in_controlled_shutdown else BrokerState.UNFENCED


def broker_heartbeat(
    c: QuorumController, version: int, req: BrokerHeartbeatRequest, now_ms: int
) -> Message | Waiting:
    def fail(code: int) -> Message:
        return BrokerHeartbeatResponse(error_code=code, is_fenced=True)

    reg = c.image.registration(req.broker_id)
    if reg is None or reg.info.epoch != req.broker_epoch:
        return fail(ErrorCode.STALE_BROKER_EPOCH)
    broker, epoch = req.broker_id, req.broker_epoch
    c.contact_ms[broker] = now_ms
    c.reported_offset[broker] = req.current_metadata_offset
    caught_up = req.current_metadata_offset >= epoch
    state = _broker_state(c, broker)
    if req.want_fence:
        event = HeartbeatInput.WANT_FENCE
    elif state is BrokerState.CONTROLLED_SHUTDOWN and _moves_done(c, broker):
        event = HeartbeatInput.MOVES_DONE
    elif req.want_shut_down:
        event = HeartbeatInput.WANT_SHUT_DOWN
    else:
        event = HeartbeatInput.CAUGHT_UP if caught_up else HeartbeatInput.BEHIND
    new = next_state(state, event)
    records: list[Message] = []
    if new is BrokerState.UNFENCED and state is BrokerState.FENCED:
        records.append(BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=epoch, fenced=UNFENCE))
        c.leader_and_isr_updates(records, add=broker)
    elif new is BrokerState.CONTROLLED_SHUTDOWN and state is not BrokerState.CONTROLLED_SHUTDOWN:
        records.append(
            BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=epoch, in_controlled_shutdown=1)
        )
        c.leader_and_isr_updates(records, remove=broker)
    elif new in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW) and state is not BrokerState.FENCED:
        fence(c, broker, records)
    if new is BrokerState.CONTROLLED_SHUTDOWN and state is not BrokerState.CONTROLLED_SHUTDOWN:
        last = c.propose(records, now_ms)
        if last is None:
            return fail(ErrorCode.NOT_CONTROLLER)
        c.shutdown_offset[broker] = last
        records = []

    def answer() -> Message:
        return BrokerHeartbeatResponse(
            is_caught_up=caught_up,
            is_fenced=new in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW),
            should_shut_down=new is BrokerState.SHUTDOWN_NOW,
        )

    return c.answer_when_committed(records, answer, fail, now_ms)


def _moves_done(c: QuorumController, broker: int) -> bool:
    """Whether the leadership moves of ``broker``'s controlled shutdown are committed and
    every active broker has reported a metadata offset past them (Kafka: the controlled
    shutdown offset is at or below the lowest active offset)."""
    # After a controller failover the moves are whatever the image holds.
    offset = c.shutdown_offset.setdefault(broker, c.image.offset)
    if c.committed_offset < offset:
        return False
    if any(p.leader == broker for p in c.image.all_partitions()):
        return False
    for info in c.image.brokers():
        if info.node_id != broker and not info.fenced and not info.in_controlled_shutdown:
            if c.reported_offset.get(info.node_id, -1) < offset:
                return False
    return True


def fence(c: QuorumController, broker: int, records: list[Message]) -> None:
    info = c.image.broker(broker)
    if info is None:
        return
    c.leader_and_isr_updates(records, remove=broker)
    records.append(BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=info.epoch, fenced=1))


def allocate_producer_ids(
    c: QuorumController, version: int, req: AllocateProducerIdsRequest, now_ms: int
) -> Message | Waiting:
    def fail(code: int) -> Message:
        return AllocateProducerIdsResponse(error_code=code, producer_id_start=-1, producer_id_len=0)

    reg = c.image.registration(req.broker_id)
    if reg is None or reg.info.epoch != req.broker_epoch:
        return fail(ErrorCode.STALE_BROKER_EPOCH)
    start = c.image.next_producer_id
    record = ProducerIdsRecord(
        broker_id=req.broker_id,
        broker_epoch=req.broker_epoch,
        next_producer_id=start + PRODUCER_ID_BLOCK_SIZE,
    )
    answer = AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE)
    return c.answer_when_committed([record], lambda: answer, fail, now_ms)
