"""SASL as Kafka configures it, for the tests that run brokers with SASL_PLAINTEXT listeners:
the properties (``sasl.enabled.mechanisms``, one JAAS entry per mechanism, the inter-broker
mechanism), the same for ``kafka-wire serve`` and Apache Kafka 4.4, and SCRAM users created the
way Kafka's are, through AlterUserScramCredentials (confluent-kafka's AdminClient, logged in as
the PLAIN admin of the JAAS entry)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

PLAIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: The PLAIN user the broker itself logs in as (Kafka's inter-broker login) and the tests'
#: administrator.
ADMIN: Final = ("admin", "admin-secret")
#: Users of the PLAIN JAAS entry, besides the admin.
PLAIN_USERS: Final = {"alice": "alice-secret"}


def sasl_properties(listener: str = "SASL_PLAINTEXT") -> dict[str, str]:
    """The SASL properties of a broker whose ``listener`` is SASL_PLAINTEXT."""
    prefix = f"listener.name.{listener.lower()}"
    users = " ".join(f'user_{u}="{p}"' for u, p in {ADMIN[0]: ADMIN[1], **PLAIN_USERS}.items())
    props = {
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        f"{prefix}.plain.sasl.jaas.config": (
            f'{PLAIN_MODULE} required username="{ADMIN[0]}" password="{ADMIN[1]}" {users};'
        ),
    }
    for mechanism in MECHANISMS[1:]:
        props[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = f"{SCRAM_MODULE} required;"
    return props


def client_settings(mechanism: str, user: str, password: str) -> dict[str, str]:
    """librdkafka's settings for a SASL_PLAINTEXT login."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


CREATE_USERS = """
import json, sys
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
bootstrap, settings, users = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
admin = AdminClient({"bootstrap.servers": bootstrap, **settings})
# The brokers' metadata first: librdkafka then drops its bootstrap connection, which fails a
# request still in flight on it (_DESTROY_BROKER), as a slow machine showed.
admin.list_topics(timeout=30)
upsertions = {
    user: UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], 8192), password.encode())
    for mechanism, user, password in users
}
results = {}
for attempt in range(3):  # an upsertion is idempotent: one cut off in flight is sent again
    for user, future in admin.alter_user_scram_credentials(list(upsertions.values())).items():
        try:
            future.result(timeout=30)
            results[user] = None
        except Exception as exc:
            results[user] = str(exc)
    upsertions = {u: x for u, x in upsertions.items() if results[u] is not None and "_DESTROY_BROKER" in results[u]}
    if not upsertions:
        break
print(json.dumps(results))
"""


def create_scram_users(bootstrap: str, users: Mapping[str, tuple[str, str]]) -> None:
    """Create ``users`` (mechanism -> (user, password)) with AlterUserScramCredentials."""
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            CREATE_USERS,
            bootstrap,
            json.dumps(client_settings("PLAIN", *ADMIN)),
            json.dumps([[m, u, p] for m, (u, p) in users.items()]),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout.splitlines()[-1])
    assert set(results.values()) == {None}, results
