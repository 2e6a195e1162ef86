"""``kafka_wire.adapters.tls``: contexts from Kafka's ``ssl.*`` settings, and a TLS listener of an
in-process ``BrokerServer`` (mutual TLS, the principal the engine is told, bad handshakes)."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import BinaryIO

import pytest

from kafka_wire import client
from kafka_wire.adapters import tls
from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.adapters.broker_server import BrokerServer
from kafka_wire.adapters.cluster import Cluster
from kafka_wire.adapters.tls import TlsConfigError, TlsListener, server_context
from kafka_wire.adapters.tls_stores import normalise_pem
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.tls_settings import TlsSettings, listener_tls
from kafka_wire.client import TopicPartition
from kafka_wire.messages import CreateTopicsRequest, CreateTopicsRequestCreatableTopic, MetadataRequest
from kafka_wire.records import build_batch
from tests.e2e.certs import STORE_PASSWORD, Pki, make_pki

RULES = "RULE:^CN=([^,]+),OU=clients,.*$/$1/L"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _settings(pki: Pki, **props: str) -> TlsSettings:
    base = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.broker.pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": RULES,
    }
    return listener_tls({**base, **{k.replace("_", "."): v for k, v in props.items()}}, "SSL")


def _joined(text: str) -> str:
    """PEM as a properties file's continued lines deliver it: line breaks gone."""
    return text.replace("\n", "")


# -- contexts ------------------------------------------------------------------------------------


def test_keystores_of_every_kind_load(pki: Pki) -> None:
    key, chain = pki.broker.key.read_text(), pki.broker.cert.read_text()
    kinds = {
        "pem file": _settings(pki),
        "inline pem": listener_tls(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.key": _joined(key),
                "ssl.keystore.certificate.chain": _joined(chain),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.certificates": _joined(pki.ca.read_text()),
                "ssl.client.auth": "requested",
            },
            "SSL",
        ),
        "encrypted pem": _settings(
            pki,
            **{"ssl.keystore.location": str(pki.broker_encrypted_pem), "ssl.key.password": STORE_PASSWORD},
        ),
        "pkcs12": _settings(
            pki,
            **{
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(pki.broker_p12),
                "ssl.keystore.password": STORE_PASSWORD,
            },
        ),
    }
    for kind, settings in kinds.items():
        context = server_context(settings)
        assert context.verify_mode in (ssl.CERT_REQUIRED, ssl.CERT_OPTIONAL), kind
        assert context.minimum_version == ssl.TLSVersion.TLSv1_2, kind


