"""The KIP-368 session of an authenticated SASL connection, server side: how long it lasts, when a
SaslHandshake re-authenticates, and when it has ended. Pure: times come in as ``now_ms``.

As Kafka's broker decides: a session lasts ``connections.max.reauth.ms`` when that is set, capped
by the credential's expiry (an OAUTHBEARER token's ``exp``), never below 0; without either it
never ends. In a session that has an end, a SaslHandshake v1+ starts a re-authentication, at most
one per ``min_interval_ms`` (Kafka: a second). The session has ended once ``now_ms`` is past its
end; the connection closes at its next request then (:class:`~kafka_wire.protocol.server.ServerConnection`;
the session belongs to its SASL exchange, :class:`~kafka_wire.protocol.server_sasl.ServerSaslExchange`).
"""

from __future__ import annotations

from typing import Final

#: Kafka's broker starts at most one re-authentication a second on a connection (KafkaChannel).
MIN_REAUTHENTICATION_INTERVAL_MS: Final = 1000


class SaslSession:
    """One connection's session (none until :meth:`begin`)."""

    def __init__(self, max_reauth_ms: int, min_interval_ms: int = MIN_REAUTHENTICATION_INTERVAL_MS) -> None:
        self.max_reauth_ms = max_reauth_ms
        self.min_interval_ms = min_interval_ms
        #: When the session ends, if it does.
        self.expires_ms: int | None = None
        #: When the last re-authentication began.
        self.reauthentication_started_ms: int | None = None

    def lifetime_ms(self, credential_expires_ms: int | None, now_ms: int) -> int | None:
        """How long a session that starts at ``now_ms`` lasts (None: for ever)."""
        limit = self.max_reauth_ms
        if credential_expires_ms is None:
            return limit if limit > 0 else None
        left = max(0, credential_expires_ms - now_ms)
        return min(left, limit) if limit > 0 else left

    def begin(self, lifetime_ms: int | None, now_ms: int) -> None:
        """A session of ``lifetime_ms`` (None: for ever) starts at ``now_ms``."""
        self.expires_ms = None if lifetime_ms is None else now_ms + lifetime_ms

    def may_reauthenticate(self, handshake_version: int, now_ms: int) -> bool:
        """Whether a SaslHandshake of ``handshake_version`` at ``now_ms`` starts a re-authentication."""
        last = self.reauthentication_started_ms
        return (
            self.expires_ms is not None
            and handshake_version >= 1
            and (last is None or now_ms - last >= self.min_interval_ms)
        )

    def reauthenticating(self, now_ms: int) -> None:
        self.reauthentication_started_ms = now_ms

    def ended(self, now_ms: int) -> bool:
        return self.expires_ms is not None and now_ms > self.expires_ms
