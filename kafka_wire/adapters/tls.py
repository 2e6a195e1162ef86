"""TLS for the broker's listeners: ``ssl.SSLContext`` from :class:`TlsSettings`, and the principal
of a client's certificate.

:func:`server_context` reads the files the settings name (``tls_stores``: PEM, and PKCS12
through ``cryptography``) and sets client authentication, protocol versions and cipher suites. :func:`peer_principal` maps the
subject of the certificate a client presented to the principal its connection carries.
A file that cannot be read or a key that does not fit raises :class:`TlsConfigError` naming the
property.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO, Final

from cryptography import x509

from kafka_wire.adapters.tls_stores import TlsStoreError, load_keystore, load_truststore
from kafka_wire.broker.config import BrokerConfigError
from kafka_wire.broker.ssl_principal import principal_name
from kafka_wire.broker.tls_settings import PROTOCOLS, TlsSettings

#: Kafka's principal for a TLS connection without a client certificate.
ANONYMOUS: Final = "ANONYMOUS"
_VERSIONS: Final = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
#: TLS 1.3's suites (IANA and OpenSSL share these names): always on with TLS 1.3.
_TLS13_SUITES: Final = frozenset(
    {
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256",
    }
)
_KEY_EXCHANGES: Final = {
    "ECDHE_ECDSA": "ECDHE-ECDSA-",
    "ECDHE_RSA": "ECDHE-RSA-",
    "DHE_RSA": "DHE-RSA-",
    "RSA": "",
}
_CIPHERS: Final = {
    "AES_128_GCM": "AES128-GCM",
    "AES_256_GCM": "AES256-GCM",
    "AES_128_CBC": "AES128",
    "AES_256_CBC": "AES256",
    "CHACHA20_POLY1305": "CHACHA20-POLY1305",
}


#: How long a client may take over its TLS handshake (Kafka bounds it by the idle limit; asyncio's
#: default is 60 s).
HANDSHAKE_TIMEOUT_S: Final = 30.0
#: Bytes of a file region read at once when it is copied into a TLS connection.
_COPY_CHUNK: Final = 1024 * 1024


class TlsConfigError(BrokerConfigError):
    """A TLS property names a file or a value that cannot be used (``key`` names it)."""


@dataclass(frozen=True, slots=True)
class TlsListener:
    """A TLS listener: its settings, the context that accepts on it and the one that dials
    another node's listener of the same name (a cluster's inter-broker and controller links)."""

    settings: TlsSettings
    context: ssl.SSLContext
    client: ssl.SSLContext

    @classmethod
    def of(cls, settings: TlsSettings) -> TlsListener:
        return cls(settings, server_context(settings), client_context(settings))


async def accept_tls(
    conn: socket.socket, listener: TlsListener
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str | None]:
    """Run the server side of the TLS handshake on an accepted socket; the streams and the
    connection's principal name (None: no mapping rule applies to the client's certificate: the
    caller closes it). A failed handshake (garbage, an untrusted or missing certificate under
    ``ssl.client.auth=required``, a timeout) raises ``OSError`` (``ssl.SSLError`` is one)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await loop.connect_accepted_socket(
        lambda: protocol, conn, ssl=listener.context, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer, peer_principal(writer.get_extra_info("ssl_object"), listener.settings)


async def copy_region(writer: asyncio.StreamWriter, file: BinaryIO, offset: int, count: int) -> None:
    """Send ``count`` bytes of ``file`` from ``offset`` on a TLS connection, where ``sendfile``
    cannot go (the bytes must be encrypted): read off the loop, a chunk at a time, and written."""
    fd = file.fileno()
    while count > 0:
        chunk = await asyncio.to_thread(os.pread, fd, min(count, _COPY_CHUNK), offset)
        if not chunk:
            raise OSError(f"file region ended {count} bytes early")
        writer.write(chunk)
        await writer.drain()
        offset += len(chunk)
        count -= len(chunk)


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The server-side context of a TLS listener."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with _naming_the_property():
        _keystore(context, settings)
        if settings.client_auth != "none":
            context.verify_mode = (
                ssl.CERT_REQUIRED if settings.client_auth == "required" else ssl.CERT_OPTIONAL
            )
            _truststore(context, settings, ssl.Purpose.CLIENT_AUTH)
    _set_protocols(context, settings)
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The client-side context a node dials another's listener with (Kafka uses the listener's
    ``ssl.*`` settings both ways): the truststore checks the other node's certificate (and its
    host name, unless ``ssl.endpoint.identification.algorithm`` is empty), the keystore is the
    client certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = settings.check_hostname
    with _naming_the_property():
        _keystore(context, settings)
        _truststore(context, settings, ssl.Purpose.SERVER_AUTH)
    _set_protocols(context, settings)
    return context


