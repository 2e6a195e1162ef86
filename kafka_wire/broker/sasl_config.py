"""A SASL listener's settings from Kafka's properties: enabled mechanisms and JAAS entries.

Kafka configures a broker's SASL listeners with

- ``sasl.enabled.mechanisms`` (Kafka's default: ``GSSAPI``), or per listener
  ``listener.name.<listener>.sasl.enabled.mechanisms``;
- a JAAS entry per mechanism, ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (listener
  and mechanism in lower case), else ``sasl.jaas.config``: ``<LoginModule class> <flag>
  <key>=<value> ... ;``. A PLAIN listener's users are the ``user_<name>="<password>"`` options of
  its ``PlainLoginModule`` entry; SCRAM users are not in the JAAS entry but in the cluster's
  metadata (UserScramCredentialRecord, written by AlterUserScramCredentials), and their entry is
  ``ScramLoginModule required;`` (its ``username``/``password`` are what the broker itself would
  log in with);
- ``sasl.mechanism.inter.broker.protocol`` (Kafka's default: ``GSSAPI``): the mechanism a broker
  uses on the inter-broker listener, which must then be enabled on it.

An OAUTHBEARER listener's entry names ``OAuthBearerLoginModule``; its validator and its options are
:mod:`kafka_wire.broker.oauth_config`'s. JAAS values are read by
:func:`kafka_wire.broker.jaas.parse_jaas`. This module does no I/O and knows nothing of the
broker; errors are :class:`SaslConfigError` naming the property.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final

from kafka_wire.broker.jaas import LISTENER_PREFIX, JaasEntry, SaslConfigError, parse_jaas
from kafka_wire.broker.oauth_config import OAuthSettings, is_oauth_property, oauth_settings
from kafka_wire.quick_dataclass import dataclass

__all__ = [
    "KAFKA_DEFAULT_MECHANISM",
    "LISTENER_PREFIX",
    "PASSWORD_MECHANISMS",
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "SERVED_MECHANISMS",
    "JaasEntry",
    "ListenerSasl",
    "SaslConfigError",
    "enabled_mechanisms",
    "inter_broker_login",
    "inter_broker_mechanism",
    "is_sasl_property",
    "listener_sasl",
    "parse_jaas",
]

#: The mechanisms whose users have passwords (``sasl.users.*`` may name them).
PASSWORD_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: The mechanisms a kafka_wire broker serves.
SERVED_MECHANISMS: Final = (*PASSWORD_MECHANISMS, "OAUTHBEARER")
#: Kafka's default ``sasl.enabled.mechanisms`` and ``sasl.mechanism.inter.broker.protocol``.
KAFKA_DEFAULT_MECHANISM: Final = "GSSAPI"
PLAIN_LOGIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: The JAAS option prefix of a PLAIN user's password (Kafka's ``PlainServerCallbackHandler``).
PLAIN_USER_PREFIX: Final = "user_"


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSasl:
    """What a SASL listener serves: its mechanisms, the PLAIN users of its JAAS entry and how it
    validates OAUTHBEARER tokens."""

    #: Enabled mechanisms, in the order given (``sasl.enabled.mechanisms``).
    mechanisms: tuple[str, ...]
    #: PLAIN users and passwords (the ``user_<name>`` options of the PLAIN JAAS entry).
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: The OAUTHBEARER validator's settings (:mod:`kafka_wire.broker.oauth_config`), when enabled.
    oauth: OAuthSettings | None = None

    def __post_init__(self) -> None:
        if not self.mechanisms:
            raise SaslConfigError("sasl.enabled.mechanisms", "no mechanism is enabled")
        for mechanism in self.mechanisms:
            if mechanism not in SERVED_MECHANISMS:
                raise SaslConfigError(
                    "sasl.enabled.mechanisms",
                    f"{mechanism} is not served; kafka_wire serves {', '.join(SERVED_MECHANISMS)}",
                )
        if ("OAUTHBEARER" in self.mechanisms) != (self.oauth is not None):
            raise SaslConfigError("sasl.enabled.mechanisms", "OAUTHBEARER goes with its validator's settings")


def is_sasl_property(key: str) -> bool:
    """Whether ``key`` is one :func:`listener_sasl` reads."""
    if key in ("sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.mechanism.inter.broker.protocol"):
        return True
    if is_oauth_property(key):
        return True
    return key.startswith(LISTENER_PREFIX) and key.endswith((".sasl.jaas.config", ".sasl.enabled.mechanisms"))


def enabled_mechanisms(props: Mapping[str, str], listener: str) -> tuple[str, tuple[str, ...]]:
    """The property that enables ``listener``'s mechanisms and their names."""
    key = f"{LISTENER_PREFIX}{listener.lower()}.sasl.enabled.mechanisms"
    if key not in props:
        key = "sasl.enabled.mechanisms"
    value = props.get(key, KAFKA_DEFAULT_MECHANISM)
    return key, tuple(m.strip().upper() for m in value.split(",") if m.strip())


