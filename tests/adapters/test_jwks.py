"""The JWKS adapter (``kafka_wire.adapters.jwks``): a ``file:`` key set read, one that cannot be
read named by its property, an ``http:`` one fetched from a server in this process and fetched
again early when a token names a key id the set lacks; and ``kafka-wire serve`` refusing to start
without its key set."""

from __future__ import annotations

import asyncio
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kafka_wire.adapters.jwks import URL_PROPERTY, JwksError, JwksRefresher, fetch
from kafka_wire.broker.oauth import KeySets, SignedValidator
from kafka_wire.broker.oauth_config import OAUTHBEARER_LOGIN_MODULE, SIGNED_VALIDATOR, SignedSettings
from kafka_wire.protocol.sasl import OAuthBearerRefusal, OAuthBearerToken
from tests.interop.harness import free_port

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks(*kids: str) -> bytes:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    return json.dumps({"keys": [{**jwk, "kid": kid} for kid in kids]}).encode()


def test_a_file_key_set_is_read(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_bytes(jwks("k1"))
    assert fetch(SignedSettings(jwks_url=path.as_uri())) == jwks("k1")
    with pytest.raises(JwksError) as info:
        fetch(SignedSettings(jwks_url=(tmp_path / "missing.json").as_uri()))
    assert info.value.key == URL_PROPERTY and "missing.json" in info.value.reason


@pytest.fixture
def served() -> Iterator[tuple[str, list[bytes]]]:
    """An http server answering the last document of the list it yields."""
    documents = [jwks("k1")]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = documents[-1]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port("127.0.0.1")), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/jwks", documents
    server.shutdown()
    server.server_close()


def test_an_unknown_kid_fetches_the_key_set_again(served: tuple[str, list[bytes]]) -> None:
    url, documents = served
    settings = SignedSettings(jwks_url=url, retry_backoff_max_ms=0)
    keys = KeySets()
    validator = SignedValidator(settings, keys)
    now = int(time.time())
    token = jwt.encode(
        {"sub": "a", "iat": now, "exp": now + 60}, KEY, algorithm="RS256", headers={"kid": "k2"}
    )

    async def scenario() -> bool:
        refresher = JwksRefresher(keys, {url: settings})
        await refresher.load()
        refresher.start()
        try:
            assert isinstance(validator.validate(token, now * 1000), OAuthBearerRefusal)  # asks for k2
            documents.append(jwks("k1", "k2"))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if isinstance(validator.validate(token, now * 1000), OAuthBearerToken):
                    return True
                await asyncio.sleep(0.05)
            return False
        finally:
            await refresher.stop()

    assert asyncio.run(scenario())


def test_serve_does_not_start_without_its_key_set(tmp_path: Path) -> None:
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    settings = {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{free_port('127.0.0.1')}",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        f"{prefix}sasl.jaas.config": f"{OAUTHBEARER_LOGIN_MODULE} required;",
        f"{prefix}sasl.server.callback.handler.class": SIGNED_VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": (tmp_path / "nowhere.json").as_uri(),
        "sasl.oauthbearer.allow.unverified.audience": "true",
        "sasl.oauthbearer.allow.unverified.issuer": "true",
    }
    command = [sys.executable, "-m", "kafka_wire.cli", "serve", "--data-dir", str(tmp_path / "data")]
    for key, value in settings.items():
        command += ["--set", f"{key}={value}"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"kafka-wire serve: cannot start: {URL_PROPERTY}: {(tmp_path / 'nowhere.json').as_uri()}: No such file or directory"
    ]
