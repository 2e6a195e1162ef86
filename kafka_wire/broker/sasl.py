"""The broker's SASL gate: PLAIN and SCRAM users from configuration.

``sasl_users`` maps a mechanism to users and passwords. SCRAM credentials are derived once at
start-up with a salt drawn from the broker's nonce source (so the engine stays deterministic under
test) and Kafka's minimum of 4096 iterations. No users means no gate: plaintext.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.protocol.sasl.base import SaslServerMechanism
from kafka_wire.protocol.server import ServerSasl

if TYPE_CHECKING:
    from kafka_wire.protocol.sasl import ScramCredential, ScramServer


def server_sasl(users: Mapping[str, Mapping[str, str]], nonce: Callable[[], str]) -> ServerSasl | None:
    if not users:
        return None
    # The mechanisms load only for a broker that has users (kafka_wire.protocol.sasl is lazy).
    from kafka_wire.protocol.sasl import MIN_SCRAM_ITERATIONS, PlainServer, ScramCredential

    mechanisms: dict[str, Callable[[], SaslServerMechanism]] = {}
    for mechanism, passwords in users.items():
        if mechanism == "PLAIN":
            table = dict(passwords)
            mechanisms[mechanism] = partial(PlainServer, partial(_check_plain, table))
        else:
            credentials = {
                user: ScramCredential.from_password(
                    mechanism, password, hashlib.sha256(nonce().encode()).digest(), MIN_SCRAM_ITERATIONS
                )
                for user, password in passwords.items()
            }
            mechanisms[mechanism] = partial(_scram_server, mechanism, credentials, nonce)
    return ServerSasl(mechanisms=mechanisms)


def sasl_refusal(api_key: int) -> Message:
    """The answer to SaslHandshake or SaslAuthenticate on a listener without SASL (they reach the
    broker only without a gate): Kafka refuses SASL on a plaintext listener."""
    if api_key == ApiKey.SASL_HANDSHAKE:
        return messages.SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)
    return messages.SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message="SASL is not enabled"
    )


def _check_plain(table: Mapping[str, str], user: str, password: str) -> bool:
    expected = table.get(user)
    return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


def _scram_server(
    mechanism: str, credentials: Mapping[str, ScramCredential], nonce: Callable[[], str]
) -> ScramServer:
    from kafka_wire.protocol.sasl import ScramServer

    return ScramServer(mechanism, credentials.get, nonce())
