"""SASL against ``kafka-wire serve``: librdkafka authenticates with a PLAIN user of the listener's
JAAS entry and with SCRAM-SHA-256 and SCRAM-SHA-512 users created through AlterUserScramCredentials
(as Kafka's are), and a wrong password is refused clearly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.brokers import START_TIMEOUT_S, BrokerProcess, KafkaWireBroker, kafka_wire
from tests.e2e.sasl_setup import PLAIN_USERS, create_scram_users, sasl_properties

USERS = {
    "PLAIN": ("alice", PLAIN_USERS["alice"]),
    "SCRAM-SHA-256": ("bob", "b0b-pw"),
    "SCRAM-SHA-512": ("carol", "c4rol"),
}

PRODUCE = """
import json, sys
import confluent_kafka as ck
bootstrap, mechanism, user, password = sys.argv[1:5]
errors = []
producer = ck.Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
    "message.timeout.ms": 5000, "error_cb": lambda e: errors.append(str(e))})
delivered = []
producer.produce("sasl-topic", b"secret value", callback=lambda err, msg: delivered.append(None if err is None else str(err)))
producer.flush(8)
print(json.dumps({"delivered": delivered, "errors": errors[:1]}))
"""


class SaslBroker(KafkaWireBroker):
    """``kafka-wire serve`` with a SASL_PLAINTEXT listener and its SCRAM users created once started."""

    def command(self) -> list[str]:
        self.settings |= {"listeners": f"SASL_PLAINTEXT://{self.address.host}:{self.address.port}"}
        self.settings |= sasl_properties()
        return super().command()

    def start(self, timeout_s: float = START_TIMEOUT_S) -> float:
        took = super().start(timeout_s)
        create_scram_users(self.bootstrap, {m: u for m, u in USERS.items() if m != "PLAIN"})
        return took


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    plain = kafka_wire(tmp_path_factory.mktemp("sasl"))
    server = SaslBroker(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    server.start()
    yield server
    server.close()


def produce(broker: BrokerProcess, mechanism: str, user: str, password: str) -> dict[str, list[str | None]]:
    run = subprocess.run(
        [sys.executable, "-c", PRODUCE, broker.bootstrap, mechanism, user, password],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, list[str | None]] = json.loads(run.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("mechanism", list(USERS))
def test_librdkafka_authenticates(broker: SaslBroker, mechanism: str) -> None:
    user, password = USERS[mechanism]
    assert produce(broker, mechanism, user, password) == {"delivered": [None], "errors": []}


def test_a_wrong_password_is_refused(broker: SaslBroker) -> None:
    result = produce(broker, "SCRAM-SHA-256", "bob", "not-bobs")
    assert result["delivered"] and result["delivered"][0] is not None
    [error] = result["errors"]
    assert error is not None and "Authentication failed" in error


# -- KIP-368: re-authentication ------------------------------------------------------------------

REAUTH_MS = 2000

PRODUCE_FOR_A_WHILE = """
import json, sys, time
import confluent_kafka as ck
bootstrap, mechanism, user, password, seconds = sys.argv[1:6]
errors = []
producer = ck.Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
    "message.timeout.ms": 5000, "error_cb": lambda e: errors.append(str(e))})
delivered = []
end = time.monotonic() + float(seconds)
while time.monotonic() < end:
    producer.produce("reauth-topic", b"v", callback=lambda err, msg: delivered.append(None if err is None else str(err)))
    producer.flush(5)
    time.sleep(0.25)
print(json.dumps({"delivered": delivered, "errors": errors[:3]}))
"""


class ReauthBroker(SaslBroker):
    def command(self) -> list[str]:
        return [*super().command(), "--set", f"connections.max.reauth.ms={REAUTH_MS}"]


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReauthBroker]:
    plain = kafka_wire(tmp_path_factory.mktemp("reauth"))
    server = ReauthBroker(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    server.start()
    yield server
    server.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_librdkafka_reauthenticates_before_its_session_ends(
    reauth_broker: ReauthBroker, mechanism: str
) -> None:
    user, password = USERS[mechanism]
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            PRODUCE_FOR_A_WHILE,
            reauth_broker.bootstrap,
            mechanism,
            user,
            password,
            str(2.5 * REAUTH_MS / 1000),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["errors"] == [] and result["delivered"] and set(result["delivered"]) == {None}
    # The sessions outlived connections.max.reauth.ms only by re-authenticating: none was cut.
    assert "SASL session expired" not in reauth_broker.log()
