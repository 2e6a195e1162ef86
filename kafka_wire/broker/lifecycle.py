"""The broker side of a node's life in a cluster: registration, heartbeats, controlled shutdown.

Kafka's ``BrokerLifecycleManager``, as a pure state machine:

- **Registration**: ``BrokerRegistration`` to the active controller (its id from
  ``controller_id()``): the node id, the cluster id, an incarnation id drawn once from the
  injected rng, every broker listener with its advertised endpoint, the features it supports, its
  rack and log directory. Refused or unanswered, it is sent again after a backoff (100 ms doubling
  to ``broker.heartbeat.interval.ms``). The answer gives the broker epoch.
- **Heartbeats**: ``BrokerHeartbeat`` every ``broker.heartbeat.interval.ms`` (the first at once)
  with the broker epoch and the metadata offset the broker has applied (``metadata_offset()``);
  the answer says whether the broker is fenced. STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED
  (the controller lost the registration): register again.
- **Controlled shutdown**: ``begin_shutdown`` sends heartbeats with ``want_shut_down`` until one
  answers ``should_shut_down`` (the controller moved the broker's leaderships away), or
  ``controlled_shutdown_timeout_ms`` passes; then :attr:`may_stop`. After the first answer the
  next heartbeat comes 50 ms later, then at the heartbeat interval, as Kafka's.

States (Kafka's ``BrokerState`` names) move by :data:`LIFECYCLE_TRANSITIONS`. One request is in
flight at a time; a reply is taken only from the request it answers.
"""

from __future__ import annotations

import enum
import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import Endpoint, Outbound
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.metadata import random_uuid
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.machine import step

if TYPE_CHECKING:
    from kafka_wire.messages import (
        BrokerHeartbeatRequest,
        BrokerRegistrationRequest,
    )

#: What a kafka_wire broker announces it supports (name, min, max): metadata.version 3.3-IV3 (7,
#: the first KRaft-only level) to 3.9-IV0 (21), kraft.version 0 to 1, transaction.version 0 to 2.
SUPPORTED_FEATURES: Final = (
    ("metadata.version", 7, 21),
    ("kraft.version", 0, 1),
    ("transaction.version", 0, 2),
)
#: Kafka's ``SecurityProtocol`` ids, by name.
SECURITY_PROTOCOL_IDS: Final = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
#: The first wait before a failed request is sent again (Kafka's lifecycle manager: 100 ms).
INITIAL_RETRY_MS: Final = 100
#: After the first heartbeat answer of a controlled shutdown, the next heartbeat comes this soon
#: (Kafka's ``BrokerLifecycleManager``: 50 ms), then at the heartbeat interval.
SHUTDOWN_RECHECK_MS: Final = 50

_SILENT: Final = logging.getLogger("kafka_wire.broker.lifecycle.silent")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class LifecycleState(enum.Enum):
    NOT_RUNNING = "NOT_RUNNING"
    #: Registering with the controller.
    STARTING = "STARTING"
    #: Registered, fenced: catching up with the metadata.
    RECOVERY = "RECOVERY"
    #: Unfenced.
    RUNNING = "RUNNING"
    PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"
    SHUTTING_DOWN = "SHUTTING_DOWN"


class LifecycleInput(enum.Enum):
    START = "start"
    REGISTERED = "registered"
    UNFENCED = "unfenced"
    FENCED = "fenced"
    REGISTRATION_LOST = "registration lost"
    SHUTDOWN_ASKED = "shutdown asked"
    SHUTDOWN_ALLOWED = "shutdown allowed"


_S = LifecycleState
_I = LifecycleInput

