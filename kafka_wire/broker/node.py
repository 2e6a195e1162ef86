"""``Node``: one process of a replicated cluster, composed from its parts.

A node has ``process.roles`` broker, controller or both (``BrokerConfig.cluster``). The
:class:`~kafka_wire.broker.broker.Broker` serves clients as ever and hands its node (the
``ClusterNode`` hooks) what is not a client's; the node holds:

- :class:`~kafka_wire.broker.peers.PeerLinks`: connections to other nodes;
- the raft replica of ``__cluster_metadata`` (every node: a voter, or an observer);
- the metadata image (every node) and, on a controller, the quorum controller;
- on a broker, the replica manager (partition roles and the follower fetchers) and the
  :class:`~kafka_wire.broker.lifecycle.BrokerLifecycle` (registration, heartbeats).

The parts come from a :data:`PartsFactory` (they are built by other modules and only their
interfaces, the protocols below, are used here). The wiring, after every input (:meth:`_pump`):

1. batches the raft replica committed (or a snapshot to load) are decoded and applied to the
   image and replayed into the controller; each batch's delta updates ``BrokerState.metadata``
   (the topics every handler reads, so existing handlers keep working) and goes to the replica
   manager (role changes, removed partitions);
2. a change of raft leadership is told to the controller (active on the leader only);
3. once the image has applied everything the quorum committed, the lifecycle may ask to be
   unfenced;
4. the raft replica's outbound requests go to the peer links;
5. on the only voter of its quorum (a single node), requests to its own controller (the broker
   side's registration, heartbeats and forwarded requests) are answered in-process by the
   ``LocalLink``, with no connection; their answers may move the steps above again, so the pump
   repeats until nothing moves. Such a node starts, elects itself, registers and is unfenced
   within its first call, and needs no controller socket.

Requests on a controller listener go to the raft replica (Vote, BeginQuorumEpoch,
EndQuorumEpoch, Fetch and FetchSnapshot of ``__cluster_metadata``, DescribeQuorum) or to the
controller (the rest of :data:`CONTROLLER_APIS`); ApiVersions is answered here.

The node's :class:`~kafka_wire.broker.cluster_view.ClusterView` is a ``MetadataView``; the parts'
interfaces are in :mod:`kafka_wire.broker.node_contracts`."""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Mapping
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_settings import ClusterSettings
from kafka_wire.broker.cluster_view import Endpoint, Outbound
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.controller.controller import CONTROLLER_APIS as QUORUM_CONTROLLER_APIS
from kafka_wire.broker.controller.records import decode_record
from kafka_wire.broker.data_dir import partition_dirs
from kafka_wire.broker.effects import Effect, EffectSink, Rename
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from kafka_wire.broker.lifecycle import BrokerLifecycle
from kafka_wire.broker.local_link import LocalLink
from kafka_wire.broker.metadata import OFFSETS_TOPIC, TopicInfo, random_uuid
from kafka_wire.broker.metadata_view import MetadataView
from kafka_wire.broker.node_contracts import (
    CommittedBatchLike,
    DeltaLike,
    NodeParts,
    PartsContext,
    PartsFactory,
    SnapshotLoadLike,
    merged,
)
from kafka_wire.broker.node_parts import build_parts
from kafka_wire.broker.peers import PeerLinks
from kafka_wire.broker.producer_ids import ProducerIdBlocks
from kafka_wire.broker.raft.config import METADATA_TOPIC
from kafka_wire.broker.security.checks import build_authorizer
from kafka_wire.broker.security.controller_checks import refusal
from kafka_wire.broker.state import BrokerState, Waiting
from kafka_wire.broker.work import Stepping, Steps, WorkBudget, chunks, unlimited
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.logformat.names import partition_dir
from kafka_wire.messages import ApiKey
from kafka_wire.protocol.events import Request
from kafka_wire.protocol.server import api_versions_response

__all__ = ["CONTROLLER_APIS", "RAFT_APIS", "MetadataView", "Node", "NodeParts", "PartsContext"]

