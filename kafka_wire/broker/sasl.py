"""The broker's SASL gates: one per SASL listener, PLAIN users from its JAAS entry, SCRAM
users from the cluster's metadata and OAUTHBEARER tokens checked by the listener's validator.

A listener's :class:`~kafka_wire.broker.sasl_config.ListenerSasl` names its mechanisms and its
PLAIN users. SCRAM credentials are looked up when a client authenticates, through ``scram``
(``(user, mechanism) -> ScramCredential | None``), which reads the node's metadata image: a
credential AlterUserScramCredentials wrote is usable on every node as soon as the node applied
its record, and after a restart. An OAUTHBEARER token is checked by the listener's validator
(:mod:`kafka_wire.broker.oauth`) at the time of the call that carries it (``now_ms``, the
broker's input time), against the key sets the driver loaded into :func:`oauth_key_sets`'s
object. A listener without SASL settings has no gate: plaintext.

``sasl.users.<MECHANISM>.<user>`` (``BrokerConfig.sasl_users``, kafka_wire's own shortcut) still
works: a single node given only those serves them on its listener, and their SCRAM credentials,
derived once at start-up with a salt from the broker's nonce source and 4096 iterations, log in
beside those of the metadata (which win).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.cluster_settings import STANDALONE_LISTENER
from kafka_wire.broker.oauth_config import SignedSettings
from kafka_wire.broker.sasl_config import ListenerSasl
from kafka_wire.broker.token_auth import TokenLookup, TokenScramServer
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.protocol.sasl.base import SaslServerMechanism
from kafka_wire.protocol.server import ServerSasl

if TYPE_CHECKING:
    from kafka_wire.broker.oauth import KeySets, OAuthValidator
    from kafka_wire.protocol.sasl import OAuthBearerServer, ScramCredential, ScramServer
    from kafka_wire.protocol.sasl.oauthbearer import Validation

_SILENT = logging.getLogger("kafka_wire.broker.sasl")

#: ``(user, mechanism) -> credential``: the SCRAM credentials of the node's metadata image.
ScramLookup = Callable[[str, str], "ScramCredential | None"]


def oauth_key_sets(listeners: Mapping[str, ListenerSasl]) -> KeySets | None:
    """The holder of the JWKS of the listeners that validate signed OAUTHBEARER tokens (None
    when none does: nothing of OAUTHBEARER loads)."""
    if not any(isinstance(s.oauth, SignedSettings) for s in listeners.values()):
        return None
    from kafka_wire.broker.oauth import KeySets

    return KeySets()


def server_sasl(
    listeners: Mapping[str, ListenerSasl],
    scram: ScramLookup,
    nonce: Callable[[], str],
    users: Mapping[str, Mapping[str, str]] | None = None,
    *,
    tokens: TokenLookup | None = None,
    now_ms: Callable[[], int] = lambda: 0,
    key_sets: KeySets | None = None,
    logger: logging.Logger = _SILENT,
) -> dict[str, ServerSasl]:
    """The gate of each SASL listener, by listener name (``users``: ``sasl.users.*``; ``tokens``:
    the delegation tokens SCRAM logins with ``tokenauth=true`` use, ``token_auth.py``; ``now_ms``:
    the time of the broker's current input, against which OAUTHBEARER tokens are checked;
    ``key_sets``: :func:`oauth_key_sets`'s)."""
    if not listeners and users:
        listeners = {
            STANDALONE_LISTENER: ListenerSasl(
                mechanisms=tuple(users), plain_users=dict(users.get("PLAIN", {}))
            )
        }
    if not listeners:
        return {}
    # The mechanisms load only for a broker with a SASL listener (kafka_wire.protocol.sasl is lazy),
    # and so do ``hashlib`` and ``hmac``.
    import hashlib

    from kafka_wire.protocol.sasl import MIN_SCRAM_ITERATIONS, PlainServer, ScramCredential

    if users:
        fixed = {
            (user, mechanism): ScramCredential.from_password(
                mechanism, password, hashlib.sha256(nonce().encode()).digest(), MIN_SCRAM_ITERATIONS
            )
            for mechanism, passwords in users.items()
            if mechanism != "PLAIN"
            for user, password in passwords.items()
        }
        image = scram

        def scram(user: str, mechanism: str) -> ScramCredential | None:
            return image(user, mechanism) or fixed.get((user, mechanism))

    gates: dict[str, ServerSasl] = {}
    for listener, settings in listeners.items():
        mechanisms: dict[str, Callable[[], SaslServerMechanism]] = {}
        for mechanism in settings.mechanisms:
            if mechanism == "PLAIN":
                table = dict(settings.plain_users)
                mechanisms[mechanism] = partial(PlainServer, partial(_check_plain, table))
            elif mechanism == "OAUTHBEARER" and settings.oauth is not None:
                from kafka_wire.broker.oauth import KeySets, validator

                check = validator(settings.oauth, key_sets or KeySets())
                mechanisms[mechanism] = partial(_oauth_server, check, now_ms, logger)
            else:
                mechanisms[mechanism] = partial(_scram_server, mechanism, scram, nonce, tokens)
        gates[listener] = ServerSasl(mechanisms=mechanisms)
    return gates


def sasl_refusal(api_key: int) -> Message:
    """The answer to SaslHandshake or SaslAuthenticate on a listener without SASL (they reach the
    broker only without a gate): Kafka refuses SASL on a plaintext listener."""
    if api_key == ApiKey.SASL_HANDSHAKE:
        return messages.SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)
    return messages.SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message="SASL is not enabled"
    )


def _check_plain(table: Mapping[str, str], user: str, password: str) -> bool:
    import hmac

    expected = table.get(user)
    return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


def _scram_server(
    mechanism: str, scram: ScramLookup, nonce: Callable[[], str], tokens: TokenLookup | None
) -> ScramServer | TokenScramServer:
    from kafka_wire.protocol.sasl import ScramServer

    if tokens is not None:
        return TokenScramServer(mechanism, lambda user: scram(user, mechanism), tokens, nonce())
    return ScramServer(mechanism, lambda user: scram(user, mechanism), nonce())


def _oauth_server(
    check: OAuthValidator, now_ms: Callable[[], int], logger: logging.Logger
) -> OAuthBearerServer:
    from kafka_wire.protocol.sasl import OAuthBearerRefusal, OAuthBearerServer

    def validate(token: str, extensions: Mapping[str, str]) -> Validation:
        try:
            outcome = check.validate(token, now_ms())
        except Exception:  # a fault of the validator's on a client's token: refused, logged, not fatal
            logger.exception("OAUTHBEARER token validation failed")
            return OAuthBearerRefusal(reason="the validator failed")
        if isinstance(outcome, OAuthBearerRefusal):
            logger.info("OAUTHBEARER token refused (%s): %s", outcome.status, outcome.reason)
        return outcome

    return OAuthBearerServer(validate)


def scram_lookup(view: object) -> ScramLookup:
    """The SCRAM credentials of ``view``'s metadata image (a node's
    :class:`~kafka_wire.broker.metadata_view.MetadataView`; none for another view)."""
    from kafka_wire.broker.metadata_view import MetadataView

    def lookup(user: str, mechanism: str) -> ScramCredential | None:
        if not isinstance(view, MetadataView):
            return None
        try:
            image = view.image
        except LocalProtocolError:  # the node's parts are not built yet
            return None
        return image.scram.credential(user, mechanism)

    return lookup
