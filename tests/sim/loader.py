"""A minimal test-only simulated client: creates topics, then produces acks=all records to
partition leaders it finds by trying nodes in turn (no Metadata), one request in flight."""

from __future__ import annotations

from typing import Final

from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    ErrorCode,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, Response
from kafka_wire.protocol.events import ConnectionClosed, RequestTimedOut, VersionsNegotiated
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.sim.contracts import ClientIO
from kafka_wire.sim.history import History, Op, OpKind, OpType

RETRY_MS: Final = 200
PRODUCE_VERSION: Final = 9


class Loader:
    """Creates ``topics`` (name, partitions, rf) and produces one record every ``interval_ms``
    (``interval_ms`` None: only creates)."""

    def __init__(
        self,
        name: str,
        nodes: int,
        topics: list[tuple[str, int, int]],
        history: History,
        *,
        interval_ms: int | None = 20,
    ) -> None:
        self.name = name
        self._nodes = nodes
        self._topics = topics
        self._history = history
        self._interval_ms = interval_ms
        self._io: ClientIO | None = None
        self._conn: int | None = None
        self._client: ClientConnection | None = None
        self._ready = False
        self._node = 1
        self._created = False
        self._quiet = False
        self._in_flight = False
        self._next_ms: int | None = 0
        self._sent = 0
        #: Per (topic, partition): the node last found leading.
        self._leaders: dict[tuple[str, int], int] = {}
        #: The partition the next send goes to (None: still creating topics).
        self._target: tuple[str, int] | None = None
        self.acked = 0
        self.errors = 0

    @property
    def created(self) -> bool:
        return self._created

    # -- SimClient ----------------------------------------------------------------------------------
    def start(self, io: ClientIO, now_ms: int) -> None:
        self._io = io
        self._next_ms = now_ms

    def connected(self, conn: int, now_ms: int) -> None:
        assert self._io is not None and self._client is not None
        self._io.send(conn, self._client.data_to_send())

    def received(self, conn: int, data: bytes, now_ms: int) -> None:
        client = self._client
        assert self._io is not None and client is not None
        client.receive_data(data, now_ms=now_ms)
        while (event := client.next_event()) is not NEED_DATA:
            if isinstance(event, VersionsNegotiated):
                self._ready = True
            elif isinstance(event, Response):
                self._in_flight = False
                self._answered(event, now_ms)
            elif isinstance(event, ConnectionClosed | RequestTimedOut):
                self._drop(now_ms)
                return
        out = client.data_to_send()
        if out and self._conn is not None:
            self._io.send(self._conn, out)

    def closed(self, conn: int, now_ms: int) -> None:
        self._drop(now_ms)

    def tick(self, now_ms: int) -> None:
        client = self._client
        if client is not None:
            client.handle_timer(now_ms)
            while (event := client.next_event()) is not NEED_DATA:
                if isinstance(event, ConnectionClosed | RequestTimedOut):
                    self._drop(now_ms)
                    break
        if self._next_ms is not None and now_ms >= self._next_ms:
            self._next_ms = None
            self._step(now_ms)

    def next_deadline_ms(self) -> int | None:
        client_ms = None if self._client is None else self._client.next_deadline_ms()
        deadlines = [d for d in (self._next_ms, client_ms) if d is not None]
        return min(deadlines) if deadlines else None

    def quiesce(self, now_ms: int) -> None:
        self._quiet = True

    def idle(self) -> bool:
        return not self._in_flight

    # -- the work -----------------------------------------------------------------------------------
    def _drop(self, now_ms: int, *, failed: bool = True) -> None:
        if failed and self._target is not None:  # its leader may be gone: try the next node
            self._leaders[self._target] = self._node % self._nodes + 1
        if self._conn is not None and self._io is not None:
            self._io.close(self._conn)
        self._conn = None
        self._client = None
        self._ready = False
        if self._in_flight:
            self._in_flight = False
            self.errors += 1
        self._node = self._node % self._nodes + 1
        self._next_ms = now_ms + RETRY_MS

    def _step(self, now_ms: int) -> None:
        assert self._io is not None
        if self._conn is None:
            self._client = ClientConnection(
                ClientConfig(client_id=self.name, request_timeout_ms=3000), now_ms=now_ms
            )
            self._conn = self._io.connect(self, f"node{self._node}", 9092)
            self._next_ms = now_ms + 10
            return
        client = self._client
        if not self._ready or self._in_flight or client is None:
            self._next_ms = now_ms + 10
            return
        if not self._created:
            request = CreateTopicsRequest(
                topics=[
                    CreateTopicsRequestCreatableTopic(name=t, num_partitions=p, replication_factor=rf)
                    for t, p, rf in self._topics
                ],
                timeout_ms=5000,
            )
            self._send(request)
            return
        if self._quiet or self._interval_ms is None:
            return
        topic, partitions, _ = self._topics[self._sent % len(self._topics)]
        partition = (self._sent // len(self._topics)) % partitions
        self._target = (topic, partition)
        leader = self._leaders.get((topic, partition), 1)
        if leader != self._node:
            self._drop(now_ms, failed=False)
            self._node = leader
            self._next_ms = now_ms
            return
        self._sent += 1
        value = f"{self.name}-{self._sent}"
        batch = build_batch([NewRecord(None, value.encode())], default_timestamp=now_ms)
        produce = ProduceRequest(
            acks=-1,
            timeout_ms=3000,
            topic_data=[
                ProduceRequestTopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)],
                )
            ],
        )
        self._history.add(
            Op(now_ms, self.name, OpType.INVOKE, OpKind.SEND, topic, partition, value=value, acks=-1)
        )
        self._send(produce, (topic, partition, value), PRODUCE_VERSION)

    def _send(
        self,
        request: CreateTopicsRequest | ProduceRequest,
        context: object = None,
        version: int | None = None,
    ) -> None:
        assert self._io is not None and self._client is not None and self._conn is not None
        self._in_flight = True
        self._io.send(self._conn, self._client.send(request, version, context=context))

    def _answered(self, event: Response, now_ms: int) -> None:
        body = event.body
        if isinstance(body, CreateTopicsResponse):
            codes = {t.error_code for t in body.topics}
            if codes <= {ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS}:
                self._created = True
                self._next_ms = now_ms + 500  # let leaders be elected
            else:
                self._drop(now_ms)
            return
        assert isinstance(body, ProduceResponse) and isinstance(event.context, tuple)
        topic, partition, value = event.context
        answer = body.responses[0].partition_responses[0]
        if answer.error_code == ErrorCode.NONE:
            self.acked += 1
            self._history.add(
                Op(
                    now_ms,
                    self.name,
                    OpType.OK,
                    OpKind.SEND,
                    topic,
                    partition,
                    value=value,
                    offset=answer.base_offset,
                    acks=-1,
                )
            )
            self._next_ms = now_ms + (self._interval_ms or 0)
            return
        self.errors += 1
        self._history.add(
            Op(
                now_ms,
                self.name,
                OpType.FAIL,
                OpKind.SEND,
                topic,
                partition,
                value=value,
                acks=-1,
                error=str(answer.error_code),
            )
        )
        if answer.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            self._leaders[topic, partition] = self._node % self._nodes + 1
        elif answer.error_code in (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT):
            pass
        self._next_ms = now_ms + RETRY_MS