def test_a_pkcs12_truststore_loads(pki: Pki, tmp_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import NoEncryption, pkcs12

    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    store = tmp_path / "trust.p12"
    store.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca], NoEncryption()))
    context = server_context(
        _settings(pki, **{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(store)})
    )
    assert context.cert_store_stats()["x509_ca"] == 1


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"ssl.keystore.location": "/nonexistent.pem"}, "ssl.keystore.location", "cannot read"),
        ({"ssl.truststore.location": "/nonexistent.pem"}, "ssl.truststore.location", "cannot read"),
        ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.3"}, "ssl.enabled.protocols", "follow one another"),
        ({"ssl.cipher.suites": "TLS_NO_SUCH_SUITE"}, "ssl.cipher.suites", "TLS_NO_SUCH_SUITE"),
        (
            {"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256", "ssl.enabled.protocols": "TLSv1.2"},
            "ssl.cipher.suites",
            "TLS 1.3 is not enabled",
        ),
    ],
)
def test_unusable_settings_are_refused(pki: Pki, props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(TlsConfigError, match=reason) as failure:
        server_context(_settings(pki, **props))
    assert failure.value.key == key


def test_wrong_passwords_are_refused(pki: Pki) -> None:
    with pytest.raises(TlsConfigError, match=r"ssl\.key\.password") as encrypted:
        server_context(
            _settings(
                pki, **{"ssl.keystore.location": str(pki.broker_encrypted_pem), "ssl.key.password": "no"}
            )
        )
    assert encrypted.value.key == "ssl.keystore.location"
    with pytest.raises(TlsConfigError, match="cannot open the PKCS12") as p12:
        server_context(
            _settings(
                pki,
                **{
                    "ssl.keystore.type": "PKCS12",
                    "ssl.keystore.location": str(pki.broker_p12),
                    "ssl.keystore.password": "no",
                },
            )
        )
    assert p12.value.key == "ssl.keystore.password"


def test_cipher_suites_and_protocols(pki: Pki) -> None:
    context = server_context(
        _settings(
            pki,
            **{
                "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                "ssl.enabled.protocols": "TLSv1.2",
            },
        )
    )
    tls12 = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"}
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2
    only13 = server_context(_settings(pki, **{"ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"}))
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3


def test_normalise_pem_rewraps_joined_lines(pki: Pki) -> None:
    text = pki.ca.read_text()
    assert normalise_pem(_joined(text)) == text


# -- a TLS listener ------------------------------------------------------------------------------


@asynccontextmanager
async def _tls_broker(tmp_path: Path, listener: TlsListener, **config: int) -> AsyncIterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    server = BrokerServer(BrokerConfig(host="127.0.0.1", port=port, **config), tmp_path / "data")  # type: ignore[arg-type]  # settings by name
    assert await server.start("127.0.0.1", port, tls=listener) == port, server.failure
    try:
        yield port
    finally:
        await server.stop()


def _client_context(pki: Pki, name: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca)
    if name is not None:
        identity = pki.clients.get(name, pki.stranger)
        context.load_cert_chain(identity.cert, identity.key)
    return context


async def _ends_without_answer(port: int, context: ssl.SSLContext | None, payload: bytes) -> None:
    """The broker closes the connection (EOF or a TLS error) without answering ``payload``."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1" if context else None
            ),
            10,
        )
    except (ssl.SSLError, ConnectionResetError):
        return
    try:
        writer.write(payload)
        assert await asyncio.wait_for(reader.read(), 10) == b""
    except (ssl.SSLError, ConnectionResetError):
        pass
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            pass


def test_a_tls_listener_serves_and_refuses(
    pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """alice is served as User:alice; garbage, no certificate, an unknown authority and a
    certificate no rule maps each end their own connection; alice is served on, over the
    connection she opened first."""
    caplog.set_level(logging.INFO, logger="kafka_wire")
    request = b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff"

    async def main() -> None:
        async with _tls_broker(tmp_path, TlsListener.of(_settings(pki))) as port:
            alice = await KafkaClient.connect("127.0.0.1", port, ssl=_client_context(pki, "alice"))
            try:
                await _ends_without_answer(port, None, request)
                await _ends_without_answer(port, None, bytes(range(256)))
                await _ends_without_answer(port, _client_context(pki, None), request)
                await _ends_without_answer(port, _client_context(pki, "mallory"), request)
                await _ends_without_answer(port, _client_context(pki, "svc"), request)
                response = await alice.request(MetadataRequest(topics=[]))
                assert [b.port for b in response.brokers] == [port]
            finally:
                await alice.close()

    asyncio.run(main())
    principals = [r.getMessage() for r in caplog.records if "principal User:" in r.getMessage()]
    assert principals == ["connection 1 from 127.0.0.1: principal User:alice"]
    refusals = [r.getMessage() for r in caplog.records if "refused:" in r.getMessage()]
    assert len(refusals) == 5, refusals
    assert sum("handshake failed" in line for line in refusals) == 4, refusals
    assert sum("no ssl.principal.mapping.rules rule applies" in line for line in refusals) == 1, refusals


def test_the_client_produces_and_fetches_over_tls(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Cluster(..., ssl=...)``: Produce, then Fetch, whose records leave the data files through
    the TLS transport (copied: ``sendfile`` cannot encrypt)."""
    copied: list[int] = []

    copy = tls.copy_region

    async def copy_region(writer: asyncio.StreamWriter, file: BinaryIO, offset: int, count: int) -> None:
        copied.append(count)
        await copy(writer, file, offset, count)

    monkeypatch.setattr(tls, "copy_region", copy_region)
    tp = TopicPartition("tls-events", 0)
    values = [b"v%d" % n for n in range(200)]
    now_ms = int(time.time() * 1000)  # recent: older records would be deleted by retention

    async def main() -> list[bytes | None]:
        async with (
            _tls_broker(tmp_path, TlsListener.of(_settings(pki))) as port,
            Cluster(f"127.0.0.1:{port}", ssl=_client_context(pki, "alice"), timeout_ms=10_000) as cluster,
        ):
            created = await (await cluster.any_client()).request(
                CreateTopicsRequest(
                    topics=[
                        CreateTopicsRequestCreatableTopic(
                            name=tp.topic, num_partitions=1, replication_factor=1
                        )
                    ]
                )
            )
            assert created.topics[0].error_code == 0
            batch = build_batch([(None, v, (), now_ms + n) for n, v in enumerate(values)])
            assert await client.produce(cluster, {tp: [batch] * 3}) == {tp: 0}
            got: list[bytes | None] = []
            async for _, records in client.fetch_range(cluster, tp, 0, 600, max_bytes=1000):
                got += [r.value for r in records]
            return got

    assert asyncio.run(main()) == values * 3
    assert copied and sum(copied) >= 3 * len(build_batch([(None, v, (), 0) for v in values]))


def test_a_connection_in_its_handshake_counts_against_the_limits(pki: Pki, tmp_path: Path) -> None:
    """``max.connections.per.ip=1``: a client that connects and never starts its handshake holds
    the address's one slot, as in Kafka (counted when accepted); alice is refused meanwhile and
    served once it is gone."""

    async def main() -> None:
        async with _tls_broker(tmp_path, TlsListener.of(_settings(pki)), max_connections_per_ip=1) as port:
            _, silent = await asyncio.open_connection("127.0.0.1", port)
            await _ends_without_answer(port, _client_context(pki, "alice"), b"")
            silent.close()
            deadline = time.monotonic() + 10
            while True:  # the silent connection's end reaches the broker
                try:
                    alice = await KafkaClient.connect(
                        "127.0.0.1", port, ssl=_client_context(pki, "alice"), timeout_ms=2000
                    )
                    break
                except (OSError, ssl.SSLError, TimeoutError):
                    assert time.monotonic() < deadline, "alice was never served"
                    await asyncio.sleep(0.05)
            await alice.close()

    asyncio.run(main())