LIFECYCLE_TRANSITIONS: Final[Mapping[tuple[LifecycleState, LifecycleInput], LifecycleState]] = {
    (_S.NOT_RUNNING, _I.START): _S.STARTING,
    (_S.STARTING, _I.REGISTERED): _S.RECOVERY,
    (_S.RECOVERY, _I.UNFENCED): _S.RUNNING,
    (_S.RECOVERY, _I.FENCED): _S.RECOVERY,
    (_S.RUNNING, _I.UNFENCED): _S.RUNNING,
    (_S.RUNNING, _I.FENCED): _S.RECOVERY,
    (_S.RECOVERY, _I.REGISTRATION_LOST): _S.STARTING,
    (_S.RUNNING, _I.REGISTRATION_LOST): _S.STARTING,
    (_S.NOT_RUNNING, _I.SHUTDOWN_ASKED): _S.SHUTTING_DOWN,
    (_S.STARTING, _I.SHUTDOWN_ASKED): _S.SHUTTING_DOWN,
    (_S.RECOVERY, _I.SHUTDOWN_ASKED): _S.PENDING_CONTROLLED_SHUTDOWN,
    (_S.RUNNING, _I.SHUTDOWN_ASKED): _S.PENDING_CONTROLLED_SHUTDOWN,
    (_S.PENDING_CONTROLLED_SHUTDOWN, _I.UNFENCED): _S.PENDING_CONTROLLED_SHUTDOWN,
    (_S.PENDING_CONTROLLED_SHUTDOWN, _I.FENCED): _S.PENDING_CONTROLLED_SHUTDOWN,
    (_S.PENDING_CONTROLLED_SHUTDOWN, _I.REGISTRATION_LOST): _S.SHUTTING_DOWN,
    (_S.PENDING_CONTROLLED_SHUTDOWN, _I.SHUTDOWN_ALLOWED): _S.SHUTTING_DOWN,
}


