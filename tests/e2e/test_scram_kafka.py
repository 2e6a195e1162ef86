"""SCRAM users created through the admin API, on ``kafka-wire serve`` and on Apache Kafka 4.4
configured the same way (the same SASL properties: ``sasl.enabled.mechanisms``, a JAAS entry per
mechanism on the SASL_PLAINTEXT listener): the AlterUserScramCredentials and
DescribeUserScramCredentials answers are compared field by field, then confluent-kafka and the Java
4.4 client log in with a SCRAM-SHA-512 user created by confluent-kafka's AdminClient and with a
PLAIN user of the JAAS entry, and a wrong password fails with SASL_AUTHENTICATION_FAILED on both.

Both brokers also have ``delegation.token.secret.key``: the delegation-token APIs answer a series
of requests alike (errors compared field by field, the tokens' own ids, times and HMACs aside),
and the Java 4.4 client creates, describes, renews a token, produces and consumes logged in with
it (SCRAM-SHA-512, ``tokenauth="true"``), is refused a token on that connection, expires it and
is refused a login with it, on both."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import subprocess
import sys
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Final

import pytest

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.broker.controller.tokens_image import token_hmac
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestScramCredentialDeletion,
    AlterUserScramCredentialsRequestScramCredentialUpsertion,
    AlterUserScramCredentialsResponse,
    CreateDelegationTokenRequest,
    CreateDelegationTokenRequestCreatableRenewers,
    CreateDelegationTokenResponse,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenRequestOwner,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequestUserName,
    DescribeUserScramCredentialsResponse,
    ErrorCode,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
)
from kafka_wire.protocol.sasl import PlainClient, ScramClient
from kafka_wire.protocol.sasl.scram import salted_password
from tests.e2e.apache_kafka import KafkaNode, apache_kafka
from tests.e2e.brokers import BrokerProcess, KafkaWireBroker, kafka_wire
from tests.e2e.sasl_setup import ADMIN, PLAIN_USERS, client_settings, create_scram_users, sasl_properties
from tests.interop.harness import java_command

SALT: Final = b"salt-of-thirty-two-bytes-exactly"
SHA_256: Final = 1
SHA_512: Final = 2
#: A SCRAM-SHA-512 user created with confluent-kafka's AdminClient before the tests.
DAVE: Final = ("dave", "dave-secret")
#: Delegation tokens on, for the token tests at the end of this module.
TOKEN_PROPERTIES: Final = {"delegation.token.secret.key": "e2e-token-secret"}


class SaslWire(KafkaWireBroker):
    def command(self) -> list[str]:
        self.settings |= {"listeners": f"SASL_PLAINTEXT://{self.address.host}:{self.address.port}"}
        self.settings |= sasl_properties() | TOKEN_PROPERTIES
        return super().command()


def sasl_kafka(workdir: Path) -> KafkaNode:
    node = apache_kafka(workdir)
    (host, port), controller = node.address, node.controller_port
    node.overrides = {
        "listeners": f"SASL_PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller}",
        "advertised.listeners": f"SASL_PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller}",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        **sasl_properties(),
        **TOKEN_PROPERTIES,
    }
    return node


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BrokerProcess]]:
    plain = kafka_wire(tmp_path_factory.mktemp("scram-wire"))
    wire = SaslWire(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    kafka = sasl_kafka(tmp_path_factory.mktemp("scram-kafka"))
    started: list[BrokerProcess] = []
    both: tuple[BrokerProcess, ...] = (wire, kafka)
    try:
        for broker in both:
            broker.start()
            started.append(broker)
            create_scram_users(broker.bootstrap, {"SCRAM-SHA-512": DAVE})
        yield {"kafka_wire": wire, "apache_kafka": kafka}
    finally:
        for broker in started:
            broker.close()


def _upsert(name: str, mechanism: int = SHA_512, iterations: int = 4096) -> object:
    digest = "SCRAM-SHA-256" if mechanism == SHA_256 else "SCRAM-SHA-512"
    return AlterUserScramCredentialsRequestScramCredentialUpsertion(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=SALT,
        salted_password=salted_password(digest, "pw", SALT, 4096),
    )


def _delete(name: str, mechanism: int = SHA_512) -> object:
    return AlterUserScramCredentialsRequestScramCredentialDeletion(name=name, mechanism=mechanism)


#: Requests sent in order, each answered by both brokers.
ALTERATIONS: Final = [
    ([], [_upsert("erin", SHA_256), _upsert("erin2")]),
    (
        [
            _delete("nobody"),
            _delete(""),
            _delete("x", 0),
            _delete("erin", SHA_512),
            _delete("gone"),
            _delete("gone"),
        ],
        [
            _upsert("few", iterations=4095),
            _upsert("many", iterations=16385),
            _upsert("odd", mechanism=3),
            _upsert("erin2"),
            _upsert("twice"),
            _upsert("twice"),
            _upsert(""),
            _upsert("ok", SHA_256, 16384),
        ],
    ),
    ([_delete("erin", SHA_256), _delete("erin2")], [_upsert("ok", SHA_512)]),
]
DESCRIPTIONS: Final = [None, [], ["ok", "ok", "erin", "dave"], ["ok", "nobody"]]
#: How long a broker may take to show the last alteration: Kafka's answers once its controller has
#: committed the records, and its broker describes from a metadata image that catches up later
#: (on a loaded machine a describe right after the alteration still listed ``erin2``).
CAUGHT_UP_S: Final = 30.0


async def _wait_for_last_alteration(client: KafkaClient) -> None:
    """Until a describe shows the last of :data:`ALTERATIONS`: ``erin2`` gone, ``ok`` with both
    mechanisms."""
    users = [DescribeUserScramCredentialsRequestUserName(name=u) for u in ("erin2", "ok")]
    deadline = asyncio.get_running_loop().time() + CAUGHT_UP_S
    while True:
        described = await client.request(DescribeUserScramCredentialsRequest(users=users))
        assert isinstance(described, DescribeUserScramCredentialsResponse)
        shown = {r.user: (r.error_code, len(r.credential_infos)) for r in described.results}
        if shown == {"erin2": (ErrorCode.RESOURCE_NOT_FOUND, 0), "ok": (ErrorCode.NONE, 2)}:
            return
        assert asyncio.get_running_loop().time() < deadline, f"the last alteration not shown: {shown}"
        await asyncio.sleep(0.05)


async def _answers(broker: BrokerProcess) -> dict[str, object]:
    host, port = broker.address
    alters: list[object] = []
    describes: list[object] = []
    async with await KafkaClient.connect(host, port, sasl=PlainClient(*ADMIN)) as client:
        for deletions, upsertions in ALTERATIONS:
            request = AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions)  # type: ignore[arg-type]
            answer = await client.request(request)
            assert isinstance(answer, AlterUserScramCredentialsResponse)
            alters.append([(r.user, r.error_code, r.error_message) for r in answer.results])
        await _wait_for_last_alteration(client)
        for users in DESCRIPTIONS:
            named = (
                None
                if users is None
                else [DescribeUserScramCredentialsRequestUserName(name=u) for u in users]
            )
            described = await client.request(DescribeUserScramCredentialsRequest(users=named))
            assert isinstance(described, DescribeUserScramCredentialsResponse)
            describes.append(
                (
                    described.error_code,
                    described.error_message,
                    # Kafka's users come in its HashMap's order (kafka_wire's too); a user's
                    # mechanisms in an order that changes from run to run (an enum-keyed HashMap).
                    [
                        (
                            r.user,
                            r.error_code,
                            r.error_message,
                            sorted((c.mechanism, c.iterations) for c in r.credential_infos),
                        )
                        for r in described.results
                    ],
                )
            )
    return {"alter": alters, "describe": describes}


def test_the_admin_answers_are_kafkas(brokers: dict[str, BrokerProcess]) -> None:
    answers = {name: asyncio.run(_answers(broker)) for name, broker in brokers.items()}
    assert answers["kafka_wire"] == answers["apache_kafka"]
    # and what they say: the records were written and read back
    assert answers["kafka_wire"]["describe"][0][2] == [  # type: ignore[index]
        ("dave", 0, "", [(SHA_512, 8192)]),
        ("ok", 0, "", [(SHA_256, 16384), (SHA_512, 4096)]),
    ]


PRODUCE: Final = """
import json, sys
import confluent_kafka as ck
bootstrap, settings, timeout_ms = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
errors = []
producer = ck.Producer({"bootstrap.servers": bootstrap, **settings, "message.timeout.ms": timeout_ms,
    "error_cb": lambda e: errors.append((e.code(), e.str()))})
