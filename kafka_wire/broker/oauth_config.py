"""A SASL listener's OAUTHBEARER settings from Kafka's properties (no I/O, no validation of tokens).

Kafka 4.4 serves OAUTHBEARER on a listener that enables it with

- a JAAS entry ``listener.name.<listener>.oauthbearer.sasl.jaas.config`` (else
  ``sasl.jaas.config``) naming ``OAuthBearerLoginModule``;
- a server callback handler, ``listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class``:

  - unset (or Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``): unsecured tokens (a JWS
    with ``alg`` ``none``), checked by the JAAS options ``unsecuredValidatorPrincipalClaimName``
    (``sub``), ``unsecuredValidatorScopeClaimName`` (``scope``),
    ``unsecuredValidatorRequiredScope`` (space-separated) and
    ``unsecuredValidatorAllowableClockSkewMs`` (0);
  - ``OAuthBearerValidatorCallbackHandler``: signed JWTs, verified with the keys at
    ``sasl.oauthbearer.jwks.endpoint.url`` (``file:``, ``http:`` or ``https:``; required) and
    checked against ``sasl.oauthbearer.expected.audience`` (a list; required unless
    ``sasl.oauthbearer.allow.unverified.audience=true``), ``sasl.oauthbearer.expected.issuer``
    (required unless ``sasl.oauthbearer.allow.unverified.issuer=true``),
    ``sasl.oauthbearer.sub.claim.name``, ``sasl.oauthbearer.scope.claim.name`` and
    ``sasl.oauthbearer.clock.skew.seconds`` (30); an http(s) key set is fetched again every
    ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (one hour), its TLS trust from the JAAS
    entry's ``ssl.truststore.*`` options (else the system's).

Each ``sasl.oauthbearer.*`` property is looked up as Kafka's ``ConfigurationUtils`` does:
``listener.name.<listener>.oauthbearer.<name>``, then ``listener.name.<listener>.<name>``, then
``<name>``. Errors are :class:`~kafka_wire.broker.jaas.SaslConfigError` naming the property.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from typing import Final

from kafka_wire.broker.jaas import LISTENER_PREFIX, JaasEntry, SaslConfigError
from kafka_wire.quick_dataclass import dataclass

OAUTHBEARER_LOGIN_MODULE: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
UNSECURED_VALIDATOR: Final = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
SIGNED_VALIDATOR: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
#: The callback handler property, after the listener and mechanism prefix.
CALLBACK_HANDLER: Final = "sasl.server.callback.handler.class"
#: Kafka's defaults (SaslConfigs).
DEFAULT_JWKS_REFRESH_MS: Final = 3_600_000
DEFAULT_JWKS_RETRY_BACKOFF_MS: Final = 100
DEFAULT_JWKS_RETRY_BACKOFF_MAX_MS: Final = 10_000
DEFAULT_CLOCK_SKEW_S: Final = 30
#: One item of a scope (RFC 6749 section 3.3), as Kafka's OAuthBearerScopeUtils accepts it.
_SCOPE_ITEM: Final = r"[\x21\x23-\x5b\x5d-\x7e]+"  # compiled (and kept) by ``re`` on first use
_URL_SCHEMES: Final = ("file", "http", "https")


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsecuredSettings:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: its JAAS options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SignedSettings:
    """Kafka's OAuthBearerValidatorCallbackHandler (BrokerJwtValidator): the ``sasl.oauthbearer.*``
    properties of the listener."""

    jwks_url: str
    refresh_ms: int = DEFAULT_JWKS_REFRESH_MS
    retry_backoff_ms: int = DEFAULT_JWKS_RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = DEFAULT_JWKS_RETRY_BACKOFF_MAX_MS
    #: Accepted ``aud`` values; empty: any (``allow.unverified.audience``).
    expected_audience: tuple[str, ...] = ()
    #: The required ``iss``; None: any (``allow.unverified.issuer``).
    expected_issuer: str | None = None
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    clock_skew_s: int = DEFAULT_CLOCK_SKEW_S
    #: The JAAS entry's ``ssl.*`` options: the trust of an https key set.
    tls_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def fetched(self) -> bool:
        """Whether the key set comes over HTTP(S) (and is fetched again every ``refresh_ms``)."""
        return not self.jwks_url.lower().startswith("file:")


OAuthSettings = UnsecuredSettings | SignedSettings


def oauth_settings(props: Mapping[str, str], listener: str, jaas_key: str, entry: JaasEntry) -> OAuthSettings:
    """The OAUTHBEARER settings of ``listener``, whose JAAS entry (property ``jaas_key``) is ``entry``."""
    if entry.module != OAUTHBEARER_LOGIN_MODULE:
        raise SaslConfigError(jaas_key, f"OAUTHBEARER needs {OAUTHBEARER_LOGIN_MODULE}, not {entry.module}")
    prefix = f"{LISTENER_PREFIX}{listener.lower()}."
    handler_key = f"{prefix}oauthbearer.{CALLBACK_HANDLER}"
    handler = props.get(handler_key, "").strip()
    if handler in ("", UNSECURED_VALIDATOR):
        return _unsecured(entry.options, jaas_key)
    if handler != SIGNED_VALIDATOR:
        raise SaslConfigError(
            handler_key, f"{handler}: kafka_wire serves {UNSECURED_VALIDATOR} and {SIGNED_VALIDATOR}"
        )
    return _signed(_Lookup(props, prefix), entry.options)


def _unsecured(options: Mapping[str, str], key: str) -> UnsecuredSettings:
    def option(name: str, default: str) -> str:
        value = options.get(f"unsecuredValidator{name}", "").strip()
        return value or default

    skew_text = option("AllowableClockSkewMs", "0")
    try:
        skew = int(skew_text)
    except ValueError:
        raise SaslConfigError(
            key, f"unsecuredValidatorAllowableClockSkewMs {skew_text!r} is not an int"
        ) from None
    if skew < 0:
        raise SaslConfigError(key, f"unsecuredValidatorAllowableClockSkewMs must not be negative: {skew}")
    scope = tuple(item for item in option("RequiredScope", "").split(" ") if item)
    for item in scope:
        if not re.fullmatch(_SCOPE_ITEM, item):
            raise SaslConfigError(key, f"unsecuredValidatorRequiredScope: invalid scope value {item!r}")
    return UnsecuredSettings(
        principal_claim=option("PrincipalClaimName", "sub"),
        scope_claim=option("ScopeClaimName", "scope"),
        required_scope=scope,
        clock_skew_ms=skew,
    )


@dataclass(frozen=True, slots=True)
class _Lookup:
    """``sasl.oauthbearer.*`` as Kafka finds it: mechanism prefix, listener prefix, bare."""

    props: Mapping[str, str]
    prefix: str

    def get(self, name: str) -> tuple[str, str | None]:
        for key in (f"{self.prefix}oauthbearer.{name}", f"{self.prefix}{name}", name):
            if key in self.props:
                value = self.props[key].strip()
                return key, value or None
        return name, None

    def integer(self, name: str, default: int) -> int:
        key, value = self.get(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise SaslConfigError(key, f"{value!r} is not a number") from None
        if number < 0:
            raise SaslConfigError(key, f"must be at least 0, not {number}")
        return number

    def boolean(self, name: str) -> bool:
        key, value = self.get(name)
        if value is None:
            return False
        if value.lower() not in ("true", "false"):
            raise SaslConfigError(key, f"{value!r} is not true or false")
        return value.lower() == "true"


def _signed(lookup: _Lookup, options: Mapping[str, str]) -> SignedSettings:
    url_key, url = lookup.get("sasl.oauthbearer.jwks.endpoint.url")
    if url is None:
        raise SaslConfigError(
            url_key, f"{SIGNED_VALIDATOR} verifies signatures with the keys at this URL: it must be set"
        )
    scheme = url.partition(":")[0].lower()
    if scheme not in _URL_SCHEMES or ":" not in url:
        raise SaslConfigError(url_key, f"{url}: only http, https and file URLs are supported")
    audience_key, audience_text = lookup.get("sasl.oauthbearer.expected.audience")
    audience = tuple(a.strip() for a in (audience_text or "").split(",") if a.strip())
    if not audience and not lookup.boolean("sasl.oauthbearer.allow.unverified.audience"):
        raise SaslConfigError(
            audience_key,
            "must name the audience(s) of this cluster (or set sasl.oauthbearer.allow.unverified.audience=true)",
        )
    issuer_key, issuer = lookup.get("sasl.oauthbearer.expected.issuer")
    if issuer is None and not lookup.boolean("sasl.oauthbearer.allow.unverified.issuer"):
        raise SaslConfigError(
            issuer_key,
            "must name the issuer of the tokens (or set sasl.oauthbearer.allow.unverified.issuer=true)",
        )
    return SignedSettings(
        jwks_url=url,
        refresh_ms=lookup.integer("sasl.oauthbearer.jwks.endpoint.refresh.ms", DEFAULT_JWKS_REFRESH_MS),
        retry_backoff_ms=lookup.integer(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", DEFAULT_JWKS_RETRY_BACKOFF_MS
        ),
        retry_backoff_max_ms=lookup.integer(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", DEFAULT_JWKS_RETRY_BACKOFF_MAX_MS
        ),
        expected_audience=audience,
        expected_issuer=issuer,
        sub_claim=lookup.get("sasl.oauthbearer.sub.claim.name")[1] or "sub",
        scope_claim=lookup.get("sasl.oauthbearer.scope.claim.name")[1] or "scope",
        clock_skew_s=lookup.integer("sasl.oauthbearer.clock.skew.seconds", DEFAULT_CLOCK_SKEW_S),
        tls_options={k: v for k, v in options.items() if k.startswith("ssl.")},
    )


def is_oauth_property(key: str) -> bool:
    """Whether ``key`` is one :func:`oauth_settings` reads."""
    if key.startswith("sasl.oauthbearer."):
        return True
    return key.startswith(LISTENER_PREFIX) and (
        ".sasl.oauthbearer." in key or key.endswith(f".oauthbearer.{CALLBACK_HANDLER}")
    )
