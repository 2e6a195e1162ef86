"""OAUTHBEARER on a broker listener: the settings read from Kafka's properties, the unsecured and
signed validators (tokens made here, RS256 keys made with ``cryptography``), and the engine's
exchange: a token accepted, a session that ends with the token, a refused token answered with the
RFC 7628 challenge, then SASL_AUTHENTICATION_FAILED."""

from __future__ import annotations

import base64
import json
from typing import Final

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.cluster_settings import STANDALONE_LISTENER
from kafka_wire.broker.oauth import KeySetError, KeySets, SignedValidator, UnsecuredValidator
from kafka_wire.broker.oauth_config import (
    OAUTHBEARER_LOGIN_MODULE,
    SIGNED_VALIDATOR,
    SignedSettings,
    UnsecuredSettings,
)
from kafka_wire.broker.sasl_config import ListenerSasl, SaslConfigError, listener_sasl
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import ErrorCode, MetadataRequest
from kafka_wire.protocol import NEED_DATA, Authenticated, ClientConfig, ClientConnection, Response
from kafka_wire.protocol.sasl import OAuthBearerClient, OAuthBearerRefusal, OAuthBearerToken
from tests.broker.engine import Engine

NOW_MS: Final = 1_700_000_000_000
NOW_S: Final = NOW_MS // 1000
JAAS: Final = f"{OAUTHBEARER_LOGIN_MODULE} required"


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def unsecured(claims: dict[str, object], header: dict[str, object] | None = None, signature: str = "") -> str:
    return f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}.{signature}"


def _raw_claims(claims: bytes) -> str:
    """An unsecured token whose claims are these bytes (JSON or not)."""
    return f"{_b64({'alg': 'none'})}.{base64.urlsafe_b64encode(claims).decode()}."


# -- settings ------------------------------------------------------------------------------------


def _props(**extra: str) -> dict[str, str]:
    return {
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{JAAS} {extra.pop('options', '')};",
        **{key.replace("_", "."): value for key, value in extra.items()},
    }


def test_the_unsecured_validator_is_the_default_and_reads_its_jaas_options() -> None:
    props = _props(
        options='unsecuredValidatorPrincipalClaimName="user" unsecuredValidatorRequiredScope="a b" '
        'unsecuredValidatorAllowableClockSkewMs="2000"'
    )
    settings = listener_sasl(props, "SASL_PLAINTEXT").oauth
    assert settings == UnsecuredSettings(
        principal_claim="user", required_scope=("a", "b"), clock_skew_ms=2000
    )


def test_the_signed_validator_reads_sasl_oauthbearer_properties_most_specific_first() -> None:
    props = {
        **_props(options='ssl.truststore.location="/t.pem" ssl.truststore.type="PEM"'),
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": SIGNED_VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": "https://idp/jwks",
        "listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url": "file:///keys.json",
        "sasl.oauthbearer.expected.audience": "kafka, other",
        "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.expected.issuer": "https://idp",
        "sasl.oauthbearer.clock.skew.seconds": "5",
    }
    settings = listener_sasl(props, "SASL_PLAINTEXT").oauth
    assert isinstance(settings, SignedSettings) and not settings.fetched
    assert (
        settings.jwks_url,
        settings.expected_audience,
        settings.expected_issuer,
        settings.clock_skew_s,
    ) == (
        "file:///keys.json",
        ("kafka", "other"),
        "https://idp",
        5,
    )
    assert settings.tls_options == {"ssl.truststore.location": "/t.pem", "ssl.truststore.type": "PEM"}


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({}, "sasl.oauthbearer.jwks.endpoint.url"),
        ({"sasl.oauthbearer.jwks.endpoint.url": "ftp://x"}, "sasl.oauthbearer.jwks.endpoint.url"),
        ({"sasl.oauthbearer.jwks.endpoint.url": "file:///k"}, "sasl.oauthbearer.expected.audience"),
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "file:///k", "sasl.oauthbearer.expected.audience": "k"},
            "sasl.oauthbearer.expected.issuer",
        ),
    ],
)
def test_the_signed_validator_needs_what_kafka_4_4_needs(extra: dict[str, str], key: str) -> None:
    props = {
        **_props(),
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": SIGNED_VALIDATOR,
        **extra,
    }
    with pytest.raises(SaslConfigError) as info:
        listener_sasl(props, "SASL_PLAINTEXT")
    assert info.value.key == key


