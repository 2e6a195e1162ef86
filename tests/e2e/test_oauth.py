"""SASL/OAUTHBEARER and KIP-368 re-authentication on ``kafka-wire serve`` and on Apache Kafka 4.4,
configured with the same properties: three SASL_PLAINTEXT listeners with
``connections.max.reauth.ms=2000``; ``UNSECURED`` with Kafka's default (unsecured) validator,
``SIGNED`` with ``OAuthBearerValidatorCallbackHandler`` and an RS256 key set in a ``file:`` URL,
``HTTPS`` with the same validator and the key set served over https (a server in this process,
its certificate from ``certs.py``, trusted through the JAAS entry's ``ssl.truststore.*``). Kafka
serves the three on one node (and takes the URLs through its
``org.apache.kafka.sasl.oauthbearer.allowed.urls`` system property); ``kafka-wire serve`` serves
one listener a process, so there are three. Every listener is advertised through a
:class:`~tests.e2e.frame_tap.FrameTap`, which sees each request of each client connection.

confluent-kafka (in this process: ``enable.sasl.oauthbearer.unsecure.jwt``, or ``oauth_cb``
handing signed tokens) and the Java 4.4 client (``java/OAuthProbe.java``: the default login
handler with ``unsecuredLoginStringClaim_sub``, or a login callback handler reading a signed
token) produce and consume; each re-authenticates on its connections at the broker's 2 s (a
second SaslHandshake on one connection through the tap); expired, forged, wrong-audience and
unsigned tokens get SASL_AUTHENTICATION_FAILED with ``{"status":"invalid_token"}``; a session
lasts until the token's ``exp`` when that comes before 2 s, and a connection that did not
re-authenticate is closed at its first request after the session ended."""

from __future__ import annotations

import asyncio
import base64
import http.server
import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import confluent_kafka
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.errors import AuthenticationError
from kafka_wire.messages import ErrorCode, MetadataRequest
from kafka_wire.protocol.sasl import OAuthBearerClient
from tests.e2e.apache_kafka import KafkaNode, apache_kafka
from tests.e2e.brokers import BrokerProcess, KafkaWireBroker, kafka_wire
from tests.e2e.certs import make_pki
from tests.e2e.frame_tap import FrameTap
from tests.interop.harness import JAVA4_ARTIFACTS, Address, free_port, java_command, peer_jars

MODULE: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SIGNED_HANDLER: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
LISTENERS: Final = ("UNSECURED", "SIGNED", "HTTPS")
REAUTH_MS: Final = 2000
AUDIENCE: Final = "kafka-cluster"
ISSUER: Final = "https://idp.example"
KEY: Final = rsa.generate_private_key(public_exponent=65537, key_size=2048)
FORGER: Final = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PROBE: Final = Path(__file__).resolve().parent / "java" / "OAuthProbe.java"


def signed_token(
    sub: str = "carol", *, exp_s: float = 3600, aud: str = AUDIENCE, key: rsa.RSAPrivateKey = KEY
) -> str:
    now = int(time.time())
    claims = {"sub": sub, "iat": now, "exp": now + exp_s, "aud": aud, "iss": ISSUER}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


def unsecured_token(sub: str = "alice", *, exp_s: float = 3600) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    now = time.time()
    return f"{part({'alg': 'none'})}.{part({'sub': sub, 'iat': int(now), 'exp': now + exp_s})}."


@dataclass
class Setup:
    workdir: Path
    jwks_file: Path
    https_url: str
    ca: Path

    def listener_properties(self, listener: str) -> dict[str, str]:
        """The SASL properties of ``listener``: the same for Kafka and kafka-wire."""
        prefix = f"listener.name.{listener.lower()}.oauthbearer."
        trust = (
            f' ssl.truststore.location="{self.ca}" ssl.truststore.type="PEM"' if listener == "HTTPS" else ""
        )
        props = {
            f"{prefix}sasl.jaas.config": f'{MODULE} required unsecuredLoginStringClaim_sub="admin"{trust};'
        }
        if listener != "UNSECURED":
            url = self.jwks_file.as_uri() if listener == "SIGNED" else self.https_url
            props |= {
                f"{prefix}sasl.server.callback.handler.class": SIGNED_HANDLER,
                f"{prefix}sasl.oauthbearer.jwks.endpoint.url": url,
                f"{prefix}sasl.oauthbearer.expected.audience": AUDIENCE,
                f"{prefix}sasl.oauthbearer.expected.issuer": ISSUER,
            }
        return props


COMMON: Final = {"sasl.enabled.mechanisms": "OAUTHBEARER", "connections.max.reauth.ms": str(REAUTH_MS)}


