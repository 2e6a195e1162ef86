"""The APIs the group coordinator answers: what the broker routes to it, known without loading it."""

from __future__ import annotations

from typing import Final

from kafka_wire.messages import ApiKey

#: The APIs :meth:`~kafka_wire.broker.group.service.GroupCoordinator.handle` answers.
GROUP_API_KEYS: Final = (
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.DELETE_GROUPS,
    ApiKey.OFFSET_DELETE,
    ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.CONSUMER_GROUP_DESCRIBE,
    ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
)
