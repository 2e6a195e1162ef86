"""A tiny Kafka server for interop tests: asyncio streams around kafka_wire's ``ServerConnection``.

Every byte it reads goes into a ``ServerConnection`` and every byte it writes comes out of one
(``send``, ``reject``, ``data_to_send``). It answers ApiVersions, Metadata (one broker, itself; one
topic, with topic id :data:`TOPIC_ID`, and one partition it leads), InitProducerId and Produce
(every batch to that partition, named or by topic id as from v13, accepted at offset 0), leaves
every other
request unanswered, and records each request it sees, with the frame's bytes as they arrived
(``tools/record_captures.py`` writes them out as golden captures). It runs its own event loop in a background
thread so that the tests can drive real clients as blocking subprocesses.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self
from uuid import UUID

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ErrorCode,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    ProduceRequest,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)
from kafka_wire.protocol import (
    NEED_DATA,
    ConnectionClosed,
    Request,
    ServerConfig,
    ServerConnection,
    UnsupportedRequest,
    all_api_versions,
    api_versions_response,
)
from tests.interop.harness import Address

NODE_ID: Final = 1
CLUSTER_ID: Final = "kafka-wire-interop"
PRODUCER_ID: Final = 1000
#: The topic's id (Metadata v10+; Produce v13+ names topics by id): fixed, so that re-recorded
#: Produce frames are the same bytes.
TOPIC_ID: Final = UUID("6b77696e-7465-726f-702d-746f70696331")
#: The APIs the server lists in ApiVersions: enough for a producer and a group consumer to start.
ADVERTISED_APIS: Final = (
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.METADATA,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.API_VERSIONS,
    ApiKey.INIT_PRODUCER_ID,
)


def advertised_versions(overrides: Mapping[int, tuple[int, int]] | None = None) -> dict[int, tuple[int, int]]:
    """Every version kafka_wire decodes for ADVERTISED_APIS, with ``overrides`` applied."""
    supported = all_api_versions()
    versions = {int(key): supported[key] for key in ADVERTISED_APIS}
    versions.update(overrides or {})
    return versions


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    connection: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    #: The typed body, or None for a request the connection reported as unsupported.
    body: Message | None
    rejected: bool = False
    #: The size-prefixed request frame exactly as the client sent it.
    frame: bytes = b""


class FrameCopier:
    """Cuts a copy of the bytes a client sends into its size-prefixed frames, in order: the
    ``ServerConnection`` reports one event per frame, so the n-th event is the n-th frame."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._frames: deque[bytes] = deque()

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 4:
            end = 4 + int.from_bytes(self._buffer[:4], "big", signed=True)
            if end < 4 or len(self._buffer) < end:
                return
            self._frames.append(bytes(self._buffer[:end]))
            del self._buffer[:end]

    def next_frame(self) -> bytes:
        return self._frames.popleft() if self._frames else b""


