"""SASL mechanisms as pure state machines: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Each mechanism has a client and a server class matching :class:`SaslClientMechanism` and
:class:`SaslServerMechanism`. They exchange bytes only; the connections carry the tokens. Nonces
are passed in (this package draws no random numbers). Authentication failures raise
:class:`~kafka_wire.errors.AuthenticationError`; a call in the wrong state raises
:class:`~kafka_wire.errors.LocalProtocolError`; either moves the mechanism to ``ERROR``. See
``docs/guide/sasl.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire.lazy_exports import exports

if TYPE_CHECKING:
    from kafka_wire.protocol.sasl.base import SaslClientMechanism, SaslServerMechanism
    from kafka_wire.protocol.sasl.oauthbearer import (
        OAUTHBEARER_CLIENT_TRANSITIONS,
        OAUTHBEARER_SERVER_TRANSITIONS,
        OAuthBearerClient,
        OAuthBearerClientInput,
        OAuthBearerClientState,
        OAuthBearerRefusal,
        OAuthBearerServer,
        OAuthBearerServerError,
        OAuthBearerServerInput,
        OAuthBearerServerState,
        OAuthBearerToken,
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
    "OAuthBearerRefusal",
    "OAuthBearerServer",
    "OAuthBearerServerError",
    "OAuthBearerServerInput",
    "OAuthBearerServerState",
    "OAuthBearerToken",
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


#: Each name of ``__all__`` and its module, imported on first use (a broker without SASL users
#: loads no mechanism).
__getattr__ = exports(
    __name__,
    {
        "SaslClientMechanism": "kafka_wire.protocol.sasl.base",
        "SaslServerMechanism": "kafka_wire.protocol.sasl.base",
        "OAUTHBEARER_CLIENT_TRANSITIONS": "kafka_wire.protocol.sasl.oauthbearer",
        "OAUTHBEARER_SERVER_TRANSITIONS": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerClient": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerClientInput": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerClientState": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerRefusal": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerServer": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerToken": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerServerError": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerServerInput": "kafka_wire.protocol.sasl.oauthbearer",
        "OAuthBearerServerState": "kafka_wire.protocol.sasl.oauthbearer",
        "PLAIN_CLIENT_TRANSITIONS": "kafka_wire.protocol.sasl.plain",
        "PLAIN_SERVER_TRANSITIONS": "kafka_wire.protocol.sasl.plain",
        "PlainClient": "kafka_wire.protocol.sasl.plain",
        "PlainClientInput": "kafka_wire.protocol.sasl.plain",
        "PlainClientState": "kafka_wire.protocol.sasl.plain",
        "PlainServer": "kafka_wire.protocol.sasl.plain",
        "PlainServerInput": "kafka_wire.protocol.sasl.plain",
        "PlainServerState": "kafka_wire.protocol.sasl.plain",
        "DEFAULT_MAX_SCRAM_ITERATIONS": "kafka_wire.protocol.sasl.scram",
        "MIN_SCRAM_ITERATIONS": "kafka_wire.protocol.sasl.scram",
        "SCRAM_CLIENT_TRANSITIONS": "kafka_wire.protocol.sasl.scram",
        "SCRAM_SERVER_TRANSITIONS": "kafka_wire.protocol.sasl.scram",
        "ScramClient": "kafka_wire.protocol.sasl.scram",
        "ScramClientInput": "kafka_wire.protocol.sasl.scram",
        "ScramClientState": "kafka_wire.protocol.sasl.scram",
        "ScramCredential": "kafka_wire.protocol.sasl.scram",
        "ScramMechanism": "kafka_wire.protocol.sasl.scram",
        "ScramServer": "kafka_wire.protocol.sasl.scram",
        "ScramServerInput": "kafka_wire.protocol.sasl.scram",
        "ScramServerState": "kafka_wire.protocol.sasl.scram",
    },
)