delivered = []
producer.produce("scram-topic", b"v", callback=lambda err, msg: delivered.append(None if err is None else err.code()))
producer.flush(12)
print(json.dumps({"delivered": delivered, "errors": errors[:1]}))
"""


def _produce(
    broker: BrokerProcess, mechanism: str, user: str, password: str, timeout_ms: int = 8000
) -> dict[str, list[object]]:
    """One record produced as ``user`` (``timeout_ms``: librdkafka's ``message.timeout.ms``, how
    long a refused login takes to fail the delivery)."""
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            PRODUCE,
            broker.bootstrap,
            json.dumps(client_settings(mechanism, user, password)),
            str(timeout_ms),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, list[object]] = json.loads(run.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("name", ["kafka_wire", "apache_kafka"])
@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [("SCRAM-SHA-512", *DAVE), ("PLAIN", "alice", PLAIN_USERS["alice"])],
)
def test_confluent_kafka_logs_in(
    brokers: dict[str, BrokerProcess], name: str, mechanism: str, user: str, password: str
) -> None:
    assert _produce(brokers[name], mechanism, user, password) == {"delivered": [None], "errors": []}


#: librdkafka's RD_KAFKA_RESP_ERR__AUTHENTICATION: the broker's SASL_AUTHENTICATION_FAILED answer.
LIBRDKAFKA_AUTHENTICATION: Final = -169


@pytest.mark.parametrize("name", ["kafka_wire", "apache_kafka"])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_a_wrong_password_fails_to_authenticate(
    brokers: dict[str, BrokerProcess], name: str, mechanism: str
) -> None:
    user = DAVE[0] if mechanism != "PLAIN" else "alice"
    result = _produce(brokers[name], mechanism, user, "wrong", timeout_ms=2500)  # the error comes first
    assert result["delivered"] and result["delivered"][0] is not None
    [error] = result["errors"]
    assert isinstance(error, list)
    assert error[0] == LIBRDKAFKA_AUTHENTICATION and "Authentication failed" in str(error[1])


PROBE: Final = Path(__file__).resolve().parent / "java" / "ScramProbe.java"


@pytest.mark.parametrize("name", ["kafka_wire", "apache_kafka"])
def test_the_java_client_creates_a_scram_user_and_logs_in(
    brokers: dict[str, BrokerProcess], name: str
) -> None:
    """Kafka 4.4's Java client: Admin.alterUserScramCredentials, describeUserScramCredentials, a
    SCRAM-SHA-512 and a PLAIN producer, and a wrong password refused
    (SaslAuthenticationException: the broker's SASL_AUTHENTICATION_FAILED)."""
    command = java_command(
        PROBE, brokers[name].bootstrap, *ADMIN, "frank", "frank-secret", "java-scram", client="java4"
    )
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, (lines, run.stderr[-2000:])
    assert lines[0] == "described SCRAM-SHA-512 8192"
    assert lines[1].startswith("produced ") and lines[2].startswith("plain ")
    assert lines[3] == "refused SaslAuthenticationException"


# -- delegation tokens ------------------------------------------------------------------------------

TOKEN_PROBE: Final = Path(__file__).resolve().parent / "java" / "TokenProbe.java"


@pytest.mark.parametrize("name", ["kafka_wire", "apache_kafka"])
def test_the_java_client_uses_a_delegation_token(brokers: dict[str, BrokerProcess], name: str) -> None:
    """Kafka 4.4's Java client: Admin.createDelegationToken, describeDelegationToken,
    renewDelegationToken; a producer and a consumer logged in with the token (ScramLoginModule,
    ``tokenauth="true"``); an Admin on a token's connection refused a token
    (UnsupportedByAuthenticationException: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
    expireDelegationToken at once, then a login with the token refused."""
    command = java_command(
        TOKEN_PROBE, brokers[name].bootstrap, *ADMIN, "alice", "java-token", client="java4"
    )
    run = subprocess.run(command, capture_output=True, text=True, timeout=180)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, (lines, run.stderr[-2000:])
    assert lines == [
        "created User:admin User:admin [User:alice]",
        "described true",
        "renewed true",
        "produced 0",
        "consumed 1",
        "refused UnsupportedByAuthenticationException",
        "expired",
        "rejected SaslAuthenticationException",
    ]


def _token_client(broker: BrokerProcess, token_id: str, mac: bytes) -> Awaitable[KafkaClient]:
    password = base64.b64encode(mac).decode()
    scram = ScramClient(
        "SCRAM-SHA-512", token_id, password, secrets.token_urlsafe(18), extensions={"tokenauth": "true"}
    )
    return KafkaClient.connect(*broker.address, sasl=scram)


async def _described(client: KafkaClient, token_id: str, listed: bool) -> bool:
    """Whether the broker describes ``token_id``, once it does (``listed``) or no longer does
    (Kafka's broker answers from its metadata image, which may trail the controller's answer)."""
    for _ in range(200):
        answer = await client.request(DescribeDelegationTokenRequest(owners=None))
        found = token_id in [t.token_id for t in answer.tokens]
        if found == listed:
            return found
        await asyncio.sleep(0.05)
    return not listed


def _created(answer: CreateDelegationTokenResponse) -> tuple[object, ...]:
    """What two brokers' Create answers share (not the token's id, times and HMAC)."""
    made = answer.error_code == 0
    return (
        answer.error_code,
        answer.principal_type,
        answer.principal_name,
        answer.token_requester_principal_type,
        answer.token_requester_principal_name,
        answer.max_timestamp_ms - answer.issue_timestamp_ms if made else answer.issue_timestamp_ms,
        answer.expiry_timestamp_ms - answer.issue_timestamp_ms if made else answer.expiry_timestamp_ms,
        len(answer.token_id),
        answer.hmac == token_hmac(answer.token_id, TOKEN_PROPERTIES["delegation.token.secret.key"])
        if made
        else answer.hmac,
    )


async def _token_answers(broker: BrokerProcess) -> list[object]:
    """A series of delegation-token requests and what the broker answered (comparable fields)."""
    host, port = broker.address
    out: list[object] = []
    group = CreateDelegationTokenRequestCreatableRenewers(principal_type="Group", principal_name="g")
    alice = CreateDelegationTokenRequestCreatableRenewers(principal_type="User", principal_name="alice")
    async with await KafkaClient.connect(host, port, sasl=PlainClient(*ADMIN)) as admin:
        for version in (1, 3):
            out.append(_created(await admin.request(CreateDelegationTokenRequest(renewers=[group]), version)))
        renewed = await admin.request(RenewDelegationTokenRequest(hmac=b"none", renew_period_ms=-1))
        expired = await admin.request(ExpireDelegationTokenRequest(hmac=b"none", expiry_time_period_ms=-1))
        out.append([(a.error_code, a.expiry_timestamp_ms) for a in (renewed, expired)])
        empty = await admin.request(DescribeDelegationTokenRequest(owners=[]))
        out.append((empty.error_code, empty.tokens))
        made = await admin.request(CreateDelegationTokenRequest(renewers=[alice], max_lifetime_ms=3_600_000))
        out.append(_created(made))
        for_dave = await admin.request(
            CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="dave")
        )
        out.append(_created(for_dave))
        out.append(await _described(admin, made.token_id, True))
        async with await KafkaClient.connect(
            host, port, sasl=PlainClient("alice", PLAIN_USERS["alice"])
        ) as renewer:
            mine = await renewer.request(
                DescribeDelegationTokenRequest(
                    owners=[
                        DescribeDelegationTokenRequestOwner(principal_type="User", principal_name="alice")
                    ]
                )
            )
            out.append(
                sorted((t.principal_name, [r.principal_name for r in t.renewers]) for t in mine.tokens)
            )
            again = await renewer.request(RenewDelegationTokenRequest(hmac=made.hmac, renew_period_ms=60_000))
            out.append((again.error_code, again.expiry_timestamp_ms - made.issue_timestamp_ms > 0))
        async with await KafkaClient.connect(
            host, port, sasl=ScramClient("SCRAM-SHA-512", *DAVE, secrets.token_urlsafe(18))
        ) as dave:
            stranger = await dave.request(RenewDelegationTokenRequest(hmac=made.hmac, renew_period_ms=-1))
            strange = await dave.request(
                ExpireDelegationTokenRequest(hmac=made.hmac, expiry_time_period_ms=-1)
            )
            out.append([(a.error_code, a.expiry_timestamp_ms) for a in (stranger, strange)])
        async with await _token_client(broker, made.token_id, made.hmac) as used:
            refused = await used.request(CreateDelegationTokenRequest())
            out.append(_created(refused))
            hidden = await used.request(DescribeDelegationTokenRequest(owners=None))
            kept = await used.request(RenewDelegationTokenRequest(hmac=made.hmac, renew_period_ms=-1))
            out.append((hidden.error_code, hidden.tokens, kept.error_code, kept.expiry_timestamp_ms))
        for token in (made, for_dave):
            gone = await admin.request(
                ExpireDelegationTokenRequest(hmac=token.hmac, expiry_time_period_ms=-1)
            )
            out.append((gone.error_code, gone.expiry_timestamp_ms >= token.issue_timestamp_ms))
        out.append(await _described(admin, made.token_id, False))
        twice = await admin.request(ExpireDelegationTokenRequest(hmac=made.hmac, expiry_time_period_ms=-1))
        out.append((twice.error_code, twice.expiry_timestamp_ms))
    try:
        async with await _token_client(broker, made.token_id, made.hmac):
            out.append("logged in with an expired token")
    except AuthenticationError as exc:
        out.append(("refused", exc.error_code))
    return out


