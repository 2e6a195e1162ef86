"""The client side of ``test_mtls_acls.py``, run in its own process: confluent-kafka over SSL
with client certificates (``bob``, a super user, and ``alice``), printing what it saw as JSON.

Usage: ``python mtls_acl_client.py BOOTSTRAP CA BOB_CERT BOB_KEY ALICE_CERT ALICE_KEY``.
"""

from __future__ import annotations

import json
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


def config(bootstrap: str, ca: str, cert: str, key: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": ca,
        "ssl.certificate.location": cert,
        "ssl.key.location": key,
        "ssl.endpoint.identification.algorithm": "none",
    }


def produce(settings: dict[str, Any], topic: str) -> str | None:
    outcome: list[str | None] = []
    producer = ck.Producer({**settings, "message.timeout.ms": 10000, "enable.idempotence": False})
    producer.produce(
        topic, b"value", callback=lambda err, msg: outcome.append(None if err is None else err.name())
    )
    producer.flush(15)
    return outcome[0] if outcome else "NO_REPORT"


def main() -> None:
    bootstrap, ca, bob_cert, bob_key, alice_cert, alice_key = sys.argv[1:7]
    bob = config(bootstrap, ca, bob_cert, bob_key)
    alice = config(bootstrap, ca, alice_cert, alice_key)
    admin = AdminClient(bob)
    for f in admin.create_topics([NewTopic("mtls-orders", 1, 1)]).values():
        f.result(timeout=30)
    seen: dict[str, Any] = {"alice before": produce(alice, "mtls-orders")}
    binding = AclBinding(
        ResourceType.TOPIC,
        "mtls-",
        ResourcePatternType.PREFIXED,
        "User:alice",  # the subject CN=alice,OU=clients,... mapped by ssl.principal.mapping.rules
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for f in admin.create_acls([binding]).values():
        f.result(timeout=30)
    match_all = AclBindingFilter(
        ResourceType.ANY,
        None,  # type: ignore[arg-type]  # None matches any name
        ResourcePatternType.ANY,
        None,  # type: ignore[arg-type]  # any principal
        None,  # type: ignore[arg-type]  # any host
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    deadline = time.monotonic() + 30  # Kafka's broker loads committed ACLs after answering
    while not admin.describe_acls(match_all).result(timeout=30):
        assert time.monotonic() < deadline, "the ACL is not described"
        time.sleep(0.1)
    seen["alice after"] = produce(alice, "mtls-orders")
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
