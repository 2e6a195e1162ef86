"""One handler module per API key; this table maps keys to handlers and to the versions served.

A handler is ``handle(ctx, request) -> response`` (or a :class:`~kafka_wire.broker.state.Waiting`
for requests it holds). Group APIs go to the group coordinator (``kafka_wire.broker.group``),
which answers them itself; SASL is answered by the connection layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kafka_wire.broker.apis import (
    alter_configs,
    alter_partition_reassignments,
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    find_coordinator,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    list_partition_reassignments,
    metadata,
    offset_for_leader_epoch,
    produce,
)
from kafka_wire.broker.group import GROUP_API_KEYS
from kafka_wire.messages import REQUESTS, ApiKey

# Handlers take their own request type; the broker dispatches by api key, so the table is untyped.
Handler = Callable[[Any, Any], Any]

HANDLERS: Final[dict[int, Handler]] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.ELECT_LEADERS: elect_leaders.handle,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments.handle,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments.handle,
    ApiKey.DESCRIBE_QUORUM: describe_quorum.handle,
    ApiKey.DESCRIBE_PRODUCERS: describe_producers.handle,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
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