def test_oauthbearer_needs_its_login_module_and_a_known_handler() -> None:
    with pytest.raises(SaslConfigError, match="OAuthBearerLoginModule"):
        listener_sasl(
            {
                **_props(),
                "sasl.jaas.config": "x required;",
                "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": "x required;",
            },
            "SASL_PLAINTEXT",
        )
    with pytest.raises(SaslConfigError, match="serves"):
        listener_sasl(
            {
                **_props(),
                "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "my.Handler",
            },
            "SASL_PLAINTEXT",
        )


# -- the unsecured validator ---------------------------------------------------------------------

VALID: Final = {"sub": "alice", "iat": NOW_S - 10, "exp": NOW_S + 60, "scope": ["read", "write"]}


def test_an_unsecured_token_gives_its_principal_expiry_and_scope() -> None:
    outcome = UnsecuredValidator(UnsecuredSettings()).validate(unsecured(VALID), NOW_MS)
    assert outcome == OAuthBearerToken(
        "alice",
        expires_ms=(NOW_S + 60) * 1000,
        start_ms=(NOW_S - 10) * 1000,
        scope=frozenset({"read", "write"}),
    )


@pytest.mark.parametrize(
    "token",
    [
        unsecured({**VALID, "exp": NOW_S}),  # now is on its expiry
        unsecured({**VALID, "iat": NOW_S + 1}),  # issued in the future
        unsecured({**VALID, "iat": NOW_S + 60}),  # exp <= iat
        unsecured({k: v for k, v in VALID.items() if k != "exp"}),
        unsecured({**VALID, "exp": "soon"}),
        unsecured({**VALID, "sub": " "}),
        unsecured({**VALID, "sub": 7}),
        unsecured({**VALID, "scope": 3}),
        unsecured(VALID, header={"alg": "RS256"}),
        unsecured(VALID, signature="c2ln"),
        unsecured(VALID).rstrip("."),
        "a..b",
        "not base64!.x.",
        f"{_b64({'alg': 'none'})}.{base64.urlsafe_b64encode(b'[' * 100_000 + b']' * 100_000).decode()}.",
        unsecured({**VALID, "exp": 10**400}),  # past a double
        _raw_claims(b'{"sub": "a", "exp": NaN}'),
        _raw_claims(b'{"sub": "a", "exp": Infinity}'),
    ],
)
def test_bad_unsecured_tokens_are_invalid_tokens(token: str) -> None:
    outcome = UnsecuredValidator(UnsecuredSettings()).validate(token, NOW_MS)
    assert (
        isinstance(outcome, OAuthBearerRefusal)
        and outcome.status == "invalid_token"
        and outcome.scope is None
    )


def test_the_clock_skew_and_the_principal_claim_are_the_jaas_options() -> None:
    validator = UnsecuredValidator(UnsecuredSettings(principal_claim="user", clock_skew_ms=5000))
    expired = unsecured({"user": "bob", "exp": NOW_S - 4})
    assert isinstance(validator.validate(expired, NOW_MS), OAuthBearerToken)
    assert isinstance(validator.validate(expired, NOW_MS + 2000), OAuthBearerRefusal)
    early = unsecured({"user": "bob", "iat": NOW_S + 4, "exp": NOW_S + 60})
    assert isinstance(validator.validate(early, NOW_MS), OAuthBearerToken)
    assert isinstance(validator.validate(early, NOW_MS - 2000), OAuthBearerRefusal)