@contextmanager
def _naming_the_property() -> Iterator[None]:
    """A store that cannot be used is a configuration error naming its property."""
    try:
        yield
    except TlsStoreError as exc:
        raise TlsConfigError(exc.key, exc.reason) from None


def _keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    load_keystore(
        context,
        kind=settings.keystore_type,
        location=settings.keystore_location,
        password=settings.keystore_password,
        key_password=settings.key_password,
        key_pem=settings.keystore_key,
        chain_pem=settings.keystore_certificate_chain,
    )


def _truststore(context: ssl.SSLContext, settings: TlsSettings, purpose: ssl.Purpose) -> None:
    load_truststore(
        context,
        kind=settings.truststore_type,
        location=settings.truststore_location,
        password=settings.truststore_password,
        certificates=settings.truststore_certificates,
        purpose=purpose,
    )


def peer_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket | None, settings: TlsSettings) -> str | None:
    """The principal name of a TLS connection: ``ANONYMOUS`` without a client certificate, else
    what ``ssl.principal.mapping.rules`` make of the certificate's subject (RFC 4514), or None
    when no rule applies (the connection is then refused)."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return principal_name(settings.principal_rules, certificate_subject(der))


def certificate_subject(der: bytes) -> str:
    """A DER certificate's subject as an RFC 4514 distinguished name (``CN=alice,O=Example``)."""
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _set_protocols(context: ssl.SSLContext, settings: TlsSettings) -> None:
    versions = settings.protocols
    low, high = PROTOCOLS.index(versions[0]), PROTOCOLS.index(versions[-1])
    if len(versions) != high - low + 1:
        raise TlsConfigError(
            "ssl.enabled.protocols", f"{','.join(versions)}: the versions must follow one another"
        )
    pairs = [(name, _openssl_name(name)) for name in settings.cipher_suites if name not in _TLS13_SUITES]
    tls12 = [openssl for _, openssl in pairs]
    if settings.cipher_suites and not tls12:
        low = max(low, PROTOCOLS.index("TLSv1.3"))  # only TLS 1.3 suites: TLS 1.2 and older off
        if low > high:
            raise TlsConfigError(
                "ssl.cipher.suites", "only TLS 1.3 suites are listed but TLS 1.3 is not enabled"
            )
    context.minimum_version = _VERSIONS[PROTOCOLS[low]]
    context.maximum_version = _VERSIONS[PROTOCOLS[high]]
    if tls12:
        try:
            context.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise TlsConfigError(
                "ssl.cipher.suites", f"no suite of {', '.join(settings.cipher_suites)} is available"
            ) from None
        offered = {c["name"] for c in context.get_ciphers()}
        missing = [iana for iana, openssl in pairs if openssl not in offered]
        if missing:
            raise TlsConfigError("ssl.cipher.suites", f"unknown or unavailable suite {missing[0]}")


def _openssl_name(iana: str) -> str:
    """OpenSSL's name of a TLS 1.2 suite named as IANA (and Java) do: ``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``
    is ``ECDHE-RSA-AES128-GCM-SHA256``; a name that is not IANA's is passed on as it is."""
    if not iana.startswith("TLS_") or "_WITH_" not in iana:
        return iana
    exchange, _, rest = iana.removeprefix("TLS_").partition("_WITH_")
    cipher, _, mac = rest.rpartition("_")
    if exchange not in _KEY_EXCHANGES or cipher not in _CIPHERS:
        return iana
    name = _KEY_EXCHANGES[exchange] + _CIPHERS[cipher]
    return name if cipher == "CHACHA20_POLY1305" else f"{name}-{mac}"
