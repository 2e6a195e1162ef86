"""SASL mechanisms as pure state machines: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Each mechanism has a client and a server class matching :class:`SaslClientMechanism` and
:class:`SaslServerMechanism`. They exchange bytes only; the connections carry the tokens. Nonces
are passed in (this package draws no random numbers). Authentication failures raise
:class:`~kafka_wire.errors.AuthenticationError`; a call in the wrong state raises
:class:`~kafka_wire.errors.LocalProtocolError`; either moves the mechanism to ``ERROR``. See
``docs/guide/sasl.md``.
"""

from typing import Final

from kafka_wire.protocol.sasl.base import SaslClientMechanism, SaslServerMechanism
from kafka_wire.protocol.sasl.oauthbearer import (
    OAUTHBEARER_CLIENT_TRANSITIONS,
    OAUTHBEARER_SERVER_TRANSITIONS,
    OAuthBearerClient,
    OAuthBearerClientInput,
    OAuthBearerClientState,
    OAuthBearerServer,
    OAuthBearerServerError,
    OAuthBearerServerInput,
    OAuthBearerServerState,
)
from kafka_wire.protocol.sasl.plain import (
    PLAIN_CLIENT_TRANSITIONS,
    PLAIN_SERVER_TRANSITIONS,
    PlainClient,
    PlainClientInput,
    PlainClientState,
    PlainServer,
    PlainServerInput,
    PlainServerState,
)
from kafka_wire.protocol.sasl.scram import (
    DEFAULT_MAX_SCRAM_ITERATIONS,
    MIN_SCRAM_ITERATIONS,
    SCRAM_CLIENT_TRANSITIONS,
    SCRAM_SERVER_TRANSITIONS,
    ScramClient,
    ScramClientInput,
    ScramClientState,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    ScramServerInput,
    ScramServerState,
)

#: Every mechanism name this package implements, client and server side.
MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

__all__ = [
    "DEFAULT_MAX_SCRAM_ITERATIONS",
    "MECHANISMS",
    "MIN_SCRAM_ITERATIONS",
    "OAUTHBEARER_CLIENT_TRANSITIONS",
    "OAUTHBEARER_SERVER_TRANSITIONS",
    "PLAIN_CLIENT_TRANSITIONS",
    "PLAIN_SERVER_TRANSITIONS",
    "SCRAM_CLIENT_TRANSITIONS",
    "SCRAM_SERVER_TRANSITIONS",
    "OAuthBearerClient",
    "OAuthBearerClientInput",
    "OAuthBearerClientState",
    "OAuthBearerServer",
    "OAuthBearerServerError",
    "OAuthBearerServerInput",
    "OAuthBearerServerState",
    "PlainClient",
    "PlainClientInput",
    "PlainClientState",
    "PlainServer",
    "PlainServerInput",
    "PlainServerState",
    "SaslClientMechanism",
    "SaslServerMechanism",
    "ScramClient",
    "ScramClientInput",
    "ScramClientState",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "ScramServerInput",
    "ScramServerState",
]
