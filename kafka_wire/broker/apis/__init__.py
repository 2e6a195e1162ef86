"""One handler module per API key a broker answers; this table maps keys to handler modules and to
the versions served. ``HANDLERS[key]`` imports the module of ``key`` on its first request.

A handler is ``handle(ctx, request) -> response`` (or a :class:`~kafka_wire.broker.state.Waiting`
for requests it holds). The metadata's admin APIs (:data:`FORWARDED`) go to the active controller
(``forward``; the controller part answering each is listed in ``docs/internals/broker.md``), as a
Kafka broker forwards them; CreateTopics first refuses the internal topics clients may not create
(``create_topics``). Group APIs go to the group coordinator (``kafka_wire.broker.group``), and
transaction APIs to the transaction coordinator (``kafka_wire.broker.txn``), which answer them
themselves; SASL is answered by the connection layer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from kafka_wire.broker.group.api_keys import GROUP_API_KEYS
from kafka_wire.messages import VALID_VERSIONS, ApiKey

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
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    }
)

#: Each API key and the module of this package whose ``handle`` answers it.
HANDLER_MODULES: Final[dict[int, str]] = {
    ApiKey.PRODUCE: "produce",
    ApiKey.FETCH: "fetch",
    ApiKey.LIST_OFFSETS: "list_offsets",
    ApiKey.METADATA: "metadata",
    ApiKey.FIND_COORDINATOR: "find_coordinator",
    ApiKey.API_VERSIONS: "api_versions",
    ApiKey.CREATE_TOPICS: "create_topics",
    ApiKey.DELETE_RECORDS: "delete_records",
    ApiKey.INIT_PRODUCER_ID: "init_producer_id",
    ApiKey.DESCRIBE_CONFIGS: "describe_configs",
    ApiKey.DESCRIBE_CLUSTER: "describe_cluster",
    ApiKey.DESCRIBE_LOG_DIRS: "describe_log_dirs",
    ApiKey.DESCRIBE_PRODUCERS: "describe_producers",
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: "describe_topic_partitions",
    ApiKey.OFFSET_FOR_LEADER_EPOCH: "offset_for_leader_epoch",
    ApiKey.WRITE_TXN_MARKERS: "write_txn_markers",
    ApiKey.CREATE_ACLS: "create_acls",
    ApiKey.DESCRIBE_ACLS: "describe_acls",
    ApiKey.DELETE_ACLS: "delete_acls",
    ApiKey.DESCRIBE_CLIENT_QUOTAS: "describe_client_quotas",
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: "describe_user_scram_credentials",
    # checked against the ACLs first (``guarded_share``), then ``share_fetch`` / ``share_acknowledge``
    ApiKey.SHARE_FETCH: "guarded_share",
    ApiKey.SHARE_ACKNOWLEDGE: "guarded_share",
    # the share coordinator's RPCs (partition leaders and the group coordinator send them)
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: "share_group_state",
    ApiKey.READ_SHARE_GROUP_STATE: "share_group_state",
    ApiKey.WRITE_SHARE_GROUP_STATE: "share_group_state",
    ApiKey.DELETE_SHARE_GROUP_STATE: "share_group_state",
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: "share_group_state",
    **dict.fromkeys(
        (
            ApiKey.CREATE_DELEGATION_TOKEN,
            ApiKey.RENEW_DELEGATION_TOKEN,
            ApiKey.EXPIRE_DELEGATION_TOKEN,
            ApiKey.DESCRIBE_DELEGATION_TOKEN,
        ),
        "delegation_tokens",
    ),
    # forwarded once checked against the ACLs (``guarded_forward``; ``forward`` without them)
    **dict.fromkeys(FORWARDED, "guarded_forward"),
}


class _Handlers(Mapping[int, Handler]):
    """API key to handler: a handler's module (and the message classes it uses) is imported on the
    first request of its key, so a broker loads only what its clients ask for."""

    __slots__ = ("_loaded",)

    def __init__(self) -> None:
        self._loaded: dict[int, Handler] = {}

    def __getitem__(self, key: int) -> Handler:
        handler = self._loaded.get(key)
        if handler is None:
            module = importlib.import_module(f"{__name__}.{HANDLER_MODULES[key]}")
            handler = self._loaded[key] = module.handle
        return handler

    def __iter__(self) -> Iterator[int]:
        return iter(HANDLER_MODULES)

    def __len__(self) -> int:
        return len(HANDLER_MODULES)

    def __contains__(self, key: object) -> bool:
        return key in HANDLER_MODULES


HANDLERS: Final[Mapping[int, Handler]] = _Handlers()

#: The group coordinator's APIs.
GROUP_APIS: Final = frozenset(GROUP_API_KEYS)
#: The transaction coordinator's (``kafka_wire.broker.txn``; InitProducerId with a transactional
#: id goes there too).
TXN_APIS: Final = frozenset(
    {
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
        ApiKey.DESCRIBE_TRANSACTIONS,
        ApiKey.LIST_TRANSACTIONS,
    }
)

#: The share group offset admin APIs (``kafka_wire.broker.share.admin``), answered by the
#: coordinators.
SHARE_ADMIN_APIS: Final = frozenset(
    {
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    }
)
#: Lowest versions served where Kafka 4 dropped older ones this broker cannot answer faithfully
#: (WriteTxnMarkers v0: KIP-896; the share APIs' v0, KIP-932's early access, gone in Kafka 4.1; as
#: Kafka 4.4's ApiVersions shows).
_MIN_VERSION: Final[dict[int, int]] = {
    ApiKey.PRODUCE: 3,
    ApiKey.FETCH: 4,
    ApiKey.WRITE_TXN_MARKERS: 1,
    ApiKey.CREATE_ACLS: 1,
    ApiKey.DESCRIBE_ACLS: 1,
    ApiKey.DELETE_ACLS: 1,
    ApiKey.SHARE_GROUP_HEARTBEAT: 1,
    ApiKey.SHARE_GROUP_DESCRIBE: 1,
    ApiKey.SHARE_FETCH: 1,
    ApiKey.SHARE_ACKNOWLEDGE: 1,
}
#: Highest versions served where the codec knows versions Kafka 4.4 does not serve: InitProducerId
#: v6 is KIP-939's two-phase commit, unreleased in 4.4 (and not served here).
_MAX_VERSION: Final[dict[int, int]] = {ApiKey.INIT_PRODUCER_ID: 5}


def _supported() -> dict[int, tuple[int, int]]:
    table = {}
    for key in sorted(
        {
            *HANDLERS,
            *GROUP_APIS,
            *TXN_APIS,
            *SHARE_ADMIN_APIS,
            ApiKey.SASL_HANDSHAKE,
            ApiKey.SASL_AUTHENTICATE,
        }
    ):
        versions = VALID_VERSIONS[key]
        high = min(max(versions), _MAX_VERSION.get(key, max(versions)))
        table[int(key)] = (max(min(versions), _MIN_VERSION.get(key, 0)), high)
    return table


SUPPORTED: Final = _supported()
