"""SASL/PLAIN (RFC 4616) as Kafka uses it: one token from the client, an empty token back.

The client sends ``authzid NUL authcid NUL passwd`` in UTF-8. Kafka's server answers an empty
token on success and fails otherwise; like Kafka, :class:`PlainServer` refuses an authzid that
differs from the user name. PLAIN sends the password in clear: use it over TLS only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Final

from kafka_wire.errors import AuthenticationError
from kafka_wire.messages.error_code import ErrorCode
from kafka_wire.protocol.machine import StateMachine
from kafka_wire.protocol.sasl.base import Buffer

NAME: Final = "PLAIN"

_FAILED: Final = ErrorCode.SASL_AUTHENTICATION_FAILED


class PlainClientState(enum.Enum):
    INITIAL = "INITIAL"
    AWAITING_OUTCOME = "AWAITING_OUTCOME"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"


class PlainClientInput(enum.Enum):
    INITIAL_RESPONSE = "initial_response"
    STEP = "step"


class PlainServerState(enum.Enum):
    AWAITING_RESPONSE = "AWAITING_RESPONSE"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"


class PlainServerInput(enum.Enum):
    STEP = "step"


#: Every legal call of :class:`PlainClient`; any other raises LocalProtocolError and moves to ERROR.
PLAIN_CLIENT_TRANSITIONS: Final[Mapping[tuple[PlainClientState, PlainClientInput], PlainClientState]] = {
    (PlainClientState.INITIAL, PlainClientInput.INITIAL_RESPONSE): PlainClientState.AWAITING_OUTCOME,
    (PlainClientState.AWAITING_OUTCOME, PlainClientInput.STEP): PlainClientState.COMPLETE,
}

#: Every legal call of :class:`PlainServer`; any other raises LocalProtocolError and moves to ERROR.
PLAIN_SERVER_TRANSITIONS: Final[Mapping[tuple[PlainServerState, PlainServerInput], PlainServerState]] = {
    (PlainServerState.AWAITING_RESPONSE, PlainServerInput.STEP): PlainServerState.COMPLETE,
}


class PlainClient:
    """The client side of SASL/PLAIN.

    ``initial_response()`` gives the only token; ``step(b"")`` on the server's empty answer
    returns ``None`` and completes. A non-empty server token is not PLAIN and raises
    :class:`AuthenticationError`. Raises ``ValueError`` for an empty user name or a NUL in any
    argument (those cannot be encoded).
    """

    def __init__(self, username: str, password: str, authzid: str = "") -> None:
        if not username:
            raise ValueError("PLAIN needs a user name")
        for label, value in (("username", username), ("password", password), ("authzid", authzid)):
            if "\x00" in value:
                raise ValueError(f"PLAIN {label} must not contain NUL")
        self.name: str = NAME
        self.username = username
        self._token = f"{authzid}\x00{username}\x00{password}".encode()
        self._machine = StateMachine(
            NAME, PLAIN_CLIENT_TRANSITIONS, PlainClientState.INITIAL, error=PlainClientState.ERROR
        )

    @property
    def state(self) -> PlainClientState:
        return self._machine.state

    @property
    def complete(self) -> bool:
        return self._machine.state is PlainClientState.COMPLETE

    def initial_response(self) -> bytes:
        try:
            self._machine.move(PlainClientInput.INITIAL_RESPONSE)
        except BaseException as exc:
            self._machine.fail(exc)
            raise
        return self._token

    def step(self, challenge: Buffer) -> bytes | None:
        try:
            self._machine.target(PlainClientInput.STEP)
            if len(challenge):
                raise AuthenticationError(
                    f"PLAIN: the server sent a {len(challenge)}-byte token; PLAIN servers send none"
                )
            self._machine.move(PlainClientInput.STEP)
        except BaseException as exc:
            self._machine.fail(exc)
            raise
        return None


class PlainServer:
    """The server side of SASL/PLAIN.

    ``authenticate(username, password)`` decides; it must be pure (no I/O) and should compare
    secrets in constant time. ``step`` returns ``b""`` on success and raises
    :class:`AuthenticationError` (``error_code`` 58, SASL_AUTHENTICATION_FAILED) otherwise.
    """

    def __init__(self, authenticate: Callable[[str, str], bool]) -> None:
        self.name: str = NAME
        self._authenticate = authenticate
        self._machine = StateMachine(
            NAME, PLAIN_SERVER_TRANSITIONS, PlainServerState.AWAITING_RESPONSE, error=PlainServerState.ERROR
        )
        self._principal = ""

    @property
    def state(self) -> PlainServerState:
        return self._machine.state

    @property
    def complete(self) -> bool:
        return self._machine.state is PlainServerState.COMPLETE

    @property
    def principal(self) -> str:
        return self._principal

    @property
    def credential_expires_ms(self) -> None:
        """A password does not expire."""
        return None

    def step(self, response: Buffer) -> bytes:
        try:
            self._machine.target(PlainServerInput.STEP)
            username = self._check(bytes(response))
            self._principal = username
            self._machine.move(PlainServerInput.STEP)
        except BaseException as exc:
            self._machine.fail(exc)
            raise
        return b""

    def _check(self, token: bytes) -> str:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise _fail("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = text.split("\x00")
        if len(parts) != 3:
            raise _fail(f"Invalid SASL/PLAIN response: expected 3 NUL-separated fields, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise _fail("Authentication failed: username not specified")
        if not password:
            raise _fail("Authentication failed: password not specified")
        if authzid and authzid != username:
            raise _fail("Authentication failed: the authorization id differs from the user name")
        if not self._authenticate(username, password):
            raise _fail("Authentication failed: Invalid username or password")
        return username


def _fail(reason: str) -> AuthenticationError:
    return AuthenticationError(reason, error_code=_FAILED)
