"""SASL mechanisms: RFC vectors, client/server exchanges, failures, garbage and state sweeps."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.errors import AuthenticationError, LocalProtocolError
from kafka_wire.protocol.sasl import (
    DEFAULT_MAX_SCRAM_ITERATIONS,
    MECHANISMS,
    MIN_SCRAM_ITERATIONS,
    OAuthBearerClient,
    OAuthBearerClientState,
    OAuthBearerServer,
    OAuthBearerServerState,
    PlainClient,
    PlainClientState,
    PlainServer,
    PlainServerState,
    SaslClientMechanism,
    SaslServerMechanism,
    ScramClient,
    ScramClientState,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    ScramServerState,
)
from kafka_wire.protocol.sasl.scram import escape_username, salted_password, unescape_username

# -- RFC 7677 section 3 ----------------------------------------------------------------------------

RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

SHA256 = ScramMechanism.SHA_256
SHA512 = ScramMechanism.SHA_512
FAILED = 58  # SASL_AUTHENTICATION_FAILED


def rfc_credential() -> ScramCredential:
    return ScramCredential.from_password(SHA256, "pencil", RFC_SALT, 4096)


def test_rfc7677_client_messages_byte_for_byte() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", RFC_CLIENT_NONCE)
    assert client.name == "SCRAM-SHA-256"
    assert client.initial_response() == RFC_CLIENT_FIRST
    assert client.state is ScramClientState.AWAITING_SERVER_FIRST
    assert client.step(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.complete
    assert client.step(RFC_SERVER_FINAL) is None
    assert client.complete and client.state is ScramClientState.COMPLETE


def test_rfc7677_server_messages_byte_for_byte() -> None:
    looked_up: list[str] = []

    def lookup(name: str) -> ScramCredential | None:
        looked_up.append(name)
        return rfc_credential()

    server = ScramServer(SHA256, lookup, RFC_SERVER_NONCE)
    assert server.step(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert looked_up == ["user"] and not server.complete and server.principal == ""
    assert server.step(bytearray(RFC_CLIENT_FINAL)) == RFC_SERVER_FINAL
    assert server.complete and server.principal == "user"
    assert server.state is ScramServerState.COMPLETE


def _hi_by_the_rfc(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 section 2.2, written out: U1 = HMAC(p, salt + INT(1)), Ui = HMAC(p, Ui-1), XOR."""
    u = hmac.new(password, salt + b"\x00\x00\x00\x01", name).digest()
    out = bytearray(u)
    for _ in range(iterations - 1):
        u = hmac.new(password, u, name).digest()
        out = bytearray(a ^ b for a, b in zip(out, u, strict=True))
    return bytes(out)


