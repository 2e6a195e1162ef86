"""The SASL exchange of a :class:`~kafka_wire.protocol.client.ClientConnection`: the SaslHandshake it
begins with (v1, tokens in SaslAuthenticate, or v0, raw tokens), the mechanism's steps, and the
KIP-368 re-authentication the broker's session lifetime calls for (a fresh mechanism from the
factory each time). The exchange says what to send and when it is done; the connection writes
and makes the moves of its state machine. Pure: times come in as ``now_ms``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Authenticated
from kafka_wire.protocol.sasl.base import SaslClientMechanism

if TYPE_CHECKING:
    from kafka_wire.messages import SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse

#: Kafka's client re-authenticates at a random point between 85% and 95% of the session
#: lifetime (KIP-368); without randomness, this connection picks the middle.
REAUTHENTICATE_AT: Final = 0.90

#: A SASL mechanism, or a factory making a fresh one per exchange (needed to re-authenticate).
SaslClientSource = SaslClientMechanism | Callable[[], SaslClientMechanism]


class ClientSaslExchange:
    """One connection's SASL exchanges, the first and every re-authentication."""

    __slots__ = ("_factory", "_handshake_version", "_mechanism", "raw", "reauthenticate_at_ms")

    def __init__(self, source: SaslClientSource, handshake_version: int | None) -> None:
        self._factory: Callable[[], SaslClientMechanism] | None = None
        if callable(source):
            self._factory = source
            source = source()
        self._mechanism: SaslClientMechanism = source
        #: ``ClientConfig.sasl_handshake_version``: None picks by the broker's versions.
        self._handshake_version = handshake_version
        #: The tokens go raw (after SaslHandshake v0), not in SaslAuthenticate.
        self.raw = False
        #: When to re-authenticate (KIP-368), if the broker's session ends and a factory can.
        self.reauthenticate_at_ms: int | None = None

    def handshake(self, has_sasl_authenticate: bool) -> tuple[SaslHandshakeRequest, int]:
        """The SaslHandshake that begins an exchange, and its version: v1 when the broker has
        SaslAuthenticate, else v0 (raw tokens), unless the configuration says."""
        version = self._handshake_version
        if version is None:
            version = 1 if has_sasl_authenticate else 0
        self.raw = version == 0
        return messages.SaslHandshakeRequest(mechanism=self._mechanism.name), version

    def restart(self) -> None:
        """A re-authentication is due: a fresh mechanism for the new exchange."""
        self.reauthenticate_at_ms = None
        assert self._factory is not None
        self._mechanism = self._factory()

    def on_handshake(self, body: SaslHandshakeResponse) -> bytes:
        """The broker's answer to the handshake: the mechanism's first token, to send."""
        if body.error_code != ErrorCode.NONE:
            raise AuthenticationError(
                f"the broker refused SASL mechanism {self._mechanism.name} ({ErrorCode.lookup(body.error_code)!r}); "
                f"it enables {', '.join(body.mechanisms) or 'none'}",
                error_code=body.error_code,
            )
        return self._mechanism.initial_response()

    def on_authenticate(
        self, body: SaslAuthenticateResponse, now_ms: int, *, reauthentication: bool
    ) -> bytes | Authenticated:
        """The broker's answer to a SaslAuthenticate: see :meth:`on_token`."""
        if body.error_code != ErrorCode.NONE:
            raise AuthenticationError(
                body.error_message or f"SASL authentication failed ({ErrorCode.lookup(body.error_code)!r})",
                error_code=body.error_code,
            )
        return self.on_token(
            body.auth_bytes, now_ms, body.session_lifetime_ms, reauthentication=reauthentication
        )

    def on_token(
        self, token: bytes, now_ms: int, session_lifetime_ms: int = 0, *, reauthentication: bool
    ) -> bytes | Authenticated:
        """The broker's token: the mechanism's reply to send, or the event of the exchange's end
        (and the re-authentication due before the session the broker granted ends)."""
        reply = self._mechanism.step(token)
        if reply is not None:
            return reply
        if session_lifetime_ms > 0 and self._factory is not None:
            self.reauthenticate_at_ms = now_ms + int(session_lifetime_ms * REAUTHENTICATE_AT)
        return Authenticated(
            mechanism=self._mechanism.name,
            session_lifetime_ms=session_lifetime_ms,
            reauthentication=reauthentication,
        )
