"""Broker registrations, heartbeats and fencing, for the active controller (Kafka's
``ClusterControlManager`` with its ``BrokerHeartbeatManager``).

:class:`ClusterControl` owns the controller's view of the registered brokers
(:class:`~kafka_wire.broker.controller.cluster_image.ClusterImage`) and each broker's session:
when it was last heard from, the metadata offset it last reported, and where its controlled
shutdown's leadership moves end. It answers BrokerRegistration and BrokerHeartbeat, fences
brokers whose sessions expired (the longest silent first), and says which brokers may lead or
join an ISR (:meth:`ClusterControl.acceptable`). What a broker's state change does to the
partitions (leaderships move away from a fenced broker, a just-unfenced one may take leaderless
partitions) is asked of its :attr:`ClusterControl.moves` (the replication part, which the
controller attaches once both parts exist: each reads the other).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final, Protocol

from kafka_wire import messages
from kafka_wire.broker.cluster_view import BrokerInfo
from kafka_wire.broker.controller.cluster_image import UNFENCE, BrokerRegistration, ClusterImage
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.feature_control import FeatureControl
from kafka_wire.broker.controller.heartbeats import BrokerState, HeartbeatInput, next_state
from kafka_wire.broker.controller.result import ControllerResult, Decision, LogOffsets
from kafka_wire.broker.controller.settings import METADATA_VERSION_FEATURE, ControllerConfig
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        BrokerHeartbeatRequest,
        BrokerRegistrationRequest,
    )


class LeaderMoves(Protocol):
    """What a broker's state change does to the partitions (the replication part's
    ``generateLeaderAndIsrUpdates``); each adds its partition changes to ``records``."""

    def broker_leaving(self, broker: int, records: list[Message]) -> None:
        """``broker`` is fenced or shutting down: it leaves every ISR and leadership."""
        ...

    def broker_unfenced(self, broker: int, records: list[Message]) -> None:
        """``broker`` was just unfenced: it may lead the partitions that have no leader."""
        ...

    def broker_shut_down_uncleanly(self, broker: int, records: list[Message]) -> None:
        """A new incarnation of ``broker`` registered (with ELR): its old one may have lost data."""
        ...

    def leads_any(self, broker: int) -> bool: ...


class _NoMoves:
    """Until the controller attaches the replication part: no partitions to move."""

    def broker_leaving(self, broker: int, records: list[Message]) -> None:
        pass

    def broker_unfenced(self, broker: int, records: list[Message]) -> None:
        pass

    def broker_shut_down_uncleanly(self, broker: int, records: list[Message]) -> None:
        pass

    def leads_any(self, broker: int) -> bool:
        return False


_NO_MOVES: Final = _NoMoves()


class ClusterControl:
    """Registered brokers and their sessions (see the module docstring)."""

    def __init__(
        self,
        config: ControllerConfig,
        offsets: LogOffsets,
        features: FeatureControl,
    ) -> None:
        self.config = config
        self._offsets = offsets
        self._features = features
        #: What a broker's state change does to the partitions (attached by the controller).
        self.moves: LeaderMoves = _NO_MOVES
        self.image = ClusterImage()
        #: When each broker was last heard from (its session), while this controller is active.
        self.contact_ms: dict[int, int] = {}
        #: The metadata offset each broker last reported.
        self.reported_offset: dict[int, int] = {}
        #: Per broker in controlled shutdown: the offset of its leadership moves.
        self.shutdown_offset: dict[int, int] = {}
        #: The incarnation of the broker in this controller's own process (a combined node).
        self.local_incarnation: uuid.UUID | None = None

    # -- state -----------------------------------------------------------------------------------

    def reset(self) -> None:
        self.image = ClusterImage()

    def activate(self, now_ms: int) -> None:
        """This controller became active: every registered broker gets a fresh session."""
        self.contact_ms = {b.node_id: now_ms for b in self.image.brokers()}
        self.shutdown_offset.clear()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    # -- queries ---------------------------------------------------------------------------------

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.image.broker(node_id)

    def registration(self, node_id: int) -> BrokerRegistration | None:
        return self.image.registration(node_id)

    def acceptable(self, broker: int) -> bool:
        """Registered, unfenced and not shutting down: may lead and join an ISR."""
        info = self.image.broker(broker)
        return info is not None and not info.fenced and not info.in_controlled_shutdown

    def active_brokers(self) -> list[int]:
        return [b.node_id for b in self.image.brokers() if not b.fenced and not b.in_controlled_shutdown]

    def has_session(self, broker: int, now_ms: int) -> bool:
        """Heard from within ``broker.session.timeout.ms``. On the sole voter of a combined
        single node (:meth:`QuorumController.local_broker`) the broker of the controller's own
        process is alive while the controller runs: its registration has a session exactly when
        it is that process's incarnation (an earlier incarnation was an earlier process, gone;
        and a stalled process does not fence its own broker when it wakes up). kafka_wire's:
        Kafka's controller cannot tell, and waits for sessions."""
        if broker == self.config.node_id and self.local_incarnation is not None:
            registration = self.image.registration(broker)
            if registration is not None:
                return registration.incarnation_id == self.local_incarnation
        contact = self.contact_ms.get(broker)
        return contact is not None and now_ms - contact < self.config.session_timeout_ms

    def epoch_ok(self, broker: int, epoch: int) -> bool:
        registration = self.image.registration(broker)
        return registration is not None and registration.info.epoch == epoch

    # -- BrokerRegistration ----------------------------------------------------------------------

    def broker_registration(self, version: int, req: BrokerRegistrationRequest, now_ms: int) -> Decision:
        def fail(code: int) -> Message:
            return messages.BrokerRegistrationResponse(error_code=code, broker_epoch=-1)

        if req.cluster_id != self.config.cluster_id:
            return fail(ErrorCode.INCONSISTENT_CLUSTER_ID)
        existing = self.image.registration(req.broker_id)
        if existing is not None and self.has_session(req.broker_id, now_ms):
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
            level = self._features.finalized.get(name)
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
            # it. With ELR, unless it names the old incarnation's epoch as the one its last clean
            # stop recorded (KIP-966: the data directory's clean-shutdown marker), the old one may
            # have lost data (an unclean shutdown): it leaves every ISR and ELR first, and its
            # leaderships move.
            epoch, fenced, shutdown = self._offsets.next_write_offset, True, False
            clean = existing is not None and req.previous_broker_epoch == existing.info.epoch
            if self.config.elr_enabled and not clean:
                self.moves.broker_shut_down_uncleanly(req.broker_id, records)
            elif existing is not None and not existing.info.fenced:
                # Its session ended but it was not fenced yet: the new incarnation starts fenced, so
                # the old one leaves every ISR and its leaderships move first.
                self.moves.broker_leaving(req.broker_id, records)
        records.append(
            messages.RegisterBrokerRecord(
                broker_id=req.broker_id,
                incarnation_id=req.incarnation_id,
                broker_epoch=epoch,
                end_points=[
                    messages.RegisterBrokerRecordBrokerEndpoint(
                        name=lst.name, host=lst.host, port=lst.port, security_protocol=lst.security_protocol
                    )
                    for lst in req.listeners
                ],
                features=[
                    messages.RegisterBrokerRecordBrokerFeature(
                        name=n, min_supported_version=lo, max_supported_version=hi
                    )
                    for n, lo, hi in features
                ],
                rack=req.rack,
                fenced=fenced,
                in_controlled_shutdown=shutdown,
                log_dirs=list(req.log_dirs),
            )
        )
        self.contact_ms[req.broker_id] = now_ms
        if not amend:
            self.shutdown_offset.pop(req.broker_id, None)
        return ControllerResult(
            records, lambda: messages.BrokerRegistrationResponse(broker_epoch=epoch), fail
        )

    # -- BrokerHeartbeat -------------------------------------------------------------------------

    def _state(self, broker: int) -> BrokerState:
        info = self.image.broker(broker)
        if info is None or info.fenced:
            return BrokerState.FENCED
        return BrokerState.CONTROLLED_SHUTDOWN if info.in_controlled_shutdown else BrokerState.UNFENCED

    def broker_heartbeat(self, version: int, req: BrokerHeartbeatRequest, now_ms: int) -> Decision:
        def fail(code: int) -> Message:
            return messages.BrokerHeartbeatResponse(error_code=code, is_fenced=True)

        if not self.epoch_ok(req.broker_id, req.broker_epoch):
            return fail(ErrorCode.STALE_BROKER_EPOCH)
        broker, epoch = req.broker_id, req.broker_epoch
        self.contact_ms[broker] = now_ms
        self.reported_offset[broker] = req.current_metadata_offset
        caught_up = req.current_metadata_offset >= epoch
        state = self._state(broker)
        if req.want_fence:
            event = HeartbeatInput.WANT_FENCE
        elif state is BrokerState.CONTROLLED_SHUTDOWN and self._moves_done(broker):
            event = HeartbeatInput.MOVES_DONE
        elif req.want_shut_down:
            event = HeartbeatInput.WANT_SHUT_DOWN
        else:
            event = HeartbeatInput.CAUGHT_UP if caught_up else HeartbeatInput.BEHIND
        new = next_state(state, event)
        records: list[Message] = []
        proposed = None
        if new is BrokerState.UNFENCED and state is BrokerState.FENCED:
            records.append(
                messages.BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=epoch, fenced=UNFENCE)
            )
            self.moves.broker_unfenced(broker, records)
        elif new is BrokerState.CONTROLLED_SHUTDOWN and state is not BrokerState.CONTROLLED_SHUTDOWN:
            records.append(
                messages.BrokerRegistrationChangeRecord(
                    broker_id=broker, broker_epoch=epoch, in_controlled_shutdown=1
                )
            )
            self.moves.broker_leaving(broker, records)

            def proposed(offset: int) -> None:
                self.shutdown_offset[broker] = offset

        elif new in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW) and state is not BrokerState.FENCED:
            self.fence(broker, records)

        def answer() -> Message:
            return messages.BrokerHeartbeatResponse(
                is_caught_up=caught_up,
                is_fenced=new in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW),
                should_shut_down=new is BrokerState.SHUTDOWN_NOW,
            )

        return ControllerResult(records, answer, fail, proposed=proposed)

    def _moves_done(self, broker: int) -> bool:
        """Whether the leadership moves of ``broker``'s controlled shutdown are committed and
        every active broker has reported a metadata offset past them (Kafka: the controlled
        shutdown offset is at or below the lowest active offset)."""
        # After a controller failover the moves are whatever the image holds.
        offset = self.shutdown_offset.setdefault(broker, self._offsets.applied_offset)
        if self._offsets.committed_offset < offset:
            return False
        if self.moves.leads_any(broker):
            return False
        for info in self.image.brokers():
            if info.node_id != broker and not info.fenced and not info.in_controlled_shutdown:
                if self.reported_offset.get(info.node_id, -1) < offset:
                    return False
        return True

    # -- fencing ---------------------------------------------------------------------------------

    def fence(self, broker: int, records: list[Message]) -> None:
        """Fence ``broker``: its leaderships move and it leaves every ISR, then the fence record."""
        info = self.image.broker(broker)
        if info is None:
            return
        self.moves.broker_leaving(broker, records)
        records.append(
            messages.BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=info.epoch, fenced=1)
        )

    def stale_brokers(self, now_ms: int) -> list[int]:
        """The unfenced brokers whose sessions expired, the longest silent first (Kafka's
        ``BrokerHeartbeatManager`` keeps its unfenced brokers sorted by last contact and fences
        them one at a time from the oldest). The order matters when several expire at once (the
        controller's clock jumped, or it stalled): a fenced broker leaves every ISR but the last
        member standing, so the broker that has been silent longest (a dead incarnation still
        registered) must go first, never be the one left."""
        stale = [
            (self.contact_ms.get(info.node_id, -1), info.node_id)
            for info in self.image.brokers()
            if not info.fenced and not self.has_session(info.node_id, now_ms)
        ]
        return [broker for _, broker in sorted(stale)]

    def next_session_deadline_ms(self) -> int | None:
        deadlines = [
            contact + self.config.session_timeout_ms
            for broker, contact in self.contact_ms.items()
            if (info := self.image.broker(broker)) is not None and not info.fenced
        ]
        return min(deadlines, default=None)