def listener_sasl(props: Mapping[str, str], listener: str) -> ListenerSasl:
    """The SASL settings of ``listener`` (a SASL_PLAINTEXT listener), checked as Kafka checks them
    at start: each mechanism enabled needs a JAAS entry, a PLAIN one a PlainLoginModule."""
    key, mechanisms = enabled_mechanisms(props, listener)
    if not mechanisms:
        raise SaslConfigError(key, f"no SASL mechanism is enabled on listener {listener}")
    for mechanism in mechanisms:
        if mechanism not in SERVED_MECHANISMS:
            raise SaslConfigError(
                key, f"{mechanism} is not served; kafka_wire serves {', '.join(SERVED_MECHANISMS)}"
            )
    users: dict[str, str] = {}
    oauth: OAuthSettings | None = None
    for mechanism in mechanisms:
        jaas_key = f"{LISTENER_PREFIX}{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        if jaas_key not in props:
            jaas_key = "sasl.jaas.config"
        if jaas_key not in props:
            raise SaslConfigError(
                f"{LISTENER_PREFIX}{listener.lower()}.{mechanism.lower()}.sasl.jaas.config",
                f"listener {listener} enables {mechanism} but has no JAAS configuration for it",
            )
        entries = parse_jaas(props[jaas_key], jaas_key)
        if len(entries) != 1:
            raise SaslConfigError(
                jaas_key, f"JAAS config property contains {len(entries)} login modules, should be 1 module"
            )
        if mechanism == "OAUTHBEARER":
            oauth = oauth_settings(props, listener, jaas_key, entries[0])
        if mechanism == "PLAIN":
            entry = entries[0]
            if entry.module != PLAIN_LOGIN_MODULE:
                raise SaslConfigError(jaas_key, f"PLAIN needs {PLAIN_LOGIN_MODULE}, not {entry.module}")
            users = {
                name.removeprefix(PLAIN_USER_PREFIX): value
                for name, value in entry.options.items()
                if name.startswith(PLAIN_USER_PREFIX) and len(name) > len(PLAIN_USER_PREFIX)
            }
    return ListenerSasl(mechanisms=mechanisms, plain_users=users, oauth=oauth)


def inter_broker_mechanism(props: Mapping[str, str], listener: str) -> str:
    """``sasl.mechanism.inter.broker.protocol``, which must be enabled on the inter-broker
    ``listener`` (a SASL one), as Kafka requires."""
    mechanism = props.get("sasl.mechanism.inter.broker.protocol", KAFKA_DEFAULT_MECHANISM).strip().upper()
    _, enabled = enabled_mechanisms(props, listener)
    if mechanism not in enabled:
        raise SaslConfigError(
            "sasl.mechanism.inter.broker.protocol",
            f"{mechanism} must be included in sasl.enabled.mechanisms when SASL is used for inter-broker "
            f"communication (listener {listener})",
        )
    return mechanism


def inter_broker_login(props: Mapping[str, str], listener: str) -> tuple[str, str]:
    """The user and password a node logs in to other nodes' inter-broker ``listener`` (a SASL one)
    with: the ``username`` and ``password`` options of the JAAS entry of
    ``sasl.mechanism.inter.broker.protocol`` on that listener, as Kafka's broker logs in. kafka_wire
    logs in with PLAIN only: a SCRAM login would need its credential in the metadata before the
    node could register (Kafka bootstraps it with ``kafka-storage format --add-scram``)."""
    mechanism = inter_broker_mechanism(props, listener)
    if mechanism != "PLAIN":
        raise SaslConfigError(
            "sasl.mechanism.inter.broker.protocol",
            f"{mechanism}: kafka_wire's nodes log in to each other with PLAIN only",
        )
    key = f"{LISTENER_PREFIX}{listener.lower()}.plain.sasl.jaas.config"
    if key not in props:
        key = "sasl.jaas.config"
    options = parse_jaas(props.get(key, ""), key)[0].options
    if "username" not in options or "password" not in options:
        raise SaslConfigError(key, "the inter-broker login needs the username and password options")
    return options["username"], options["password"]
