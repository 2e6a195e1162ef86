"""A QuorumController driven by a fake raft log that commits what was appended when asked."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.controller.controller import ControllerConfig, QuorumController
from kafka_wire.broker.controller.records import decode_record
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
)

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


@dataclass
class FakeRaft:
    """The ``MetadataLog`` of the tests: one leader, appended batches committed by ``commit``."""

    is_leader: bool = True
    epoch: int = 1
    log: list[bytes] = field(default_factory=list)
    uncommitted: list[tuple[int, list[bytes]]] = field(default_factory=list)
    snapshots: list[tuple[int, list[bytes]]] = field(default_factory=list)
    refuse: bool = False

    @property
    def log_end_offset(self) -> int:
        return len(self.log)

    def append(self, records: list[bytes], now_ms: int) -> int | None:
        if not self.is_leader or self.refuse:
            return None
        self.log += records
        self.uncommitted.append((len(self.log) - 1, records))
        return len(self.log) - 1

    def write_snapshot(self, offset: int, records: list[bytes], now_ms: int) -> None:
        self.snapshots.append((offset, records))

    def records(self) -> list[Message]:
        return [decode_record(r) for r in self.log]


class Harness:
    def __init__(self, *, hooks: Hooks = OFF, **config: object) -> None:
        self.raft = FakeRaft()
        self.now_ms = 1_000
        self.controller = QuorumController(
            ControllerConfig(node_id=3000, cluster_id=CLUSTER_ID, **config),  # type: ignore[arg-type]
            self.raft,
            random.Random(5),
            hooks=hooks,
        )
        self.incarnations: dict[int, uuid.UUID] = {}
        self.epochs: dict[int, int] = {}

    def commit(self) -> None:
        while self.raft.uncommitted:
            offset, records = self.raft.uncommitted.pop(0)
            self.controller.replay(offset, records, self.now_ms)

    def settle(self, answer: Message | Waiting) -> Message:
        """Commit what the request proposed and return its answer."""
        self.commit()
        if isinstance(answer, Message):
            return answer
        body = answer.poll(self.now_ms)
        assert isinstance(body, Message), "answer not ready after commit"
        return body

    def call(self, api_key: int, version: int, body: Message) -> Message:
        return self.settle(self.controller.handle(api_key, version, body, self.now_ms))

    def tick(self, advance_ms: int = 0) -> None:
        self.now_ms += advance_ms
        self.controller.tick(self.now_ms)
        self.commit()

    # -- brokers ---------------------------------------------------------------------------------

    def register(
        self, broker: int, incarnation: uuid.UUID | None = None, *, clean: bool = True
    ) -> BrokerRegistrationResponse:
        """Register ``broker``; a new incarnation names its last epoch as the one its clean stop
        recorded unless ``clean`` is False (KIP-966)."""
        incarnation = incarnation or uuid.UUID(int=broker * 1000 + len(self.incarnations) + 1)
        self.incarnations[broker] = incarnation
        response = self.call(
            ApiKey.BROKER_REGISTRATION,
            4,
            BrokerRegistrationRequest(
                broker_id=broker,
                cluster_id=CLUSTER_ID,
                incarnation_id=incarnation,
                listeners=[
                    BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker)
                ],
                features=[
                    BrokerRegistrationRequestFeature(
                        name="metadata.version", min_supported_version=1, max_supported_version=21
                    )
                ],
                log_dirs=[uuid.UUID(int=broker + 77)],
                previous_broker_epoch=self.epochs.get(broker, -1) if clean else -1,
            ),
        )
        assert isinstance(response, BrokerRegistrationResponse)
        if response.error_code == 0:
            self.epochs[broker] = response.broker_epoch
        return response

    def heartbeat(
        self,
        broker: int,
        *,
        offset: int | None = None,
        want_shut_down: bool = False,
        want_fence: bool = False,
    ) -> BrokerHeartbeatResponse:
        response = self.call(
            ApiKey.BROKER_HEARTBEAT,
            1,
            BrokerHeartbeatRequest(
                broker_id=broker,
                broker_epoch=self.epochs[broker],
                current_metadata_offset=self.controller.committed_offset if offset is None else offset,
                want_fence=want_fence,
                want_shut_down=want_shut_down,
            ),
        )
        assert isinstance(response, BrokerHeartbeatResponse)
        return response

    def start_brokers(self, *brokers: int) -> None:
        for b in brokers:
            assert self.register(b).error_code == 0
        for b in brokers:
            assert not self.heartbeat(b).is_fenced

    def create_topic(
        self, name: str, partitions: int = 1, replication: int = 3, configs: dict[str, str] | None = None
    ) -> CreateTopicsResponse:
        response = self.call(
            ApiKey.CREATE_TOPICS,
            7,
            CreateTopicsRequest(
                topics=[
                    CreateTopicsRequestCreatableTopic(
                        name=name,
                        num_partitions=partitions,
                        replication_factor=replication,
                        configs=[
                            CreateTopicsRequestCreatableTopicConfig(name=k, value=v)
                            for k, v in (configs or {}).items()
                        ],
                    )
                ],
                timeout_ms=30_000,
            ),
        )
        assert isinstance(response, CreateTopicsResponse)
        return response
