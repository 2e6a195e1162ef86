"""SASL/OAUTHBEARER (RFC 7628) in Kafka's form (KIP-255, KIP-342 extensions).

The client sends one message::

    n,a=<authzid>,\\x01auth=Bearer <token>\\x01<key>=<value>\\x01...\\x01

(``n,,`` without an authzid). A server that accepts the token answers an empty token. One that
refuses it answers a JSON error (``{"status":"invalid_token"}``, perhaps with ``scope`` and
``openid-configuration``); the client then sends the single byte ``\\x01`` and the server ends the
exchange with an error (Kafka: a SaslAuthenticate response with error code 58).

Getting, caching and refreshing tokens is the caller's business: this module only carries one.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kafka_wire.errors import AuthenticationError
from kafka_wire.messages.error_code import ErrorCode
from kafka_wire.protocol.machine import StateMachine
from kafka_wire.protocol.sasl.base import Buffer
from kafka_wire.protocol.sasl.scram import escape_username, unescape_username

NAME: Final = "OAUTHBEARER"

_FAILED: Final = ErrorCode.SASL_AUTHENTICATION_FAILED
_NO_EXTENSIONS: Final[Mapping[str, str]] = MappingProxyType({})
_SEP: Final = "\x01"
#: The byte a client sends after an error challenge (RFC 7628 section 3.2.3).
ERROR_ACK: Final = b"\x01"

# RFC 6750 b64token.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# RFC 7628: key = 1*(ALPHA), value = *(VCHAR / SP / HTAB / CR / LF).
_KEY = re.compile(r"[A-Za-z]+")
_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*")
_GS2 = re.compile(r"n,(?:a=([^,]*))?,")


def _check_extensions(extensions: Mapping[str, str]) -> None:
    for key, value in extensions.items():
        if not _KEY.fullmatch(key) or key == "auth":
            raise ValueError(f"OAUTHBEARER extension name {key!r} must be letters and not 'auth'")
        if not _VALUE.fullmatch(value):
            raise ValueError(f"OAUTHBEARER extension {key!r} has characters RFC 7628 does not allow")


@dataclass(frozen=True, slots=True)
class OAuthBearerServerError:
    """The error challenge a server sent (RFC 7628 section 3.2.2); ``raw`` is the token as sent."""

    status: str
    scope: str | None
    openid_configuration: str | None
    raw: bytes

    @classmethod
    def parse(cls, raw: bytes) -> OAuthBearerServerError:
        """Parse leniently: a token that is not the JSON object RFC 7628 describes gives an
        empty ``status`` and keeps ``raw``."""
        try:
            body = json.loads(raw.decode())
        except ValueError:  # bad UTF-8 or bad JSON
            body = None
        if not isinstance(body, dict):
            return cls(status="", scope=None, openid_configuration=None, raw=raw)

        def text(key: str) -> str | None:
            value = body.get(key)
            return value if isinstance(value, str) else None

        return cls(
            status=text("status") or "",
            scope=text("scope"),
            openid_configuration=text("openid-configuration"),
            raw=raw,
        )

    def describe(self) -> str:
        parts = [f"status={self.status!r}" if self.status else f"unparsed challenge {self.raw[:200]!r}"]
        if self.scope is not None:
            parts.append(f"scope={self.scope!r}")
        if self.openid_configuration is not None:
            parts.append(f"openid-configuration={self.openid_configuration!r}")
        return ", ".join(parts)


# -- client --------------------------------------------------------------------------------------


class OAuthBearerClientState(enum.Enum):
    INITIAL = "INITIAL"
    AWAITING_OUTCOME = "AWAITING_OUTCOME"
    REFUSED = "REFUSED"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"


class OAuthBearerClientInput(enum.Enum):
    INITIAL_RESPONSE = "initial_response"
    STEP = "step"
    #: Internal: the server answered an empty token.
    SERVER_ACCEPTED = "server accepted"
    #: Internal: the server answered an error challenge.
    SERVER_REFUSED = "server refused"


_CS = OAuthBearerClientState
_CI = OAuthBearerClientInput

#: Every legal move of :class:`OAuthBearerClient`. Calls (``initial_response``, ``step``) missing
#: here raise LocalProtocolError and move to ERROR. ``step`` in REFUSED is legal but always fails
#: with AuthenticationError (moving to ERROR): the server should have ended the exchange.
OAUTHBEARER_CLIENT_TRANSITIONS: Final[
    Mapping[tuple[OAuthBearerClientState, OAuthBearerClientInput], OAuthBearerClientState]
] = {
    (_CS.INITIAL, _CI.INITIAL_RESPONSE): _CS.AWAITING_OUTCOME,
    (_CS.AWAITING_OUTCOME, _CI.STEP): _CS.AWAITING_OUTCOME,
    (_CS.AWAITING_OUTCOME, _CI.SERVER_ACCEPTED): _CS.COMPLETE,
    (_CS.AWAITING_OUTCOME, _CI.SERVER_REFUSED): _CS.REFUSED,
    (_CS.REFUSED, _CI.STEP): _CS.REFUSED,
}


class OAuthBearerClient:
    """The client side of SASL/OAUTHBEARER.

    ``step(b"")`` (the server accepted) returns ``None`` and completes. ``step(error_json)``
    records :attr:`server_error` and returns ``b"\\x01"``; the server then fails the exchange
    (Kafka answers SaslAuthenticate with error code 58, or closes a raw-token connection). A
    further ``step`` raises :class:`AuthenticationError` describing the server's error.
    Bad arguments raise ``ValueError``.
    """

    def __init__(self, token: str, authzid: str = "", extensions: Mapping[str, str] = _NO_EXTENSIONS) -> None:
        if not _TOKEN.fullmatch(token):
            raise ValueError("an OAUTHBEARER token must be an RFC 6750 b64token (e.g. a JWT)")
        if any(c in authzid for c in "\x00\x01"):
            raise ValueError("an OAUTHBEARER authzid must not contain NUL or \\x01")
        _check_extensions(extensions)
        self.name: str = NAME
        authz = f"a={escape_username(authzid)}" if authzid else ""
        pairs = "".join(f"{key}={value}{_SEP}" for key, value in extensions.items())
        self._message = f"n,{authz},{_SEP}auth=Bearer {token}{_SEP}{pairs}{_SEP}".encode()
        self._machine = StateMachine(
            f"{NAME} client", OAUTHBEARER_CLIENT_TRANSITIONS, _CS.INITIAL, error=_CS.ERROR
        )
        #: The server's error challenge, once one arrived.
        self.server_error: OAuthBearerServerError | None = None

    @property
    def state(self) -> OAuthBearerClientState:
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
        return self._message

    def step(self, challenge: Buffer) -> bytes | None:
        try:
            self._machine.move(_CI.STEP)
            if self._machine.state is _CS.REFUSED:
                detail = self.server_error.describe() if self.server_error is not None else "no detail"
                raise AuthenticationError(f"{NAME}: the server refused the token ({detail})")
            token = bytes(challenge)
            if not token:
                self._machine.move(_CI.SERVER_ACCEPTED)
                return None
            self.server_error = OAuthBearerServerError.parse(token)
            self._machine.move(_CI.SERVER_REFUSED)
            return ERROR_ACK
        except BaseException as exc:
            self._machine.fail(exc)
            raise


# -- server --------------------------------------------------------------------------------------


class OAuthBearerServerState(enum.Enum):
    AWAITING_RESPONSE = "AWAITING_RESPONSE"
    REFUSED = "REFUSED"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"


class OAuthBearerServerInput(enum.Enum):
    STEP = "step"
    #: Internal: ``validate`` returned a principal.
    TOKEN_ACCEPTED = "token accepted"
    #: Internal: ``validate`` returned None; an error challenge goes out.
    TOKEN_REFUSED = "token refused"


_SS = OAuthBearerServerState
_SI = OAuthBearerServerInput

#: Every legal move of :class:`OAuthBearerServer`. ``step`` in REFUSED is legal but always fails
#: with AuthenticationError (moving to ERROR): that is how the exchange ends after a refusal.
OAUTHBEARER_SERVER_TRANSITIONS: Final[
    Mapping[tuple[OAuthBearerServerState, OAuthBearerServerInput], OAuthBearerServerState]
] = {
    (_SS.AWAITING_RESPONSE, _SI.STEP): _SS.AWAITING_RESPONSE,
    (_SS.AWAITING_RESPONSE, _SI.TOKEN_ACCEPTED): _SS.COMPLETE,
    (_SS.AWAITING_RESPONSE, _SI.TOKEN_REFUSED): _SS.REFUSED,
    (_SS.REFUSED, _SI.STEP): _SS.REFUSED,
}


@dataclass(frozen=True, slots=True)
class OAuthBearerToken:
    """A token a validator accepted: whose it is and when it expires."""

    principal: str
    #: When the token expires, in ms since the epoch (its ``exp``), if it says.
    expires_ms: int | None = None
    #: When it was issued, in ms since the epoch (its ``iat``), if it says.
    start_ms: int | None = None
    scope: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class OAuthBearerRefusal:
    """Why a validator refused a token: the RFC 7628 error challenge the server sends, and a
    reason for the server's log (never sent)."""

    status: str = "invalid_token"
    scope: str | None = None
    openid_configuration: str | None = None
    reason: str = ""

    def challenge(self) -> bytes:
        """The error challenge as Kafka's server writes it: the status, then scope and
        openid-configuration when there are any."""
        parts = [f'"status":{json.dumps(self.status)}']
        if self.scope is not None:
            parts.append(f'"scope":{json.dumps(self.scope)}')
        if self.openid_configuration is not None:
            parts.append(f'"openid-configuration":{json.dumps(self.openid_configuration)}')
        return ("{" + ", ".join(parts) + "}").encode()


