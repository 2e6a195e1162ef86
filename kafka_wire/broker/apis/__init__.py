"""One handler module per API key a broker answers; this table maps keys to handlers and to the
versions served.

A handler is ``handle(ctx, request) -> response`` (or a :class:`~kafka_wire.broker.state.Waiting`
for requests it holds). The metadata's admin APIs (:data:`FORWARDED`) go to the active controller
(``forward``; the controller part answering each is listed in ``docs/internals/broker.md``), as a
Kafka broker forwards them; CreateTopics first refuses the internal topics clients may not create
(``create_topics``). Group APIs go to the group coordinator (``kafka_wire.broker.group``), which
answers them itself; SASL is answered by the connection layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kafka_wire.broker.apis import (
    api_versions,
    create_topics,
    delete_records,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    fetch,
    find_coordinator,
    forward,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    produce,
)
from kafka_wire.broker.group import GROUP_API_KEYS
from kafka_wire.messages import REQUESTS, ApiKey

# Handlers take their own request type; the broker dispatches by api key, so the table is untyped.
Handler = Callable[[Any, Any], Any]

#: The admin APIs a broker forwards to the active controller as they are.
FORWARDED: Final = frozenset(
    {
        ApiKey.DELETE_TOPICS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.DESCRIBE_QUORUM,
    }
)

HANDLERS: Final[dict[int, Handler]] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.DESCRIBE_PRODUCERS: describe_producers.handle,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    **dict.fromkeys(FORWARDED, forward.handle),
}

#: The group coordinator's APIs.
GROUP_APIS: Final = frozenset(GROUP_API_KEYS)

#: Lowest versions served where Kafka 4 dropped older ones this broker cannot answer faithfully.
_MIN_VERSION: Final[dict[int, int]] = {ApiKey.PRODUCE: 3, ApiKey.FETCH: 4}
#: Highest versions served where the codec knows versions Kafka 4.4 does not serve: InitProducerId
#: v6 is KIP-939's two-phase commit, unreleased in 4.4 (and this broker has no transactions).
_MAX_VERSION: Final[dict[int, int]] = {ApiKey.INIT_PRODUCER_ID: 5}


def _supported() -> dict[int, tuple[int, int]]:
    table = {}
    for key in sorted({*HANDLERS, *GROUP_APIS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}):
        versions = REQUESTS[key].VERSIONS
        high = min(max(versions), _MAX_VERSION.get(key, max(versions)))
        table[int(key)] = (max(min(versions), _MIN_VERSION.get(key, 0)), high)
    return table


SUPPORTED: Final = _supported()
