"""Brokers with TLS listeners for ``test_tls.py``: ``kafka-wire serve`` and Apache Kafka 4.4,
configured with the same ``ssl.*`` properties.

Both get an ``SSL`` listener that requires a client certificate signed by the test authority and
maps its subject with :data:`MAPPING_RULES`, and a ``SASL_SSL`` listener with the SCRAM-SHA-512
user :data:`SCRAM_USER`. ``kafka-wire serve`` opens one listener a process, so it runs as two
processes (the SASL_SSL one reads its key from a PKCS12 keystore, the SSL one from a PEM file);
the Kafka node opens both beside its PLAINTEXT inter-broker and controller listeners, its SCRAM
user stored by ``kafka-storage format --add-scram``, and logs each request with its principal
(``kafka.request.logger`` at DEBUG) so that a test can read the principal Kafka gave a connection.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tests.e2e.apache_kafka import LOG4J2, KafkaNode, format_storage, random_cluster_id
from tests.e2e.brokers import QUICK_GROUPS, KafkaWireBroker
from tests.e2e.certs import STORE_PASSWORD, Pki
from tests.interop.harness import Address, free_port

#: A client certificate's subject ``CN=<name>,OU=clients,...`` maps to ``User:<name>`` (lower
#: case); no rule applies to any other subject (the connection is refused).
MAPPING_RULES: Final = "RULE:^CN=([^,]+),OU=clients,.*$/$1/L"
SCRAM_MECHANISM: Final = "SCRAM-SHA-512"
SCRAM_USER: Final = ("carol", "c4rol-secret")
#: The TLS settings both brokers share (Kafka's names).
TLS_PROPERTIES: Final = {"ssl.principal.mapping.rules": MAPPING_RULES}


def pem_tls(pki: Pki) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.broker.pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
    }


def kafka_wire_ssl(workdir: Path, pki: Pki) -> KafkaWireBroker:
    """``kafka-wire serve`` with one SSL listener requiring client certificates (logging at INFO:
    the principal of each connection)."""
    address = Address("127.0.0.1", free_port())
    settings = {
        **QUICK_GROUPS,
        **TLS_PROPERTIES,
        **pem_tls(pki),
        "listeners": f"SSL://{address.bootstrap}",
        "listener.name.ssl.ssl.client.auth": "required",
    }
    return _LoggingBroker(
        "kafka_wire_ssl",
        address,
        workdir / "data",
        workdir / "kafka-wire.log",
        persistent=True,
        settings=settings,
    )


def kafka_wire_sasl_ssl(workdir: Path, pki: Pki) -> KafkaWireBroker:
    """``kafka-wire serve`` with one SASL_SSL listener (SCRAM-SHA-512), its key in PKCS12."""
    address = Address("127.0.0.1", free_port())
    user, password = SCRAM_USER
    settings = {
        **QUICK_GROUPS,
        "listeners": f"SASL_SSL://{address.bootstrap}",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.broker_p12),
        "ssl.keystore.password": STORE_PASSWORD,
        f"sasl.users.{SCRAM_MECHANISM}.{user}": password,
    }
    return _LoggingBroker(
        "kafka_wire_sasl_ssl",
        address,
        workdir / "data",
        workdir / "kafka-wire.log",
        persistent=True,
        settings=settings,
    )


@dataclass
class _LoggingBroker(KafkaWireBroker):
    def command(self) -> list[str]:
        return [*super().command(), "--log-level", "INFO"]


@dataclass
class TlsKafkaNode(KafkaNode):
    """A Kafka 4.4 node with SSL and SASL_SSL listeners beside PLAINTEXT and CONTROLLER."""

    ssl_port: int = 0
    sasl_ssl_port: int = 0
    pki: Pki | None = None
    extra: dict[str, str] = field(default_factory=dict)
    #: Log each request with its principal (off for benchmarks: it costs Kafka dearly).
    log_requests: bool = True

    @property
    def ssl_address(self) -> Address:
        return Address(self.address.host, self.ssl_port)

    @property
    def sasl_ssl_address(self) -> Address:
        return Address(self.address.host, self.sasl_ssl_port)

    def properties(self) -> dict[str, str]:
        assert self.pki is not None
        props = super().properties()
        host, port = self.address
        listeners = (
            f"PLAINTEXT://{host}:{port},SSL://{host}:{self.ssl_port},SASL_SSL://{host}:{self.sasl_ssl_port},"
            f"CONTROLLER://{host}:{self.controller_port}"
        )
        props |= {
            **QUICK_GROUPS,
            **TLS_PROPERTIES,
            **pem_tls(self.pki),
            "listeners": listeners,
            "advertised.listeners": listeners,
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
            "listener.name.ssl.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            **self.extra,
        }
        return props

    def write_config(self) -> None:
        super().write_config()
        if not self.log_requests:
            return
        # Each request with its connection's principal (``"principal":"User:..."``).
        (self.workdir / "log4j2.properties").write_text(
            LOG4J2 + "logger.request.name = kafka.request.logger\nlogger.request.level = DEBUG\n"
        )

    def format(self) -> None:
        self.write_config()
        user, password = SCRAM_USER
        format_storage(
            self.properties_path,
            self.cluster_id,
            ["--standalone", "--add-scram", f"{SCRAM_MECHANISM}=[name={user},password={password}]"],
        )


def apache_kafka_tls(workdir: Path, pki: Pki) -> TlsKafkaNode:
    host = "127.0.0.1"
    return TlsKafkaNode(
        "apache_kafka",
        Address(host, free_port(host)),
        workdir / "data",
        workdir / "kafka.log",
        persistent=True,
        controller_port=free_port(host),
        cluster_id=random_cluster_id(),
        ssl_port=free_port(host),
        sasl_ssl_port=free_port(host),
        pki=pki,
    )


def security(pki: Pki, protocol: str, client: str | None = None) -> str:
    """The drivers' ``--security`` JSON: TLS trusting the test authority, with ``client``'s
    certificate when given, and SCRAM-SHA-512 as :data:`SCRAM_USER` for SASL_SSL."""
    settings = {"protocol": protocol, "ca": str(pki.ca)}
    if client is not None:
        identity = pki.clients[client] if client in pki.clients else pki.stranger
        settings |= {"cert": str(identity.cert), "key": str(identity.key), "keystore": str(identity.pem)}
    if protocol == "SASL_SSL":
        user, password = SCRAM_USER
        settings |= {"mechanism": SCRAM_MECHANISM, "username": user, "password": password}
    return json.dumps(settings)


def client_context(pki: Pki, client: str | None) -> ssl.SSLContext:
    """A client-side context trusting the test authority, with ``client``'s certificate (the
    stranger's for "mallory")."""
    context = ssl.create_default_context(cafile=pki.ca)
    if client is not None:
        identity = pki.clients.get(client, pki.stranger)
        context.load_cert_chain(identity.cert, identity.key)
    return context