class BrokerLifecycle:
    """One broker's registration and heartbeats (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        cluster_id: str,
        rng: random.Random,
        listeners: Sequence[Endpoint],
        controller_listener: str,
        controller_id: Callable[[], int],
        metadata_offset: Callable[[], int],
        send: Callable[[Outbound], None],
        log_dir_id: uuid.UUID | None = None,
        features: Sequence[tuple[str, int, int]] = SUPPORTED_FEATURES,
        logger: logging.Logger | None = None,
        previous_broker_epoch: int = -1,
    ) -> None:
        self._config = config
        self._cluster_id = cluster_id
        self.incarnation_id = random_uuid(rng)
        self._listeners = tuple(listeners)
        self._controller_listener = controller_listener
        self._controller_id = controller_id
        self._metadata_offset = metadata_offset
        self._send = send
        self._log_dir_id = log_dir_id
        self._features = tuple(features)
        self._log = logger or _SILENT
        self._state = LifecycleState.NOT_RUNNING
        #: The epoch the controller gave at registration (-1: none yet).
        self.broker_epoch = -1
        #: The epoch the data directory's clean-shutdown marker recorded (-1: the last stop was
        #: not clean), sent with every registration (KIP-966).
        self.previous_broker_epoch = previous_broker_epoch
        self.fenced = True
        #: The broker asks to stay fenced until the node says it caught up with the metadata.
        self._caught_up = False
        #: The next heartbeat goes as soon as the one in flight is answered (Kafka's
        #: ``nextSchedulingShouldBeImmediate``).
        self._heartbeat_at_once = False
        self._due_ms: int | None = None
        self._retry_ms = INITIAL_RETRY_MS
        #: The request in flight (its sequence number), or None.
        self._in_flight: int | None = None
        self._sequence = 0
        self._shutdown_deadline_ms: int | None = None
        #: A heartbeat answered while in controlled shutdown (the next one then waits a full interval).
        self._shutdown_answered = False

    @property
    def state(self) -> LifecycleState:
        return self._state

    @property
    def may_stop(self) -> bool:
        return self._state is LifecycleState.SHUTTING_DOWN

    @property
    def ready_to_unfence(self) -> bool:
        """Heartbeats ask to be unfenced (``want_fence`` false): :meth:`caught_up` was called."""
        return self._caught_up

    def _move(self, event: LifecycleInput) -> None:
        self._state = step(
            LIFECYCLE_TRANSITIONS,
            self._state,
            event,
            machine=f"broker {self._config.node_id}",
            logger=lambda t: self._log.info("%s: %s -> %s", t.machine, t.source.value, t.target.value),
        )

    # -- inputs ------------------------------------------------------------------------------------

    def start(self, now_ms: int) -> None:
        self._move(LifecycleInput.START)
        self._due_ms = now_ms

    def caught_up(self, now_ms: int) -> None:
        """The broker has published its first metadata (caught up with the quorum's high watermark
        and its own registration): it may be unfenced (Kafka's ``setReadyToUnfence``), and the
        next heartbeat, which asks for it, goes at once."""
        if not self._caught_up:
            if self._in_flight is not None:
                self._heartbeat_at_once = True  # after the answer to the one in flight
            elif self._due_ms is not None:
                self._due_ms = min(self._due_ms, now_ms)
        self._caught_up = True

    def begin_shutdown(self, now_ms: int, *, controlled: bool = True) -> None:
        """Stop: with a controlled shutdown (``controlled.shutdown.enable``, and ``controlled``:
        the node passes False when there is no other broker to move leaderships to), else at once."""
        if self._state in (LifecycleState.SHUTTING_DOWN, LifecycleState.PENDING_CONTROLLED_SHUTDOWN):
            return
        if not (controlled and self._config.controlled_shutdown_enable):
            self._state = LifecycleState.SHUTTING_DOWN
            return
        self._move(LifecycleInput.SHUTDOWN_ASKED)
        if self.state is LifecycleState.PENDING_CONTROLLED_SHUTDOWN:
            self._shutdown_deadline_ms = now_ms + self._config.controlled_shutdown_timeout_ms
            self._due_ms = now_ms

    def tick(self, now_ms: int) -> None:
        if (
            self._shutdown_deadline_ms is not None
            and now_ms >= self._shutdown_deadline_ms
            and self._state is LifecycleState.PENDING_CONTROLLED_SHUTDOWN
        ):
            self._log.warning("controlled shutdown: no answer from the controller in time; stopping")
            self._move(LifecycleInput.SHUTDOWN_ALLOWED)
        if self._in_flight is not None or self._due_ms is None or self._due_ms > now_ms:
            return
        if self._state is LifecycleState.STARTING:
            self._request(self._registration(), self._on_registration, now_ms)
        elif self._state in (
            LifecycleState.RECOVERY,
            LifecycleState.RUNNING,
            LifecycleState.PENDING_CONTROLLED_SHUTDOWN,
        ):
            self._request(self._heartbeat(), self._on_heartbeat, now_ms)

    def next_deadline_ms(self) -> int | None:
        deadlines = []
        if (
            self._in_flight is None
            and self._due_ms is not None
            and self._state
            not in (
                LifecycleState.NOT_RUNNING,
                LifecycleState.SHUTTING_DOWN,
            )
        ):
            deadlines.append(self._due_ms)
        if (
            self._shutdown_deadline_ms is not None
            and self._state is LifecycleState.PENDING_CONTROLLED_SHUTDOWN
        ):
            deadlines.append(self._shutdown_deadline_ms)
        return min(deadlines) if deadlines else None

    # -- requests --------------------------------------------------------------------------------

    def _registration(self) -> BrokerRegistrationRequest:
        cluster = self._config.cluster
        protocols = dict(cluster.security_protocols) if cluster is not None else {}
        return messages.BrokerRegistrationRequest(
            broker_id=self._config.node_id,
            cluster_id=self._cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=[
                messages.BrokerRegistrationRequestListener(
                    name=e.listener,
                    host=e.host,
                    port=e.port,
                    security_protocol=SECURITY_PROTOCOL_IDS[protocols.get(e.listener, "PLAINTEXT")],
                )
                for e in self._listeners
            ],
            features=[
                messages.BrokerRegistrationRequestFeature(
                    name=name, min_supported_version=low, max_supported_version=high
                )
                for name, low, high in self._features
            ],
            rack=self._config.rack,
            log_dirs=[] if self._log_dir_id is None else [self._log_dir_id],
            previous_broker_epoch=self.previous_broker_epoch,
        )

    def _heartbeat(self) -> BrokerHeartbeatRequest:
        return messages.BrokerHeartbeatRequest(
            broker_id=self._config.node_id,
            broker_epoch=self.broker_epoch,
            current_metadata_offset=self._metadata_offset(),
            want_fence=not self._caught_up,
            want_shut_down=self._state is LifecycleState.PENDING_CONTROLLED_SHUTDOWN,
        )

    def _request(self, body: Message, handler: Callable[[Message | None, int], None], now_ms: int) -> None:
        controller = self._controller_id()
        if controller < 0:
            self._retry(now_ms)
            return
        self._sequence += 1
        sequence = self._in_flight = self._sequence

        def on_reply(reply: Message | None, at_ms: int) -> None:
            if self._in_flight != sequence:
                return  # answers a request given up since
            self._in_flight = None
            handler(reply, at_ms)

        self._send(
            Outbound(
                controller,
                self._controller_listener,
                body,
                on_reply,
                timeout_ms=self._config.broker_heartbeat_interval_ms,
            )
        )

    def _retry(self, now_ms: int) -> None:
        self._due_ms = now_ms + self._retry_ms
        self._retry_ms = min(self._retry_ms * 2, self._config.broker_heartbeat_interval_ms)

    def _on_registration(self, reply: Message | None, now_ms: int) -> None:
        if self._state is not LifecycleState.STARTING:
            return
        if not isinstance(reply, messages.BrokerRegistrationResponse) or reply.error_code != ErrorCode.NONE:
            if isinstance(reply, messages.BrokerRegistrationResponse):
                self._log.info("broker registration refused: %r", ErrorCode.lookup(reply.error_code))
            self._retry(now_ms)
            return
        self.broker_epoch = reply.broker_epoch
        self._retry_ms = INITIAL_RETRY_MS
        self._move(LifecycleInput.REGISTERED)
        self._due_ms = now_ms  # the first heartbeat at once

    def _on_heartbeat(self, reply: Message | None, now_ms: int) -> None:
        if self._state not in (
            LifecycleState.RECOVERY,
            LifecycleState.RUNNING,
            LifecycleState.PENDING_CONTROLLED_SHUTDOWN,
        ):
            return
        if not isinstance(reply, messages.BrokerHeartbeatResponse):
            self._retry(now_ms)
            return
        if reply.error_code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
            self._log.warning("broker heartbeat: %r; registering again", ErrorCode.lookup(reply.error_code))
            self.fenced = True
            self._move(LifecycleInput.REGISTRATION_LOST)
            self._due_ms = now_ms
            return
        if reply.error_code != ErrorCode.NONE:
            self._retry(now_ms)
            return
        self._retry_ms = INITIAL_RETRY_MS
        self.fenced = reply.is_fenced
        self._move(LifecycleInput.FENCED if reply.is_fenced else LifecycleInput.UNFENCED)
        if self.state is LifecycleState.PENDING_CONTROLLED_SHUTDOWN:
            if reply.should_shut_down:
                self._move(LifecycleInput.SHUTDOWN_ALLOWED)
                return
            if not self._shutdown_answered:
                # The first answer to the shutdown: ask again soon, as Kafka does, since the
                # leadership moves are often done at once.
                self._shutdown_answered = True
                self._due_ms = now_ms + SHUTDOWN_RECHECK_MS
                return
        at_once, self._heartbeat_at_once = self._heartbeat_at_once, False
        self._due_ms = now_ms if at_once else now_ms + self._config.broker_heartbeat_interval_ms
