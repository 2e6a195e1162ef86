"""``MetadataView``: a node's :class:`~kafka_wire.broker.cluster_view.ClusterView`.

The image's brokers and partitions, the raft leader as the active controller, and requests sent
through the node (to its own controller in-process, to other nodes through its peer links). A
controller's endpoint comes from ``controller.quorum.voters``, a broker's from its registration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kafka_wire.broker.cluster_settings import ClusterSettings
from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, Outbound, PartitionState
from kafka_wire.broker.node_contracts import ImagePart, RaftPart
from kafka_wire.broker.security.authorizer import AclSource
from kafka_wire.errors import LocalProtocolError


class MetadataView:
    """The node's :class:`~kafka_wire.broker.cluster_view.ClusterView` (see the module docstring)."""

    def __init__(
        self, node_id: int, settings: ClusterSettings, links_send: Callable[[Outbound], None]
    ) -> None:
        self._node_id = node_id
        self._settings = settings
        self._send = links_send
        self._image: ImagePart | None = None
        self._raft: RaftPart | None = None

    def attach(self, image: ImagePart, raft: RaftPart) -> None:
        self._image, self._raft = image, raft

    @property
    def image(self) -> ImagePart:
        if self._image is None:
            raise LocalProtocolError("the node's parts are not built yet")
        return self._image

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def controller_id(self) -> int:
        return -1 if self._raft is None else self._raft.leader_id

    @property
    def inter_broker_listener(self) -> str:
        return self._settings.inter_broker_listener

    @property
    def controller_listener(self) -> str:
        return self._settings.controller_listener

    def brokers(self) -> Sequence[BrokerInfo]:
        return self.image.brokers()

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.image.broker(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self.image.partition(topic, partition)

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        return self.image.partitions_of(topic)

    def send(self, outbound: Outbound) -> None:
        self._send(outbound)

    def finalized_features(self) -> tuple[int, Mapping[str, int]]:
        if self._image is None:
            return -1, {}
        return self._image.offset, self._image.features

    def acls(self) -> AclSource | None:
        """The image's ACLs (None before the parts are built, or for an image without them)."""
        source: AclSource | None = getattr(self._image, "acls_image", None)
        return source

    def endpoint_of(self, node_id: int, listener: str) -> Endpoint | None:
        """Where to reach ``node_id`` on ``listener``: a controller listener from the voters, else
        the broker's registration."""
        if listener in self._settings.controller_listener_names:
            voter = self._settings.voter(node_id)
            if voter is None or not voter.port:  # a standalone node's controller has no listener
                return None
            return Endpoint(listener, voter.host, voter.port)
        info = None if self._image is None else self._image.broker(node_id)
        return None if info is None else info.endpoint(listener)