#: ApiVersions v0, correlation id 1: a request any Kafka listener answers.
API_VERSIONS_V0: Final = b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff"


#: The content type of a TLS alert record: what a broker may send before it closes.
_TLS_ALERT: Final = 0x15


def refused(
    address: Address,
    context: ssl.SSLContext | None,
    payload: bytes = API_VERSIONS_V0,
    timeout_s: float = 15.0,
) -> str:
    """Connect (over TLS with ``context``), send ``payload`` and read until the broker closes the
    connection; what ended it ("closed", or the TLS error). An AssertionError when the broker
    answers (anything but a TLS alert record) or keeps the connection open past ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    received = b""
    try:
        raw = socket.create_connection(address, timeout=timeout_s)
        sock = raw if context is None else context.wrap_socket(raw, server_hostname=address.host)
        with sock:
            sock.sendall(payload)
            while time.monotonic() < deadline:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
            else:
                raise AssertionError(f"{address} kept the connection open")
    except TimeoutError:
        raise AssertionError(f"{address} kept the connection open for {timeout_s} s") from None
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as exc:
        assert not received, f"{address} answered {received!r}"
        return f"{type(exc).__name__}: {exc}"
    assert not received or received[0] == _TLS_ALERT, f"{address} answered {received!r}"
    return "closed" if not received else f"TLS alert {received.hex()}, closed"
