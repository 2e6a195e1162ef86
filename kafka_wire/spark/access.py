"""How the live mode reaches a cluster: bootstrap servers and the security options of Kafka's
clients that Spark's Kafka source passes through (``kafka.security.protocol``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``).

Supported: ``PLAINTEXT`` and ``SASL_PLAINTEXT`` with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, the
user name and password taken from the JAAS line as Kafka's clients write it::

    org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="pw";

TLS (``SSL``, ``SASL_SSL``) is refused with an :class:`OptionError` rather than ignored.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire.protocol.sasl import PlainClient, SaslClientMechanism, ScramClient
from kafka_wire.spark.ranges import OptionError

MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_OPTION: Final = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class ClusterAccess:
    """Bootstrap servers and, with SASL, the mechanism and login (picklable: tasks get a copy)."""

    bootstrap: str
    sasl_mechanism: str | None = None
    username: str = ""
    password: str = ""

    def __repr__(self) -> str:  # never print the password
        return f"ClusterAccess({self.bootstrap!r}, sasl_mechanism={self.sasl_mechanism!r}, username={self.username!r})"

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
        if protocol == "PLAINTEXT":
            return cls(bootstrap)
        if protocol != "SASL_PLAINTEXT":
            raise OptionError(
                f"'kafka.security.protocol' {protocol} is not supported (PLAINTEXT or SASL_PLAINTEXT)"
            )
        mechanism = options.get("kafka.sasl.mechanism", "").upper()
        if mechanism not in MECHANISMS:
            raise OptionError(
                f"'kafka.sasl.mechanism' must be one of {', '.join(MECHANISMS)} (got {mechanism!r})"
            )
        login = {k: _unescape(v) for k, v in _JAAS_OPTION.findall(options.get("kafka.sasl.jaas.config", ""))}
        if not login.get("username") or "password" not in login:
            raise OptionError('\'kafka.sasl.jaas.config\' must give username="..." and password="..."')
        return cls(bootstrap, mechanism, login["username"], login["password"])

    def mechanism(self) -> SaslClientMechanism | None:
        """A fresh SASL client for one connection (SCRAM with a new random nonce)."""
        if self.sasl_mechanism is None:
            return None
        if self.sasl_mechanism == "PLAIN":
            return PlainClient(self.username, self.password)
        return ScramClient(self.sasl_mechanism, self.username, self.password, secrets.token_urlsafe(24))


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)