class _TappedWire(KafkaWireBroker):
    """``kafka-wire serve`` bound and advertised by its ``listeners`` and ``advertised.listeners``
    (``--host`` and ``--port`` would advertise the bound address, past the tap)."""

    def command(self) -> list[str]:
        command = super().command()
        for flag in ("--host", "--port"):
            at = command.index(flag)
            del command[at : at + 2]
        return command


class _SaslKafka(KafkaNode):
    """Kafka 4.4 with the OAUTHBEARER listeners: the JWKS URLs allowed by its system property."""

    allowed_urls: str = ""
    sasl_ports: dict[str, int]

    def command(self) -> list[str]:
        command = super().command()
        return [
            command[0],
            f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self.allowed_urls}",
            *command[1:],
        ]


@dataclass
class Target:
    """One broker kind: per listener, where clients bootstrap (the tap) and the tap."""

    taps: dict[str, FrameTap]
    brokers: list[BrokerProcess]

    def bootstrap(self, listener: str) -> str:
        return self.taps[listener].address.bootstrap


def _https_server(directory: Path, jwks: bytes) -> tuple[http.server.ThreadingHTTPServer, str]:
    pki = make_pki(directory / "pki")

    class Handler(http.server.BaseHTTPRequestHandler):
        def setup(self) -> None:
            # The TLS handshake in the request's thread: one that fails closes that socket only.
            assert isinstance(self.request, ssl.SSLSocket)
            self.request.do_handshake()
            super().setup()

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(jwks)))
            self.end_headers()
            self.wfile.write(jwks)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.broker.cert, pki.broker.key)
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"https://127.0.0.1:{server.server_address[1]}/jwks.json"


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    workdir = tmp_path_factory.mktemp("oauth")
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    jwks = json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()
    jwks_file = workdir / "jwks.json"
    jwks_file.write_bytes(jwks)
    https, https_url = _https_server(workdir, jwks)
    setup = Setup(workdir, jwks_file, https_url, workdir / "pki" / "ca.crt")
    started: list[BrokerProcess] = []
    taps: list[FrameTap] = []
    try:
        wire_taps: dict[str, FrameTap] = {}
        wire: list[BrokerProcess] = []
        for listener in LISTENERS:
            plain = kafka_wire(workdir / f"wire-{listener.lower()}")
            tap = FrameTap(plain.address)
            taps.append(tap)
            settings = {
                "listeners": f"{listener}://{plain.address.bootstrap}",
                "advertised.listeners": f"{listener}://{tap.address.bootstrap}",
                "listener.security.protocol.map": f"{listener}:SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
                **COMMON,
                **setup.listener_properties(listener),
            }
            broker = _TappedWire(
                plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True, settings=settings
            )
            wire_taps[listener] = tap
            wire.append(broker)
        kafka = _kafka(workdir / "kafka", setup)
        kafka_taps = {
            listener: FrameTap(Address("127.0.0.1", port)) for listener, port in kafka.sasl_ports.items()
        }
        taps += kafka_taps.values()
        kafka.overrides = (kafka.overrides or {}) | {
            "advertised.listeners": ",".join(
                [
                    f"PLAINTEXT://{kafka.address.bootstrap}",
                    f"CONTROLLER://127.0.0.1:{kafka.controller_port}",
                    *(f"{name}://{tap.address.bootstrap}" for name, tap in kafka_taps.items()),
                ]
            )
        }
        for tap in taps:
            tap.start()
        for process in [*wire, kafka]:
            process.start()
            started.append(process)
        yield {"kafka_wire": Target(wire_taps, wire), "apache_kafka": Target(kafka_taps, [kafka])}
    finally:
        for process in started:
            process.close()
        for tap in taps:
            tap.close()
        https.shutdown()
        https.server_close()


def _kafka(workdir: Path, setup: Setup) -> _SaslKafka:
    base = apache_kafka(workdir)
    node = _SaslKafka(
        base.name,
        base.address,
        base.data_dir,
        base.log_path,
        persistent=True,
        controller_port=base.controller_port,
        cluster_id=base.cluster_id,
    )
    node.allowed_urls = f"{setup.jwks_file.as_uri()},{setup.https_url}"
    node.sasl_ports = {listener: free_port("127.0.0.1") for listener in LISTENERS}
    host, port = node.address
    listeners = [
        f"PLAINTEXT://{host}:{port}",
        f"CONTROLLER://{host}:{node.controller_port}",
        *(f"{name}://{host}:{p}" for name, p in node.sasl_ports.items()),
    ]
    node.overrides = {
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": ",".join(
            ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT", *(f"{n}:SASL_PLAINTEXT" for n in LISTENERS)]
        ),
        **COMMON,
    }
    for listener in LISTENERS:
        node.overrides |= setup.listener_properties(listener)
    return node


