"""The client side of ``test_acls.py``, run in its own process: confluent-kafka over
SASL_SSL (PLAIN) as the super user ``admin`` and as ``alice``, printing what it saw as JSON.

Usage: ``python acl_client.py BOOTSTRAP CA_PEM`` (``CA_PEM``: the authority the brokers'
certificates are signed by; the topics, users and ACLs are fixed here).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from typing import Any

import confluent_kafka as ck
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # not in its stubs' exports
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}
#: The authority the brokers' certificates are signed by (``sys.argv[2]``).
CA = sys.argv[2] if len(sys.argv) > 2 else ""


def config(bootstrap: str, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": CA,
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


def produce(bootstrap: str, user: str, topic: str) -> str | None:
    """The delivery outcome of one message: None, or the error's name."""
    outcome: list[str | None] = []
    producer = ck.Producer(
        {**config(bootstrap, user), "message.timeout.ms": 10000, "enable.idempotence": False}
    )
    producer.produce(
        topic, b"value", callback=lambda err, msg: outcome.append(None if err is None else err.name())
    )
    producer.flush(15)
    return outcome[0] if outcome else "NO_REPORT"


def transaction(bootstrap: str, user: str, topic: str, transactional_id: str) -> str | None:
    """A transaction of one message, committed: None, or the first error's name."""
    producer = ck.Producer({**config(bootstrap, user), "transactional.id": transactional_id})
    try:
        producer.init_transactions(20)
        producer.begin_transaction()
        producer.produce(topic, b"in a transaction")
        producer.commit_transaction(20)
        return None
    except ck.KafkaException as exc:
        return str(exc.args[0].name())


