"""The ACL checks of the requests a controller listener serves, where Kafka's ``ControllerApis``
makes them (with an authorizer; the principal is the connection's, as on a broker listener).

- the quorum's and the brokers' own requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, the raft
  Fetch and FetchSnapshot, BrokerRegistration, BrokerHeartbeat, AlterPartition,
  AllocateProducerIds) and Envelope: CLUSTER_ACTION on the cluster;
- DescribeQuorum and ListPartitionReassignments: DESCRIBE on the cluster; ElectLeaders,
  AlterPartitionReassignments, AlterUserScramCredentials, CreateAcls, DeleteAcls and (unlike on a
  broker) DescribeCluster: ALTER on the cluster; AlterClientQuotas: ALTER_CONFIGS on the cluster;
- CreateTopics: CREATE on the cluster or on each topic; DeleteTopics: DELETE on the cluster or on
  each topic (a topic named by id only with the cluster's); CreatePartitions: ALTER on each topic;
  AlterConfigs and IncrementalAlterConfigs: ALTER_CONFIGS on each topic, on the cluster for a
  broker, broker-logger or client-metrics resource, on the group for a group's.

A refused request is answered whole: CLUSTER_AUTHORIZATION_FAILED, or the first refused item's
code for every item. Kafka's controller refuses only the items refused and carries out the rest;
a broker forwarding such a request (kafka_wire's brokers check each item before they forward,
``apis/guarded_forward.py``) or an admin client naming only what it may change never sees the
difference. The delegation-token APIs are checked by the controller's token part itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.error_answers import whole_answer
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType, principal_of
from kafka_wire.broker.security.authorizer import Authorizer
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

#: The APIs that need one operation on the cluster.
CLUSTER_OPERATIONS: Final[dict[int, AclOperation]] = {
    **dict.fromkeys(
        (
            ApiKey.VOTE,
            ApiKey.BEGIN_QUORUM_EPOCH,
            ApiKey.END_QUORUM_EPOCH,
            ApiKey.FETCH,
            ApiKey.FETCH_SNAPSHOT,
            ApiKey.BROKER_REGISTRATION,
            ApiKey.BROKER_HEARTBEAT,
            ApiKey.ALTER_PARTITION,
            ApiKey.ALLOCATE_PRODUCER_IDS,
            ApiKey.ENVELOPE,
        ),
        AclOperation.CLUSTER_ACTION,
    ),
    ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
    **dict.fromkeys(
        (
            ApiKey.ELECT_LEADERS,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            ApiKey.CREATE_ACLS,
            ApiKey.DELETE_ACLS,
            ApiKey.DESCRIBE_CLUSTER,
        ),
        AclOperation.ALTER,
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: AclOperation.ALTER_CONFIGS,
}
#: ``ConfigResource.Type`` codes whose configs need ALTER_CONFIGS on the cluster.
_CLUSTER_CONFIG_TYPES: Final = frozenset({4, 8, 16})
_TOPIC_CONFIGS, _GROUP_CONFIGS = 2, 32
_CLUSTER: Final = (ResourceType.CLUSTER, CLUSTER_NAME)

Item = tuple[ResourceType, str, int]
"""A resource a request acts on, and the error code its refusal carries."""


def refusal(authorizer: Authorizer, user: str, host: str, api_key: int, request: Message) -> Message | None:
    """The answer refusing ``request`` (of ``api_key``) from ``user`` at ``host`` on a controller
    listener, or None when it may go on."""
    principal = principal_of(user)
    operation = CLUSTER_OPERATIONS.get(api_key)
    if operation is not None:
        if authorizer.authorize(principal, host, operation, *_CLUSTER):
            return None
        return whole_answer(api_key, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    shortcut = _CLUSTER_SHORTCUTS.get(api_key)
    if shortcut is not None and authorizer.authorize(principal, host, shortcut, *_CLUSTER):
        return None
    item_operation = _ITEM_OPERATIONS.get(api_key)
    if item_operation is None:
        return None
    for rtype, name, code in _items(request):
        if not authorizer.authorize(principal, host, item_operation, rtype, name):
            return whole_answer(api_key, request, code)
    return None


#: The topic and config APIs: the operation each item needs.
_ITEM_OPERATIONS: Final[dict[int, AclOperation]] = {
    ApiKey.CREATE_TOPICS: AclOperation.CREATE,
    ApiKey.DELETE_TOPICS: AclOperation.DELETE,
    ApiKey.CREATE_PARTITIONS: AclOperation.ALTER,
    ApiKey.ALTER_CONFIGS: AclOperation.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: AclOperation.ALTER_CONFIGS,
}
#: Those an operation on the cluster allows whole.
_CLUSTER_SHORTCUTS: Final[dict[int, AclOperation]] = {
    ApiKey.CREATE_TOPICS: AclOperation.CREATE,
    ApiKey.DELETE_TOPICS: AclOperation.DELETE,
}


def _items(request: Message) -> Iterator[Item]:
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if isinstance(request, messages.CreateTopicsRequest | messages.CreatePartitionsRequest):
        for topic in request.topics:
            yield ResourceType.TOPIC, topic.name, refused
    elif isinstance(request, messages.DeleteTopicsRequest):
        for name in request.topic_names:
            yield ResourceType.TOPIC, name, refused
        for state in request.topics:  # by id: only the cluster's DELETE covers it
            yield (
                (ResourceType.TOPIC, state.name, refused) if state.name is not None else (*_CLUSTER, refused)
            )
    elif isinstance(request, messages.AlterConfigsRequest | messages.IncrementalAlterConfigsRequest):
        for resource in request.resources:
            if resource.resource_type == _TOPIC_CONFIGS:
                yield ResourceType.TOPIC, resource.resource_name, refused
            elif resource.resource_type == _GROUP_CONFIGS:
                yield ResourceType.GROUP, resource.resource_name, ErrorCode.GROUP_AUTHORIZATION_FAILED
            elif resource.resource_type in _CLUSTER_CONFIG_TYPES:
                yield (*_CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
