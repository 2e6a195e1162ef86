"""The JSON Web Key Sets of a broker's OAUTHBEARER listeners: fetched here (I/O), handed to the
engine as values (``Broker.oauth_key_sets.update``).

As Kafka 4.4's broker does: a ``file:`` key set is read once at start; an ``http:``/``https:``
one is fetched at start and again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``, and early
(at most once per ``sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms``) when a token names a
key id the set lacks; a failed fetch keeps the keys held and is retried after
``retry.backoff.ms``, doubling up to ``retry.backoff.max.ms``. A key set that cannot be loaded at
start stops the start (:class:`JwksError`, naming the property). An https fetch trusts the JAAS
entry's ``ssl.truststore.*`` (PEM or PKCS12), else the system's certificates (``SSL_CERT_FILE``
included).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from kafka_wire.adapters.tls_stores import TlsStoreError, load_truststore
from kafka_wire.broker.oauth_config import SignedSettings
from kafka_wire.errors import KafkaWireError

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker
    from kafka_wire.broker.oauth import KeySets

_log = logging.getLogger("kafka_wire.adapters.jwks")
#: How long one fetch may take.
FETCH_TIMEOUT_S: Final = 10.0
#: How often the engine is asked whether a token wanted an early fetch.
WANTED_POLL_S: Final = 1.0
URL_PROPERTY: Final = "sasl.oauthbearer.jwks.endpoint.url"


class JwksError(KafkaWireError):
    """A key set that cannot be loaded; ``key`` names the property."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


def fetch(settings: SignedSettings) -> bytes:
    """The key set document at ``settings.jwks_url`` (blocking)."""
    url = settings.jwks_url
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme.lower() == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        try:
            return path.read_bytes()
        except OSError as exc:
            raise JwksError(URL_PROPERTY, f"{url}: {exc.strerror or exc}") from None
    context = _tls_context(settings.tls_options) if parsed.scheme.lower() == "https" else None
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S, context=context) as answer:
            data: bytes = answer.read()
            return data
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise JwksError(URL_PROPERTY, f"{url}: {exc}") from None


def _tls_context(options: Mapping[str, str]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    location = options.get("ssl.truststore.location")
    if location is None:
        return context
    kind = options.get("ssl.truststore.type", "JKS").upper()
    if kind not in ("PEM", "PKCS12"):
        raise JwksError("ssl.truststore.type", f"{kind}: kafka_wire reads PEM and PKCS12 truststores")
    try:
        load_truststore(
            context,
            kind=kind,
            location=location,
            password=options.get("ssl.truststore.password"),
            purpose=ssl.Purpose.SERVER_AUTH,
        )
    except TlsStoreError as exc:
        raise JwksError(exc.key, exc.reason) from None
    return context


class JwksRefresher:
    """Loads the key sets of a broker's signed-token listeners and keeps them fresh."""

    def __init__(self, key_sets: KeySets, sources: Mapping[str, SignedSettings]) -> None:
        self._key_sets = key_sets
        self._sources = dict(sources)
        self._fetched_at: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Load every key set (a :class:`JwksError` for the first that fails)."""
        from kafka_wire.broker.oauth import KeySetError

        for url, settings in self._sources.items():
            document = await asyncio.to_thread(fetch, settings)
            try:
                self._key_sets.update(url, document)
            except KeySetError as exc:
                raise JwksError(URL_PROPERTY, str(exc)) from None
            self._fetched_at[url] = time.monotonic()
            _log.info("loaded the JSON Web Key Set at %s", url)

    def start(self) -> None:
        """Refresh the fetched key sets in the background."""
        if any(s.fetched for s in self._sources.values()):
            self._task = asyncio.create_task(self._refresh_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _refresh_loop(self) -> None:
        fetched = {url: s for url, s in self._sources.items() if s.fetched}
        due = {url: self._fetched_at[url] + s.refresh_ms / 1000 for url, s in fetched.items()}
        backoff = {url: s.retry_backoff_ms / 1000 for url, s in fetched.items()}
        while True:
            await asyncio.sleep(min([WANTED_POLL_S, *(d - time.monotonic() for d in due.values())]))
            now = time.monotonic()
            for url in self._key_sets.take_wanted() & fetched.keys():
                if now - self._fetched_at[url] >= fetched[url].retry_backoff_max_ms / 1000:
                    due[url] = now
            for url, settings in fetched.items():
                if due[url] > now:
                    continue
                try:
                    self._key_sets.update(url, await asyncio.to_thread(fetch, settings))
                except KafkaWireError as exc:
                    _log.warning("could not refresh the JSON Web Key Set (keeping the keys held): %s", exc)
                    due[url] = time.monotonic() + backoff[url]
                    backoff[url] = min(backoff[url] * 2, settings.retry_backoff_max_ms / 1000)
                    continue
                self._fetched_at[url] = time.monotonic()
                due[url] = self._fetched_at[url] + settings.refresh_ms / 1000
                backoff[url] = settings.retry_backoff_ms / 1000


async def start_key_sets(broker: Broker) -> JwksRefresher | None:
    """Load the key sets ``broker``'s listeners validate signed OAUTHBEARER tokens with, and keep
    them fresh (None: no listener does)."""
    key_sets = broker.oauth_key_sets
    if key_sets is None:
        return None
    sources = {
        s.oauth.jwks_url: s.oauth
        for s in broker.config.sasl_listeners.values()
        if isinstance(s.oauth, SignedSettings)
    }
    refresher = JwksRefresher(key_sets, sources)
    await refresher.load()
    refresher.start()
    return refresher
