"""A TLS listener's settings, read from Kafka's ``ssl.*`` broker properties.

:func:`listener_tls` reads, for one listener, the ``ssl.*`` properties with Kafka's names and
defaults, each overridden by ``listener.name.<listener>.ssl.*`` (the listener's name in lower
case, as Kafka writes it; any case is accepted). It checks the values and returns
:class:`TlsSettings`; the adapter (``kafka_wire.adapters.tls``) reads the files they name and
builds the ``ssl.SSLContext``. Nothing here does I/O.

What is read:

- the key and certificate chain: ``ssl.keystore.type`` ``PEM`` with ``ssl.keystore.location``
  (a PEM file holding the private key and the chain) or ``ssl.keystore.key`` and
  ``ssl.keystore.certificate.chain`` (the PEM text itself), the key encrypted with
  ``ssl.key.password`` or not; ``PKCS12`` with ``ssl.keystore.location`` and
  ``ssl.keystore.password``; ``JKS`` (Kafka's default type) is refused: neither Python's ``ssl``
  nor ``cryptography`` reads it (``keytool -importkeystore -deststoretype PKCS12`` converts one);
- the certificates that sign clients' certificates: ``ssl.truststore.type`` ``PEM`` with
  ``ssl.truststore.location`` or ``ssl.truststore.certificates``, or ``PKCS12`` with
  ``ssl.truststore.location`` (and ``ssl.truststore.password``); none: the system's;
- ``ssl.client.auth``: ``none`` (no client certificate asked), ``requested`` (asked, and checked
  when given), ``required`` (a connection without a valid one is closed in the handshake);
- ``ssl.enabled.protocols`` (``TLSv1.2,TLSv1.3``): the lowest and highest listed bound the
  versions offered; ``ssl.cipher.suites``: IANA names (Kafka's, Java's), TLS 1.2 suites only
  restrict (Python's ``ssl`` cannot restrict TLS 1.3 suites: listing only TLS 1.3 suites turns
  TLS 1.2 off);
- ``ssl.principal.mapping.rules`` (``kafka_wire.broker.ssl_principal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final, Literal

from kafka_wire.broker.config import BrokerConfigError
from kafka_wire.broker.ssl_principal import DEFAULT_RULES, PrincipalRule, parse_rules
from kafka_wire.quick_dataclass import dataclass

ClientAuth = Literal["none", "requested", "required"]
StoreType = Literal["PEM", "PKCS12"]
#: The TLS versions ``ssl.enabled.protocols`` may name, oldest first.
PROTOCOLS: Final = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
DEFAULT_PROTOCOLS: Final = ("TLSv1.2", "TLSv1.3")
#: Security protocols whose listeners speak TLS.
TLS_PROTOCOLS: Final = ("SSL", "SASL_SSL")
#: The ``ssl.*`` properties read here (each also as ``listener.name.<listener>.<property>``).
SSL_KEYS: Final = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
)
_STORE_TYPES: Final = ("PEM", "PKCS12", "JKS")
_IDENTIFICATION: Final = "ssl.endpoint.identification.algorithm"


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSettings:
    """One TLS listener's settings (see the module docstring); paths and PEM text as given."""

    #: The listener (``listeners``' name).
    listener: str
    keystore_type: StoreType
    #: ``ssl.keystore.location``, or None with inline PEM.
    keystore_location: str | None = None
    keystore_password: str | None = None
    #: ``ssl.keystore.key`` and ``ssl.keystore.certificate.chain`` (PEM text), or None.
    keystore_key: str | None = None
    keystore_certificate_chain: str | None = None
    key_password: str | None = None
    #: None: no truststore given (the system's certificates).
    truststore_type: StoreType | None = None
    truststore_location: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None
    client_auth: ClientAuth = "none"
    #: ``ssl.enabled.protocols``, oldest first.
    protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    #: ``ssl.cipher.suites`` (IANA names); empty: the TLS library's defaults.
    cipher_suites: tuple[str, ...] = ()
    principal_rules: tuple[PrincipalRule, ...] = field(default_factory=lambda: parse_rules(DEFAULT_RULES))
    #: ``ssl.endpoint.identification.algorithm`` is ``https`` (the default): a node dialling
    #: another over this listener checks that the certificate names the host it dialled.
    check_hostname: bool = True


def is_ssl_key(key: str) -> bool:
    """Whether ``key`` is one of :data:`SSL_KEYS`, directly or as a listener's override."""
    if key in SSL_KEYS:
        return True
    if key.startswith("listener.name."):
        _, _, rest = key.removeprefix("listener.name.").partition(".")
        return rest in SSL_KEYS
    return False