TARGETS: Final = ["kafka_wire", "apache_kafka"]


# -- confluent-kafka -----------------------------------------------------------------------------


def _librdkafka(bootstrap: str, settings: dict[str, object]) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        **settings,
    }


def _oauth_cb(token: str) -> dict[str, object]:
    # librdkafka's expiry (it only refuses one already past); the broker reads the JWT's own exp.
    return {"oauth_cb": lambda _config: (token, time.time() + 3600)}


UNSECURED_RDKAFKA: Final = {
    "enable.sasl.oauthbearer.unsecure.jwt": True,
    "sasl.oauthbearer.config": "principal=alice",
}


def _produce_until(config: dict[str, object], topic: str, done: object, timeout_s: float = 30.0) -> int:
    """Produce one record every 100 ms (each acknowledged) until ``done()`` and at least one."""
    errors: list[str] = []
    producer = confluent_kafka.Producer({**config, "error_cb": lambda e: errors.append(e.str())})
    delivered: list[object] = []
    deadline = time.monotonic() + timeout_s
    count = 0
    while True:
        producer.produce(topic, f"v{count}".encode(), on_delivery=lambda err, _msg: delivered.append(err))
        count += 1
        producer.flush(15)
        assert len(delivered) == count and delivered[-1] is None, (delivered[-1:], errors[:3])
        if done() or time.monotonic() > deadline:  # type: ignore[operator]
            return count
        time.sleep(0.1)  # the workload's pace, not a wait for a condition


def _consume(config: dict[str, object], topic: str, count: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value() or b"")
    consumer.close()
    return values


@pytest.mark.parametrize("name", TARGETS)
@pytest.mark.parametrize("listener", ["UNSECURED", "SIGNED", "HTTPS"])
def test_confluent_kafka_produces_consumes_and_reauthenticates(
    targets: dict[str, Target], name: str, listener: str
) -> None:
    target = targets[name]
    tap = target.taps[listener]
    settings = UNSECURED_RDKAFKA if listener == "UNSECURED" else _oauth_cb(signed_token())
    config = _librdkafka(target.bootstrap(listener), {**settings, "allow.auto.create.topics": True})
    topic = f"rd-{listener.lower()}"
    mark = tap.mark()
    count = _produce_until(config, topic, lambda: tap.most_logins(since=mark) >= 2)
    assert tap.most_logins(since=mark) >= 2  # re-authenticated on its connection (KIP-368)
    assert _consume(config, topic, count) == [f"v{i}".encode() for i in range(count)]


#: librdkafka's RD_KAFKA_RESP_ERR__AUTHENTICATION: the broker's SASL_AUTHENTICATION_FAILED answer.
LIBRDKAFKA_AUTHENTICATION: Final = -169


def test_confluent_kafka_is_refused_an_expired_token(targets: dict[str, Target]) -> None:
    def refusal(bootstrap: str) -> tuple[int, str]:
        errors: list[confluent_kafka.KafkaError] = []
        config = _librdkafka(bootstrap, _oauth_cb(signed_token(exp_s=-120)))
        producer = confluent_kafka.Producer({**config, "error_cb": errors.append})
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        assert errors, "no error reported"
        return errors[0].code(), errors[0].str()

    answers = {name: refusal(t.bootstrap("SIGNED")) for name, t in targets.items()}
    for code, text in answers.values():
        assert code == LIBRDKAFKA_AUTHENTICATION and '{"status":"invalid_token"}' in text, answers


# -- the Java client -----------------------------------------------------------------------------


#: The Java 4.4 client's jars, and Jackson, which its unsecured login handler (and its parsing of
#: tokens) needs: an application using OAUTHBEARER ships it.
JAVA_JARS: Final = (*JAVA4_ARTIFACTS, "jackson-databind", "jackson-core", "jackson-annotations")


def _java(bootstrap: str, topic: str, mode: str, credential: str, seconds: float) -> list[str]:
    command = java_command(
        PROBE, bootstrap, topic, mode, credential, str(seconds), jars=peer_jars(*JAVA_JARS)
    )
    run = subprocess.run(command, capture_output=True, text=True, timeout=180)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, (lines, run.stderr[-3000:])
    return lines