#: What a validator returns: a principal or a token (accepted), a refusal or None (refused with
#: ``invalid_token``).
Validation = str | OAuthBearerToken | OAuthBearerRefusal | None


class OAuthBearerServer:
    """The server side of SASL/OAUTHBEARER.

    ``validate(token, extensions)`` decides (see :data:`Validation`); it must be pure (verify
    signatures and expiry against an injected time and key set). A good token gets ``b""``; a
    refused one gets the error challenge (``{"status":"invalid_token"}``) and the next ``step``
    (the client's ``\\x01``) raises :class:`AuthenticationError` whose reason is that challenge,
    as Kafka's error message is. A malformed message, or an authzid other than the principal,
    raises at once. Errors carry ``error_code`` 58. :attr:`credential_expires_ms` is the accepted
    token's expiry, which ends the session at the latest (KIP-368).
    """

    def __init__(self, validate: Callable[[str, Mapping[str, str]], Validation]) -> None:
        self.name: str = NAME
        self._validate = validate
        self._machine = StateMachine(
            f"{NAME} server", OAUTHBEARER_SERVER_TRANSITIONS, _SS.AWAITING_RESPONSE, error=_SS.ERROR
        )
        self._principal = ""
        self._expires_ms: int | None = None
        self._challenge = b""
        #: The client's extensions, once its message was parsed.
        self.extensions: Mapping[str, str] = _NO_EXTENSIONS
        #: The validator's refusal, once there was one (its ``reason`` is for logs).
        self.refusal: OAuthBearerRefusal | None = None

    @property
    def state(self) -> OAuthBearerServerState:
        return self._machine.state

    @property
    def complete(self) -> bool:
        return self._machine.state is _SS.COMPLETE

    @property
    def principal(self) -> str:
        return self._principal

    @property
    def credential_expires_ms(self) -> int | None:
        return self._expires_ms

    def step(self, response: Buffer) -> bytes:
        try:
            self._machine.move(_SI.STEP)
            if self._machine.state is _SS.REFUSED:
                raise _fail(self._challenge.decode())
            authzid, token, extensions = self._parse(bytes(response))
            self.extensions = MappingProxyType(extensions)
            outcome = self._validate(token, self.extensions)
            if outcome is None or isinstance(outcome, OAuthBearerRefusal):
                self.refusal = outcome or OAuthBearerRefusal()
                self._challenge = self.refusal.challenge()
                self._machine.move(_SI.TOKEN_REFUSED)
                return self._challenge
            accepted = outcome if isinstance(outcome, OAuthBearerToken) else OAuthBearerToken(outcome)
            if authzid and authzid != accepted.principal:
                raise _fail("Authentication failed: the authorization id differs from the token's principal")
            self._principal, self._expires_ms = accepted.principal, accepted.expires_ms
            self._machine.move(_SI.TOKEN_ACCEPTED)
            return b""
        except BaseException as exc:
            self._machine.fail(exc)
            raise

    @staticmethod
    def _parse(message: bytes) -> tuple[str, str, dict[str, str]]:
        malformed = _fail(f"Authentication failed: malformed {NAME} client message")
        try:
            text = message.decode()
        except UnicodeDecodeError:
            raise malformed from None
        gs2 = _GS2.match(text)
        if gs2 is None or text[gs2.end() : gs2.end() + 1] != _SEP or not text.endswith(_SEP * 2):
            raise malformed
        authzid = ""
        if gs2.group(1) is not None:
            unescaped = unescape_username(gs2.group(1))
            if unescaped is None:
                raise malformed
            authzid = unescaped
        pairs = text[gs2.end() + 1 : -1].split(_SEP)
        if pairs[-1] != "":
            raise malformed
        values: dict[str, str] = {}
        for pair in pairs[:-1]:
            key, eq, value = pair.partition("=")
            if not eq or not _KEY.fullmatch(key) or not _VALUE.fullmatch(value) or key in values:
                raise malformed
            values[key] = value
        scheme, _, token = values.pop("auth", "").partition(" ")
        if scheme.lower() != "bearer" or not _TOKEN.fullmatch(token):
            raise malformed
        return authzid, token, values


def _fail(reason: str) -> AuthenticationError:
    return AuthenticationError(reason, error_code=_FAILED)
