"""Faults a test asks the broker to commit on purpose (librdkafka mock's ``push_request_errors``,
franz-go kfake's ``ControlKey``).

A :class:`FaultInjector` holds what was asked; the broker (``Broker.faults``) consults it for each
client request it handles:

- **errors**: the next requests of an API key are answered with the given error codes, one code
  per request, in order, without being handled (:meth:`FaultInjector.push_errors`). The answer has
  the request's shape (:func:`injected_answer`): every topic, partition or resource asked for
  carries the code, or the response's top-level error where that is all the response has;
- **latency**: the answers of an API key, or of every API, leave ``ms`` later than they are
  ready (:meth:`FaultInjector.add_latency`; a broker-wide and a per-API latency add up). The
  connection is not read meanwhile, as for any request held unanswered;
- **close mid-response**: for the next requests of an API key, the first half of the response
  frame is sent, then the connection is closed (:meth:`FaultInjector.close_mid_response`).

Only requests from clients count: a follower's Fetch and requests on a controller listener never
meet a fault. ApiVersions and the SASL requests are answered by the connection itself, before the
broker sees a request, so they cannot be made to fail.

Pure: the injector reads no clock; the broker gives it ``now_ms``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.broker.effects import FileRegion
from kafka_wire.broker.error_answers import ERROR_ANSWERS, whole_answer
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import RESPONSES, ApiKey, ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: The message every injected error answer carries where the response has one.
INJECTED_MESSAGE: Final = "injected by kafka_wire's fault injection"


@dataclass(slots=True)
class _Queue:
    """What is left of one ``push_errors`` / ``close_mid_response`` for an API key."""

    items: deque[int]
    #: Start again from the first item once the last was used (never used up).
    forever: bool
    first: tuple[int, ...]

    def take(self) -> int | None:
        if not self.items:
            if not self.forever:
                return None
            self.items.extend(self.first)
        return self.items.popleft()


class FaultInjector:
    """The faults asked for, by API key (see the module docstring)."""

    __slots__ = ("_broker_latency_ms", "_closes", "_errors", "_latency_ms", "armed")

    def __init__(self) -> None:
        self._errors: dict[int, list[_Queue]] = {}
        self._closes: dict[int, list[_Queue]] = {}
        self._latency_ms: dict[int, int] = {}
        self._broker_latency_ms = 0
        #: Whether any fault is asked for (the broker's fast path when False).
        self.armed = False

    # -- what a test asks -----------------------------------------------------------------------

    def push_errors(
        self, api_key: int, codes: Sequence[int] | int, *, count: int = 1, forever: bool = False
    ) -> None:
        """Answer the next requests of ``api_key`` with ``codes``, one request each in order; a
        single code is used ``count`` times (a list: the whole list ``count`` times). With
        ``forever`` the codes start over once used, until :meth:`clear`. Pushes queue behind
        earlier ones of the same API."""
        key = _api(api_key)
        if key not in ERROR_ANSWERS and key not in _ANSWERS and not _has_top_level_error(key):
            raise LocalProtocolError(f"no error answer can be built for {key.name}")
        listed = [codes] if isinstance(codes, int) else list(codes)
        if not listed or count < 1:
            raise LocalProtocolError("push_errors needs at least one code and a count of at least 1")
        for code in listed:
            if not -32768 <= code <= 32767 or code == ErrorCode.NONE:
                raise LocalProtocolError(f"{code} is not an error code (an int16 other than 0)")
        self._errors.setdefault(key, []).append(_queue(listed * count, forever))
        self.armed = True

    def add_latency(self, ms: int, api_key: int | None = None) -> None:
        """Hold every answer of ``api_key`` (None: of every API) ``ms`` longer; 0 removes it."""
        if ms < 0:
            raise LocalProtocolError("latency must be at least 0 ms")
        if api_key is None:
            self._broker_latency_ms = ms
        elif ms:
            self._latency_ms[_api(api_key)] = ms
        else:
            self._latency_ms.pop(_api(api_key), None)
        self._rearm()

    def close_mid_response(self, api_key: int, count: int = 1, *, forever: bool = False) -> None:
        """For the next ``count`` requests of ``api_key`` (every one with ``forever``), send half
        of the response frame, then close the connection."""
        if count < 1:
            raise LocalProtocolError("close_mid_response needs a count of at least 1")
        self._closes.setdefault(_api(api_key), []).append(_queue([1] * count, forever))
        self.armed = True

    def clear(self, api_key: int | None = None) -> None:
        """Forget every fault of ``api_key`` (None: every fault, the broker-wide latency too).
        Answers already held keep their time."""
        if api_key is None:
            self._errors.clear()
            self._closes.clear()
            self._latency_ms.clear()
            self._broker_latency_ms = 0
        else:
            self._errors.pop(api_key, None)
            self._closes.pop(api_key, None)
            self._latency_ms.pop(api_key, None)
        self._rearm()

    def describe(self) -> dict[str, object]:
        """What is asked for now, as plain data (API names as keys)."""
        return {
            "errors": {ApiKey(k).name: [list(q.items) for q in qs] for k, qs in self._errors.items() if qs},
            "close_mid_response": {
                ApiKey(k).name: sum(len(q.items) for q in qs) for k, qs in self._closes.items() if qs
            },
            "latency_ms": {ApiKey(k).name: ms for k, ms in self._latency_ms.items()},
            "broker_latency_ms": self._broker_latency_ms,
        }

    # -- what the broker asks -------------------------------------------------------------------

    def take_error(self, api_key: int) -> int | None:
        """The error code the next request of ``api_key`` is to be answered with, or None."""
        return self._take(self._errors, api_key)

    def take_close(self, api_key: int) -> bool:
        """Whether this answer of ``api_key`` is to be cut short and its connection closed."""
        return self._take(self._closes, api_key) is not None

    def held_until(self, api_key: int, now_ms: int) -> int | None:
        """When an answer of ``api_key`` ready at ``now_ms`` may leave, or None: at once."""
        ms = self._broker_latency_ms + self._latency_ms.get(api_key, 0)
        return now_ms + ms if ms else None

    def _take(self, queues: dict[int, list[_Queue]], api_key: int) -> int | None:
        pending = queues.get(api_key)
        while pending:
            item = pending[0].take()
            if item is not None:
                return item
            pending.pop(0)
        if pending is not None:
            del queues[api_key]
            self._rearm()
        return None

    def _rearm(self) -> None:
        self.armed = bool(self._errors or self._closes or self._latency_ms or self._broker_latency_ms)


def cut_in_half(parts: list[object]) -> tuple[bytes, int]:
    """The first half of a response frame (``parts``: its bytes and file regions), at least one
    byte and within its leading bytes, and the frame's size: what a close mid-response sends."""
    total = sum(len(p) if isinstance(p, bytes) else p.size if isinstance(p, FileRegion) else 0 for p in parts)
    leading = b"".join(itertools.takewhile(lambda p: isinstance(p, bytes), parts))  # type: ignore[arg-type]  # bytes only, by the predicate
    return leading[: max(1, min(len(leading), total // 2))], total


def _queue(items: list[int], forever: bool) -> _Queue:
    return _Queue(deque(items), forever, tuple(items))


def _api(api_key: int) -> ApiKey:
    try:
        return ApiKey(api_key)
    except ValueError:
        raise LocalProtocolError(f"{api_key} is not an API key") from None


def _has_top_level_error(api_key: int) -> bool:
    """Whether every version the broker serves of ``api_key`` has a top-level ``error_code``."""
    response, served = RESPONSES.get(api_key), SUPPORTED.get(api_key)
    if response is None or served is None:
        return False
    return any(
        spec.name == "error_code" and all(v in spec.versions for v in range(served[0], served[1] + 1))
        for spec in response.FIELDS
    )


# -- answers in the request's shape -------------------------------------------------------------


def _produce(request: Message, code: int) -> Message:
    assert isinstance(request, messages.ProduceRequest)
    return messages.ProduceResponse(
        responses=[
            messages.ProduceResponseTopicProduceResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=[
                    messages.ProduceResponsePartitionProduceResponse(
                        index=p.index, error_code=code, base_offset=-1, error_message=INJECTED_MESSAGE
                    )
                    for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ]
    )


def _fetch(request: Message, code: int) -> Message:
    assert isinstance(request, messages.FetchRequest)
    return messages.FetchResponse(
        session_id=0,
        responses=[
            messages.FetchResponseFetchableTopicResponse(
                topic=t.topic,
                topic_id=t.topic_id,
                partitions=[
                    messages.FetchResponsePartitionData(  # empty records, as Kafka's partitionResponse
                        partition_index=p.partition,
                        error_code=code,
                        high_watermark=-1,
                        last_stable_offset=-1,
                        records=b"",
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _metadata(request: Message, code: int) -> Message:
    assert isinstance(request, messages.MetadataRequest)
    topics = request.topics or []
    return messages.MetadataResponse(
        error_code=code,
        topics=[
            messages.MetadataResponseTopic(error_code=code, name=t.name, topic_id=t.topic_id) for t in topics
        ],
    )


def _list_offsets(request: Message, code: int) -> Message:
    assert isinstance(request, messages.ListOffsetsRequest)
    return messages.ListOffsetsResponse(
        topics=[
            messages.ListOffsetsResponseTopicResponse(
                name=t.name,
                partitions=[
                    messages.ListOffsetsResponsePartitionResponse(
                        partition_index=p.partition_index, error_code=code, timestamp=-1, offset=-1
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def _offset_commit(request: Message, code: int) -> Message:
    assert isinstance(request, messages.OffsetCommitRequest)
    from kafka_wire.broker.group.model import offset_commit_error  # the coordinator loads on first use

    return offset_commit_error(request.topics, code)


def _find_coordinator(request: Message, code: int) -> Message:
    assert isinstance(request, messages.FindCoordinatorRequest)
    return messages.FindCoordinatorResponse(
        error_code=code,
        error_message=INJECTED_MESSAGE,
        node_id=-1,
        host="",
        port=-1,
        coordinators=[
            messages.FindCoordinatorResponseCoordinator(
                key=key, node_id=-1, host="", port=-1, error_code=code, error_message=INJECTED_MESSAGE
            )
            for key in request.coordinator_keys
        ],
    )


def _offset_fetch(request: Message, code: int) -> Message:
    assert isinstance(request, messages.OffsetFetchRequest)
    return messages.OffsetFetchResponse(
        error_code=code,
        topics=[
            messages.OffsetFetchResponseTopic(
                name=t.name,
                partitions=[
                    messages.OffsetFetchResponsePartition(
                        partition_index=i, committed_offset=-1, error_code=code
                    )
                    for i in t.partition_indexes
                ],
            )
            for t in request.topics or []
        ],
        groups=[
            messages.OffsetFetchResponseGroup(
                group_id=g.group_id,
                error_code=code,
                topics=[
                    messages.OffsetFetchResponseTopics(
                        name=t.name,
                        topic_id=t.topic_id,
                        partitions=[
                            messages.OffsetFetchResponsePartitions(
                                partition_index=i, committed_offset=-1, error_code=code
                            )
                            for i in t.partition_indexes
                        ],
                    )
                    for t in g.topics or []
                ],
            )
            for g in request.groups
        ],
    )


def _describe_groups(request: Message, code: int) -> Message:
    assert isinstance(request, messages.DescribeGroupsRequest)
    return messages.DescribeGroupsResponse(
        groups=[
            messages.DescribeGroupsResponseDescribedGroup(
                group_id=g, error_code=code, error_message=INJECTED_MESSAGE
            )
            for g in request.groups
        ]
    )


#: Builders for the APIs whose responses carry errors per topic or partition only.
_ANSWERS: Final[dict[int, Callable[[Message, int], Message]]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.METADATA: _metadata,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
}


def injected_answer(api_key: int, request: Message, code: int) -> Message:
    """The answer of ``request`` (of ``api_key``) failing as a whole with ``code``: every topic,
    partition or resource it names carries the code, or the top-level error where the response
    has nothing else (see :meth:`FaultInjector.push_errors` for the APIs it can build)."""
    if (build := _ANSWERS.get(api_key)) is not None:
        return build(request, code)
    return whole_answer(api_key, request, code, INJECTED_MESSAGE)
