"""Client quotas applied to the answers of a client's requests (Kafka's ``KafkaApis`` with its
produce, fetch, request and controller mutation quota managers, KIP-219).

When an answer to a client's request is built, the ``request_percentage`` quota that applies to
the connection's (user, client id) is checked (:meth:`.manager.QuotaManager.request_throttle`:
the handling time the driver measured and reported, ``ClientConnections.spent``, is recorded
after each call, so an answer's throttle time counts the time of the requests before it), and
for Produce and Fetch their bytes are recorded against the byte-rate quota:

- **Produce**: the records' bytes of the request, against ``producer_byte_rate``; the answer is
  the handler's, with ``throttle_time_ms`` raised to the throttle time.
- **Fetch**: the records' bytes of the answer, against ``consumer_byte_rate``; over the quota,
  those bytes are taken back and the answer carries no records (no partitions: Kafka's throttled
  fetch answer), only ``throttle_time_ms`` (a sessionless or new session's answer names no
  session, an incremental one keeps its session id). A replica's Fetch is never throttled.

Every other answer carries the request throttle time in ``throttle_time_ms`` (where its version
has the field); a forwarded CreateTopics, CreatePartitions or DeleteTopics answer also carries
its mutation quota's (``apis/mutation_quota.py``), and the longest counts. Exempt, as in Kafka: a
replica's Fetch, the brokers' own requests (:data:`REQUEST_QUOTA_EXEMPT`: WriteTxnMarkers...), an
acks=0 Produce (its byte rate still counts), a controller listener's requests.

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
from kafka_wire.broker.quotas.mutations import STRICT_SINCE
from kafka_wire.broker.state import Spliced
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:  # Produce and Fetch classes load with their first request (``messages`` is lazy)
    from kafka_wire.messages import FetchRequest

#: The brokers' own requests that Kafka answers exempt from the request quota (its
#: ``sendResponseExemptThrottle``; a replica's Fetch too, below).
REQUEST_QUOTA_EXEMPT: Final = frozenset(
    {
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.ALTER_PARTITION,
    }
)
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"


def _size(records: object) -> int:
    return len(records) if isinstance(records, bytes | bytearray | memoryview) else 0


def throttle(
    quotas: QuotaManager,
    principal: str,
    client_id: str,
    request: Message,
    answer: Message | Spliced,
    now_ms: int,
    *,
    answered: bool = True,
) -> tuple[Message | Spliced, int]:
    """The answer to send and the throttle time (ms, 0: none) for ``answer`` to ``request``: the
    longest of its byte-rate, ``request_percentage`` and (a forwarded mutation's) controller
    throttle times. ``answered`` false: an acks=0 Produce, which no request quota throttles."""
    user = user_of(principal)
    api_key = type(request).API_KEY
    if api_key == ApiKey.FETCH:
        assert isinstance(request, messages.FetchRequest)
        if request.replica_id >= 0 or request.replica_state.replica_id >= 0:
            return answer, 0  # a replica's: exempt
    exempt = not answered or api_key in REQUEST_QUOTA_EXEMPT
    request_ms = 0 if exempt else quotas.request_throttle(user, client_id, now_ms)
    if api_key == ApiKey.PRODUCE:
        assert isinstance(request, messages.ProduceRequest)
        if not isinstance(answer, messages.ProduceResponse):
            return answer, 0
        size = sum(_size(p.records) for t in request.topic_data for p in t.partition_data)
        ms = max(request_ms, quotas.record(PRODUCER_BYTE_RATE, user, client_id, size, now_ms))
        if ms > 0:
            answer.throttle_time_ms = max(answer.throttle_time_ms, ms)
        return answer, ms
    if api_key == ApiKey.FETCH:
        assert isinstance(request, messages.FetchRequest)
        body = answer.body if isinstance(answer, Spliced) else answer
        if not isinstance(body, messages.FetchResponse):
            return answer, 0
        size = sum(_size(p.records) for t in body.responses for p in t.partitions)
        ms = max(request_ms, quotas.record(CONSUMER_BYTE_RATE, user, client_id, size, now_ms))
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
    ms = request_ms
    if isinstance(answer, Message):
        if api_key in STRICT_SINCE:  # a forwarded answer's throttle time (the mutation quota's)
            ms = max(ms, getattr(answer, "throttle_time_ms", 0))
        if ms > 0 and hasattr(answer, "throttle_time_ms"):
            answer.throttle_time_ms = max(answer.throttle_time_ms, ms)
    return answer, ms


def cap_fetch(quotas: QuotaManager, principal: str, client_id: str, request: FetchRequest) -> None:
    """Bound a client's Fetch ``max_bytes`` by what its consume quota allows over the windows
    (Kafka's ``getMaxValueInQuotaWindow``), so that an answer can fit under the quota at all."""
    if request.replica_id >= 0 or request.replica_state.replica_id >= 0:
        return
    limit = quotas.max_value_in_window(CONSUMER_BYTE_RATE, user_of(principal), client_id)
    if limit is not None and request.max_bytes > limit:
        request.max_bytes = max(1, int(limit))
