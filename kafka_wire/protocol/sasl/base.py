"""The two shapes every SASL mechanism has here: a client side and a server side.

Both are pure state machines over bytes: no sockets, clocks or ambient randomness (nonces are
passed in). The connections (``ClientConnection`` / ``ServerConnection``) carry the tokens in
SaslAuthenticate requests, or raw after a SaslHandshake v0.
"""

from __future__ import annotations

from typing import Protocol

#: What the mechanisms accept as a token; they always return ``bytes``.
Buffer = bytes | bytearray | memoryview


class SaslClientMechanism(Protocol):
    """The client side of one authentication exchange."""

    #: The mechanism name sent in SaslHandshake, e.g. ``"SCRAM-SHA-256"``.
    name: str

    def initial_response(self) -> bytes:
        """The first token the client sends."""
        ...

    def step(self, challenge: bytes) -> bytes | None:
        """Take the server's token; return the next token to send, or ``None`` when complete.

        Raises :class:`~kafka_wire.errors.AuthenticationError` when the server's token is bad
        (a wrong server signature, a nonce that does not extend ours, a server-reported error).
        """
        ...

    @property
    def complete(self) -> bool:
        """True once the exchange succeeded."""
        ...


class SaslServerMechanism(Protocol):
    """The server side of one authentication exchange."""

    name: str

    def step(self, response: bytes) -> bytes:
        """Take the client's token; return the token to send back.

        Raises :class:`~kafka_wire.errors.AuthenticationError` when authentication fails (unknown
        user, wrong password, bad nonce, malformed message).
        """
        ...

    @property
    def complete(self) -> bool:
        """True once the client is authenticated."""
        ...

    @property
    def principal(self) -> str:
        """The authenticated user name (empty until complete)."""
        ...

    @property
    def credential_expires_ms(self) -> int | None:
        """When the credential the client authenticated with expires (ms since the epoch), if it
        does (an OAUTHBEARER token's ``exp``): the session ends then at the latest (KIP-368)."""
        ...
