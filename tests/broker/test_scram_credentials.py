"""SCRAM credentials as metadata records: AlterUserScramCredentials (decided by the controller's
SCRAM part, Kafka 4.4's checks and error codes), DescribeUserScramCredentials from the image, and
SCRAM logins against the image, on a single node driven in memory (across a restart too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.cluster_settings import STANDALONE_LISTENER
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.records import decode_record, encode_record
from kafka_wire.broker.controller.scram_image import ScramImage, java_hash_order
from kafka_wire.broker.sasl_config import ListenerSasl
from kafka_wire.codec.structs import Message
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestScramCredentialDeletion,
    AlterUserScramCredentialsRequestScramCredentialUpsertion,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequestUserName,
    DescribeUserScramCredentialsResponse,
    ErrorCode,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, ClientState, Response
from kafka_wire.protocol.sasl import PlainClient, SaslClientMechanism, ScramClient
from kafka_wire.protocol.sasl.scram import salted_password
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Engine

SHA_256: Final = 1
SHA_512: Final = 2
SALT: Final = b"0123456789abcdef0123456789abcdef"

SASL: Final = {
    STANDALONE_LISTENER: ListenerSasl(
        mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), plain_users={"admin": "admin-secret"}
    )
}


def engine(storage: MemoryStorage | None = None) -> Engine:
    return Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, sasl_listeners=SASL), storage=storage)


class Conn:
    """A client connection to the engine that authenticates with ``sasl``."""

    def __init__(self, engine: Engine, conn_id: int, sasl: SaslClientMechanism) -> None:
        self.engine, self.conn_id = engine, conn_id
        self.client = ClientConnection(ClientConfig(client_id=f"c{conn_id}"), sasl=sasl)
        engine.open(conn_id)
        self.events = self.pump()

    def pump(self) -> list[object]:
        events: list[object] = []
        for _ in range(100):
            data = self.client.data_to_send()
            if data:
                self.engine.feed(self.conn_id, data)
            reply = self.engine.take(self.conn_id)
            if reply:
                self.client.receive_data(reply)
            while (event := self.client.next_event()) is not NEED_DATA:
                events.append(event)
            if not data and not reply:
                if not self.engine.in_flight and self.client.state is ClientState.READY:
                    break
                self.engine.drain() if self.engine.in_flight else self.engine.advance(100)
        return events

    def request(self, body: Message) -> Message:
        self.engine.feed(self.conn_id, self.client.send(body))
        for _ in range(20):
            for event in self.pump():
                if isinstance(event, Response):
                    return event.body
            self.engine.advance(100)
        raise AssertionError("no response")


def admin(e: Engine, conn_id: int = 1) -> Conn:
    conn = Conn(e, conn_id, PlainClient("admin", "admin-secret"))
    assert conn.client.state is ClientState.READY
    return conn


def upsert(
    name: str, password: str = "pw", mechanism: int = SHA_512, iterations: int = 4096
) -> AlterUserScramCredentialsRequestScramCredentialUpsertion:
    hashed = salted_password(
        "SCRAM-SHA-512" if mechanism != SHA_256 else "SCRAM-SHA-256", password, SALT, 4096
    )
    return AlterUserScramCredentialsRequestScramCredentialUpsertion(
        name=name, mechanism=mechanism, iterations=iterations, salt=SALT, salted_password=hashed
    )


def delete(name: str, mechanism: int = SHA_512) -> AlterUserScramCredentialsRequestScramCredentialDeletion:
    return AlterUserScramCredentialsRequestScramCredentialDeletion(name=name, mechanism=mechanism)


def alter(
    conn: Conn,
    deletions: Sequence[AlterUserScramCredentialsRequestScramCredentialDeletion] = (),
    upsertions: Sequence[AlterUserScramCredentialsRequestScramCredentialUpsertion] = (),
) -> list[tuple[str, int, str | None]]:
    answer = conn.request(
        AlterUserScramCredentialsRequest(deletions=list(deletions), upsertions=list(upsertions))
    )
    assert isinstance(answer, AlterUserScramCredentialsResponse)
    return [(r.user, r.error_code, r.error_message) for r in answer.results]


def describe(conn: Conn, *users: str) -> list[tuple[str, int, list[tuple[int, int]]]]:
    request = DescribeUserScramCredentialsRequest(
        users=[DescribeUserScramCredentialsRequestUserName(name=u) for u in users] if users else None
    )
    answer = conn.request(request)
    assert isinstance(answer, DescribeUserScramCredentialsResponse)
    return [
        (r.user, r.error_code, [(c.mechanism, c.iterations) for c in r.credential_infos])
        for r in answer.results
    ]


def scram_login(e: Engine, conn_id: int, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Conn:
    return Conn(e, conn_id, ScramClient(mechanism, user, password, "client-nonce"))


def test_a_user_created_through_the_admin_api_logs_in_at_once_and_after_a_restart() -> None:
    e = engine()
    conn = admin(e)
    assert alter(conn, upsertions=[upsert("alice", "alice-secret")]) == [("alice", 0, None)]
    assert describe(conn) == [("alice", 0, [(SHA_512, 4096)])]
    assert scram_login(e, 2, "alice", "alice-secret").client.state is ClientState.READY
    with pytest.raises(AuthenticationError) as failure:
        scram_login(e, 3, "alice", "wrong")
    assert failure.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    with pytest.raises(AuthenticationError):  # the other mechanism has no credential for alice
        scram_login(e, 4, "alice", "alice-secret", "SCRAM-SHA-256")
    e.broker.shutdown(e.now_ms)
    e.drain()
    again = engine(e.storage)
    assert scram_login(again, 1, "alice", "alice-secret").client.state is ClientState.READY
    assert describe(admin(again, 2), "alice") == [("alice", 0, [(SHA_512, 4096)])]


def test_a_deleted_credential_no_longer_logs_in() -> None:
    e = engine()
    conn = admin(e)
    alter(conn, upsertions=[upsert("bob", mechanism=SHA_256), upsert("carol")])
    assert alter(conn, deletions=[delete("bob", SHA_256)]) == [("bob", 0, None)]
    with pytest.raises(AuthenticationError):
        scram_login(e, 2, "bob", "pw", "SCRAM-SHA-256")
    assert sorted(describe(conn, "bob", "carol")) == [
        ("bob", ErrorCode.RESOURCE_NOT_FOUND, []),
        ("carol", 0, [(SHA_512, 4096)]),
    ]


def test_kafka_checks_and_error_codes() -> None:
    conn = admin(engine())
    results = alter(
        conn,
        deletions=[delete("nobody"), delete(""), delete("x", 0), delete("twice"), delete("twice")],
        upsertions=[
            upsert("few", iterations=4095),
            upsert("many", iterations=16385),
            upsert("odd", mechanism=3),
            upsert("twice"),
            upsert("again"),
            upsert("again"),
            upsert("ok"),
        ],
    )
    missing = "Attempt to delete a user credential that does not exist"
    # One result per user: the users written first, then those refused, in Kafka's HashMap order.
    assert results[0] == ("ok", 0, None)
    assert [user for user, _, _ in results[1:]] == java_hash_order(
        ["nobody", "", "x", "twice", "few", "many", "odd", "again"]
    )
    assert {user: (code, message) for user, code, message in results} == {
        "ok": (0, None),
        "nobody": (ErrorCode.RESOURCE_NOT_FOUND, missing),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "x": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        # the deletion of "twice" failed first, so its later entries are not looked at
        "twice": (ErrorCode.RESOURCE_NOT_FOUND, missing),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "again": (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
    }
    assert describe(conn) == [("ok", 0, [(SHA_512, 4096)])]
    assert describe(conn, "ok", "ok", "none") == [  # Kafka's HashMap order
        ("none", ErrorCode.RESOURCE_NOT_FOUND, []),
        ("ok", ErrorCode.DUPLICATE_RESOURCE, []),
    ]


def test_results_come_in_the_order_of_kafkas_hash_maps() -> None:
    """Orders Kafka 4.4 answered with (tests/e2e/test_scram_kafka.py compares them live)."""
    assert java_hash_order(["erin", "erin2"]) == ["erin2", "erin"]
    assert java_hash_order(["nobody", "", "x", "erin", "gone", "few", "many", "odd", "twice"]) == [
        "", "twice", "x", "few", "nobody", "many", "erin", "odd", "gone",
    ]  # fmt: skip
    names = [f"user-{i}" for i in range(40)]  # a table grown to 64 buckets
    assert sorted(java_hash_order(names)) == sorted(names) and java_hash_order(names) != names


def test_the_records_round_trip_and_rebuild_the_image() -> None:
    record = UserScramCredentialRecord(
        name="alice",
        mechanism=SHA_256,
        salt=SALT,
        stored_key=b"s" * 32,
        server_key=b"k" * 32,
        iterations=4096,
    )
    removal = RemoveUserScramCredentialRecord(name="alice", mechanism=SHA_256)
    assert decode_record(encode_record(record)) == record
    assert decode_record(encode_record(removal)) == removal
    image = ScramImage()
    image.replay(record, DeltaBuilder())
    assert image.snapshot_records() == [record]
    credential = image.credential("alice", "SCRAM-SHA-256")
    assert credential is not None and credential.iterations == 4096
    assert image.credential("alice", "SCRAM-SHA-512") is None
    image.replay(removal, DeltaBuilder())
    assert image.snapshot_records() == [] and image.users == {}


def test_the_sasl_users_shortcut_still_works() -> None:
    """``sasl.users.*`` (kafka_wire's own): PLAIN and SCRAM users from the configuration, beside
    SCRAM users of the metadata."""
    users = {"PLAIN": {"admin": "admin-secret"}, "SCRAM-SHA-256": {"old": "old-pw"}}
    e = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, sasl_users=users))
    conn = admin(e)
    assert scram_login(e, 2, "old", "old-pw", "SCRAM-SHA-256").client.state is ClientState.READY
    assert alter(conn, upsertions=[upsert("new", "new-pw", SHA_256)]) == [("new", 0, None)]
    assert scram_login(e, 3, "new", "new-pw", "SCRAM-SHA-256").client.state is ClientState.READY
    with pytest.raises(AuthenticationError):
        scram_login(e, 4, "old", "wrong", "SCRAM-SHA-256")
