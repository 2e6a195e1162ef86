"""The SASL exchange of a :class:`~kafka_wire.protocol.server.ServerConnection` behind a SASL gate:
the mechanism a SaslHandshake picks, the SaslAuthenticate steps (or raw tokens after SaslHandshake
v0), KIP-368 re-authentication (same mechanism, same principal) and the session that follows
(:class:`~kafka_wire.protocol.sasl_session.SaslSession`).

The exchange answers each SASL request with a response body and says how it ended (an
:class:`Authenticated` or :class:`AuthenticationFailed` event, or None while it goes on); the
connection queues the answer and makes the move of its state machine. Pure: times come in as
``now_ms``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.protocol.events import Authenticated, AuthenticationFailed
from kafka_wire.protocol.sasl.base import SaslServerMechanism
from kafka_wire.protocol.sasl_session import SaslSession

if TYPE_CHECKING:
    from kafka_wire.messages import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

_SIZE: Final = struct.Struct(">i")
_KEY_VERSION: Final = struct.Struct(">hh")

#: How an exchange step ended: authenticated, refused, or not yet (None).
Outcome = Authenticated | AuthenticationFailed | None


class ServerSaslExchange:
    """One connection's SASL exchanges, from the first handshake to the last re-authentication."""

    def __init__(
        self,
        mechanisms: Mapping[str, Callable[[], SaslServerMechanism]],
        max_reauth_ms: int,
        min_reauthentication_interval_ms: int,
    ) -> None:
        self._mechanisms = mechanisms
        self._mechanism: SaslServerMechanism | None = None
        self._mechanism_name = ""
        #: The authenticated session (KIP-368).
        self._session = SaslSession(max_reauth_ms, min_reauthentication_interval_ms)

    @property
    def mechanism(self) -> SaslServerMechanism | None:
        """The server mechanism of the last exchange (None before one)."""
        return self._mechanism

    # -- the session ---------------------------------------------------------------------------

    def may_reauthenticate(self, handshake_version: int, now_ms: int) -> bool:
        """Whether a SaslHandshake of ``handshake_version`` starts a re-authentication now."""
        return self._session.may_reauthenticate(handshake_version, now_ms)

    def starts_reauthentication(self, frame: bytes, now_ms: int) -> bool:
        """Whether this request frame is a SaslHandshake that starts a re-authentication."""
        if len(frame) < 8:
            return False
        api_key, api_version = _KEY_VERSION.unpack_from(frame, 4)
        return api_key == ApiKey.SASL_HANDSHAKE and self._session.may_reauthenticate(api_version, now_ms)

    def session_ended(self, now_ms: int) -> bool:
        return self._session.ended(now_ms)

    # -- handshakes ----------------------------------------------------------------------------

    def handshake(self, mechanism: str) -> tuple[SaslHandshakeResponse, AuthenticationFailed | None]:
        """The first SaslHandshake: the answer, and the failure when ``mechanism`` is not enabled."""
        enabled = list(self._mechanisms)
        factory = self._mechanisms.get(mechanism)
        if factory is None:
            return self._unsupported(enabled), AuthenticationFailed(
                mechanism=mechanism,
                reason=f"mechanism {mechanism!r} is not enabled (enabled: {', '.join(enabled)})",
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            )
        self._mechanism, self._mechanism_name = factory(), mechanism
        return messages.SaslHandshakeResponse(mechanisms=enabled), None

    def reauthentication(
        self, mechanism: str, now_ms: int
    ) -> tuple[SaslHandshakeResponse, AuthenticationFailed | None]:
        """A SaslHandshake that starts a re-authentication (see :meth:`may_reauthenticate`): the
        answer, and the failure when it changes the mechanism (Kafka refuses it, and closes)."""
        enabled = list(self._mechanisms)
        if mechanism != self._mechanism_name:
            return self._unsupported(enabled), AuthenticationFailed(
                mechanism=mechanism,
                reason=f"re-authentication must keep mechanism {self._mechanism_name!r}",
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            )
        self._mechanism = self._mechanisms[mechanism]()
        self._session.reauthenticating(now_ms)
        return messages.SaslHandshakeResponse(mechanisms=enabled), None

    @staticmethod
    def _unsupported(enabled: list[str]) -> SaslHandshakeResponse:
        return messages.SaslHandshakeResponse(
            error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
        )

    def refusal(self, body: SaslHandshakeRequest | SaslAuthenticateRequest) -> Message:
        """The answer to a SASL request after authentication that starts no re-authentication:
        Kafka's ILLEGAL_SASL_STATE."""
        illegal = ErrorCode.ILLEGAL_SASL_STATE
        if isinstance(body, messages.SaslHandshakeRequest):
            return messages.SaslHandshakeResponse(error_code=illegal, mechanisms=list(self._mechanisms))
        return messages.SaslAuthenticateResponse(error_code=illegal, error_message="already authenticated")

    # -- tokens --------------------------------------------------------------------------------

    def authenticate(
        self, token: bytes, api_version: int, principal: str, *, reauthentication: bool, now_ms: int
    ) -> tuple[SaslAuthenticateResponse, Outcome]:
        """One SaslAuthenticate step of the exchange the handshake began: the answer, and how the
        exchange ended. A re-authentication must keep ``principal`` (the connection's)."""
        reply, failure = self._step(token)
        mechanism = self._mechanism
        assert mechanism is not None
        if failure is None and mechanism.complete and reauthentication and mechanism.principal != principal:
            failure = AuthenticationError(
                "Cannot change principals during re-authentication",
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
            )
        if failure is not None:
            code = failure.error_code or ErrorCode.SASL_AUTHENTICATION_FAILED
            answer = messages.SaslAuthenticateResponse(error_code=code, error_message=failure.reason)
            return answer, self._failed(failure.reason, code)
        lifetime = 0
        if mechanism.complete and api_version >= 1:
            # KIP-368: the client re-authenticates in time.
            lifetime = self._session.lifetime_ms(mechanism.credential_expires_ms, now_ms) or 0
        answer = messages.SaslAuthenticateResponse(auth_bytes=reply, session_lifetime_ms=lifetime)
        return answer, self._succeeded(reauthentication, now_ms)

    def raw_token(self, token: bytes, now_ms: int) -> tuple[bytes | None, Outcome]:
        """One raw token after SaslHandshake v0: the size-prefixed reply (None after a failure:
        Kafka closes a raw-token connection without an answer), and how the exchange ended."""
        reply, failure = self._step(token)
        if failure is not None:
            return None, self._failed(
                failure.reason, failure.error_code or ErrorCode.SASL_AUTHENTICATION_FAILED
            )
        return _SIZE.pack(len(reply)) + reply, self._succeeded(False, now_ms)

    def _step(self, token: bytes) -> tuple[bytes, AuthenticationError | None]:
        assert self._mechanism is not None
        try:
            return self._mechanism.step(token), None
        except AuthenticationError as exc:
            return b"", exc

    def _failed(self, reason: str, error_code: int) -> AuthenticationFailed:
        return AuthenticationFailed(mechanism=self._mechanism_name, reason=reason, error_code=error_code)

    def _succeeded(self, reauthentication: bool, now_ms: int) -> Authenticated | None:
        mechanism = self._mechanism
        assert mechanism is not None
        if not mechanism.complete:
            return None
        lifetime = self._session.lifetime_ms(mechanism.credential_expires_ms, now_ms)
        # Sessions expire for every client (KIP-368): one that cannot re-authenticate (raw tokens,
        # SaslAuthenticate v0) is closed at its first request after its session ended.
        self._session.begin(lifetime, now_ms)
        return Authenticated(
            mechanism=self._mechanism_name,
            principal=mechanism.principal,
            session_lifetime_ms=lifetime or 0,
            reauthentication=reauthentication,
        )
