"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) with Kafka's conventions.

Two round trips::

    client-first   n,,n=<user>,r=<client nonce>                client -> server
    server-first   r=<client nonce><server nonce>,s=<salt>,i=<iterations>
    client-final   c=biws,r=<both nonces>,p=<proof>            client -> server
    server-final   v=<server signature>                        (or e=<error>)

Kafka's choices, followed here: no channel binding (GS2 flag ``n``; ``y`` is also accepted from
a client, ``p=`` refused), an optional authzid that must equal the user name, user names escaped
as RFC 5802 ``saslname`` (``=`` as ``=3D``, ``,`` as ``=2C``) but otherwise not SASLprep'd, the
password hashed as its UTF-8 bytes, at least 4096 iterations. Extensions after the nonce (Kafka's
``tokenauth=true``) are parsed and exposed but not acted on.

Nonces are inputs: this module draws no random numbers. Callers must pass fresh unpredictable
values for every exchange, e.g. ``secrets.token_urlsafe(24)``; a repeated or guessable nonce
makes replay possible.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from kafka_wire.errors import AuthenticationError
from kafka_wire.messages.error_code import ErrorCode
from kafka_wire.protocol.machine import StateMachine
from kafka_wire.protocol.sasl.base import Buffer

#: Kafka's ``ScramMechanism.minIterations`` for both hashes; servers refuse fewer, and so do clients.
MIN_SCRAM_ITERATIONS: Final = 4096
#: Kafka's upper bound for SCRAM credentials (AlterUserScramCredentials); caps the PBKDF2 work a
#: server can make a client do.
DEFAULT_MAX_SCRAM_ITERATIONS: Final = 16384

_FAILED: Final = ErrorCode.SASL_AUTHENTICATION_FAILED
_NO_EXTENSIONS: Final[Mapping[str, str]] = MappingProxyType({})

# A nonce is printable ASCII without ",", as RFC 5802 says.
_NONCE = re.compile(r"[\x21-\x2b\x2d-\x7e]+")
# saslname: any character but NUL, "," and "=", or the escapes =2C and =3D.
_SASLNAME = re.compile(r"(?:[^\x00,=]|=2C|=3D)+")
_ESCAPE = re.compile(r"=2C|=3D")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[^\x00,]+")
_ITERATIONS = re.compile(r"[1-9][0-9]{0,9}")
# Attribute letters RFC 5802 defines; extensions may not reuse them.
_RESERVED_KEYS: Final = frozenset("acemnprsvi")


class ScramMechanism(enum.StrEnum):
    """A SCRAM mechanism; its value is the name sent in SaslHandshake."""

    SHA_256 = "SCRAM-SHA-256"
    SHA_512 = "SCRAM-SHA-512"

    @property
    def hash_name(self) -> str:
        """The :mod:`hashlib` name of the hash."""
        return "sha256" if self is ScramMechanism.SHA_256 else "sha512"

    @property
    def digest_size(self) -> int:
        return 32 if self is ScramMechanism.SHA_256 else 64


def _mechanism(value: ScramMechanism | str) -> ScramMechanism:
    try:
        return ScramMechanism(value)
    except ValueError:
        names = ", ".join(m.value for m in ScramMechanism)
        raise ValueError(f"unknown SCRAM mechanism {value!r} (supported: {names})") from None


