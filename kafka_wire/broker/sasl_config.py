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

:func:`parse_jaas` reads a JAAS entry as Kafka's ``JaasConfig`` does: ``//`` and ``/* */``
comments, values bare or in double quotes (backslash escapes inside), a control flag of
``required``, ``requisite``, ``sufficient`` or ``optional`` (any case), a ``;`` after each
module. This module does no I/O and knows nothing of the broker; errors are
:class:`SaslConfigError` naming the property.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final

from kafka_wire.errors import KafkaWireError
from kafka_wire.quick_dataclass import dataclass

#: The mechanisms a kafka_wire broker serves.
SERVED_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: Kafka's default ``sasl.enabled.mechanisms`` and ``sasl.mechanism.inter.broker.protocol``.
KAFKA_DEFAULT_MECHANISM: Final = "GSSAPI"
PLAIN_LOGIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: The JAAS option prefix of a PLAIN user's password (Kafka's ``PlainServerCallbackHandler``).
PLAIN_USER_PREFIX: Final = "user_"
CONTROL_FLAGS: Final = ("required", "requisite", "sufficient", "optional")
#: The property naming one listener's settings (Kafka's ``ListenerName.configPrefix``).
LISTENER_PREFIX: Final = "listener.name."


class SaslConfigError(KafkaWireError):
    """A SASL property is invalid; ``key`` names it."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One login module of a JAAS configuration."""

    module: str
    flag: str
    options: Mapping[str, str] = field(repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSasl:
    """What a SASL listener serves: its mechanisms and the PLAIN users of its JAAS entry."""

    #: Enabled mechanisms, in the order given (``sasl.enabled.mechanisms``).
    mechanisms: tuple[str, ...]
    #: PLAIN users and passwords (the ``user_<name>`` options of the PLAIN JAAS entry).
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.mechanisms:
            raise SaslConfigError("sasl.enabled.mechanisms", "no mechanism is enabled")
        for mechanism in self.mechanisms:
            if mechanism not in SERVED_MECHANISMS:
                raise SaslConfigError(
                    "sasl.enabled.mechanisms",
                    f"{mechanism} is not served; kafka_wire serves {', '.join(SERVED_MECHANISMS)}",
                )


def is_sasl_property(key: str) -> bool:
    """Whether ``key`` is one :func:`listener_sasl` reads."""
    if key in ("sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.mechanism.inter.broker.protocol"):
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
        if mechanism == "PLAIN":
            entry = entries[0]
            if entry.module != PLAIN_LOGIN_MODULE:
                raise SaslConfigError(jaas_key, f"PLAIN needs {PLAIN_LOGIN_MODULE}, not {entry.module}")
            users = {
                name.removeprefix(PLAIN_USER_PREFIX): value
                for name, value in entry.options.items()
                if name.startswith(PLAIN_USER_PREFIX) and len(name) > len(PLAIN_USER_PREFIX)
            }
    return ListenerSasl(mechanisms=mechanisms, plain_users=users)


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


# -- JAAS ----------------------------------------------------------------------------------------


def parse_jaas(text: str, key: str = "sasl.jaas.config") -> list[JaasEntry]:
    """The login modules of a JAAS configuration value (see the module docstring)."""
    tokens = _tokens(text, key)
    entries: list[JaasEntry] = []
    pos = 0
    while pos < len(tokens):
        module, quoted = tokens[pos]
        if quoted or module in ("=", ";"):
            raise SaslConfigError(key, "a login module class name is expected")
        pos += 1
        if pos >= len(tokens) or tokens[pos][0].lower() not in CONTROL_FLAGS or tokens[pos][1]:
            raise SaslConfigError(key, f"login module control flag not specified for {module}")
        flag = tokens[pos][0].lower()
        pos += 1
        options: dict[str, str] = {}
        while True:
            if pos >= len(tokens):
                raise SaslConfigError(key, "the JAAS entry does not end with ';'")
            word, quoted = tokens[pos]
            if word == ";" and not quoted:
                pos += 1
                break
            if pos + 2 >= len(tokens) or tokens[pos + 1] != ("=", False):
                raise SaslConfigError(key, f"value not specified for key {word!r} in JAAS config")
            value, value_quoted = tokens[pos + 2]
            if not value_quoted and value in ("=", ";"):
                raise SaslConfigError(key, f"value not specified for key {word!r} in JAAS config")
            options[word] = value
            pos += 3
        entries.append(JaasEntry(module, flag, options))
    if not entries:
        raise SaslConfigError(key, "login module not specified in JAAS config")
    return entries


_SPACE: Final = " \t\r\n\f"


def _tokens(text: str, key: str) -> list[tuple[str, bool]]:
    """Words, ``=``, ``;`` and quoted strings (marked True), comments dropped."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SaslConfigError(key, "unterminated comment in JAAS config")
            i = end + 2
        elif c in "=;":
            out.append((c, False))
            i += 1
        elif c == '"':
            value: list[str] = []
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise SaslConfigError(key, "unterminated quoted value in JAAS config")
            out.append(("".join(value), True))
            i += 1
        else:
            start = i
            while (
                i < n
                and text[i] not in _SPACE
                and text[i] not in '=;"'
                and not text.startswith(("//", "/*"), i)
            ):
                i += 1
            out.append((text[start:i], False))
    return out
