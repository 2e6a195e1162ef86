"""Certificates for the TLS tests, made at test time with ``cryptography`` into a temp directory.

:func:`make_pki` writes a certificate authority, the broker's key and chain (for 127.0.0.1 and
localhost), client certificates signed by the authority, and one client certificate from another
authority (that the broker does not trust). Every file is PEM; the broker's key is also written as
a PKCS12 keystore and an encrypted PKCS#8 PEM.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: The password of the PKCS12 keystore and of the encrypted PEM key.
STORE_PASSWORD: Final = "store-secret"
_DAY: Final = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Identity:
    """A key and its certificate chain: ``pem`` holds both (key first), as Kafka's PEM keystore."""

    key: Path
    cert: Path
    pem: Path


@dataclass(frozen=True)
class Pki:
    ca: Path
    broker: Identity
    #: The broker's key in a PKCS12 keystore (password :data:`STORE_PASSWORD`).
    broker_p12: Path
    #: The broker's key encrypted (PKCS#8, :data:`STORE_PASSWORD`) followed by its chain.
    broker_encrypted_pem: Path
    clients: dict[str, Identity]
    #: A client signed by an authority the broker does not trust.
    stranger: Identity


def _name(common_name: str, unit: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-wire tests"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _authority(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name(name, "authority")
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    authority: tuple[ec.EllipticCurvePrivateKey, x509.Certificate], name: x509.Name, *, server: bool
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    ca_key, ca_cert = authority
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            # A broker's certificate also authenticates it as a client (a cluster's links).
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                if server
                else [ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return key, builder.sign(ca_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(
    directory: Path, stem: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate, ca: x509.Certificate
) -> Identity:
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    chain = _pem(cert) + _pem(ca)
    (directory / f"{stem}.key").write_bytes(key_pem)
    (directory / f"{stem}.crt").write_bytes(chain)
    (directory / f"{stem}.pem").write_bytes(key_pem + chain)
    return Identity(directory / f"{stem}.key", directory / f"{stem}.crt", directory / f"{stem}.pem")


#: The clients :func:`make_pki` makes by default, with their organisational unit.
CLIENTS: Final = {"alice": "clients", "bob": "clients", "svc": "services"}


def make_pki(directory: Path, clients: dict[str, str] = CLIENTS) -> Pki:
    """Write the test PKI into ``directory`` (see the module docstring). A client ``name`` with
    the unit ``unit`` gets the subject ``CN=<name>,OU=<unit>,O=kafka-wire tests,C=US``."""
    directory.mkdir(parents=True, exist_ok=True)
    authority = _authority("kafka-wire test CA")
    ca_cert = authority[1]
    (directory / "ca.crt").write_bytes(_pem(ca_cert))
    broker_key, broker_cert = _leaf(authority, _name("broker", "brokers"), server=True)
    broker = _write(directory, "broker", broker_key, broker_cert, ca_cert)
    p12 = directory / "broker.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker",
            broker_key,
            broker_cert,
            [ca_cert],
            serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
        )
    )
    encrypted = directory / "broker-encrypted.pem"
    encrypted.write_bytes(
        broker_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
        )
        + _pem(broker_cert)
        + _pem(ca_cert)
    )
    identities = {}
    for name, unit in clients.items():
        key, cert = _leaf(authority, _name(name, unit), server=False)
        identities[name] = _write(directory, name, key, cert, ca_cert)
    other = _authority("somebody else's CA")
    key, cert = _leaf(other, _name("mallory", "clients"), server=False)
    stranger = _write(directory, "mallory", key, cert, other[1])
    return Pki(directory / "ca.crt", broker, p12, encrypted, identities, stranger)