@pytest.mark.parametrize("name", TARGETS)
@pytest.mark.parametrize("listener", ["UNSECURED", "SIGNED"])
def test_the_java_client_produces_consumes_and_reauthenticates(
    targets: dict[str, Target], name: str, listener: str, tmp_path: Path
) -> None:
    target = targets[name]
    tap = target.taps[listener]
    if listener == "UNSECURED":
        mode, credential = "unsecured", "alice"
    else:
        token = tmp_path / "token.jwt"
        token.write_text(signed_token())
        mode, credential = "signed", str(token)
    mark = tap.mark()
    lines = _java(
        target.bootstrap(listener), f"java-{listener.lower()}", mode, credential, 2 * REAUTH_MS / 1000
    )
    produced = int(lines[0].removeprefix("produced "))
    assert produced >= 2 and lines[1] == f"consumed {produced}"
    assert tap.most_logins(since=mark) >= 2


def test_the_java_client_is_refused_an_expired_token(targets: dict[str, Target], tmp_path: Path) -> None:
    token = tmp_path / "expired.jwt"
    token.write_text(signed_token(exp_s=-120))
    answers = {
        name: _java(target.bootstrap("SIGNED"), "java-expired", "signed", str(token), 0)
        for name, target in targets.items()
    }
    assert (
        answers["kafka_wire"]
        == answers["apache_kafka"]
        == ['refused SaslAuthenticationException: {"status":"invalid_token"}']
    )


# -- refusals, lifetimes, expiry (kafka_wire's client, one connection) ----------------------------

BAD_TOKENS: Final = {
    "expired": lambda: signed_token(exp_s=-120),
    "forged": lambda: signed_token(key=FORGER),
    "wrong audience": lambda: signed_token(aud="another-cluster"),
    "unsigned": lambda: unsecured_token(),
}


async def _login(bootstrap: str, token: str) -> KafkaClient:
    host, port = bootstrap.rsplit(":", 1)
    return await KafkaClient.connect(host, int(port), sasl=OAuthBearerClient(token))


@pytest.mark.parametrize("listener", ["SIGNED", "HTTPS"])
@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_bad_tokens_are_refused_as_kafka_refuses_them(
    targets: dict[str, Target], listener: str, kind: str
) -> None:
    async def refusal(bootstrap: str) -> tuple[int | None, str]:
        with pytest.raises(AuthenticationError) as info:
            await _login(bootstrap, BAD_TOKENS[kind]())
        return info.value.error_code, str(info.value)

    answers = {name: asyncio.run(refusal(t.bootstrap(listener))) for name, t in targets.items()}
    assert answers["kafka_wire"] == answers["apache_kafka"]
    assert answers["kafka_wire"] == (ErrorCode.SASL_AUTHENTICATION_FAILED, '{"status":"invalid_token"}')


def test_an_expired_unsecured_token_is_refused(targets: dict[str, Target]) -> None:
    async def refusal(bootstrap: str) -> tuple[int | None, str]:
        with pytest.raises(AuthenticationError) as info:
            await _login(bootstrap, unsecured_token(exp_s=-1))
        return info.value.error_code, str(info.value)

    answers = {name: asyncio.run(refusal(t.bootstrap("UNSECURED"))) for name, t in targets.items()}
    assert answers["kafka_wire"] == answers["apache_kafka"]
    assert answers["kafka_wire"] == (ErrorCode.SASL_AUTHENTICATION_FAILED, '{"status":"invalid_token"}')


@pytest.mark.parametrize("name", TARGETS)
def test_the_session_ends_with_the_token_and_the_next_request_closes_the_connection(
    targets: dict[str, Target], name: str
) -> None:
    """Two sessions: one of a token that expires in 1.5 s (the session lasts 1.5 s at most, not 2),
    one of a long token (2 s: connections.max.reauth.ms). Neither client re-authenticates (one
    mechanism object); the long one's request at 1 s is served; after its end, its next request
    is met by a closed connection."""
    bootstrap = targets[name].bootstrap("UNSECURED")

    async def scenario() -> tuple[int, int, bool]:
        short = await _login(bootstrap, unsecured_token(exp_s=1.5))
        long = await _login(bootstrap, unsecured_token())
        assert short.authenticated is not None and long.authenticated is not None
        lifetimes = short.authenticated.session_lifetime_ms, long.authenticated.session_lifetime_ms
        await asyncio.sleep(1)
        await long.request(MetadataRequest(topics=[]))
        await asyncio.sleep(REAUTH_MS / 1000)  # the session's end is the time itself
        closed = False
        try:
            await long.request(MetadataRequest(topics=[]))
        except ConnectionError:
            closed = True
        for client in (short, long):
            await client.close()
        return lifetimes[0], lifetimes[1], closed

    short_ms, long_ms, closed = asyncio.run(scenario())
    assert 0 < short_ms <= 1500 and long_ms == REAUTH_MS and closed
