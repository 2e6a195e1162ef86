"""SCRAM logins with a delegation token (KIP-48), as Kafka's ``ScramSaslServer`` takes them.

A client that holds a token logs in with SCRAM-SHA-256 or -512, its user name the token's id, its
password the base64 of the token's HMAC, and the SCRAM extension ``tokenauth=true`` in its
client-first message (Kafka's ``ScramLoginModule`` option ``tokenauth="true"``). The broker
then checks the password against a credential derived from the token (its HMAC under this node's
``delegation.token.secret.key``, 4096 iterations, the mechanism's minimum, as Kafka derives it),
not against the users' SCRAM credentials; the session's principal is the token's owner
(``User:<owner's name>``), marked as token-authenticated (Kafka's ``KafkaPrincipal``
``tokenAuthenticated``: such a connection may not ask for tokens). A token id the image does not
hold (never created, expired and swept, or expired at once with ExpireDelegationToken) fails as
a wrong password does. Without ``tokenauth`` the login is an ordinary SCRAM user's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from kafka_wire.errors import LocalProtocolError

if TYPE_CHECKING:
    from kafka_wire.protocol.sasl import ScramCredential

#: ``(token id, mechanism) -> (credential, owner's name, expiry time)`` of a live token, else None.
TokenLookup = Callable[[str, str], "tuple[ScramCredential, str, int] | None"]

#: Kafka's ``ScramMechanism.minIterations``: a token's credential is derived with it.
TOKEN_ITERATIONS: Final = 4096
#: The SCRAM extension that marks a token login (Kafka's ``ScramLoginModule.TOKEN_AUTH_CONFIG``).
TOKEN_AUTH_EXTENSION: Final = "tokenauth"


def token_authenticated(mechanism: object) -> bool:
    """Whether a finished SASL exchange (a server mechanism) logged in with a delegation token."""
    return isinstance(mechanism, TokenScramServer) and mechanism.token_authenticated


def token_lookup(view: object, secret_key: str) -> TokenLookup:
    """The tokens of ``view``'s metadata image (a node's
    :class:`~kafka_wire.broker.metadata_view.MetadataView`; none for another view, nor without a
    secret key). Credentials are derived once per token and mechanism."""
    from kafka_wire.broker.metadata_view import MetadataView

    derived: dict[tuple[str, str], ScramCredential] = {}

    def lookup(token_id: str, mechanism: str) -> tuple[ScramCredential, str, int] | None:
        if not secret_key or not isinstance(view, MetadataView):
            return None
        try:
            image = view.image
        except LocalProtocolError:  # the node's parts are not built yet
            return None
        tokens = image.tokens.tokens
        token = tokens.get(token_id)
        if token is None:
            return None
        if len(derived) > 2 * len(tokens) + 16:  # forget the credentials of removed tokens
            for gone in [key for key in derived if key[0] not in tokens]:
                del derived[gone]
        credential = derived.get((token_id, mechanism))
        if credential is None:
            import base64  # with the SASL mechanisms, not at start
            import hashlib
            import hmac

            from kafka_wire.protocol.sasl import ScramCredential

            mac = image.tokens.hmac_of(token_id, secret_key)
            # A salt of the token's own (Kafka draws a random one; a client cannot tell).
            salt = hmac.digest(mac, b"kafka-wire token salt", hashlib.sha256)
            try:
                credential = ScramCredential.from_password(
                    mechanism, base64.b64encode(mac).decode(), salt, TOKEN_ITERATIONS
                )
            except ValueError:  # not a SCRAM mechanism
                return None
            derived[(token_id, mechanism)] = credential
        return credential, token.owner[1], token.expiry_timestamp_ms

    return lookup


class TokenScramServer:
    """A SCRAM server mechanism that also takes delegation-token logins (see the module
    docstring); otherwise the :class:`~kafka_wire.protocol.sasl.ScramServer` it wraps."""

    def __init__(
        self,
        mechanism: str,
        users: Callable[[str], ScramCredential | None],
        tokens: TokenLookup,
        nonce: str,
    ) -> None:
        from kafka_wire.protocol.sasl import ScramServer

        self._users = users
        self._tokens = tokens
        self._mechanism = mechanism
        self._scram = ScramServer(mechanism, self._lookup, nonce)
        self.name: str = self._scram.name
        #: The token's id, once a token login found its token.
        self.token_id = ""
        self._expires_ms: int | None = None
        self._owner = ""

    def _lookup(self, username: str) -> ScramCredential | None:
        if not _token_login(self._scram.extensions):
            return self._users(username)
        found = self._tokens(username, self._mechanism)
        if found is None:
            return None
        credential, self._owner, self._expires_ms = found
        self.token_id = username
        return credential

    def step(self, response: bytes) -> bytes:
        return self._scram.step(response)

    @property
    def complete(self) -> bool:
        return self._scram.complete

    @property
    def token_authenticated(self) -> bool:
        return self.complete and bool(self.token_id)

    @property
    def credential_expires_ms(self) -> int | None:
        """A token login's token expiry (Kafka's negotiated ``CREDENTIAL_LIFETIME_MS``, which ends
        a KIP-368 session at the latest); None for a user's login."""
        return self._expires_ms if self.token_authenticated else None

    @property
    def principal(self) -> str:
        """The user's name, or for a token login its owner's."""
        return self._owner if self.token_authenticated else self._scram.principal


def _token_login(extensions: Mapping[str, str]) -> bool:
    # Kafka's ScramExtensions.tokenAuthenticated: "true", in any case
    return extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true"