def consume(bootstrap: str, user: str, topic: str, group: str, **extra: str) -> str:
    """``"got <value>"`` once a message arrives, else the first error's name."""
    consumer = ck.Consumer(
        {
            **config(bootstrap, user),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                return str(error.name())
            consumer.commit(message=msg, asynchronous=False)
            return f"got {(msg.value() or b'').decode()}"
        return "TIMEOUT"
    finally:
        consumer.close()


def visible_topics(bootstrap: str, user: str) -> list[str]:
    admin = AdminClient(config(bootstrap, user))
    return sorted(t for t in admin.list_topics(timeout=15).topics if not t.startswith("__"))


def match_all() -> Any:
    """A filter matching every binding (the stubs do not allow its None fields)."""
    return AclBindingFilter(
        ResourceType.ANY,
        None,  # type: ignore[arg-type]  # None matches any name
        ResourcePatternType.ANY,
        None,  # type: ignore[arg-type]  # any principal
        None,  # type: ignore[arg-type]  # any host
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def pay_eu_match() -> Any:
    """A MATCH filter: every binding that applies to the topic pay-eu."""
    return AclBindingFilter(
        ResourceType.TOPIC,
        "pay-eu",
        ResourcePatternType.MATCH,
        None,  # type: ignore[arg-type]  # any principal
        None,  # type: ignore[arg-type]  # any host
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def wait_described(bootstrap: str, count: int, ca: str = "", timeout_s: float = 60.0) -> None:
    """Wait until every broker of ``bootstrap`` describes ``count`` ACLs. A broker loads committed
    ACLs into its authorizer after CreateAcls is answered, each broker of a cluster on its own
    (Kafka's and kafka-wire's alike): asked through a client that picks any broker, one that has
    them says nothing of the others. Each broker is asked directly (kafka_wire's client: the
    admin clients cannot choose the broker). ``ca``: the brokers' authority (else :data:`CA`)."""
    deadline = time.monotonic() + timeout_s
    for address in bootstrap.split(","):
        host, port = address.rsplit(":", 1)
        while (described := asyncio.run(_described(host, int(port), ca or CA))) < count:
            assert time.monotonic() < deadline, f"{address} describes {described} ACLs, not {count}"
            time.sleep(0.1)  # polling the broker under the deadline


async def _described(host: str, port: int, ca: str) -> int:
    from kafka_wire.adapters.asyncio import KafkaClient
    from kafka_wire.messages import DescribeAclsRequest, DescribeAclsResponse
    from kafka_wire.protocol.sasl import PlainClient

    tls = ssl.create_default_context(cafile=ca)
    async with await KafkaClient.connect(
        host, port, sasl=PlainClient("admin", PASSWORDS["admin"]), ssl=tls
    ) as client:
        answer = await client.request(
            DescribeAclsRequest(
                resource_type_filter=1,  # ANY
                resource_name_filter=None,
                pattern_type_filter=1,  # ANY
                principal_filter=None,
                host_filter=None,
                operation=1,  # ANY
                permission_type=1,  # ANY
            )
        )
    assert isinstance(answer, DescribeAclsResponse) and answer.error_code == 0, answer
    return sum(len(resource.acls) for resource in answer.resources)


def main() -> None:
    bootstrap = sys.argv[1]
    admin = AdminClient(config(bootstrap, "admin"))
    seen: dict[str, Any] = {}
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "pay-eu", "secret")]).values():
        f.result(timeout=30)
    seen["alice sees before"] = visible_topics(bootstrap, "alice")
    seen["alice produces before"] = produce(bootstrap, "alice", "orders")
    alice = "User:alice"
    bindings = [
        AclBinding(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            alice,
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            alice,
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.GROUP,
            "g1",
            ResourcePatternType.LITERAL,
            alice,
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.TOPIC,
            "pay-",
            ResourcePatternType.PREFIXED,
            alice,
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.TOPIC,
            "pay-eu",
            ResourcePatternType.LITERAL,
            alice,
            "*",
            AclOperation.WRITE,
            AclPermissionType.DENY,
        ),
    ]
    for f in admin.create_acls(bindings).values():
        f.result(timeout=30)
    wait_described(bootstrap, len(bindings))
    described = admin.describe_acls(match_all()).result(timeout=30)
    seen["acls"] = sorted(
        f"{b.restype.name} {b.name} {b.resource_pattern_type.name} {b.principal} {b.host} {b.operation.name} {b.permission_type.name}"
        for b in described
    )
    seen["alice sees after"] = visible_topics(bootstrap, "alice")
    seen["alice produces orders"] = produce(bootstrap, "alice", "orders")
    seen["alice consumes orders in g1"] = consume(bootstrap, "alice", "orders", "g1")
    seen["alice produces pay-eu (DENY WRITE)"] = produce(bootstrap, "alice", "pay-eu")
    seen["alice consumes orders in g2 (no group ACL)"] = consume(bootstrap, "alice", "orders", "g2")
    seen["alice produces secret"] = produce(bootstrap, "alice", "secret")
    seen["alice consumes orders in g2 (consumer protocol, no group ACL)"] = consume(
        bootstrap, "alice", "orders", "g2", **{"group.protocol": "consumer"}
    )
    seen["alice transaction as tx-alice"] = transaction(bootstrap, "alice", "orders", "tx-alice")
    txn_acl = AclBinding(
        ResourceType.TRANSACTIONAL_ID,
        "tx-",
        ResourcePatternType.PREFIXED,
        alice,
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for f in admin.create_acls([txn_acl]).values():
        f.result(timeout=30)
    wait_described(bootstrap, len(bindings) + 1)
    seen["alice transaction as tx-alice after WRITE on tx-"] = transaction(
        bootstrap, "alice", "orders", "tx-alice"
    )
    alice_admin = AdminClient(config(bootstrap, "alice"))  # kept: its futures need it alive
    try:
        for f in alice_admin.create_acls(bindings[:1]).values():
            f.result(timeout=30)
        seen["alice creates acls"] = None
    except ck.KafkaException as exc:
        seen["alice creates acls"] = exc.args[0].name()
    deleted = admin.delete_acls([pay_eu_match()])
    seen["deleted by a MATCH filter on pay-eu"] = sorted(
        f"{b.name} {b.resource_pattern_type.name} {b.operation.name} {b.permission_type.name}"
        for f in deleted.values()
        for b in f.result(timeout=30)
    )
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
