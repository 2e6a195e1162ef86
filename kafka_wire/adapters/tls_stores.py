"""Keys, certificate chains and trusted certificates from Kafka's store kinds, into an
``ssl.SSLContext``: PEM through Python's ``ssl``, PKCS12 through ``cryptography`` (converted to
PEM for ``ssl``: a private key only ever reaches the disk encrypted, with a one-time password, in
a private temporary directory removed at once). JKS is for callers to refuse: neither reads it.

Used by the broker's TLS listeners (``kafka_wire.adapters.tls``) and by the Spark source's live
mode (Kafka's client options). A store that cannot be used raises :class:`TlsStoreError` naming
the property (Kafka's name, ``ssl.keystore.location``, ...).
"""

from __future__ import annotations

import re
import secrets
import ssl
import tempfile
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kafka_wire.errors import KafkaWireError

_PEM_BLOCK: Final = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


class TlsStoreError(KafkaWireError):
    """A store cannot be used; ``key`` names its property."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


def load_keystore(
    context: ssl.SSLContext,
    *,
    kind: str,
    location: str | None,
    password: str | None = None,
    key_password: str | None = None,
    key_pem: str | None = None,
    chain_pem: str | None = None,
) -> None:
    """The private key and certificate chain: ``kind`` PEM (a file holding both at
    ``location``, or the PEM text ``key_pem`` and ``chain_pem``; the key encrypted with
    ``key_password`` or not) or PKCS12 (``location``, ``password``)."""
    if kind == "PEM":
        if location is not None:
            pem = _read("ssl.keystore.location", location).decode("ascii", "replace")
        else:
            pem = f"{key_pem}\n{chain_pem}"
        _load_chain(context, "ssl.keystore.location", normalise_pem(pem), key_password)
        return
    if location is None:
        raise TlsStoreError("ssl.keystore.location", "a PKCS12 keystore is a file: set its location")
    data = _read("ssl.keystore.location", location)
    key = cert = None
    others: list[x509.Certificate] = []
    for candidate in _passwords(password, key_password):
        try:
            key, cert, others = pkcs12.load_key_and_certificates(data, candidate)
            break
        except ValueError:
            continue
    else:
        raise TlsStoreError("ssl.keystore.password", f"cannot open the PKCS12 keystore {location}")
    if key is None or cert is None:
        raise TlsStoreError("ssl.keystore.location", f"{location} holds no private key and certificate")
    one_time = secrets.token_urlsafe(24)
    pem_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    ).decode()
    chain = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in [cert, *others])
    _load_chain(context, "ssl.keystore.location", pem_key + chain, one_time)


def load_truststore(
    context: ssl.SSLContext,
    *,
    kind: str | None,
    location: str | None,
    password: str | None = None,
    certificates: str | None = None,
    purpose: ssl.Purpose = ssl.Purpose.CLIENT_AUTH,
) -> None:
    """The certificates that sign the peer's: ``kind`` PEM (the file at ``location``, or the PEM
    text ``certificates``) or PKCS12 (``location``, ``password``); None: the system's."""
    if kind is None:
        context.load_default_certs(purpose)
        return
    if certificates is not None:
        pem = certificates
    else:
        if location is None:
            raise TlsStoreError("ssl.truststore.location", "no truststore location given")
        data = _read("ssl.truststore.location", location)
        if kind == "PEM":
            pem = data.decode("ascii", "replace")
        else:
            try:
                store = pkcs12.load_pkcs12(data, password.encode() if password else None)
            except ValueError as exc:
                raise TlsStoreError(
                    "ssl.truststore.password", f"cannot open the PKCS12 truststore: {exc}"
                ) from None
            certs = [c.certificate for c in store.additional_certs] + (
                [store.cert.certificate] if store.cert else []
            )
            pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
    try:
        context.load_verify_locations(cadata=normalise_pem(pem))
    except (ssl.SSLError, ValueError) as exc:
        raise TlsStoreError("ssl.truststore.location", f"no usable certificate: {exc}") from None


def normalise_pem(text: str) -> str:
    """PEM text as ``ssl`` reads it: each block's base64 re-wrapped at 64 columns (a properties
    file's continued lines reach here joined, without their line breaks)."""
    blocks = []
    for match in _PEM_BLOCK.finditer(text):
        body = "".join(match[2].split())
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        blocks.append("\n".join([f"-----BEGIN {match[1]}-----", *lines, f"-----END {match[1]}-----"]))
    return "\n".join(blocks) + "\n"


def _load_chain(context: ssl.SSLContext, key: str, pem: str, password: str | None) -> None:
    """Load a private key and its chain from PEM text (``ssl`` reads them from a file only)."""
    with tempfile.TemporaryDirectory(prefix="kafka-wire-tls-") as directory:
        path = Path(directory) / "keystore.pem"
        path.touch(mode=0o600)
        path.write_text(pem, encoding="ascii")
        try:
            context.load_cert_chain(path, password=password)
        except ssl.SSLError as exc:
            raise TlsStoreError(
                key,
                f"the private key and certificate chain cannot be loaded (wrong ssl.key.password?): {exc}",
            ) from None


def _passwords(*candidates: str | None) -> list[bytes | None]:
    found: list[bytes | None] = [c.encode() for c in candidates if c]
    return found or [None]


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise TlsStoreError(key, f"cannot read {location}: {exc.strerror or exc}") from None