def test_a_missing_required_scope_is_insufficient_scope_naming_the_list() -> None:
    validator = UnsecuredValidator(UnsecuredSettings(required_scope=("read", "admin")))
    outcome = validator.validate(unsecured(VALID), NOW_MS)
    assert isinstance(outcome, OAuthBearerRefusal)
    assert outcome.challenge() == b'{"status":"insufficient_scope", "scope":"[read, admin]"}'


# -- the signed validator ------------------------------------------------------------------------

#: A header nested deeper than Python's JSON reader recurses: refused, not a crash.
DEEP_HEADER: Final = base64.urlsafe_b64encode(b'{"a":' * 50_000 + b"1" + b"}" * 50_000).decode()
PRIVATE: Final = rsa.generate_private_key(public_exponent=65537, key_size=2048)
FORGER: Final = rsa.generate_private_key(public_exponent=65537, key_size=2048)
URL: Final = "file:///jwks.json"
SIGNED: Final = SignedSettings(jwks_url=URL, expected_audience=("kafka",), expected_issuer="https://idp")
CLAIMS: Final = {"sub": "carol", "iat": NOW_S, "exp": NOW_S + 60, "aud": "kafka", "iss": "https://idp"}


def jwks(*keys: tuple[str, rsa.RSAPrivateKey]) -> bytes:
    entries = []
    for kid, key in keys:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        entries.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
    return json.dumps({"keys": entries}).encode()


def signed(claims: dict[str, object], key: rsa.RSAPrivateKey = PRIVATE, kid: str | None = "k1") -> str:
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid} if kid else None)


@pytest.fixture
def keys() -> KeySets:
    held = KeySets()
    held.update(URL, jwks(("k1", PRIVATE)))
    return held


def test_a_signed_token_is_verified_with_the_key_of_its_kid(keys: KeySets) -> None:
    outcome = SignedValidator(SIGNED, keys).validate(signed(CLAIMS), NOW_MS)
    assert outcome == OAuthBearerToken("carol", expires_ms=(NOW_S + 60) * 1000, start_ms=NOW_MS)
    assert isinstance(
        SignedValidator(SIGNED, keys).validate(signed(CLAIMS, kid=None), NOW_MS), OAuthBearerToken
    )


@pytest.mark.parametrize(
    "token",
    [
        signed(CLAIMS, key=FORGER),  # forged: signed with another key under the same kid
        signed({**CLAIMS, "exp": NOW_S - 30}),  # expired past the 30 s skew
        signed({**CLAIMS, "aud": "elsewhere"}),
        signed({**CLAIMS, "aud": ["a", "b"]}),
        signed({**CLAIMS, "iss": "https://other"}),
        signed({k: v for k, v in CLAIMS.items() if k != "iat"}),
        signed({**CLAIMS, "nbf": NOW_S + 31}),
        signed({**CLAIMS, "sub": ""}),
        signed({**CLAIMS, "scope": ["ok", " "]}),
        unsecured(CLAIMS),
        unsecured(CLAIMS) + "c2ln",  # alg none with a signature
        jwt.encode(CLAIMS, "secret-of-32-bytes-at-the-least!", algorithm="HS256", headers={"kid": "k1"}),
        "one.two",
        DEEP_HEADER + ".e30.c2ln",
        signed({**CLAIMS, "exp": 10**400}),
    ],
)
def test_bad_signed_tokens_are_invalid_tokens(keys: KeySets, token: str) -> None:
    outcome = SignedValidator(SIGNED, keys).validate(token, NOW_MS)
    assert isinstance(outcome, OAuthBearerRefusal) and outcome.challenge() == b'{"status":"invalid_token"}'


