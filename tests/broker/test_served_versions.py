"""The versions the broker serves (the ApiVersions table), where they depart from the codec's."""

from __future__ import annotations

from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.messages import REQUESTS, ApiKey


def test_init_producer_id_stops_at_kafka_4_4s_highest() -> None:
    """v6 (KIP-939's two-phase commit) is in the codec but Kafka 4.4 does not serve it."""
    assert max(REQUESTS[ApiKey.INIT_PRODUCER_ID].VERSIONS) >= 6
    assert SUPPORTED[ApiKey.INIT_PRODUCER_ID] == (0, 5)