#: Requests the raft replica answers on a controller listener.
RAFT_APIS: Final = frozenset(
    {
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
        ApiKey.DESCRIBE_QUORUM,
    }
)
#: Every request a controller listener accepts (Kafka's controller ``ApiMessageType`` listeners).
CONTROLLER_APIS: Final = (
    RAFT_APIS | QUORUM_CONTROLLER_APIS | frozenset({ApiKey.API_VERSIONS, ApiKey.DESCRIBE_CLUSTER})
)
#: The internal topics whose partitions' leaders are coordinators.
COORDINATOR_TOPICS: Final = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})

_SILENT: Final = logging.getLogger("kafka_wire.broker.node.silent")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def controller_api_versions() -> dict[int, tuple[int, int]]:
    """What a controller listener accepts: every version kafka_wire knows of :data:`CONTROLLER_APIS`."""
    known = messages.VALID_VERSIONS
    return {key: (min(known[key]), max(known[key])) for key in sorted(CONTROLLER_APIS) if key in known}


def default_parts(context: PartsContext) -> NodeParts:
    """The parts of a node of this build (:func:`kafka_wire.broker.node_parts.build_parts`)."""
    return build_parts(context)


def default_decode_record(data: bytes) -> Message:
    """A metadata record from its framed bytes (``DecodeError`` on anything else)."""
    return decode_record(data)


# -- the node --------------------------------------------------------------------------------------


