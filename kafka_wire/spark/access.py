"""How the live mode reaches a cluster: bootstrap servers and the security options of Kafka's
clients that Spark's Kafka source passes through (``kafka.security.protocol``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``, ``kafka.ssl.*``).

Supported: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` and ``SASL_SSL``; SASL with PLAIN,
SCRAM-SHA-256 or SCRAM-SHA-512, the user name and password taken from the JAAS line as Kafka's
clients write it::

    org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="pw";

TLS with Kafka's client options: ``kafka.ssl.truststore.type`` ``PEM`` or ``PKCS12`` with
``kafka.ssl.truststore.location`` (or ``kafka.ssl.truststore.certificates``, PEM text) and
``kafka.ssl.truststore.password`` (no truststore: the system's authorities); a client certificate
from ``kafka.ssl.keystore.type`` ``PEM`` or ``PKCS12`` with ``kafka.ssl.keystore.location`` (or
``kafka.ssl.keystore.key`` and ``kafka.ssl.keystore.certificate.chain``),
``kafka.ssl.keystore.password`` and ``kafka.ssl.key.password``; ``kafka.ssl.endpoint.
identification.algorithm`` empty turns the host name check off. JKS (Java's default) is refused
with an :class:`OptionError`, as is any option the live mode cannot honour.
"""

from __future__ import annotations

import re
import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire.protocol.sasl import PlainClient, SaslClientMechanism, ScramClient
from kafka_wire.spark.ranges import OptionError

MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The ``kafka.ssl.*`` options the live mode reads (without their ``kafka.`` prefix).
SSL_OPTIONS: Final = (
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)
_JAAS_OPTION: Final = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class ClusterAccess:
    """Bootstrap servers; with SASL, the mechanism and login; with TLS, the ``ssl.*`` options
    (picklable: tasks get a copy, and each builds its own context)."""

    bootstrap: str
    sasl_mechanism: str | None = None
    username: str = ""
    password: str = ""
    #: TLS: the ``ssl.*`` client options given (``kafka.`` prefix removed); None: plaintext.
    tls: tuple[tuple[str, str], ...] | None = None

    def __repr__(self) -> str:  # never print the password
        return (
            f"ClusterAccess({self.bootstrap!r}, sasl_mechanism={self.sasl_mechanism!r}, "
            f"username={self.username!r}, tls={self.tls is not None})"
        )

    @classmethod
    def of(cls, cluster: ClusterAccess | str) -> ClusterAccess:
        return cluster if isinstance(cluster, ClusterAccess) else cls(cluster)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ClusterAccess | None:
        """The access the options describe; None without ``kafka.bootstrap.servers``."""
        bootstrap = options.get("kafka.bootstrap.servers")
        if not bootstrap:
            return None
        protocol = options.get("kafka.security.protocol", "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise OptionError(f"'kafka.security.protocol' {protocol} is not one of {', '.join(PROTOCOLS)}")
        tls = None
        if protocol.endswith("SSL"):
            tls = tuple(
                (name, options[f"kafka.{name}"]) for name in SSL_OPTIONS if options.get(f"kafka.{name}")
            )
            ClusterAccess(bootstrap, tls=tls).ssl_context()  # refused now, not in a task
        if not protocol.startswith("SASL_"):
            return cls(bootstrap, tls=tls)
        mechanism = options.get("kafka.sasl.mechanism", "").upper()
        if mechanism not in MECHANISMS:
            raise OptionError(
                f"'kafka.sasl.mechanism' must be one of {', '.join(MECHANISMS)} (got {mechanism!r})"
            )
        login = {k: _unescape(v) for k, v in _JAAS_OPTION.findall(options.get("kafka.sasl.jaas.config", ""))}
        if not login.get("username") or "password" not in login:
            raise OptionError('\'kafka.sasl.jaas.config\' must give username="..." and password="..."')
        return cls(bootstrap, mechanism, login["username"], login["password"], tls)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client-side TLS context the options describe (None: plaintext); an
        :class:`OptionError` naming the option it cannot use."""
        if self.tls is None:
            return None
        from kafka_wire.adapters.tls_stores import TlsStoreError, load_keystore, load_truststore

        given = dict(self.tls)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = (
            given.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
        )
        try:
            trust_kind = _store_kind(given, "ssl.truststore")
            load_truststore(
                context,
                kind=trust_kind,
                location=given.get("ssl.truststore.location"),
                password=given.get("ssl.truststore.password"),
                certificates=given.get("ssl.truststore.certificates"),
                purpose=ssl.Purpose.SERVER_AUTH,
            )
            key_kind = _store_kind(given, "ssl.keystore")
            if key_kind is not None:
                load_keystore(
                    context,
                    kind=key_kind,
                    location=given.get("ssl.keystore.location"),
                    password=given.get("ssl.keystore.password"),
                    key_password=given.get("ssl.key.password"),
                    key_pem=given.get("ssl.keystore.key"),
                    chain_pem=given.get("ssl.keystore.certificate.chain"),
                )
        except TlsStoreError as exc:
            raise OptionError(f"'kafka.{exc.key}': {exc.reason}") from None
        return context

    def mechanism(self) -> SaslClientMechanism | None:
        """A fresh SASL client for one connection (SCRAM with a new random nonce)."""
        if self.sasl_mechanism is None:
            return None
        if self.sasl_mechanism == "PLAIN":
            return PlainClient(self.username, self.password)
        return ScramClient(self.sasl_mechanism, self.username, self.password, secrets.token_urlsafe(24))


def _store_kind(given: Mapping[str, str], store: str) -> str | None:
    """``PEM`` or ``PKCS12`` for a store given (its location or its PEM text), None for none."""
    inline = ("certificates",) if store == "ssl.truststore" else ("key", "certificate.chain")
    if not any(f"{store}.{name}" in given for name in ("location", *inline)):
        return None
    kind = given.get(
        f"{store}.type", "PEM" if any(f"{store}.{n}" in given for n in inline) else "JKS"
    ).upper()
    if kind not in ("PEM", "PKCS12"):
        raise OptionError(
            f"'kafka.{store}.type' {kind} cannot be read here (PEM or PKCS12; "
            "keytool -importkeystore -deststoretype PKCS12 converts a JKS store)"
        )
    return kind


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)
