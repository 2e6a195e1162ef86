"""The ACL checks of the client quota and SCRAM credential APIs: AlterClientQuotas needs
ALTER_CONFIGS and DescribeClientQuotas DESCRIBE_CONFIGS on the cluster, AlterUserScramCredentials
ALTER and DescribeUserScramCredentials DESCRIBE (``apis/guarded_forward.py``,
``apis/describe_client_quotas.py``, ``apis/describe_user_scram_credentials.py``), as Kafka's
controller and ``KafkaApis`` check them."""

from __future__ import annotations

from kafka_wire.broker.security.acls import AclOperation as Op
from kafka_wire.broker.security.acls import ResourceType as Rt
from kafka_wire.messages import ErrorCode
from tests.broker.quotas.test_quota_admin import alter, describe, entry
from tests.broker.security.engine_users import acl, create_acls, login, secured_engine


def test_client_quota_apis_need_the_clusters_configs() -> None:
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    alice = login(engine, 2, "alice")
    quota = entry({"client-id": "app"}, {"producer_byte_rate": 1000.0})
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert alter(alice, quota) == [(denied, denied.description)]
    refused = describe(alice)
    assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and refused.entries is None
    assert alter(admin, quota) == [(ErrorCode.NONE, None)]
    create_acls(
        admin,
        acl(Rt.CLUSTER, "kafka-cluster", "User:alice", Op.DESCRIBE_CONFIGS),
        acl(Rt.CLUSTER, "kafka-cluster", "User:alice", Op.ALTER_CONFIGS),
    )
    assert describe(alice).error_code == ErrorCode.NONE
    assert alter(alice, entry({"client-id": "app"}, {"producer_byte_rate": None})) == [(ErrorCode.NONE, None)]


def test_scram_credential_apis_need_the_cluster() -> None:
    from kafka_wire.messages import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
    )
    from tests.broker.test_scram_credentials import upsert

    engine = secured_engine()
    admin = login(engine, 1, "admin")
    alice = login(engine, 2, "alice")
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    described = alice.request(DescribeUserScramCredentialsRequest(users=None)).body
    assert isinstance(described, DescribeUserScramCredentialsResponse) and described.error_code == denied
    altered = alice.request(AlterUserScramCredentialsRequest(upsertions=[upsert("carol")])).body
    assert isinstance(altered, AlterUserScramCredentialsResponse)
    assert [(r.user, r.error_code) for r in altered.results] == [("carol", denied)]
    altered = admin.request(AlterUserScramCredentialsRequest(upsertions=[upsert("carol")])).body
    assert isinstance(altered, AlterUserScramCredentialsResponse)
    assert [(r.user, r.error_code) for r in altered.results] == [("carol", ErrorCode.NONE)]
    create_acls(admin, acl(Rt.CLUSTER, "kafka-cluster", "User:alice", Op.DESCRIBE))
    described = alice.request(DescribeUserScramCredentialsRequest(users=None)).body
    assert (
        isinstance(described, DescribeUserScramCredentialsResponse) and described.error_code == ErrorCode.NONE
    )
    assert [r.user for r in described.results] == ["carol"]
