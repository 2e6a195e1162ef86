"""The asyncio driver running a cluster node (stand-in parts) on real sockets: one listening
socket per listener, outbound connections dialled for the engine, controlled shutdown on stop."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from kafka_wire.adapters.broker_server import BrokerServer
from kafka_wire.adapters.ports import free_port
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.lifecycle import LifecycleState
from kafka_wire.broker.node import Node, NodeParts, PartsContext
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, Response
from kafka_wire.protocol.events import Request
from kafka_wire.protocol.server import ServerConfig, ServerConnection, all_api_versions, api_versions_response
from tests.broker.node.test_node import CLUSTER_ID, FakeController, FakeImage, FakeRaft, FakeReplication


def config_for(broker_port: int, controller_port: int, peer_port: int) -> BrokerConfig:
    return load_server_properties(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "cluster.id": CLUSTER_ID,
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port},2@127.0.0.1:{peer_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "broker.heartbeat.interval.ms": "100",
            "kafka.wire.controlled.shutdown.timeout.ms": "5000",
        }
    ).config


class ControllerPeer:
    """Node 2's controller listener: registers, unfences, lets go on want_shut_down."""

    def __init__(self) -> None:
        self.requests: list[Message] = []
        self.client_ids: list[str | None] = []
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        conn = ServerConnection(ServerConfig(api_versions=None))
        try:
            while data := await reader.read(65536):
                conn.receive_data(data)
                while (event := conn.next_event()) is not NEED_DATA:
                    if isinstance(event, Request):
                        self.requests.append(event.body)
                        self.client_ids.append(event.header.client_id)
                        writer.write(conn.send(event.reply(self.answer(event.body))))
                writer.write(conn.data_to_send())
        except ConnectionError:
            pass
        finally:
            writer.close()

    def answer(self, body: Message) -> Message:
        if isinstance(body, ApiVersionsRequest):
            return api_versions_response(all_api_versions())
        if isinstance(body, BrokerRegistrationRequest):
            return BrokerRegistrationResponse(broker_epoch=5)
        assert isinstance(body, BrokerHeartbeatRequest)
        return BrokerHeartbeatResponse(is_fenced=False, should_shut_down=body.want_shut_down)


async def eventually(check: object, timeout_s: float = 30.0) -> None:
    """Poll ``check`` under a deadline: generous, as the node's start waits for its first fsyncs,
    which a disk shared with other processes may hold for seconds."""
    assert callable(check)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def ask(port: int, body: Message) -> Message:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = ClientConnection(ClientConfig(client_id="test"))
    writer.write(client.data_to_send())
    try:
        while data := await reader.read(65536):
            client.receive_data(data)
            while (event := client.next_event()) is not NEED_DATA:
                if isinstance(event, Response):
                    return event.body
                writer.write(client.send(body))
        raise AssertionError("closed without an answer")
    finally:
        writer.close()


async def run_node(tmp_path: Path) -> None:
    broker_port, controller_port, peer_port = free_port(), free_port(), free_port()
    peer = ControllerPeer()
    listener = await asyncio.start_server(peer.serve, "127.0.0.1", peer_port)
    raft = FakeRaft(leader_id=2)

    def parts(context: PartsContext) -> NodeParts:
        image = FakeImage()
        return NodeParts(raft, image, FakeController(image), FakeReplication())

    config = config_for(broker_port, controller_port, peer_port)
    node = Node(
        config, rng=random.Random(1), build_parts=parts, decode_record=lambda data: ApiVersionsRequest()
    )
    server = BrokerServer(config, tmp_path / "data", cluster=node)
    assert config.cluster is not None
    bound = await server.start_listeners(config.cluster.listeners)
    assert bound == {"PLAINTEXT": broker_port, "CONTROLLER": controller_port}, server.failure
    try:
        # The node dials controller 2, registers and heartbeats until unfenced.
        await eventually(
            lambda: node.lifecycle is not None and node.lifecycle.state is LifecycleState.RUNNING
        )
        kinds = [type(r).__name__ for r in peer.requests]
        assert kinds[:3] == ["ApiVersionsRequest", "BrokerRegistrationRequest", "BrokerHeartbeatRequest"]
        assert set(peer.client_ids) == {"kafka-wire-node-1"}
        # The controller listener answers with the controller's APIs; the broker listener with the broker's.
        versions = await ask(controller_port, ApiVersionsRequest())
        assert isinstance(versions, ApiVersionsResponse)
        assert ApiKey.VOTE in {k.api_key for k in versions.api_keys}
        broker_versions = await ask(broker_port, ApiVersionsRequest())
        assert isinstance(broker_versions, ApiVersionsResponse)
        assert ApiKey.VOTE not in {k.api_key for k in broker_versions.api_keys}
        # A lost link is dialled again.
        for writer in peer.writers:
            writer.transport.abort()
        await eventually(lambda: peer.connections >= 2)
        # Stopping asks the controller first (want_shut_down), then stops.
        await server.stop()
        assert any(isinstance(r, BrokerHeartbeatRequest) and r.want_shut_down for r in peer.requests)
        assert node.may_stop
    finally:
        listener.close()
        if not server.broker.stopped:
            await server.stop()


def test_a_cluster_node_on_real_sockets(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(run_node(tmp_path), 60))