class RecordingServer:
    """Use as a context manager: ``with RecordingServer() as server: ... server.address``."""

    def __init__(
        self,
        api_versions: Mapping[int, tuple[int, int]] | None = None,
        topic: str = "t",
        host: str = "127.0.0.1",
    ) -> None:
        self.api_versions = dict(api_versions) if api_versions is not None else advertised_versions()
        self.topic = topic
        self._host = host
        self._seen: list[Seen] = []
        self._errors: list[str] = []
        self._changed = threading.Condition()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._thread_main, name="recording-server", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._connections = itertools.count()
        self.address = Address(host, 0)

    # -- what the tests read ----------------------------------------------------------------------

    @property
    def seen(self) -> list[Seen]:
        with self._changed:
            return list(self._seen)

    @property
    def errors(self) -> list[str]:
        """Failures inside the server (a ServerConnection error, an unexpected event), as text."""
        with self._changed:
            return list(self._errors)

    def wait_for(self, predicate: Callable[[list[Seen]], bool], timeout_s: float) -> bool:
        """Block until ``predicate(seen)`` holds or a server error is recorded; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: bool(self._errors) or predicate(self._seen), timeout_s)

    # -- life cycle --------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._started.wait(10.0):
            raise RuntimeError("the recording server did not start")
        if self._errors:
            raise RuntimeError(f"the recording server did not start: {self._errors}")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10.0)

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception:
            self._error(traceback.format_exc())
        finally:
            self._started.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        handlers: set[asyncio.Task[None]] = set()

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            handlers.add(task)
            try:
                await self._serve(next(self._connections), reader, writer)
            finally:
                handlers.discard(task)

        server = await asyncio.start_server(on_connect, self._host, 0)
        self.address = Address(self._host, server.sockets[0].getsockname()[1])
        self._started.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in list(handlers):
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

    # -- one connection ----------------------------------------------------------------------------

    def _record(self, seen: Seen) -> None:
        with self._changed:
            self._seen.append(seen)
            self._changed.notify_all()

    def _error(self, text: str) -> None:
        with self._changed:
            self._errors.append(text)
            self._changed.notify_all()

    async def _serve(
        self, connection: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn = ServerConnection(ServerConfig(api_versions=self.api_versions))
        frames = FrameCopier()
        try:
            open_ = True
            while open_:
                data = await reader.read(65536)
                if data:
                    frames.feed(data)
                    conn.receive_data(data)
                else:
                    conn.receive_eof()
                open_ = self._handle_events(connection, conn, frames, writer) and bool(data)
                writer.write(conn.data_to_send())
                await writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            pass  # a client killed mid-request
        except Exception:
            self._error(f"connection {connection}: {traceback.format_exc()}")
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionResetError, BrokenPipeError):
                pass

    def _handle_events(
        self, connection: int, conn: ServerConnection, frames: FrameCopier, writer: asyncio.StreamWriter
    ) -> bool:
        """Handle every complete request; False once the connection is over."""
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                return True
            if isinstance(event, ConnectionClosed):
                return False
            if isinstance(event, UnsupportedRequest):
                self._record(
                    Seen(
                        connection,
                        event.api_key,
                        event.api_version,
                        event.correlation_id,
                        None,
                        None,
                        rejected=True,
                        frame=frames.next_frame(),
                    )
                )
                writer.write(conn.reject(event))
                if conn.must_close:
                    return False
                continue
            if not isinstance(event, Request):
                self._error(f"connection {connection}: unexpected event {event!r}")
                return False
            self._record(
                Seen(
                    connection,
                    event.api_key,
                    event.api_version,
                    event.correlation_id,
                    event.header.client_id,
                    event.body,
                    frame=frames.next_frame(),
                )
            )
            answer = self._answer(event.body, event.api_version)
            if answer is not None and event.expects_response:
                writer.write(conn.send(event.reply(answer)))

    def _answer(self, body: Message, version: int) -> Message | None:
        if isinstance(body, ApiVersionsRequest):
            return api_versions_response(self.api_versions)
        if isinstance(body, MetadataRequest):
            return self._metadata(body, version)
        if isinstance(body, InitProducerIdRequest):  # idempotent producers (kafka-python's default)
            return InitProducerIdResponse(producer_id=PRODUCER_ID, producer_epoch=0)
        if isinstance(body, ProduceRequest):
            return ProduceResponse(
                responses=[
                    ProduceResponseTopicProduceResponse(
                        topic_id=topic.topic_id,
                        name=topic.name,
                        partition_responses=[
                            ProduceResponsePartitionProduceResponse(
                                index=p.index,
                                error_code=(
                                    ErrorCode.NONE
                                    if self._is_topic(topic.name, topic.topic_id) and p.index == 0
                                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                                ),
                                base_offset=0,
                            )
                            for p in topic.partition_data
                        ],
                    )
                    for topic in body.topic_data
                ]
            )
        return None

    def _is_topic(self, name: str, topic_id: UUID) -> bool:
        """Whether a Produce topic entry is the server's topic: by name, or by id from v13 on."""
        return name == self.topic or (not name and topic_id == TOPIC_ID)

    def _metadata(self, body: MetadataRequest, version: int) -> MetadataResponse:
        # All topics: null from v1 on, an empty list at v0 (where an empty list cannot mean "none").
        every = body.topics is None or (version == 0 and not body.topics)
        wanted = [self.topic] if every else [t.name for t in body.topics or ()]
        topics = []
        for name in wanted:
            if name == self.topic:
                partitions = [
                    MetadataResponsePartition(
                        partition_index=0,
                        leader_id=NODE_ID,
                        leader_epoch=0,
                        replica_nodes=[NODE_ID],
                        isr_nodes=[NODE_ID],
                    )
                ]
                topics.append(MetadataResponseTopic(name=name, topic_id=TOPIC_ID, partitions=partitions))
            else:
                topics.append(
                    MetadataResponseTopic(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                )
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=NODE_ID, host=self.address.host, port=self.address.port)],
            cluster_id=CLUSTER_ID,
            controller_id=NODE_ID,
            topics=topics,
        )
