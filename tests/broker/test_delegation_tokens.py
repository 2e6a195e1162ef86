"""Delegation tokens on a single node driven in memory: Create/Renew/Expire decided by the
controller's token part (through an Envelope naming the client's principal), Describe from the
image, SCRAM logins with ``tokenauth=true``, the periodic sweep of expired tokens, a restart, and
Kafka 4.4's error codes. The same scenario runs against Kafka 4.4 in
tests/e2e/test_scram_kafka.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Final

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.cluster_settings import STANDALONE_LISTENER
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.envelope import open_response, seal_request, serve_envelope
from kafka_wire.broker.controller.records import decode_record, encode_record
from kafka_wire.broker.controller.tokens_image import DelegationTokenImage, token_hmac
from kafka_wire.broker.sasl_config import ListenerSasl
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.token_auth import TokenScramServer
from kafka_wire.codec.structs import Message
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import (
    ApiKey,
    CreateDelegationTokenRequest,
    CreateDelegationTokenRequestCreatableRenewers,
    CreateDelegationTokenResponse,
    DelegationTokenRecord,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenRequestOwner,
    DescribeDelegationTokenResponse,
    EnvelopeRequest,
    EnvelopeResponse,
    ErrorCode,
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
    RemoveDelegationTokenRecord,
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from kafka_wire.protocol import ClientState, Response
from kafka_wire.protocol.sasl import PlainClient, ScramClient
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.controller.harness import Harness
from tests.broker.engine import Client, Engine
from tests.broker.security.engine_users import acl, create_acls, login, secured_engine
from tests.broker.test_scram_credentials import Conn, alter, upsert

SECRET: Final = "token-secret"
DAY: Final = 24 * 3_600_000
SASL: Final = {
    STANDALONE_LISTENER: ListenerSasl(
        mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        plain_users={"admin": "admin-secret", "bob": "bob-secret"},
    )
}


def engine(storage: MemoryStorage | None = None, **settings: int) -> Engine:
    """A node with SASL and a token secret key (``settings``: more properties, dots as
    underscores)."""
    config = BrokerConfig(group_initial_rebalance_delay_ms=0, sasl_listeners=SASL)
    properties = {"delegation.token.secret.key": SECRET}
    properties |= {key.replace("_", "."): str(value) for key, value in settings.items()}
    return Engine(BrokerConfig.from_properties(properties, config), storage=storage)


def plain(e: Engine, conn_id: int, user: str = "admin") -> Conn:
    conn = Conn(e, conn_id, PlainClient(user, f"{user}-secret"))
    assert conn.client.state is ClientState.READY
    return conn


def token_login(e: Engine, conn_id: int, token_id: str, mac: bytes, mechanism: str = "SCRAM-SHA-512") -> Conn:
    password = base64.b64encode(mac).decode()
    client = ScramClient(mechanism, token_id, password, "client-nonce", extensions={"tokenauth": "true"})
    return Conn(e, conn_id, client)


def create(conn: Conn, **fields: object) -> CreateDelegationTokenResponse:
    answer = conn.request(CreateDelegationTokenRequest(**fields))  # type: ignore[arg-type]
    assert isinstance(answer, CreateDelegationTokenResponse)
    return answer


def describe(conn: Conn, owners: list[tuple[str, str]] | None = None) -> DescribeDelegationTokenResponse:
    request = DescribeDelegationTokenRequest(
        owners=None
        if owners is None
        else [DescribeDelegationTokenRequestOwner(principal_type=t, principal_name=n) for t, n in owners]
    )
    answer = conn.request(request)
    assert isinstance(answer, DescribeDelegationTokenResponse)
    return answer


def renew(conn: Conn, mac: bytes, period_ms: int = -1) -> RenewDelegationTokenResponse:
    answer = conn.request(RenewDelegationTokenRequest(hmac=mac, renew_period_ms=period_ms))
    assert isinstance(answer, RenewDelegationTokenResponse)
    return answer


def expire(conn: Conn, mac: bytes, period_ms: int = -1) -> ExpireDelegationTokenResponse:
    answer = conn.request(ExpireDelegationTokenRequest(hmac=mac, expiry_time_period_ms=period_ms))
    assert isinstance(answer, ExpireDelegationTokenResponse)
    return answer


def test_a_token_is_created_described_used_renewed_and_expired() -> None:
    e = engine()
    admin = plain(e, 1)
    made = create(
        admin,
        renewers=[CreateDelegationTokenRequestCreatableRenewers(principal_type="User", principal_name="bob")],
    )
    assert made.error_code == 0
    assert (made.principal_type, made.principal_name) == ("User", "admin")
    assert (made.token_requester_principal_type, made.token_requester_principal_name) == ("User", "admin")
    assert made.issue_timestamp_ms == e.now_ms
    assert made.expiry_timestamp_ms == e.now_ms + DAY
    assert made.max_timestamp_ms == e.now_ms + 7 * DAY
    assert len(made.token_id) == 22 and not made.token_id.startswith("-")
    assert made.hmac == hmac.digest(SECRET.encode(), made.token_id.encode(), hashlib.sha512)

    [token] = describe(admin).tokens
    assert (token.token_id, token.hmac, token.principal_name) == (made.token_id, made.hmac, "admin")
    assert [(r.principal_type, r.principal_name) for r in token.renewers] == [("User", "bob")]
    assert describe(admin, []).tokens == []  # an empty owner list describes nothing

    # A SCRAM login with the token: the session is its owner's, and may not ask for tokens.
    for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
        used = token_login(e, 2, made.token_id, made.hmac, mechanism)
        assert used.client.state is ClientState.READY
        assert e.broker._clients._conns[2].principal == "admin"
        assert e.broker._clients._conns[2].token_authenticated
        used_by = e.broker._clients._conns[2].server.sasl_mechanism
        assert isinstance(used_by, TokenScramServer)  # its token's expiry bounds a KIP-368 session
        assert used_by.credential_expires_ms == made.expiry_timestamp_ms
        assert create(used).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert describe(used).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        refused = renew(used, made.hmac)
        assert (refused.error_code, refused.expiry_timestamp_ms) == (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            -1,
        )
        e.close(2)
    with pytest.raises(AuthenticationError):
        token_login(e, 3, made.token_id, b"not the hmac")

    # bob renews (a renewer); a stranger may not; the owner expires it later, then at once.
    e.advance(1000)
    bob = plain(e, 4, "bob")
    assert renew(bob, made.hmac, 3_600_000).error_code == 0
    assert describe(admin).tokens[0].expiry_timestamp == e.now_ms + 3_600_000
    alter(admin, upsertions=[upsert("carol", "carol-pw")])
    carol = Conn(e, 5, ScramClient("SCRAM-SHA-512", "carol", "carol-pw", "client-nonce"))
    assert renew(carol, made.hmac).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    assert expire(carol, made.hmac).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    # neither owner nor renewer, but without an authorizer everything is allowed (Kafka's too)
    assert [t.token_id for t in describe(carol).tokens] == [made.token_id]
    assert renew(admin, b"nope").error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    later = expire(admin, made.hmac, 60_000)
    assert (later.error_code, later.expiry_timestamp_ms) == (0, e.now_ms + 60_000)
    now = expire(admin, made.hmac)
    assert (now.error_code, now.expiry_timestamp_ms) == (0, e.now_ms)
    assert describe(admin).tokens == []
    with pytest.raises(AuthenticationError):
        token_login(e, 6, made.token_id, made.hmac)
    assert expire(admin, made.hmac).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_tokens_outlive_a_restart_and_expired_ones_are_swept() -> None:
    e = engine(delegation_token_expiry_time_ms=5000, delegation_token_expiry_check_interval_ms=1000)
    admin = plain(e, 1)
    made = create(admin, max_lifetime_ms=60_000)
    assert made.max_timestamp_ms == e.now_ms + 60_000 and made.expiry_timestamp_ms == e.now_ms + 5000
    e.broker.shutdown(e.now_ms)
    e.drain()
    again = engine(e.storage, delegation_token_expiry_time_ms=5000)
    assert token_login(again, 1, made.token_id, made.hmac).client.state is ClientState.READY
    assert [t.token_id for t in describe(plain(again, 2)).tokens] == [made.token_id]
    e = again
    e.advance(5000)  # at the expiry: still valid (Kafka compares with <)
    assert len(describe(plain(e, 3)).tokens) == 1
    e.advance(2000)
    assert renew(plain(e, 4), made.hmac).error_code in (
        ErrorCode.DELEGATION_TOKEN_EXPIRED,
        ErrorCode.DELEGATION_TOKEN_NOT_FOUND,
    )
    e.advance(3_600_000)  # the sweep (every hour by default after the restart) removed it
    assert describe(plain(e, 5)).tokens == []
    with pytest.raises(AuthenticationError):
        token_login(e, 6, made.token_id, made.hmac)


def test_kafkas_refusals() -> None:
    # No secret key: the controller refuses (AUTH_DISABLED, times 0) and Describe too.
    off = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, sasl_listeners=SASL))
    admin = plain(off, 1)
    made = create(admin)
    assert (made.error_code, made.principal_name, made.issue_timestamp_ms, made.token_id) == (
        ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, "admin", 0, "",
    )  # fmt: skip
    assert describe(admin).error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert renew(admin, b"x").error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    # A renewer that is not a User: the broker refuses (times -1).
    e = engine()
    admin = plain(e, 1)
    odd = create(
        admin,
        renewers=[CreateDelegationTokenRequestCreatableRenewers(principal_type="Group", principal_name="g")],
    )
    assert (odd.error_code, odd.issue_timestamp_ms, odd.max_timestamp_ms) == (
        ErrorCode.INVALID_PRINCIPAL_TYPE,
        -1,
        -1,
    )
    # For another owner (no authorizer: allowed), at v1 (no requester on the wire).
    other = create(admin, owner_principal_type="User", owner_principal_name="bob")
    assert (other.error_code, other.principal_name) == (0, "bob")
    assert [t.principal_name for t in describe(plain(e, 2, "bob"), [("User", "bob")]).tokens] == ["bob"]
    # A PLAINTEXT connection may not ask for tokens.
    bare = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, delegation_token_secret_key=SECRET))
    client = Client(bare, 1)
    for request, cls in (
        (CreateDelegationTokenRequest(), CreateDelegationTokenResponse),
        (RenewDelegationTokenRequest(hmac=b"x"), RenewDelegationTokenResponse),
        (ExpireDelegationTokenRequest(hmac=b"x"), ExpireDelegationTokenResponse),
        (DescribeDelegationTokenRequest(owners=None), DescribeDelegationTokenResponse),
    ):
        body = client.request(request).body
        assert isinstance(body, cls) and body.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_create_v1_leaves_the_requester_out() -> None:
    e = engine()
    admin = plain(e, 1)
    e.feed(1, admin.client.send(CreateDelegationTokenRequest(), 1))
    made = next(ev.body for ev in admin.pump() if isinstance(ev, Response))
    assert isinstance(made, CreateDelegationTokenResponse)
    assert made.error_code == 0 and made.token_id and made.token_requester_principal_name == ""


def test_records_round_trip_and_rebuild_the_image() -> None:
    record = DelegationTokenRecord(
        owner="User:alice",
        requester="User:admin",
        renewers=["User:bob"],
        issue_timestamp=1,
        max_timestamp=3,
        expiration_timestamp=2,
        token_id="tok",
    )
    removal = RemoveDelegationTokenRecord(token_id="tok")
    assert decode_record(encode_record(record)) == record
    assert decode_record(encode_record(removal)) == removal
    image = DelegationTokenImage()
    image.replay(record, DeltaBuilder())
    assert image.snapshot_records() == [record]
    assert image.token_for_hmac(token_hmac("tok", "k"), "k") is image.tokens["tok"]
    assert image.tokens["tok"].owner == ("User", "alice")
    image.replay(removal, DeltaBuilder())
    assert image.tokens == {}


def test_envelopes_the_controller_cannot_open() -> None:
    def never(_: object) -> Message:
        raise AssertionError("not handled")

    garbage = EnvelopeRequest(request_data=b"\x00\x26", request_principal=b"", client_host_address=bytes(4))
    assert serve_envelope(garbage, lambda key: True, never) == EnvelopeResponse(
        error_code=ErrorCode.INVALID_REQUEST
    )
    sealed = seal_request(CreateDelegationTokenRequest(), 3, ("User", "a"), False, "127.0.0.1")
    assert serve_envelope(sealed, lambda key: False, never) == EnvelopeResponse(
        error_code=ErrorCode.INVALID_REQUEST
    )
    sealed.request_principal = b"\x00\x07junk"
    assert serve_envelope(sealed, lambda key: True, never) == EnvelopeResponse(
        error_code=ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE
    )


def test_the_controller_takes_token_requests_only_from_a_brokers_envelope() -> None:
    """A token request straight to a controller listener (PLAINTEXT), or in an Envelope naming a
    token-authenticated principal, is refused as Kafka's controller refuses it; one in an
    Envelope is decided and answered inside an EnvelopeResponse."""
    h = Harness(delegation_token_secret_key=SECRET)
    h.tick()
    bare = h.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, CreateDelegationTokenRequest())
    assert isinstance(bare, CreateDelegationTokenResponse)
    assert (bare.error_code, bare.principal_name, bare.max_timestamp_ms) == (
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "ANONYMOUS", -1,
    )  # fmt: skip
    for token_authenticated, code in ((True, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), (False, 0)):
        sealed = seal_request(CreateDelegationTokenRequest(), 3, ("User", "ann"), token_authenticated, "::1")
        envelope = h.call(ApiKey.ENVELOPE, 0, sealed)
        inner = open_response(envelope, ApiKey.CREATE_DELEGATION_TOKEN, 3)
        assert isinstance(inner, CreateDelegationTokenResponse)
        assert (inner.error_code, inner.principal_name, inner.token_requester_principal_name) == (
            code,
            "ann",
            "ann",
        )
    assert [r.owner for r in h.raft.records() if isinstance(r, DelegationTokenRecord)] == ["User:ann"]


def test_kip_373_acls_on_other_owners_tokens() -> None:
    """With an authorizer: a token for another owner needs CREATE_TOKENS on that User; another's
    tokens are described with DESCRIBE on the token (by id) or DESCRIBE_TOKENS on its owner."""
    e = secured_engine(delegation_token_secret_key=SECRET)
    admin, alice, bob = login(e, 1, "admin"), login(e, 2, "alice"), login(e, 3, "bob")

    def create_for(client: Client, owner: str) -> CreateDelegationTokenResponse:
        body = client.request(
            CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name=owner)
        ).body
        assert isinstance(body, CreateDelegationTokenResponse)
        return body

    def described(client: Client) -> list[str]:
        body = client.request(DescribeDelegationTokenRequest(owners=None)).body
        assert isinstance(body, DescribeDelegationTokenResponse) and body.error_code == 0
        return sorted(t.principal_name for t in body.tokens)

    refused = create_for(bob, "carol")
    assert (refused.error_code, refused.principal_name, refused.token_requester_principal_name) == (
        ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, "carol", "bob",
    )  # fmt: skip
    assert create_for(bob, "bob").error_code == 0  # a token of one's own needs no ACL
    create_acls(admin, acl(ResourceType.USER, "User:carol", "User:bob", AclOperation.CREATE_TOKENS))
    carols = create_for(bob, "carol")
    assert (carols.error_code, carols.principal_name, carols.token_requester_principal_name) == (
        0,
        "carol",
        "bob",
    )
    assert described(alice) == [] and described(bob) == ["bob"] and described(admin) == ["bob", "carol"]
    create_acls(
        admin, acl(ResourceType.DELEGATION_TOKEN, carols.token_id, "User:alice", AclOperation.DESCRIBE)
    )
    assert described(alice) == ["carol"]
    create_acls(admin, acl(ResourceType.USER, "User:bob", "User:alice", AclOperation.DESCRIBE_TOKENS))
    assert described(alice) == ["bob", "carol"]


def test_the_secret_key_under_its_old_name() -> None:
    """``delegation.token.master.key`` (Kafka 3's name) sets the key unless the new name does."""
    old = BrokerConfig.from_properties({"delegation.token.master.key": "old"})
    assert old.delegation_token_secret_key == "old"
    both = {"delegation.token.master.key": "old", "delegation.token.secret.key": "new"}
    assert BrokerConfig.from_properties(both).delegation_token_secret_key == "new"
    assert BrokerConfig.from_properties(dict(reversed(both.items()))).delegation_token_secret_key == "new"
    assert "old" not in repr(old)  # a secret
