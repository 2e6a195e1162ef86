"""Byte-rate quotas applied to the answers of Produce and Fetch (Kafka's ``KafkaApis`` with its
produce and fetch quota managers, KIP-219).

When an answer to a client's Produce or Fetch is built, its bytes are recorded against the
quota that applies to the connection's (user, client id) (:mod:`.manager`):

- **Produce**: the records' bytes of the request, against ``producer_byte_rate``; the answer is
  the handler's, with ``throttle_time_ms`` raised to the throttle time.
- **Fetch**: the records' bytes of the answer, against ``consumer_byte_rate``; over the quota,
  those bytes are taken back and the answer carries no records (no partitions: Kafka's throttled
  fetch answer), only ``throttle_time_ms`` (a sessionless or new session's answer names no
  session, an incremental one keeps its session id). A replica's Fetch is never throttled.

The connection is then muted for the throttle time once the answer is out (the client is told
first, KIP-219); an acks=0 Produce, which gets no answer, mutes it at once. ``client_connections.py``
does that with the connection's mute state.
Kafka counts a request's or answer's whole size; the records' bytes are counted here (the rest
is a few dozen bytes per partition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.quotas.manager import QuotaManager, user_of
from kafka_wire.broker.state import Spliced
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:  # Produce and Fetch classes load with their first request (``messages`` is lazy)
    from kafka_wire.messages import FetchRequest

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
#: The APIs whose answers are throttled by a byte-rate quota.
THROTTLED_APIS: Final = frozenset({ApiKey.PRODUCE, ApiKey.FETCH})


def _size(records: object) -> int:
    return len(records) if isinstance(records, bytes | bytearray | memoryview) else 0


def throttle(
    quotas: QuotaManager,
    principal: str,
    client_id: str,
    request: Message,
    answer: Message | Spliced,
    now_ms: int,
) -> tuple[Message | Spliced, int]:
    """The answer to send and the throttle time (ms, 0: none) for ``answer`` to ``request``."""
    user = user_of(principal)
    api_key = type(request).API_KEY
    if api_key == ApiKey.PRODUCE:
        assert isinstance(request, messages.ProduceRequest)
        if not isinstance(answer, messages.ProduceResponse):
            return answer, 0
        size = sum(_size(p.records) for t in request.topic_data for p in t.partition_data)
        ms = quotas.record(PRODUCER_BYTE_RATE, user, client_id, size, now_ms)
        if ms > 0:
            answer.throttle_time_ms = max(answer.throttle_time_ms, ms)
        return answer, ms
    if api_key == ApiKey.FETCH:
        assert isinstance(request, messages.FetchRequest)
        if request.replica_id >= 0 or request.replica_state.replica_id >= 0:
            return answer, 0
        body = answer.body if isinstance(answer, Spliced) else answer
        if not isinstance(body, messages.FetchResponse):
            return answer, 0
        size = sum(_size(p.records) for t in body.responses for p in t.partitions)
        ms = quotas.record(CONSUMER_BYTE_RATE, user, client_id, size, now_ms)
        if ms <= 0:
            return answer, 0
        quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, size, now_ms)
        incremental = request.session_epoch > 0
        return (
            messages.FetchResponse(
                throttle_time_ms=max(body.throttle_time_ms, ms),
                error_code=ErrorCode.NONE,
                session_id=body.session_id if incremental else 0,
                responses=[],
            ),
            ms,
        )
    return answer, 0


def cap_fetch(quotas: QuotaManager, principal: str, client_id: str, request: FetchRequest) -> None:
    """Bound a client's Fetch ``max_bytes`` by what its consume quota allows over the windows
    (Kafka's ``getMaxValueInQuotaWindow``), so that an answer can fit under the quota at all."""
    if request.replica_id >= 0 or request.replica_state.replica_id >= 0:
        return
    limit = quotas.max_value_in_window(CONSUMER_BYTE_RATE, user_of(principal), client_id)
    if limit is not None and request.max_bytes > limit:
        request.max_bytes = max(1, int(limit))