@given(
    mechanism=st.sampled_from(ScramMechanism),
    password=st.text(max_size=20),
    salt=st.binary(min_size=1, max_size=40),
    iterations=st.integers(1, 60),
)
def test_hi_is_the_rfc_definition(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> None:
    expected = _hi_by_the_rfc(mechanism.hash_name, password.encode(), salt, iterations)
    assert salted_password(mechanism, password, salt, iterations) == expected


def test_credential_keys_follow_rfc5802() -> None:
    cred = ScramCredential.from_password(SHA512, "pencil", b"salt", 4096)
    salted = _hi_by_the_rfc("sha512", b"pencil", b"salt", 4096)
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    assert cred.stored_key == hashlib.sha512(client_key).digest()
    assert cred.server_key == hmac.new(salted, b"Server Key", "sha512").digest()
    assert cred.mechanism is SHA512 and cred.iterations == 4096 and cred.salt == b"salt"
    assert "stored_key" not in repr(cred) and "server_key" not in repr(cred)


# -- helpers --------------------------------------------------------------------------------------


def run(client: SaslClientMechanism, server: SaslServerMechanism) -> int:
    """Drive an exchange as the connections do; return the number of client tokens sent."""
    token: bytes | None = client.initial_response()
    sent = 0
    while token is not None:
        sent += 1
        token = client.step(server.step(token))
        assert sent < 5
    return sent


_CREDENTIALS: dict[tuple[ScramMechanism, str, str], ScramCredential] = {}


def credential(mechanism: ScramMechanism, password: str, user: str = "") -> ScramCredential:
    key = (mechanism, password, user)
    if key not in _CREDENTIALS:
        salt = hashlib.sha256(f"{mechanism}{user}{password}".encode()).digest()
        _CREDENTIALS[key] = ScramCredential.from_password(mechanism, password, salt, MIN_SCRAM_ITERATIONS)
    return _CREDENTIALS[key]


def users(table: Mapping[str, str], mechanism: ScramMechanism) -> Callable[[str], ScramCredential | None]:
    def lookup(name: str) -> ScramCredential | None:
        password = table.get(name)
        return None if password is None else credential(mechanism, password, name)

    return lookup


def scram_pair(
    mechanism: ScramMechanism = SHA256, *, password: str = "secret", user: str = "alice"
) -> tuple[ScramClient, ScramServer]:
    client = ScramClient(mechanism, user, password, secrets.token_urlsafe(18))
    server = ScramServer(mechanism, users({user: "secret"}, mechanism), secrets.token_urlsafe(18))
    return client, server


def manual_client_final(
    without_proof: str, client_first_bare: str, server_first: bytes, password: str
) -> bytes:
    """SHA-256 client-final computed here from RFC 5802's formulas, independently of ScramClient."""
    fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = _hi_by_the_rfc("sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    auth_message = f"{client_first_bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


# -- round trips ----------------------------------------------------------------------------------


def test_mechanism_names() -> None:
    assert MECHANISMS == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    assert [m.value for m in ScramMechanism] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.mark.parametrize("mechanism", list(ScramMechanism), ids=str)
def test_scram_client_and_server_authenticate_each_other(mechanism: ScramMechanism) -> None:
    client, server = scram_pair(mechanism)
    assert run(client, server) == 2
    assert client.complete and server.complete and server.principal == "alice"


def test_plain_round_trip() -> None:
    seen: list[tuple[str, str]] = []

    def check(user: str, password: str) -> bool:
        seen.append((user, password))
        return (user, password) == ("alice", "pässword")

    client, server = PlainClient("alice", "pässword"), PlainServer(check)
    assert client.initial_response() == "\x00alice\x00pässword".encode()
    assert server.step("\x00alice\x00pässword".encode()) == b""
    assert server.complete and server.principal == "alice" and seen == [("alice", "pässword")]
    assert client.step(b"") is None and client.complete


def test_plain_authzid_equal_to_the_user_is_accepted() -> None:
    assert PlainClient("bob", "pw", authzid="bob").initial_response() == b"bob\x00bob\x00pw"
    client, server = PlainClient("bob", "pw", authzid="bob"), PlainServer(lambda u, p: True)
    assert run(client, server) == 1 and server.principal == "bob"


def test_oauthbearer_round_trip_with_kafka_message_format() -> None:
    client = OAuthBearerClient("eyJhbGc.eyJzdWIi.sig-_", authzid="svc", extensions={"traceId": "123 abc"})
    message = client.initial_response()
    assert message == b"n,a=svc,\x01auth=Bearer eyJhbGc.eyJzdWIi.sig-_\x01traceId=123 abc\x01\x01"
    seen: list[tuple[str, dict[str, str]]] = []

    def validate(token: str, extensions: Mapping[str, str]) -> str | None:
        seen.append((token, dict(extensions)))
        return "svc"

    server = OAuthBearerServer(validate)
    assert server.step(message) == b""
    assert server.complete and server.principal == "svc"
    assert seen == [("eyJhbGc.eyJzdWIi.sig-_", {"traceId": "123 abc"})]
    assert client.step(b"") is None and client.complete


def test_oauthbearer_without_authzid_or_extensions() -> None:
    client = OAuthBearerClient("tok")
    assert client.initial_response() == b"n,,\x01auth=Bearer tok\x01\x01"
    client2 = OAuthBearerClient("tok")
    assert run(client2, OAuthBearerServer(lambda t, e: "p")) == 1


# -- SCRAM failures -------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", list(ScramMechanism), ids=str)
def test_wrong_password_fails_on_the_server_with_a_clear_message(mechanism: ScramMechanism) -> None:
    client, server = scram_pair(mechanism, password="wrong")
    client_final = client.step(server.step(client.initial_response()))
    assert client_final is not None
    with pytest.raises(
        AuthenticationError, match=f"invalid credentials for SASL mechanism {mechanism}"
    ) as info:
        server.step(client_final)
    assert info.value.error_code == FAILED
    assert server.state is ScramServerState.ERROR and not server.complete and server.principal == ""
    with pytest.raises(LocalProtocolError, match="in state ERROR"):
        server.step(client_final)


def test_unknown_user_fails_at_client_first_by_default() -> None:
    server = ScramServer(SHA256, lambda name: None, "srv")
    with pytest.raises(AuthenticationError, match="invalid credentials") as info:
        server.step(b"n,,n=nobody,r=abc")
    assert info.value.error_code == FAILED and server.state is ScramServerState.ERROR


def _server_first_salt(server: ScramServer, user: str) -> tuple[str, str]:
    first = server.step(f"n,,n={user},r=abc".encode()).decode()
    _, salt, iterations = first.split(",")
    return salt, iterations


def test_fake_salt_hides_unknown_users_until_client_final() -> None:
    key = b"server-secret"
    lookup = users({"alice": "secret"}, SHA256)
    salt1, i1 = _server_first_salt(ScramServer(SHA256, lookup, "n1", fake_salt_key=key), "ghost")
    salt2, _ = _server_first_salt(ScramServer(SHA256, lookup, "n2", fake_salt_key=key), "ghost")
    salt3, _ = _server_first_salt(ScramServer(SHA256, lookup, "n3", fake_salt_key=key), "other")
    assert salt1 == salt2 != salt3 and i1 == "i=4096"
    assert len(base64.b64decode(salt1[2:])) == 32
    # The unknown user fails where, and as, a wrong password fails.
    messages = []
    for user, password in (("ghost", "secret"), ("alice", "wrong")):
        client = ScramClient(SHA256, user, password, "cn")
        server = ScramServer(SHA256, lookup, "sn", fake_salt_key=key)
        final = client.step(server.step(client.initial_response()))
        assert final is not None
        with pytest.raises(AuthenticationError) as info:
            server.step(final)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_tampered_server_signature_fails_on_the_client() -> None:
    client, server = scram_pair()
    final = client.step(server.step(client.initial_response()))
    assert final is not None
    good = server.step(final)
    sig = bytearray(base64.b64decode(good[2:]))
    sig[0] ^= 1
    with pytest.raises(AuthenticationError, match="signature is wrong") as info:
        client.step(b"v=" + base64.b64encode(bytes(sig)))
    assert info.value.error_code is None
    assert client.state is ScramClientState.ERROR and not client.complete
    with pytest.raises(LocalProtocolError):
        client.step(good)


def test_a_server_that_does_not_know_the_password_is_caught() -> None:
    """A server with another password's credential cannot forge the signature (mutual auth)."""
    client = ScramClient(SHA256, "alice", "secret", "cn")
    imposter = ScramServer(SHA256, lambda n: credential(SHA256, "other", n), "sn")
    first = imposter.step(client.initial_response())
    final = client.step(first)
    assert final is not None
    cred = credential(SHA256, "other", "alice")
    auth_message = b"n=alice,r=cn," + first + b"," + final.rsplit(b",p=", 1)[0]
    forged = hmac.new(cred.server_key, auth_message, "sha256").digest()
    with pytest.raises(AuthenticationError, match="signature"):
        client.step(b"v=" + base64.b64encode(forged))


@pytest.mark.parametrize(
    ("server_first", "reason"),
    [
        (b"r=XXXX%hv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend the client nonce"),
        (b"r=" + RFC_CLIENT_NONCE.encode() + b",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=" + RFC_CLIENT_NONCE.encode() + b"x y,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "not printable"),
        (RFC_SERVER_FIRST.replace(b"i=4096", b"i=4095"), "fewer than the minimum 4096"),
        (RFC_SERVER_FIRST.replace(b"i=4096", b"i=16385"), "more than the maximum 16384"),
        (RFC_SERVER_FIRST.replace(b"i=4096", b"i=0"), "not a positive number"),
        (RFC_SERVER_FIRST.replace(b"i=4096", b"i=" + b"9" * 5000), "not a positive number"),
        (RFC_SERVER_FIRST.replace(b"i=4096", b"i=+4096"), "not a positive number"),
        (RFC_SERVER_FIRST.replace(b"W22ZaJ0SNY7soEsUEjb6gQ==", b"W22Z*J0S"), "not valid non-empty base64"),
        (RFC_SERVER_FIRST.replace(b"W22ZaJ0SNY7soEsUEjb6gQ==", b""), "not valid non-empty base64"),
        (RFC_SERVER_FIRST.replace(b"W22ZaJ0SNY7soEsUEjb6gQ==", "é".encode()), "not valid non-empty base64"),
        (b"m=ext," + RFC_SERVER_FIRST, "requires an extension"),
        (b"s=W22ZaJ0SNY7soEsUEjb6gQ==,r=x,i=4096", "malformed server-first"),
        (b"", "malformed server-first"),
        (b"\xff\xfe", "not UTF-8"),
        (RFC_SERVER_FIRST + b"\x00", "NUL"),
    ],
)
def test_client_refuses_bad_server_first(server_first: bytes, reason: str) -> None:
    client = ScramClient(SHA256, "user", "pencil", RFC_CLIENT_NONCE)
    client.initial_response()
    with pytest.raises(AuthenticationError, match=reason):
        client.step(server_first)
    assert client.state is ScramClientState.ERROR


def test_client_accepts_server_first_extensions_and_its_own_iteration_bounds() -> None:
    client = ScramClient(SHA256, "user", "pencil", RFC_CLIENT_NONCE, max_iterations=4096)
    client.initial_response()
    assert client.step(RFC_SERVER_FIRST + b",x=ignored") is not None
    low = ScramClient(SHA256, "user", "pencil", RFC_CLIENT_NONCE, min_iterations=1)
    low.initial_response()
    assert low.step(RFC_SERVER_FIRST.replace(b"i=4096", b"i=2")) is not None


@pytest.mark.parametrize(
    ("server_final", "reason"),
    [
        (b"e=invalid-proof", "the server refused authentication: invalid-proof"),
        (b"e=other-error,x=1", "refused authentication: other-error"),
        (b"x=abc", "malformed server-final"),
        (b"", "malformed server-final"),
        (b"v=not base64!", "signature is wrong"),
        (b"v=" + base64.b64encode(b"short"), "signature is wrong"),
    ],
)
def test_client_refuses_bad_server_final(server_final: bytes, reason: str) -> None:
    client = ScramClient(SHA256, "user", "pencil", RFC_CLIENT_NONCE)
    client.initial_response()
    client.step(RFC_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match=reason):
        client.step(server_final)
    assert client.state is ScramClientState.ERROR


def test_server_final_may_carry_extensions() -> None:
    client = ScramClient(SHA256, "user", "pencil", RFC_CLIENT_NONCE)
    client.initial_response()
    client.step(RFC_SERVER_FIRST)
    assert client.step(RFC_SERVER_FINAL + b",x=1") is None and client.complete


def rfc_server_after_first() -> ScramServer:
    server = ScramServer(SHA256, lambda n: rfc_credential(), RFC_SERVER_NONCE)
    server.step(RFC_CLIENT_FIRST)
    return server


def _proof_swapped(message: bytes) -> bytes:
    return message.replace(
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", b"p=" + base64.b64encode(b"\x00" * 32)
    )


@pytest.mark.parametrize(
    ("client_final", "reason"),
    [
        (RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"), "channel binding"),
        (RFC_CLIENT_FINAL.replace(b"c=biws", b"c=bi*s"), "channel binding"),
        (RFC_CLIENT_FINAL.replace(b"$k0,", b"$k1,"), "nonce in client-final is not this exchange"),
        (RFC_CLIENT_FINAL.replace(b"$k0,", b","), "nonce in client-final is not this exchange"),
        (RFC_CLIENT_FINAL.replace(b"$k0,", b"$k0extra,"), "nonce in client-final is not this exchange"),
        (_proof_swapped(RFC_CLIENT_FINAL), "invalid credentials for SASL mechanism SCRAM-SHA-256"),
        (RFC_CLIENT_FINAL[:-4] + b"AAA=", "invalid credentials"),
        (RFC_CLIENT_FINAL[:-1], "malformed SCRAM-SHA-256 client-final"),
        (RFC_CLIENT_FINAL + b"A", "malformed"),
        (RFC_CLIENT_FINAL.split(b",p=")[0], "malformed"),
        (RFC_CLIENT_FIRST, "malformed"),
        (b"c=biws,p=abc,r=x", "malformed"),
        (RFC_CLIENT_FINAL.replace(b",p=", b",1=2,p="), "malformed"),
        (b"", "malformed"),
        (b"\xc3", "not UTF-8"),
    ],
)
def test_server_refuses_bad_client_final(client_final: bytes, reason: str) -> None:
    server = rfc_server_after_first()
    with pytest.raises(AuthenticationError, match=reason) as info:
        server.step(client_final)
    assert (
        info.value.error_code == FAILED and server.state is ScramServerState.ERROR and server.principal == ""
    )


def test_server_accepts_client_final_extensions_inside_the_signed_message() -> None:
    """Extensions before p= are part of AuthMessage: signed ones pass, added ones break the proof."""
    server = rfc_server_after_first()
    without_proof = "c=biws,r=" + RFC_CLIENT_NONCE + RFC_SERVER_NONCE + ",x=1"
    final = manual_client_final(without_proof, "n=user,r=" + RFC_CLIENT_NONCE, RFC_SERVER_FIRST, "pencil")
    assert server.step(final).startswith(b"v=") and server.principal == "user"
    tampered = RFC_CLIENT_FINAL.replace(b",p=", b",x=1,p=")
    with pytest.raises(AuthenticationError, match="invalid credentials"):
        rfc_server_after_first().step(tampered)


def test_the_manual_client_reproduces_the_rfc_vector() -> None:
    without_proof = "c=biws,r=" + RFC_CLIENT_NONCE + RFC_SERVER_NONCE
    assert (
        manual_client_final(without_proof, "n=user,r=" + RFC_CLIENT_NONCE, RFC_SERVER_FIRST, "pencil")
        == RFC_CLIENT_FINAL
    )


@pytest.mark.parametrize(
    ("client_first", "reason"),
    [
        (b"p=tls-unique,,n=user,r=abc", "channel binding is not supported"),
        (b"x,,n=user,r=abc", "malformed SCRAM-SHA-256 client-first"),
        (b"n,,m=ext,n=user,r=abc", "mandatory SCRAM extensions are not supported"),
        (b"n,a=other,n=user,r=abc", "authorization id differs from the user name"),
        (b"n,b=user,n=user,r=abc", "malformed"),
        (b"n,a=us=er,n=user,r=abc", "malformed"),
        (b"n,,n=us=2Xer,r=abc", "malformed"),
        (b"n,,n=,r=abc", "malformed"),
        (b"n,,n=user,r=", "malformed"),
        (b"n,,n=user,r=a\x7fb", "malformed"),
        (b"n,,n=user", "malformed"),
        (b"n,,r=abc,n=user", "malformed"),
        (b"n,,n=user,r=abc,tokenauth", "malformed"),
        (b"n,,n=user,r=abc,tokenauth=", "malformed"),
        (b"n,,n=user,r=abc,p=x", "malformed"),
        (b"n,n=user,r=abc", "malformed"),
        (b"n", "malformed"),
        (b"", "malformed"),
        (b"n,,n=\x00,r=abc", "NUL"),
    ],
)
def test_server_refuses_bad_client_first(client_first: bytes, reason: str) -> None:
    server = ScramServer(SHA256, lambda n: credential(SHA256, "secret", n), "srv")
    with pytest.raises(AuthenticationError, match=reason) as info:
        server.step(client_first)
    assert info.value.error_code == FAILED and server.state is ScramServerState.ERROR


def test_replayed_client_final_fails_on_a_new_exchange() -> None:
    lookup = users({"alice": "secret"}, SHA256)
    client = ScramClient(SHA256, "alice", "secret", "client-nonce")
    first = client.initial_response()
    server = ScramServer(SHA256, lookup, "server-nonce-1")
    final = client.step(server.step(first))
    assert final is not None
    server.step(final)
    assert server.complete
    replay = ScramServer(SHA256, lookup, "server-nonce-2")
    replay.step(first)
    with pytest.raises(AuthenticationError, match="nonce in client-final is not this exchange"):
        replay.step(final)


def test_server_refuses_a_credential_with_too_few_iterations_or_another_mechanism() -> None:
    weak = ScramCredential.from_password(SHA256, "secret", b"salt", 1000, min_iterations=1000)
    server = ScramServer(SHA256, lambda n: weak, "srv")
    with pytest.raises(AuthenticationError, match="1000 iterations, fewer than the minimum 4096") as info:
        server.step(b"n,,n=alice,r=abc")
    assert info.value.error_code == FAILED
    other = ScramServer(SHA512, lambda n: credential(SHA256, "secret", n), "srv")
    with pytest.raises(AuthenticationError, match="invalid credentials for SASL mechanism SCRAM-SHA-512"):
        other.step(b"n,,n=alice,r=abc")


def test_scram_authzid_equal_to_the_user_and_the_y_flag_are_accepted() -> None:
    client = ScramClient(SHA256, "a,b=c", "secret", "cn", authzid="a,b=c")
    assert client.initial_response() == b"n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=cn"
    client = ScramClient(SHA256, "a,b=c", "secret", "cn", authzid="a,b=c")
    server = ScramServer(SHA256, users({"a,b=c": "secret"}, SHA256), "sn")
    assert run(client, server) == 2 and server.principal == "a,b=c"
    # A client that could bind but thinks the server cannot sends "y" (RFC 5802); accepted, and
    # c= must then carry "y,,".
    server = ScramServer(SHA256, lambda n: rfc_credential(), RFC_SERVER_NONCE)
    assert server.step(b"y" + RFC_CLIENT_FIRST[1:]) == RFC_SERVER_FIRST
    without_proof = "c=" + base64.b64encode(b"y,,").decode() + ",r=" + RFC_CLIENT_NONCE + RFC_SERVER_NONCE
    final = manual_client_final(without_proof, "n=user,r=" + RFC_CLIENT_NONCE, RFC_SERVER_FIRST, "pencil")
    assert server.step(final).startswith(b"v=") and server.complete
    server = ScramServer(SHA256, lambda n: rfc_credential(), RFC_SERVER_NONCE)
    server.step(b"y" + RFC_CLIENT_FIRST[1:])
    with pytest.raises(AuthenticationError, match="channel binding"):
        server.step(RFC_CLIENT_FINAL)  # c=biws is "n,,", not the "y,," header this client sent


def test_client_extensions_are_sent_signed_and_exposed_on_the_server() -> None:
    client = ScramClient(SHA512, "tok-id", "hmac", "cn", extensions={"tokenauth": "true"})
    assert client.initial_response() == b"n,,n=tok-id,r=cn,tokenauth=true"
    client = ScramClient(SHA512, "tok-id", "hmac", "cn", extensions={"tokenauth": "true"})
    seen: list[dict[str, str]] = []
    server: ScramServer

    def lookup(name: str) -> ScramCredential | None:
        seen.append(dict(server.extensions))
        return credential(SHA512, "hmac", name)

    server = ScramServer(SHA512, lookup, "sn")
    assert run(client, server) == 2
    assert seen == [{"tokenauth": "true"}] and server.extensions == {"tokenauth": "true"}


@given(st.text(min_size=1, max_size=12).filter(lambda s: "\x00" not in s))
def test_any_username_round_trips(name: str) -> None:
    escaped = escape_username(name)
    assert "," not in escaped and unescape_username(escaped) == name
    client = ScramClient(SHA256, name, "pw", "cn")
    server = ScramServer(SHA256, users({name: "pw"}, SHA256), "sn")
    assert run(client, server) == 2 and server.principal == name


@pytest.mark.parametrize("name", ["a=b", "a,b", "=2C", "=3D", ",=,=", "ユーザー"])
def test_special_usernames_round_trip(name: str) -> None:
    client = ScramClient(SHA512, name, "pw", "cn")
    server = ScramServer(SHA512, users({name: "pw"}, SHA512), "sn")
    assert run(client, server) == 2 and server.principal == name


def test_escaping_is_rfc5802() -> None:
    assert escape_username("a=b,c") == "a=3Db=2Cc"
    assert unescape_username("=3D2C") == "=2C"
    for bad in ("", "a=b", "a=2c", "a,b", "=", "a\x00"):
        assert unescape_username(bad) is None


# -- argument validation --------------------------------------------------------------------------


@pytest.mark.parametrize("nonce", ["", "a,b", "a b", "é", "a\x00", "\x7f"])
def test_nonces_must_be_printable_ascii_without_commas(nonce: str) -> None:
    with pytest.raises(ValueError, match="nonce"):
        ScramClient(SHA256, "u", "p", nonce)
    with pytest.raises(ValueError, match="nonce"):
        ScramServer(SHA256, lambda n: None, nonce)


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown SCRAM mechanism 'SCRAM-SHA-1'"):
        ScramClient("SCRAM-SHA-1", "u", "p", "n")
    with pytest.raises(ValueError, match="user name"):
        ScramClient(SHA256, "", "p", "n")
    with pytest.raises(ValueError, match="min_iterations"):
        ScramClient(SHA256, "u", "p", "n", min_iterations=5000, max_iterations=4096)
    for ext in ({"r": "x"}, {"to-ken": "x"}, {"tokenauth": ""}, {"tokenauth": "a,b"}):
        with pytest.raises(ValueError, match="extension"):
            ScramClient(SHA256, "u", "p", "n", extensions=ext)
    with pytest.raises(ValueError, match="min_iterations must be positive"):
        ScramServer(SHA256, lambda n: None, "n", min_iterations=0)
    with pytest.raises(ValueError, match="fake_salt_key"):
        ScramServer(SHA256, lambda n: None, "n", fake_salt_key=b"")
    with pytest.raises(ValueError, match="at least 4096 iterations"):
        ScramCredential.from_password(SHA256, "pw", b"salt", 4095)
    with pytest.raises(ValueError, match="stored_key must be 32 bytes"):
        ScramCredential(salt=b"s", iterations=4096, stored_key=b"x", server_key=b"y" * 32, mechanism=SHA256)
    with pytest.raises(ValueError, match="salt"):
        ScramCredential(
            salt=b"", iterations=4096, stored_key=b"x" * 32, server_key=b"y" * 32, mechanism=SHA256
        )
    with pytest.raises(ValueError, match="positive"):
        ScramCredential(salt=b"s", iterations=0, stored_key=b"x" * 32, server_key=b"y" * 32, mechanism=SHA256)
    assert DEFAULT_MAX_SCRAM_ITERATIONS == 16384 and MIN_SCRAM_ITERATIONS == 4096
    with pytest.raises(ValueError, match="user name"):
        PlainClient("", "p")
    with pytest.raises(ValueError, match="NUL"):
        PlainClient("u", "p\x00")
    for token in ("", "has space", "a=b", "tok\x01"):
        with pytest.raises(ValueError, match="b64token"):
            OAuthBearerClient(token)
    for ext in ({"auth": "x"}, {"a1": "x"}, {"": "x"}, {"k": "\x01"}, {"k": "é"}):
        with pytest.raises(ValueError, match="extension"):
            OAuthBearerClient("tok", extensions=ext)
    with pytest.raises(ValueError, match="authzid"):
        OAuthBearerClient("tok", authzid="a\x01")


def test_credential_accepts_the_mechanism_name() -> None:
    name = "SCRAM-SHA-512"
    cred = ScramCredential(
        salt=b"s",
        iterations=4096,
        stored_key=b"x" * 64,
        server_key=b"y" * 64,
        mechanism=name,  # type: ignore[arg-type]  # a name is accepted at run time and converted
    )
    assert cred.mechanism is SHA512


# -- PLAIN failures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
        (b"\x00nobody\x00secret", "Invalid username or password"),
        (b"\x00\x00secret", "username not specified"),
        (b"\x00alice\x00", "password not specified"),
        (b"mallory\x00alice\x00secret", "authorization id differs from the user name"),
        (b"alice\x00secret", "expected 3 NUL-separated fields, got 2"),
        (b"\x00alice\x00secret\x00", "expected 3 NUL-separated fields, got 4"),
        (b"", "got 1"),
        (b"\x00al\xffice\x00secret", "not UTF-8"),
    ],
)
def test_plain_server_failures(token: bytes, reason: str) -> None:
    server = PlainServer(lambda u, p: (u, p) == ("alice", "secret"))
    with pytest.raises(AuthenticationError, match=reason) as info:
        server.step(token)
    assert info.value.error_code == FAILED
    assert server.state is PlainServerState.ERROR and not server.complete and server.principal == ""


def test_plain_client_refuses_a_server_token() -> None:
    client = PlainClient("alice", "secret")
    client.initial_response()
    with pytest.raises(AuthenticationError, match="PLAIN servers send none"):
        client.step(b"surprise")
    assert client.state is PlainClientState.ERROR


# -- OAUTHBEARER failures -------------------------------------------------------------------------


def test_oauthbearer_refusal_flow() -> None:
    client = OAuthBearerClient("expired")
    server = OAuthBearerServer(lambda token, ext: None)
    challenge = server.step(client.initial_response())
    assert json.loads(challenge) == {"status": "invalid_token"}
    assert server.state.name == "REFUSED" and not server.complete  # (`is` would narrow the property for mypy)
    ack = client.step(challenge)
    assert ack == b"\x01" and client.state.name == "REFUSED"
    assert client.server_error is not None and client.server_error.status == "invalid_token"
    # Kafka's error message is the challenge itself.
    with pytest.raises(AuthenticationError) as info:
        server.step(ack)
    assert str(info.value) == '{"status":"invalid_token"}'
    assert info.value.error_code == FAILED and server.state is OAuthBearerServerState.ERROR
    # Kafka ends the exchange here with an error response; a server that answers instead still fails.
    with pytest.raises(AuthenticationError, match="status='invalid_token'"):
        client.step(b"")
    assert client.state is OAuthBearerClientState.ERROR
    with pytest.raises(LocalProtocolError):
        client.step(b"")


def test_oauthbearer_error_challenge_details_reach_the_error() -> None:
    client = OAuthBearerClient("tok")
    client.initial_response()
    body = {
        "status": "insufficient_scope",
        "scope": "kafka:write",
        "openid-configuration": "https://x/.well-known",
    }
    assert client.step(json.dumps(body).encode()) == b"\x01"
    err = client.server_error
    assert err is not None
    assert (err.status, err.scope, err.openid_configuration) == (
        "insufficient_scope",
        "kafka:write",
        "https://x/.well-known",
    )
    with pytest.raises(AuthenticationError, match=r"insufficient_scope.*kafka:write"):
        client.step(b"\x01")


@pytest.mark.parametrize("challenge", [b"not json", b"\xff", b"[1]", b'{"status": 5}'])
def test_oauthbearer_unparsable_challenges_are_still_acknowledged(challenge: bytes) -> None:
    client = OAuthBearerClient("tok")
    client.initial_response()
    assert client.step(challenge) == b"\x01"
    assert (
        client.server_error is not None
        and client.server_error.status == ""
        and client.server_error.raw == challenge
    )
    with pytest.raises(AuthenticationError, match="unparsed challenge"):
        client.step(b"")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (b"n,a=bob,\x01auth=Bearer tok\x01\x01", "authorization id differs from the token's principal"),
        (b"n,,\x01auth=Bearer tok\x01", "malformed"),
        (b"n,,auth=Bearer tok\x01\x01", "malformed"),
        (b"y,,\x01auth=Bearer tok\x01\x01", "malformed"),
        (b"n,,\x01auth=Basic tok\x01\x01", "malformed"),
        (b"n,,\x01auth=Bearer \x01\x01", "malformed"),
        (b"n,,\x01\x01", "malformed"),
        (b"n,,\x01k=v\x01\x01", "malformed"),
        (b"n,,\x01auth=Bearer tok\x01auth=Bearer tok\x01\x01", "malformed"),
        (b"n,,\x01auth=Bearer tok\x01k1=v\x01\x01", "malformed"),
        (b"n,,\x01auth=Bearer tok\x01k=\xc3\xa9\x01\x01", "malformed"),
        (b"n,,\x01auth=Bearer tok\x01\x01\x01", "malformed"),
        (b"n,a=a=zz,\x01auth=Bearer tok\x01\x01", "malformed"),
        (b"\x01", "malformed"),
        (b"\xff", "malformed"),
    ],
)
def test_oauthbearer_server_refuses_malformed_messages(message: bytes, reason: str) -> None:
    server = OAuthBearerServer(lambda token, ext: "alice")
    with pytest.raises(AuthenticationError, match=reason) as info:
        server.step(message)
    assert info.value.error_code == FAILED and server.state is OAuthBearerServerState.ERROR


def test_oauthbearer_escaped_authzid_and_empty_extension_value() -> None:
    client = OAuthBearerClient("tok", authzid="a,b", extensions={"empty": ""})
    message = client.initial_response()
    assert message == b"n,a=a=2Cb,\x01auth=Bearer tok\x01empty=\x01\x01"
    server = OAuthBearerServer(lambda token, ext: "a,b")
    assert server.step(message) == b"" and server.extensions == {"empty": ""}