def test_the_delegation_token_answers_are_kafkas(brokers: dict[str, BrokerProcess]) -> None:
    answers = {name: asyncio.run(_token_answers(broker)) for name, broker in brokers.items()}
    assert answers["kafka_wire"] == answers["apache_kafka"]
    NOT_ALLOWED = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert answers["kafka_wire"] == [
        (ErrorCode.INVALID_PRINCIPAL_TYPE, "User", "admin", "", "", -1, -1, 0, b""),
        (ErrorCode.INVALID_PRINCIPAL_TYPE, "User", "admin", "User", "admin", -1, -1, 0, b""),
        [(ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0), (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)],
        (0, []),
        (0, "User", "admin", "User", "admin", 3_600_000, 3_600_000, 22, True),
        (0, "User", "dave", "User", "admin", 7 * 86_400_000, 86_400_000, 22, True),
        True,
        [("admin", ["alice"])],
        (0, True),
        [(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0), (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)],
        (NOT_ALLOWED, "User", "admin", "User", "admin", -1, -1, 0, b""),
        (NOT_ALLOWED, [], NOT_ALLOWED, -1),
        (0, True),
        (
            ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH,
            False,
        ),  # dave's token: the admin neither owns nor renews it
        False,
        (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0),
        ("refused", ErrorCode.SASL_AUTHENTICATION_FAILED),
    ]