def _hmac(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def _hash(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes | None:
    """Strict base64, or None."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError:  # binascii.Error, and UnicodeEncodeError for non-ASCII
        return None


def salted_password(mechanism: ScramMechanism | str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 ``Hi(password, salt, i)``: PBKDF2-HMAC over the UTF-8 password."""
    return hashlib.pbkdf2_hmac(_mechanism(mechanism).hash_name, password.encode(), salt, iterations)


def escape_username(name: str) -> str:
    """RFC 5802 ``saslname``: ``=`` becomes ``=3D`` and ``,`` becomes ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(saslname: str) -> str | None:
    """The inverse of :func:`escape_username`; None when ``saslname`` is not a valid one."""
    if not _SASLNAME.fullmatch(saslname):
        return None
    return _ESCAPE.sub(lambda m: "," if m.group() == "=2C" else "=", saslname)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server stores for one user and mechanism (never the password).

    ``stored_key`` is ``H(HMAC(SaltedPassword, "Client Key"))`` and ``server_key``
    ``HMAC(SaltedPassword, "Server Key")``; both are secrets and kept out of ``repr``.
    """

    salt: bytes
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    mechanism: ScramMechanism

    def __post_init__(self) -> None:
        mechanism = _mechanism(self.mechanism)
        object.__setattr__(self, "mechanism", mechanism)
        if not self.salt:
            raise ValueError("a SCRAM salt must not be empty")
        if self.iterations < 1:
            raise ValueError(f"SCRAM iterations must be positive, got {self.iterations}")
        for label, key in (("stored_key", self.stored_key), ("server_key", self.server_key)):
            if len(key) != mechanism.digest_size:
                raise ValueError(
                    f"{label} must be {mechanism.digest_size} bytes for {mechanism}, got {len(key)}"
                )

    @classmethod
    def from_password(
        cls,
        mechanism: ScramMechanism | str,
        password: str,
        salt: bytes,
        iterations: int,
        *,
        min_iterations: int = MIN_SCRAM_ITERATIONS,
    ) -> ScramCredential:
        """Derive the credential; ``salt`` should be random (e.g. ``secrets.token_bytes(32)``).

        Raises ``ValueError`` for fewer than ``min_iterations`` iterations, as Kafka refuses them.
        """
        mech = _mechanism(mechanism)
        if iterations < min_iterations:
            raise ValueError(f"{mech} needs at least {min_iterations} iterations, got {iterations}")
        salted = salted_password(mech, password, salt, iterations)
        client_key = _hmac(mech, salted, b"Client Key")
        return cls(
            salt=salt,
            iterations=iterations,
            stored_key=_hash(mech, client_key),
            server_key=_hmac(mech, salted, b"Server Key"),
            mechanism=mech,
        )


def _check_nonce(nonce: str, who: str) -> None:
    if not _NONCE.fullmatch(nonce):
        raise ValueError(f"the {who} nonce must be non-empty printable ASCII without ',', got {nonce!r}")


def _check_extensions(extensions: Mapping[str, str]) -> str:
    out = []
    for key, value in extensions.items():
        if not _EXTENSION_KEY.fullmatch(key) or key in _RESERVED_KEYS:
            raise ValueError(f"SCRAM extension name {key!r} must be letters and not an RFC 5802 attribute")
        if not _EXTENSION_VALUE.fullmatch(value):
            raise ValueError(f"SCRAM extension {key!r} needs a non-empty value without ',' or NUL")
        out.append(f",{key}={value}")
    return "".join(out)


def _parse_extensions(parts: list[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or not _EXTENSION_KEY.fullmatch(key) or key in _RESERVED_KEYS or not value:
            return None
        out[key] = value
    return out


# -- client --------------------------------------------------------------------------------------


class ScramClientState(enum.Enum):
    INITIAL = "INITIAL"
    AWAITING_SERVER_FIRST = "AWAITING_SERVER_FIRST"
    AWAITING_SERVER_FINAL = "AWAITING_SERVER_FINAL"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"


class ScramClientInput(enum.Enum):
    INITIAL_RESPONSE = "initial_response"
    STEP = "step"


_CS = ScramClientState
_CI = ScramClientInput

#: Every legal call of :class:`ScramClient`; any other raises LocalProtocolError and moves to
#: ERROR. A failed call (AuthenticationError) also moves to ERROR.
SCRAM_CLIENT_TRANSITIONS: Final[Mapping[tuple[ScramClientState, ScramClientInput], ScramClientState]] = {
    (_CS.INITIAL, _CI.INITIAL_RESPONSE): _CS.AWAITING_SERVER_FIRST,
    (_CS.AWAITING_SERVER_FIRST, _CI.STEP): _CS.AWAITING_SERVER_FINAL,
    (_CS.AWAITING_SERVER_FINAL, _CI.STEP): _CS.COMPLETE,
}


class ScramClient:
    """The client side of one SCRAM exchange.

    ``initial_response()`` gives client-first; ``step(server_first)`` gives client-final;
    ``step(server_final)`` checks the server's signature and returns ``None``. A bad server token
    raises :class:`AuthenticationError` (``error_code`` None: the client found the fault). Bad
    arguments raise ``ValueError``.
    """

    def __init__(
        self,
        mechanism: ScramMechanism | str,
        username: str,
        password: str,
        nonce: str,
        *,
        authzid: str = "",
        extensions: Mapping[str, str] = _NO_EXTENSIONS,
        min_iterations: int = MIN_SCRAM_ITERATIONS,
        max_iterations: int = DEFAULT_MAX_SCRAM_ITERATIONS,
    ) -> None:
        self.mechanism = _mechanism(mechanism)
        self.name: str = self.mechanism.value
        if not username or "\x00" in username or "\x00" in authzid:
            raise ValueError(
                "a SCRAM user name must be non-empty, and neither it nor authzid may contain NUL"
            )
        _check_nonce(nonce, "client")
        if not 1 <= min_iterations <= max_iterations:
            raise ValueError(
                f"need 1 <= min_iterations <= max_iterations, got {min_iterations}, {max_iterations}"
            )
        self.username = username
        self._password = password
        self._nonce = nonce
        self._min_iterations = min_iterations
        self._max_iterations = max_iterations
        self._gs2_header = f"n,a={escape_username(authzid)}," if authzid else "n,,"
        self._client_first_bare = f"n={escape_username(username)},r={nonce}{_check_extensions(extensions)}"
        self._server_signature = b""
        self._machine = StateMachine(
            f"{self.name} client", SCRAM_CLIENT_TRANSITIONS, _CS.INITIAL, error=_CS.ERROR
        )

    @property
    def state(self) -> ScramClientState:
        return self._machine.state

    @property
    def complete(self) -> bool:
        return self._machine.state is _CS.COMPLETE

    def initial_response(self) -> bytes:
        try:
            self._machine.move(_CI.INITIAL_RESPONSE)
        except BaseException as exc:
            self._machine.fail(exc)
            raise
        return (self._gs2_header + self._client_first_bare).encode()

    def step(self, challenge: Buffer) -> bytes | None:
        try:
            self._machine.target(_CI.STEP)
            text = self._decode(bytes(challenge))
            if self._machine.state is _CS.AWAITING_SERVER_FIRST:
                reply: bytes | None = self._client_final(text)
            else:
                self._verify(text)
                reply = None
            self._machine.move(_CI.STEP)
        except BaseException as exc:
            self._machine.fail(exc)
            raise
        return reply

    def _fail(self, reason: str) -> AuthenticationError:
        return AuthenticationError(f"{self.name}: {reason}")

    def _decode(self, token: bytes) -> str:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise self._fail("the server's message is not UTF-8") from None
        if "\x00" in text:
            raise self._fail("the server's message contains NUL")
        return text

    def _client_final(self, server_first: str) -> bytes:
        parts = server_first.split(",")
        if parts[0].startswith("m="):
            raise self._fail("the server requires an extension this client does not support")
        if len(parts) < 3 or not (
            parts[0].startswith("r=") and parts[1].startswith("s=") and parts[2].startswith("i=")
        ):
            raise self._fail(f"malformed server-first message {server_first!r}")
        nonce, salt_text, iterations_text = parts[0][2:], parts[1][2:], parts[2][2:]
        if not _NONCE.fullmatch(nonce):
            raise self._fail("the server nonce is not printable ASCII")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise self._fail("the server nonce does not extend the client nonce")
        salt = _unb64(salt_text)
        if not salt:
            raise self._fail(f"the salt {salt_text!r} is not valid non-empty base64")
        if not _ITERATIONS.fullmatch(iterations_text):
            raise self._fail(f"the iteration count {iterations_text!r} is not a positive number")
        iterations = int(iterations_text)
        if iterations < self._min_iterations:
            raise self._fail(
                f"the server asks for {iterations} iterations, fewer than the minimum {self._min_iterations}"
            )
        if iterations > self._max_iterations:
            raise self._fail(
                f"the server asks for {iterations} iterations, more than the maximum {self._max_iterations}"
            )
        mech = self.mechanism
        salted = salted_password(mech, self._password, salt, iterations)
        client_key = _hmac(mech, salted, b"Client Key")
        without_proof = f"c={_b64(self._gs2_header.encode())},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        proof = _xor(client_key, _hmac(mech, _hash(mech, client_key), auth_message))
        self._server_signature = _hmac(mech, _hmac(mech, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def _verify(self, server_final: str) -> None:
        first = server_final.split(",")[0]
        if first.startswith("e="):
            raise self._fail(f"the server refused authentication: {first[2:]}")
        if not first.startswith("v="):
            raise self._fail(f"malformed server-final message {server_final!r}")
        signature = _unb64(first[2:])
        if signature is None or not hmac.compare_digest(signature, self._server_signature):
            raise self._fail("the server's signature is wrong; the server does not know the credential")


# -- server --------------------------------------------------------------------------------------


class ScramServerState(enum.Enum):
    AWAITING_CLIENT_FIRST = "AWAITING_CLIENT_FIRST"
    AWAITING_CLIENT_FINAL = "AWAITING_CLIENT_FINAL"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"


class ScramServerInput(enum.Enum):
    STEP = "step"


_SS = ScramServerState

#: Every legal call of :class:`ScramServer`; any other raises LocalProtocolError and moves to
#: ERROR. A failed call (AuthenticationError) also moves to ERROR.
SCRAM_SERVER_TRANSITIONS: Final[Mapping[tuple[ScramServerState, ScramServerInput], ScramServerState]] = {
    (_SS.AWAITING_CLIENT_FIRST, ScramServerInput.STEP): _SS.AWAITING_CLIENT_FINAL,
    (_SS.AWAITING_CLIENT_FINAL, ScramServerInput.STEP): _SS.COMPLETE,
}


class ScramServer:
    """The server side of one SCRAM exchange.

    ``lookup(username)`` returns the user's credential for this mechanism, or None. ``nonce`` is
    this exchange's server nonce. Every failure raises :class:`AuthenticationError` with
    ``error_code`` 58 (SASL_AUTHENTICATION_FAILED); a wrong password and an unknown user give
    the same message.

    An unknown user fails at once, in client-first, as Kafka does; that tells a client whether a
    user exists. With ``fake_salt_key`` (a server-wide secret) an unknown user instead gets a
    server-first with a salt derived from the key and the name (stable across attempts, as a real
    salt is; 32 bytes, so give real credentials 32-byte salts) and ``min_iterations``, and fails
    at client-final exactly as a wrong password does.

    ``extensions`` holds the client-first extensions (``{"tokenauth": "true"}``); it is set
    before ``lookup`` is called, so a lookup closure may consult it. A credential for another
    mechanism counts as no credential; one with fewer than ``min_iterations`` iterations fails.
    """

    def __init__(
        self,
        mechanism: ScramMechanism | str,
        lookup: Callable[[str], ScramCredential | None],
        nonce: str,
        *,
        min_iterations: int = MIN_SCRAM_ITERATIONS,
        fake_salt_key: bytes | None = None,
    ) -> None:
        self.mechanism = _mechanism(mechanism)
        self.name: str = self.mechanism.value
        _check_nonce(nonce, "server")
        if min_iterations < 1:
            raise ValueError(f"min_iterations must be positive, got {min_iterations}")
        if fake_salt_key is not None and not fake_salt_key:
            raise ValueError("fake_salt_key must be a non-empty secret (or None)")
        self._lookup = lookup
        self._server_nonce = nonce
        self._min_iterations = min_iterations
        self._fake_salt_key = fake_salt_key
        self._machine = StateMachine(
            f"{self.name} server", SCRAM_SERVER_TRANSITIONS, _SS.AWAITING_CLIENT_FIRST, error=_SS.ERROR
        )
        self._principal = ""
        self._username = ""
        self._gs2_header = b""
        self._nonce = ""
        self._auth_prefix = ""
        self._credential: ScramCredential | None = None
        self.extensions: Mapping[str, str] = _NO_EXTENSIONS

    @property
    def state(self) -> ScramServerState:
        return self._machine.state

    @property
    def complete(self) -> bool:
        return self._machine.state is _SS.COMPLETE

    @property
    def principal(self) -> str:
        return self._principal

    @property
    def credential_expires_ms(self) -> None:
        """A SCRAM credential does not expire."""
        return None

    def step(self, response: Buffer) -> bytes:
        try:
            self._machine.target(ScramServerInput.STEP)
            text = self._decode(bytes(response))
            if self._machine.state is _SS.AWAITING_CLIENT_FIRST:
                reply = self._server_first(text)
            else:
                reply = self._server_final(text)
            self._machine.move(ScramServerInput.STEP)
        except BaseException as exc:
            self._machine.fail(exc)
            raise
        return reply

    def _fail(self, reason: str) -> AuthenticationError:
        return AuthenticationError(f"Authentication failed: {reason}", error_code=_FAILED)

    def _invalid(self) -> AuthenticationError:
        return self._fail(f"invalid credentials for SASL mechanism {self.name}")

    def _decode(self, token: bytes) -> str:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise self._fail(f"{self.name} message is not UTF-8") from None
        if "\x00" in text:
            raise self._fail(f"{self.name} message contains NUL")
        return text

    def _server_first(self, client_first: str) -> bytes:
        malformed = self._fail(f"malformed {self.name} client-first message")
        flag, _, rest = client_first.partition(",")
        if flag.startswith("p="):
            raise self._fail("channel binding is not supported")
        if flag not in ("n", "y"):
            raise malformed
        authz, sep, bare = rest.partition(",")
        if not sep:
            raise malformed
        authzid = ""
        if authz:
            unescaped = unescape_username(authz[2:]) if authz.startswith("a=") else None
            if unescaped is None:
                raise malformed
            authzid = unescaped
        parts = bare.split(",")
        if parts[0].startswith("m="):
            raise self._fail("mandatory SCRAM extensions are not supported")
        if len(parts) < 2 or not (parts[0].startswith("n=") and parts[1].startswith("r=")):
            raise malformed
        username = unescape_username(parts[0][2:])
        client_nonce = parts[1][2:]
        extensions = _parse_extensions(parts[2:])
        if username is None or extensions is None or not _NONCE.fullmatch(client_nonce):
            raise malformed
        if authzid and authzid != username:
            raise self._fail("the authorization id differs from the user name")
        self.extensions = MappingProxyType(extensions)
        credential = self._lookup(username)
        if credential is not None and credential.mechanism is not self.mechanism:
            credential = None
        if credential is None:
            if self._fake_salt_key is None:
                raise self._invalid()
            key_input = f"{self.name}\x00{username}".encode()
            salt, iterations = (
                hmac.new(self._fake_salt_key, key_input, "sha256").digest(),
                self._min_iterations,
            )
        else:
            if credential.iterations < self._min_iterations:
                raise self._fail(
                    f"the stored {self.name} credential has {credential.iterations} iterations, "
                    f"fewer than the minimum {self._min_iterations}"
                )
            salt, iterations = credential.salt, credential.iterations
        self._credential, self._username = credential, username
        self._gs2_header = client_first[: len(client_first) - len(bare)].encode()
        self._nonce = client_nonce + self._server_nonce
        server_first = f"r={self._nonce},s={_b64(salt)},i={iterations}"
        self._auth_prefix = f"{bare},{server_first}"
        return server_first.encode()

    def _server_final(self, client_final: str) -> bytes:
        malformed = self._fail(f"malformed {self.name} client-final message")
        parts = client_final.split(",")
        if len(parts) < 3 or not (
            parts[0].startswith("c=") and parts[1].startswith("r=") and parts[-1].startswith("p=")
        ):
            raise malformed
        if _parse_extensions(parts[2:-1]) is None:
            raise malformed
        if _unb64(parts[0][2:]) != self._gs2_header:
            raise self._fail("the channel binding data does not match the GS2 header")
        if parts[1][2:] != self._nonce:
            raise self._fail("the nonce in client-final is not this exchange's nonce")
        proof = _unb64(parts[-1][2:])
        if proof is None or len(proof) != self.mechanism.digest_size:
            raise malformed
        credential = self._credential
        if credential is None:  # an unknown user behind a fake salt
            raise self._invalid()
        mech = self.mechanism
        auth_message = f"{self._auth_prefix},{','.join(parts[:-1])}".encode()
        client_key = _xor(proof, _hmac(mech, credential.stored_key, auth_message))
        if not hmac.compare_digest(_hash(mech, client_key), credential.stored_key):
            raise self._invalid()
        self._principal = self._username
        return f"v={_b64(_hmac(mech, credential.server_key, auth_message))}".encode()