def listener_tls(props: Mapping[str, str], listener: str) -> TlsSettings:
    """The TLS settings of ``listener`` in ``props`` (see the module docstring)."""
    prefix = f"listener.name.{listener.lower()}."
    overrides = {
        key[len(prefix) :]: (key, value) for key, value in props.items() if key.lower().startswith(prefix)
    }

    def get(name: str) -> tuple[str, str | None]:
        """The property's key as given (for errors) and its value (None: not set, or empty)."""
        key, value = overrides.get(name, (name, props.get(name)))
        value = value.strip() if value is not None else None
        return key, value or None

    key_type, keystore_type = get("ssl.keystore.type")
    _, location = get("ssl.keystore.location")
    inline_key_name, inline_key = get("ssl.keystore.key")
    _, inline_chain = get("ssl.keystore.certificate.chain")
    if location is None and inline_key is None:
        raise BrokerConfigError(
            "ssl.keystore.location",
            f"listener {listener} uses TLS: set ssl.keystore.location (or ssl.keystore.key and "
            "ssl.keystore.certificate.chain)",
        )
    store = _store_type(key_type, keystore_type or ("PEM" if inline_key else "JKS"))
    if inline_key is not None or inline_chain is not None:
        if location is not None:
            raise BrokerConfigError(inline_key_name, "set either ssl.keystore.location or the inline key")
        if store != "PEM" or inline_key is None or inline_chain is None:
            raise BrokerConfigError(
                inline_key_name,
                "an inline keystore needs ssl.keystore.type=PEM, ssl.keystore.key and ssl.keystore.certificate.chain",
            )
    trust_key, truststore_type = get("ssl.truststore.type")
    _, trust_location = get("ssl.truststore.location")
    trust_inline_key, trust_inline = get("ssl.truststore.certificates")
    trust_store: StoreType | None = None
    if trust_location is not None or trust_inline is not None:
        trust_store = _store_type(trust_key, truststore_type or ("PEM" if trust_inline else "JKS"))
        if trust_inline is not None and (trust_location is not None or trust_store != "PEM"):
            raise BrokerConfigError(
                trust_inline_key,
                "inline certificates need ssl.truststore.type=PEM and no ssl.truststore.location",
            )
    rules_key, rules = get("ssl.principal.mapping.rules")
    auth_key, auth = get("ssl.client.auth")
    auth = (auth or "none").lower()
    if auth not in ("none", "requested", "required"):
        raise BrokerConfigError(auth_key, f"{auth!r} is not none, requested or required")
    return TlsSettings(
        listener=listener,
        keystore_type=store,
        keystore_location=location,
        keystore_password=get("ssl.keystore.password")[1],
        keystore_key=inline_key,
        keystore_certificate_chain=inline_chain,
        key_password=get("ssl.key.password")[1],
        truststore_type=trust_store,
        truststore_location=trust_location,
        truststore_password=get("ssl.truststore.password")[1],
        truststore_certificates=trust_inline,
        client_auth="none" if auth == "none" else "requested" if auth == "requested" else "required",
        protocols=_protocols(*get("ssl.enabled.protocols")),
        cipher_suites=tuple(_list(get("ssl.cipher.suites")[1])),
        principal_rules=parse_rules(rules or DEFAULT_RULES, rules_key),
        check_hostname=_identification(
            *overrides.get(_IDENTIFICATION, (_IDENTIFICATION, props.get(_IDENTIFICATION)))
        ),
    )


def _store_type(key: str, value: str) -> StoreType:
    kind = value.upper()
    if kind not in _STORE_TYPES:
        raise BrokerConfigError(key, f"{value!r} is not PEM, PKCS12 or JKS")
    if kind == "JKS":
        raise BrokerConfigError(
            key,
            "JKS (the default type) cannot be read here: Python's ssl and cryptography read PEM and PKCS12; "
            "set the type to PEM or PKCS12 (keytool -importkeystore -deststoretype PKCS12 converts a JKS store)",
        )
    return "PEM" if kind == "PEM" else "PKCS12"


def _protocols(key: str, value: str | None) -> tuple[str, ...]:
    names = _list(value) or list(DEFAULT_PROTOCOLS)
    for name in names:
        if name not in PROTOCOLS:
            raise BrokerConfigError(key, f"unknown protocol {name!r} (known: {', '.join(PROTOCOLS)})")
    return tuple(sorted(set(names), key=PROTOCOLS.index))


def _identification(key: str, value: str | None) -> bool:
    """``ssl.endpoint.identification.algorithm``: unset or ``https`` (Kafka's default) checks
    host names; set empty, it does not."""
    if value is None or value.strip().lower() == "https":
        return True
    if not value.strip():
        return False
    raise BrokerConfigError(key, f"{value!r} is not https or empty")


def _list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]
