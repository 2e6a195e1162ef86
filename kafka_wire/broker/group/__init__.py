"""The group coordinator: classic consumer groups and committed offsets, as a pure state machine.

Hand-written (nothing here is generated). Modules:

``service``      :class:`GroupCoordinator` — the facade: requests and time in, effects out
``membership``   JoinGroup, SyncGroup, Heartbeat, LeaveGroup (the classic protocol's requests)
``rebalance``    members in and out, the join and sync phases, session expiry
``offsets``      OffsetCommit, OffsetDelete, retention, deleted topics
``offset_fetch`` OffsetFetch: the stored state, or with ``require_stable`` the latest once stored
``txn_offsets``  TxnOffsetCommit and pending transactional offsets
``admin``        ListGroups, DescribeGroups, DeleteGroups, ConsumerGroupDescribe
``consumer_groups``  KIP-848 consumer groups: ConsumerGroupHeartbeat, member timers
``consumer_model``, ``consumer_replay``, ``consumer_records``  their model, replay and records
``reconciliation``   a KIP-848 member's step towards its target (``MEMBER_TRANSITIONS``)
``assignors``    the ``uniform`` and ``range`` server-side assignors
``topic_regex``  RE2 regex subscriptions
``share_partition``  a KIP-932 share-partition's in-flight records (not served yet)
``persistence``  writes awaiting their outcome or not stored yet, replay of ``__consumer_offsets``
``runtime``      what they share: groups, clock, timers, the effects of the call
``model``        :class:`Group`, :class:`Member`, :class:`GroupSnapshot` and pure helpers
``states``       :class:`GroupState`, :data:`GROUP_TRANSITIONS` (the state machine as data)
``effects``      :class:`Respond`, :class:`Persist`
``records``      ``__consumer_offsets`` keys and values in Kafka's byte layouts
``config``       :class:`GroupConfig`
``api_keys``     :data:`GROUP_API_KEYS`, the APIs the coordinator answers

Wiring (see ``docs/internals/group-coordinator.md``)::

    coordinator = GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0))
    coordinator.load(records_of_consumer_offsets)            # at startup
    effects = coordinator.handle(token, request_body, api_version, now_ms, client_id=..., client_host=...)
    effects += coordinator.tick(now_ms)                       # when next_deadline_ms() is reached
    for effect in effects:                                    # in order
        if isinstance(effect, Persist):                       # append, then report the outcome
            error = append(effect.records, to=effect.partition)  # 0, or the log's error code
            effects += coordinator.persisted(effect.append_id, error, now_ms)
            # a write that timed out and is stored later: coordinator.replicated(append_id, now_ms)
        else: answer effect.token with effect.body at the request's version
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.lazy_exports import exports

if TYPE_CHECKING:
    from kafka_wire.broker.coordinator_keys import partition_for_group
    from kafka_wire.broker.group.api_keys import GROUP_API_KEYS
    from kafka_wire.broker.group.config import GroupConfig, GroupConfigError
    from kafka_wire.broker.group.effects import (
        APPEND_ERRORS,
        APPENDED_ERRORS,
        GroupEffect,
        KeyValue,
        Persist,
        Respond,
        client_error,
    )
    from kafka_wire.broker.group.model import CounterMemberIds, GroupSnapshot, MemberIdFactory
    from kafka_wire.broker.group.service import GroupCoordinator
    from kafka_wire.broker.group.states import GROUP_TRANSITIONS, GroupInput, GroupState

__all__ = [
    "APPENDED_ERRORS",
    "APPEND_ERRORS",
    "GROUP_API_KEYS",
    "GROUP_TRANSITIONS",
    "CounterMemberIds",
    "GroupConfig",
    "GroupConfigError",
    "GroupCoordinator",
    "GroupEffect",
    "GroupInput",
    "GroupSnapshot",
    "GroupState",
    "KeyValue",
    "MemberIdFactory",
    "Persist",
    "Respond",
    "client_error",
    "partition_for_group",
]


#: Each name of ``__all__`` and its module, imported on first use: the broker's configuration and
#: request routing need the settings and the API keys, not the coordinator (built on first use).
__getattr__ = exports(
    __name__,
    {
        "APPEND_ERRORS": "kafka_wire.broker.group.effects",
        "APPENDED_ERRORS": "kafka_wire.broker.group.effects",
        "GROUP_API_KEYS": "kafka_wire.broker.group.api_keys",
        "GROUP_TRANSITIONS": "kafka_wire.broker.group.states",
        "CounterMemberIds": "kafka_wire.broker.group.model",
        "GroupConfig": "kafka_wire.broker.group.config",
        "GroupConfigError": "kafka_wire.broker.group.config",
        "GroupCoordinator": "kafka_wire.broker.group.service",
        "GroupEffect": "kafka_wire.broker.group.effects",
        "GroupInput": "kafka_wire.broker.group.states",
        "GroupSnapshot": "kafka_wire.broker.group.model",
        "GroupState": "kafka_wire.broker.group.states",
        "KeyValue": "kafka_wire.broker.group.effects",
        "MemberIdFactory": "kafka_wire.broker.group.model",
        "Persist": "kafka_wire.broker.group.effects",
        "Respond": "kafka_wire.broker.group.effects",
        "client_error": "kafka_wire.broker.group.effects",
        "partition_for_group": "kafka_wire.broker.coordinator_keys",
    },
)