def test_the_clock_skew_lets_a_token_just_expired_in() -> None:
    held = KeySets()
    held.update(URL, jwks(("k1", PRIVATE)))
    token = signed({**CLAIMS, "exp": NOW_S - 29})
    assert isinstance(SignedValidator(SIGNED, held).validate(token, NOW_MS), OAuthBearerToken)


def test_an_unknown_kid_asks_for_the_key_set_again(keys: KeySets) -> None:
    outcome = SignedValidator(SIGNED, keys).validate(signed(CLAIMS, kid="k2"), NOW_MS)
    assert isinstance(outcome, OAuthBearerRefusal)
    assert keys.take_wanted() == {URL} and keys.take_wanted() == set()
    keys.update(URL, jwks(("k1", PRIVATE), ("k2", PRIVATE)))
    assert isinstance(
        SignedValidator(SIGNED, keys).validate(signed(CLAIMS, kid="k2"), NOW_MS), OAuthBearerToken
    )


@pytest.mark.parametrize("document", [b"{}", b"not json", b'{"keys": [{"kty": "nope"}]}', b"\xff"])
def test_a_bad_key_set_is_refused_and_the_old_keys_stay(keys: KeySets, document: bytes) -> None:
    with pytest.raises(KeySetError):
        keys.update(URL, document)
    assert len(keys.keys(URL)) == 1


# -- in the engine -------------------------------------------------------------------------------


def _engine(max_reauth_ms: int = 0) -> Engine:
    listener = ListenerSasl(mechanisms=("OAUTHBEARER",), oauth=UnsecuredSettings())
    config = BrokerConfig(
        sasl_listeners={STANDALONE_LISTENER: listener}, connections_max_reauth_ms=max_reauth_ms
    )
    engine = Engine(config)
    engine.open(1)
    return engine


def pump(engine: Engine, client: ClientConnection) -> list[object]:
    events: list[object] = []
    for _ in range(10):
        data = client.data_to_send()
        if data:
            engine.feed(1, data)
        reply = engine.take(1)
        if reply:
            client.receive_data(reply, now_ms=engine.now_ms)
        while (event := client.next_event()) is not NEED_DATA:
            events.append(event)
        if not data and not reply:
            break
    return events


@pytest.mark.parametrize(("max_reauth_ms", "lifetime_ms"), [(0, 60_000), (10_000, 10_000), (90_000, 60_000)])
def test_the_session_lasts_until_the_token_expires_or_connections_max_reauth_ms(
    max_reauth_ms: int, lifetime_ms: int
) -> None:
    engine = _engine(max_reauth_ms)
    token = unsecured({"sub": "alice", "exp": (engine.now_ms + 60_000) / 1000})
    client = ClientConnection(ClientConfig(), sasl=OAuthBearerClient(token), now_ms=engine.now_ms)
    [login] = [e for e in pump(engine, client) if isinstance(e, Authenticated)]
    assert login.session_lifetime_ms == lifetime_ms
    engine.advance(lifetime_ms)
    engine.feed(1, client.send(MetadataRequest(topics=[]), now_ms=engine.now_ms))
    assert 1 not in engine.closed  # its last ms
    client.receive_data(engine.take(1))
    assert isinstance(client.next_event(), Response)
    engine.advance(1)
    engine.feed(1, client.send(MetadataRequest(topics=[]), now_ms=engine.now_ms))
    assert 1 in engine.closed and engine.take(1) == b""


def test_a_refused_token_gets_the_challenge_then_sasl_authentication_failed() -> None:
    engine = _engine()
    token = unsecured({"sub": "alice", "exp": engine.now_ms // 1000 - 1})
    client = ClientConnection(ClientConfig(), sasl=OAuthBearerClient(token), now_ms=engine.now_ms)
    with pytest.raises(AuthenticationError) as info:
        pump(engine, client)
        engine.advance(100)  # Kafka's failed-authentication delay
        pump(engine, client)
    assert info.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert '{"status":"invalid_token"}' in str(info.value)
    assert 1 in engine.closed
