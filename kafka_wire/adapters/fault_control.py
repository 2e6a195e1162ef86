"""Fault injection from outside the process: the control protocol of ``kafka-wire serve
--control-port``, and moving a partition's leadership.

The control protocol is HTTP/1.1 with JSON bodies on a loopback port, one request per connection
(the answer closes it). Every endpoint is a ``POST``; ``GET /faults`` shows what is asked for.
Answers are ``200 {"ok": true, ...}``, or ``400`` (a bad body), ``404`` (no such endpoint) or
``409`` (cannot be done here) with ``{"ok": false, "error": "..."}``.

====================  =========================================================================
``/faults/errors``    ``{"api": "PRODUCE" | 0, "errors": ["NOT_LEADER_OR_FOLLOWER" | 6, ...],
                      "count": 1, "forever": false}``: the next requests of ``api`` are answered
                      with these codes, one per request
``/faults/latency``   ``{"ms": 300, "api": "FETCH"}``: answers of ``api`` (every API without
                      ``api``) leave ``ms`` later; ``0`` removes it
``/faults/close``     ``{"api": "FETCH", "count": 1, "forever": false}``: send half of the next
                      answers, then close their connections
``/faults/clear``     ``{}`` or ``{"api": ...}``: forget the faults (of one API)
``/broker/down``      close every client connection and those that come, until ``/broker/up``
``/broker/up``        serve clients again
``/leader``           ``{"topic": "t", "partition": 0, "broker": 2}``: make ``broker`` the
                      partition's leader (a cluster: through the controller)
====================  =========================================================================

The handler runs on the broker's event loop, so the engine is only ever touched from its loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire import messages
from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.adapters.broker_server import BrokerServer
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, ErrorCode

#: Kafka's ``ElectionType.PREFERRED``.
_PREFERRED: Final = 0
#: How long a leader move may take to reach the asking broker's metadata.
MOVE_TIMEOUT_S: Final = 30.0
#: The largest control request body read.
MAX_CONTROL_BODY: Final = 64 * 1024
_log = logging.getLogger("kafka_wire.adapters.fault_control")


class FaultError(Exception):
    """A fault that cannot be injected here (a single node's leader, an unknown partition)."""


def api_key(value: object) -> ApiKey:
    """An API key from its name (``"PRODUCE"``, ``"produce"``) or number."""
    if isinstance(value, str) and not value.isdigit():
        try:
            return ApiKey[value.upper()]
        except KeyError:
            raise ValueError(f"unknown API {value!r}") from None
    try:
        return ApiKey(int(value))  # type: ignore[call-overload]  # str of digits or int; others raise
    except (TypeError, ValueError):
        raise ValueError(f"unknown API {value!r}") from None


def error_code(value: object) -> int:
    """An error code from its name (``"NOT_LEADER_OR_FOLLOWER"``) or number."""
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        try:
            return int(ErrorCode[value.upper()])
        except KeyError:
            raise ValueError(f"unknown error code {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"unknown error code {value!r}")
    return int(value)


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition as one broker's metadata shows it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


async def describe_partition(host: str, port: int, topic: str, partition: int) -> PartitionView:
    """The partition's leader, replicas and ISR, as the broker at ``host:port`` knows them."""
    client = await KafkaClient.connect(host, port)
    try:
        metadata = await client.request(
            messages.MetadataRequest(topics=[messages.MetadataRequestTopic(name=topic)])
        )
    finally:
        await client.close()
    for t in metadata.topics:
        if t.name == topic and t.error_code == ErrorCode.NONE:
            for p in t.partitions:
                if p.partition_index == partition:
                    return PartitionView(p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
    raise FaultError(f"{topic}-{partition} is not a known partition")


async def move_leader(host: str, port: int, topic: str, partition: int, broker: int) -> None:
    """Make ``broker`` the leader of ``topic``-``partition``, through the broker at ``host:port``:
    a reassignment to the same replicas with ``broker`` first (its preferred leader), then a
    preferred leader election (both forwarded to the controller); returns once the broker at
    ``host:port`` says ``broker`` leads. ``broker`` must be a replica; one out of the ISR is
    waited for (within :data:`MOVE_TIMEOUT_S`); a partition it leads already is left as it is."""
    view = await describe_partition(host, port, topic, partition)
    if broker not in view.replicas:
        raise FaultError(
            f"broker {broker} is not a replica of {topic}-{partition} (replicas {list(view.replicas)})"
        )
    if view.leader == broker:
        return
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    while broker not in view.isr:  # a replica out of the ISR cannot be elected: wait for it a while
        if time.monotonic() > deadline:
            raise FaultError(
                f"broker {broker} is not in the ISR of {topic}-{partition} (ISR {list(view.isr)})"
            )
        await asyncio.sleep(0.05)
        view = await describe_partition(host, port, topic, partition)
    order = [broker, *(r for r in view.replicas if r != broker)]
    client = await KafkaClient.connect(host, port)
    try:
        moved = await client.request(
            messages.AlterPartitionReassignmentsRequest(
                timeout_ms=30_000,
                topics=[
                    messages.AlterPartitionReassignmentsRequestReassignableTopic(
                        name=topic,
                        partitions=[
                            messages.AlterPartitionReassignmentsRequestReassignablePartition(
                                partition_index=partition, replicas=order
                            )
                        ],
                    )
                ],
            )
        )
        codes = [moved.error_code] + [p.error_code for t in moved.responses for p in t.partitions]
        if any(codes):
            raise FaultError(f"the reassignment of {topic}-{partition} failed: {_names(codes)}")
        elected = await client.request(
            messages.ElectLeadersRequest(
                election_type=_PREFERRED,
                topic_partitions=[
                    messages.ElectLeadersRequestTopicPartitions(topic=topic, partitions=[partition])
                ],
                timeout_ms=30_000,
            )
        )
    finally:
        await client.close()
    codes = [elected.error_code] + [
        p.error_code for t in elected.replica_election_results for p in t.partition_result
    ]
    if any(c not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED) for c in codes):
        raise FaultError(f"the election of {broker} for {topic}-{partition} failed: {_names(codes)}")
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    while (await describe_partition(host, port, topic, partition)).leader != broker:
        if time.monotonic() > deadline:
            raise FaultError(f"{topic}-{partition} did not move to broker {broker} within {MOVE_TIMEOUT_S} s")
        await asyncio.sleep(0.05)


def _names(codes: list[int]) -> str:
    return ", ".join(str(getattr(ErrorCode.lookup(c), "name", c)) for c in codes if c)


# -- the control protocol -----------------------------------------------------------------------

_Handler = Callable[[BrokerServer, Mapping[str, object]], Awaitable[dict[str, object]]]


async def _errors(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    raw = body.get("errors", body.get("error"))
    codes = [error_code(c) for c in (raw if isinstance(raw, list) else [raw])]
    server.broker.faults.push_errors(
        api_key(body.get("api")), codes, count=_int(body, "count", 1), forever=bool(body.get("forever"))
    )
    return {}


async def _latency(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    api = body.get("api")
    server.broker.faults.add_latency(_int(body, "ms", 0), None if api is None else api_key(api))
    return {}


async def _close(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    server.broker.faults.close_mid_response(
        api_key(body.get("api")), _int(body, "count", 1), forever=bool(body.get("forever"))
    )
    return {}


async def _clear(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    api = body.get("api")
    server.broker.faults.clear(None if api is None else api_key(api))
    return {}


async def _down(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    server.set_down(True)
    return {}


async def _up(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    server.set_down(False)
    return {}


async def _leader(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    topic = body.get("topic")
    if not isinstance(topic, str):
        raise ValueError("topic: a string is needed")
    settings = server.config.cluster
    if settings is None or len(server.broker.node.view.brokers()) < 2:
        raise FaultError("a single node leads every partition: there is no other leader to move to")
    endpoint = next(
        (e for e in settings.listeners if e.listener not in settings.controller_listener_names), None
    )
    if endpoint is None:
        raise FaultError("a controller-only node: ask a broker")
    await move_leader(
        endpoint.host or "127.0.0.1",
        endpoint.port,
        topic,
        _int(body, "partition", 0),
        _int(body, "broker", -1),
    )
    return {}


async def _show(server: BrokerServer, body: Mapping[str, object]) -> dict[str, object]:
    return {"faults": server.broker.faults.describe(), "down": server.down}


#: The endpoints: (method, path) -> handler.
ENDPOINTS: Final[dict[tuple[str, str], _Handler]] = {
    ("POST", "/faults/errors"): _errors,
    ("POST", "/faults/latency"): _latency,
    ("POST", "/faults/close"): _close,
    ("POST", "/faults/clear"): _clear,
    ("POST", "/broker/down"): _down,
    ("POST", "/broker/up"): _up,
    ("POST", "/leader"): _leader,
    ("GET", "/faults"): _show,
}


def _int(body: Mapping[str, object], key: str, default: int) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: an integer is needed")
    return value


class ControlServer:
    """The control protocol of one :class:`BrokerServer`, on ``host:port`` (loopback)."""

    def __init__(self, server: BrokerServer) -> None:
        self._server = server
        self._listener: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port."""
        self._listener = await asyncio.start_server(self._handle, host, port)
        bound: int = self._listener.sockets[0].getsockname()[1]
        return bound

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, answer = await self._answer(reader)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            _log.debug("control connection: %s", exc)
            writer.close()
            return
        payload = json.dumps(answer).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict"}[status]
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload
        )
        try:
            await writer.drain()
        except OSError:
            pass
        writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, object]]:
        request_line = (await reader.readline()).decode("latin-1").split()
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip()) if value.strip().isdigit() else -1
        if len(request_line) != 3 or not 0 <= length <= MAX_CONTROL_BODY:
            return 400, {"ok": False, "error": "bad HTTP request"}
        method, path, _ = request_line
        handler = ENDPOINTS.get((method, path.split("?")[0]))
        if handler is None:
            return 404, {"ok": False, "error": f"no endpoint {method} {path}"}
        raw = await reader.readexactly(length) if length else b"{}"
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            result = await handler(self._server, body)
        except (ValueError, LocalProtocolError) as exc:  # json errors are ValueErrors
            return 400, {"ok": False, "error": str(exc)}
        except (FaultError, OSError) as exc:
            return 409, {"ok": False, "error": str(exc)}
        return 200, {"ok": True, **result}