class Node:
    """One node of a replicated cluster (the ``ClusterNode`` a ``Broker`` is given)."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        rng: random.Random,
        build_parts: PartsFactory = default_parts,
        decode_record: Callable[[bytes], Message] = default_decode_record,
        logger: logging.Logger | None = None,
    ) -> None:
        if config.cluster is None:
            raise LocalProtocolError("a Node needs BrokerConfig.cluster (controller.quorum.voters)")
        self.config = config
        self.settings: ClusterSettings = config.cluster
        self._rng = rng
        self._build_parts = build_parts
        self._decode = decode_record
        self._log = logger or _SILENT
        self._now_ms = 0
        self.links = PeerLinks(
            config.node_id,
            self._endpoint_of,
            reconnect_backoff_ms=config.reconnect_backoff_ms,
            reconnect_backoff_max_ms=config.reconnect_backoff_max_ms,
            max_frame_bytes=config.max_frame_bytes,
            logins=self.settings.logins(),
            logger=self._log,
        )
        self.view = MetadataView(config.node_id, self.settings, self._send)
        #: Requests to this node's own controller, answered in-process (the only voter).
        self.local = LocalLink(self._serve_local)
        #: Requests of the broker's parts to this node's broker side (a transaction coordinator's
        #: markers for partitions led here, a leader's verification with the coordinator here):
        #: served in-process by the broker (``Broker``'s loopback), as Kafka's would be over a
        #: connection to itself.
        self.loopback: LocalLink | None = None
        self._sole_voter = self.settings.sole_voter(config.node_id)
        #: What a controller listener's requests are checked with (``security/controller_checks.py``).
        self._authorizer = build_authorizer(config, self.view.acls) if config.authorizer_enabled else None
        self._parts: NodeParts | None = None
        self._state: BrokerState | None = None
        self._effects = EffectSink()
        self.lifecycle: BrokerLifecycle | None = None
        self._leadership = (-1, -1, False)
        #: Deltas applied to the image and not yet to the broker's parts (until first caught up).
        self._unpublished: list[DeltaLike] = []
        self._published = False
        #: Committed batches (or snapshots) from the raft replica not replayed yet; the one in steps.
        self._committed: deque[object] = deque()
        self._replaying: Stepping[DeltaLike] | None = None
        #: The deltas being published to the broker's parts, in steps.
        self._publishing: Stepping[None] | None = None
        #: Coordinator partitions (``__consumer_offsets``, ``__transaction_state``) whose leadership
        #: here began (True) or ended (False).
        self._coordinator_changes: list[tuple[str, int, bool]] = []
        self._controller_versions = controller_api_versions()

    @property
    def parts(self) -> NodeParts:
        if self._parts is None:
            raise LocalProtocolError("the node is not started")
        return self._parts

    def _send(self, outbound: Outbound) -> None:
        if self._is_local(outbound):
            self.local.send(outbound, self._now_ms)
        elif (
            outbound.destination == self.config.node_id
            and outbound.listener not in self.settings.controller_listener_names
            and self.loopback is not None
        ):
            self.loopback.send(outbound, self._now_ms)  # the broker side of this very node
        else:
            self.links.send(outbound, self._now_ms)

    def set_loopback(self, link: LocalLink) -> None:
        self.loopback = link

    def _is_local(self, outbound: Outbound) -> bool:
        """A request for this node's own controller when it is the quorum's only voter: served
        in-process. A node of a larger quorum reaches its own controller over its controller
        listener, as a Kafka combined node does (its heartbeats then take a network hop, as
        every other broker's do)."""
        return (
            self._sole_voter
            and outbound.destination == self.config.node_id
            and outbound.listener in self.settings.controller_listener_names
            and self._parts is not None
            and self._parts.controller is not None
        )

    def _serve_local(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting:
        parts = self.parts
        if api_key in RAFT_APIS:
            return parts.raft.handle(api_key, api_version, body, now_ms)
        assert parts.controller is not None  # only requests to a controller are local
        return parts.controller.handle(api_key, api_version, body, now_ms)

    def _endpoint_of(self, node_id: int, listener: str) -> Endpoint | None:
        return self.view.endpoint_of(node_id, listener)

    # -- ClusterNode ---------------------------------------------------------------------------

    def start(self, state: BrokerState, effects: EffectSink, now_ms: int) -> None:
        self._now_ms = now_ms
        self._state = state
        self._effects = effects
        parts = self._build_parts(
            PartsContext(
                config=self.config,
                settings=self.settings,
                state=state,
                effects=effects,
                view=self.view,
                rng=self._rng,
                now_ms=now_ms,
                logger=self._log,
            )
        )
        self._parts = parts
        self.view.attach(parts.image, parts.raft)
        state.authorizer = self._authorizer
        state.quotas.attach(parts.image.client_quotas)
        parts.raft.start(now_ms)
        if self.settings.is_broker:
            self.lifecycle = lifecycle = BrokerLifecycle(
                self.config,
                cluster_id=state.metadata.cluster_id,
                rng=self._rng,
                listeners=[
                    e
                    for e in self.settings.advertised_listeners
                    if e.listener not in self.settings.controller_listener_names
                ],
                controller_listener=self.settings.controller_listener,
                controller_id=lambda: self.view.controller_id,
                metadata_offset=lambda: parts.image.offset,
                send=self._send,
                log_dir_id=state.directory_id,
                logger=self._log,
                previous_broker_epoch=state.clean_shutdown.broker_epoch,
            )
            state.producer_ids = ProducerIdBlocks(self.view, lambda: lifecycle.broker_epoch)
            if parts.controller is not None and self._sole_voter:
                parts.controller.local_broker(lifecycle.incarnation_id)
            lifecycle.start(now_ms)
        self._pump(now_ms)

    def api_versions(self, listener: str) -> Mapping[int, tuple[int, int]] | None:
        return self._controller_versions if self.serves(listener) else None

    def serves(self, listener: str) -> bool:
        return listener in self.settings.controller_listener_names

    def handle(self, request: Request, now_ms: int, user: str = "", host: str = "") -> Message | Waiting:
        self._now_ms = now_ms
        parts = self.parts
        key = request.api_key
        answer: Message | Waiting
        if self._authorizer and (refused := refusal(self._authorizer, user, host, key, request.body)):
            answer = refused
        elif key == ApiKey.API_VERSIONS:
            answer = api_versions_response(self._controller_versions)
        elif key in RAFT_APIS:
            answer = parts.raft.handle(key, request.api_version, request.body, now_ms)
        elif parts.controller is not None:
            answer = parts.controller.handle(key, request.api_version, request.body, now_ms)
        else:  # the listener is a controller listener only on a node with the controller role
            raise LocalProtocolError("a controller request reached a node without a controller")
        self._pump(now_ms)
        return answer

    def pump(self, now_ms: int) -> bool:
        """Serve what the broker's handlers asked of this node's own controller in this call
        (a forwarded request, a topic to create, producer ids), and what that moves; whether
        there was anything."""
        if not self.local.busy:
            return False
        self._now_ms = now_ms
        self._pump(now_ms)
        return True

    def owns(self, conn_id: int) -> bool:
        return self.links.owns(conn_id)

    def connection_established(self, conn_id: int, now_ms: int) -> None:
        self._now_ms = now_ms
        self.links.connection_established(conn_id, now_ms)
        self._pump(now_ms)

    def receive_data(self, conn_id: int, data: bytes, now_ms: int) -> None:
        self._now_ms = now_ms
        self.links.receive_data(conn_id, data, now_ms)
        self._pump(now_ms)

    def connection_closed(self, conn_id: int, now_ms: int) -> None:
        self._now_ms = now_ms
        self.links.connection_closed(conn_id, now_ms)
        self._pump(now_ms)

    def tick(self, now_ms: int) -> None:
        self._now_ms = now_ms
        parts = self.parts
        self.links.tick(now_ms)
        parts.raft.tick(now_ms)
        if parts.controller is not None:
            parts.controller.tick(now_ms)
        if parts.replication is not None:
            parts.replication.tick(now_ms)
            self._follow_applied()
        if self.lifecycle is not None:
            self.lifecycle.tick(now_ms)
        self._pump(now_ms)

    def next_deadline_ms(self) -> int | None:
        if self._parts is None:
            return None
        if self._stepping and self._may_step():
            return self._now_ms  # the replay or the publication goes on at once
        parts = self._parts
        candidates = [
            self.links.next_deadline_ms(),
            self.local.next_deadline_ms(),
            parts.raft.next_deadline_ms(),
        ]
        if parts.controller is not None:
            candidates.append(parts.controller.next_deadline_ms())
        if parts.replication is not None:
            candidates.append(parts.replication.next_deadline_ms())
        if self.lifecycle is not None:
            candidates.append(self.lifecycle.next_deadline_ms())
        deadlines = [d for d in candidates if d is not None]
        return min(deadlines) if deadlines else None

    def take_network_effects(self) -> list[Effect]:
        return self.links.take_effects()

    def take_coordinator_changes(self) -> list[tuple[str, int, bool]]:
        changes, self._coordinator_changes = self._coordinator_changes, []
        return changes

    def begin_shutdown(self, now_ms: int) -> None:
        """A controlled shutdown; none for a single node (the only voter, and the only broker
        registered): its leaderships have nowhere to move, and its restart replaces its
        registration at once."""
        self._now_ms = now_ms
        if self.lifecycle is not None:
            brokers = [b.node_id for b in self.parts.image.brokers()]
            alone = self._sole_voter and brokers == [self.config.node_id]
            self.lifecycle.begin_shutdown(now_ms, controlled=not alone)
            self.lifecycle.tick(now_ms)
        self._pump(now_ms)

    @property
    def may_stop(self) -> bool:
        return self.lifecycle is None or self.lifecycle.may_stop

    def shutdown(self, *, clean: bool = False) -> None:
        self.links.close_all()
        self.local.close()
        if clean and self.parts.replication is not None and self.lifecycle is not None:
            self.parts.replication.close(self.lifecycle.broker_epoch)

    # -- wiring --------------------------------------------------------------------------------

    def _pump(self, now_ms: int) -> None:
        """Move what the last input made ready from part to part (see the module docstring),
        until nothing moves: an answer of this node's own controller may make more ready."""
        while True:
            moved = self._pump_once(now_ms)
            if not self.local.pump(now_ms) and not moved:
                return

    def _pump_once(self, now_ms: int) -> bool:
        """One round of the wiring; whether metadata was committed or leadership changed."""
        parts = self.parts
        deltas = self._replay_committed(now_ms)
        if self.settings.is_broker:
            self._unpublished += deltas
        self._publish(now_ms)
        leadership = (parts.raft.leader_id, parts.raft.epoch, parts.raft.leader_ready)
        changed = leadership != self._leadership
        if changed:
            if leadership[:2] != self._leadership[:2]:
                self._log.info(
                    "node %d: metadata quorum leader %d, epoch %d", self.config.node_id, *leadership[:2]
                )
            self._leadership = leadership
            if parts.controller is not None:
                parts.controller.tick(now_ms)
        if self.lifecycle is not None:
            # Ready to be unfenced once the first metadata is published, as Kafka's broker is
            # (publishing waited for the quorum's high watermark and for this incarnation's
            # registration). Not "image offset at the HW": a committed tail of control batches
            # (a new quorum leader's LeaderChangeMessage) never reaches the image, and with no
            # record after it the broker would stay fenced for good.
            if self._published and not self._unpublished and self._publishing is None:
                self.lifecycle.caught_up(now_ms)
            self.lifecycle.tick(now_ms)
            producer_ids = self._state.producer_ids if self._state is not None else None
            if self._sole_voter and not self.lifecycle.fenced and producer_ids is not None:
                producer_ids.prefetch(now_ms)  # answered in-process: ready before any client
        for outbound in parts.raft.poll_outbound(now_ms):
            self.links.send(outbound, now_ms)
        return bool(deltas) or changed

    def _may_publish(self) -> bool:
        """Caught up with the quorum and, on a broker, with its own registration: the image
        then holds the controller's verdict on this incarnation (its old leaderships moved away
        when it was fenced), so a restarted broker never leads on the states it had before."""
        parts = self.parts
        if not parts.raft.caught_up:
            return False
        lifecycle = self.lifecycle
        return lifecycle is None or 0 <= lifecycle.broker_epoch <= parts.image.offset

    @property
    def _stepping(self) -> bool:
        """A replay or a publication is in progress."""
        return self._replaying is not None or bool(self._committed) or self._publishing is not None

    @property
    def _budget(self) -> WorkBudget:
        """The call's work budget once the first metadata is published; until then (a node
        catching up with the quorum, serving no client yet) none: all of it at once."""
        assert self._state is not None
        return self._state.budget if self._published else unlimited()

    def _may_step(self) -> bool:
        """Steps go on unless the writes of earlier slices are in flight (``BrokerState.may_slice``)."""
        return self._state is None or self._state.may_slice()

    def _replay_committed(self, now_ms: int) -> list[DeltaLike]:
        """Replay committed batches while the call's work budget lasts; the deltas of those
        replayed whole (a large batch goes on at the next tick: until then nothing of it is
        published)."""
        assert self._state is not None
        deltas: list[DeltaLike] = []
        while True:
            if self._replaying is None:
                if not self._committed:
                    self._committed.extend(self.parts.raft.take_committed())
                    if not self._committed:
                        return deltas
                self._replaying = Stepping(self._replay_steps(self._committed.popleft(), now_ms))
            if not self._may_step() or not self._replaying.take(self._budget):
                return deltas
            assert self._replaying.result is not None
            deltas.append(self._replaying.result)
            self._replaying = None

    def _replay_steps(self, item: object, now_ms: int) -> Steps[DeltaLike]:
        """Apply one committed batch (or snapshot) to the image and the controller."""
        parts = self.parts
        if isinstance(item, SnapshotLoadLike):
            offset = item.snapshot_id.end_offset - 1
            if parts.controller is not None:
                return parts.controller.load_snapshot(offset, item.records)
            return parts.image.load_snapshot(offset, [self._decode(r) for r in item.records])
        if isinstance(item, CommittedBatchLike):
            if parts.controller is not None:
                return (yield from parts.controller.replay_steps(item.last_offset, item.records, now_ms))
            decoded: list[Message] = []
            for chunk in chunks(item.records):
                decoded += [self._decode(r) for r in chunk]
                yield len(chunk)
            return (yield from parts.image.apply_steps(item.last_offset, decoded))
        raise LocalProtocolError(f"the raft replica committed {type(item).__name__}")

    def _publish(self, now_ms: int) -> None:
        """Publish the deltas replayed so far, in steps while the call's work budget lasts (the
        rest at the next tick, the deltas replayed meanwhile after them)."""
        assert self._state is not None
        if self._publishing is None:
            if not self._unpublished or not (self._published or self._may_publish()):
                return
            # Merged and published once caught up with the quorum, as Kafka's metadata loader
            # publishes: a restarted node replaying its log never acts on the stale states
            # along the way.
            first = not self._published
            self._published = True
            deltas, self._unpublished = self._unpublished, []
            self._publishing = Stepping(self._publish_steps(merged(deltas), first, now_ms))
        if self._may_step() and self._publishing.take(self._budget):
            self._publishing = None

    def _publish_steps(self, delta: DeltaLike, first: bool, now_ms: int) -> Steps[None]:
        """The broker's topic list (``BrokerState.metadata``) follows the image; the replica
        manager follows the partitions. The topics are read in steps and changed in one, so
        that no client sees part of a topic."""
        assert self._state is not None
        topics = self._state.metadata.topics
        image = self.parts.image
        removed: list[tuple[str, int]] = []
        gone: set[str] = set()
        for name, topic_id in delta.removed_topics:
            topic = topics.get(name)
            if topic is not None and topic.topic_id == topic_id:
                gone.add(name)
                removed += [(name, p) for p in range(topic.partitions)]
        new: dict[str, TopicInfo] = {}
        grown: dict[str, int] = {}
        for chunk in chunks(delta.partitions):
            for state in chunk:
                name = state.topic
                topic = new.get(name) or (None if name in gone else topics.get(name))
                if topic is None or topic.topic_id != state.topic_id:
                    if topic is not None:  # the name now belongs to a new topic
                        removed += [(topic.name, p) for p in range(topic.partitions)]
                    new[name] = TopicInfo(
                        name, state.topic_id, state.partition + 1, configs=image.topic_configs(name)
                    )
                elif name in new:
                    topic.partitions = max(topic.partitions, state.partition + 1)
                elif state.partition >= grown.get(name, topic.partitions):
                    grown[name] = state.partition + 1
            yield len(chunk)
        for name in gone:
            del topics[name]
            self._state.deleted_topics.append(name)
        for name, count in grown.items():
            topics[name].partitions = count
        topics.update(new)
        for kind, name in delta.configs:
            self._state.configs_changed(kind, name, image.configs_of(kind, name))
        replication = self.parts.replication
        if replication is not None and (delta.partitions or removed):
            for i, chunk in enumerate(list(chunks(delta.partitions)) or [()]):
                replication.apply(chunk, () if i else removed, now_ms)
                yield len(chunk)
        self._coordinator_changes += [(name, p, False) for name, p in removed if name in COORDINATOR_TOPICS]
        self._follow_applied()
        if first:
            self._move_strays()

    def _move_strays(self) -> None:
        """Partition directories the metadata does not give this broker (a topic deleted while
        the node was down, a deletion cut short) are renamed ``<dir>.<id>-stray`` once the first
        metadata is published, as Kafka's log manager moves them aside; never served, never
        deleted."""
        assert self._state is not None
        storage, me = self._state.storage, self.config.node_id
        image = self.parts.image
        for name, partitions in partition_dirs(storage).items():
            if name == METADATA_TOPIC:
                continue
            for index, topic_id in partitions:
                registration = image.partition(name, index)
                if (
                    registration is not None
                    and me in registration.replicas
                    and topic_id in (None, registration.topic_id)
                ):
                    continue
                directory = partition_dir(name, index)
                target = f"{directory}.{random_uuid(self._rng).hex}-stray"
                self._effects.emit(Rename(directory, target))
                self._log.warning(
                    "%s belongs to no partition of this broker: moved aside to %s", directory, target
                )

    def _follow_applied(self) -> None:
        """The group and transaction coordinators follow the leadership of ``__consumer_offsets``
        and ``__transaction_state`` as the replica manager applies it (after the replica's role
        changed: the coordinator reads the partition it leads)."""
        replication = self.parts.replication
        if replication is not None:
            me = self.config.node_id
            self._coordinator_changes += [
                (s.topic, s.partition, s.leader == me)
                for s in replication.take_applied()
                if s.topic in COORDINATOR_TOPICS
            ]
