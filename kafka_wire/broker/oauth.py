"""OAUTHBEARER token validation as Kafka 4.4's broker does it: pure, time and keys given.

:class:`UnsecuredValidator` is Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``: a JWS
with ``alg`` ``none`` and an empty signature, base64url sections holding JSON objects; the
principal claim (``sub``) a non-blank string, ``exp`` a number, ``iat`` a number if present; the
token refused once ``now - skew >= exp``, when ``iat > now + skew`` or ``exp <= iat``, and with
``insufficient_scope`` (its scope the required list, as Java prints a list) when a required scope
item is missing.

:class:`SignedValidator` is Kafka's ``OAuthBearerValidatorCallbackHandler`` (``BrokerJwtValidator``
on jose4j): three non-empty sections, any signing algorithm but ``none``, verified with a key of
the listener's JWKS (by ``kid`` when the header has one, else every key that fits the algorithm;
PyJWT checks the signature); ``exp`` and ``iat`` required numbers, ``nbf`` honoured, the clock
skew applied to ``exp`` (expired once ``now >= exp + skew``) and ``nbf``; ``aud`` must hold an
expected audience (without an expected audience and with
``sasl.oauthbearer.allow.unverified.audience``, any), ``iss`` the expected issuer; the subject
claim a non-blank string, the scope a string or a list of non-blank strings. Every refusal is
``invalid_token``.

Neither reads a clock: ``validate(token, now_ms)``. The key sets are :class:`KeySets`, filled by
the driver (``kafka_wire.adapters.jwks`` fetches them: I/O) through :meth:`KeySets.update`; a
token whose ``kid`` no key has asks for an early fetch (:meth:`KeySets.take_wanted`), as Kafka's
``RefreshingHttpsJwks`` does. PyJWT loads only when a listener serves signed tokens.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.oauth_config import SignedSettings, UnsecuredSettings
from kafka_wire.errors import KafkaWireError
from kafka_wire.protocol.sasl.oauthbearer import OAuthBearerRefusal, OAuthBearerToken

if TYPE_CHECKING:
    from jwt import PyJWK, PyJWKSet

#: The key types each JWS algorithm family signs with (RFC 7518).
_KEY_TYPES: Final = {"RS": "RSA", "PS": "RSA", "ES": "EC", "HS": "oct", "Ed": "OKP"}


class KeySetError(KafkaWireError):
    """A JWKS document that is not a key set with a usable key."""


def _refusal(reason: str, scope: str | None = None) -> OAuthBearerRefusal:
    status = "insufficient_scope" if scope is not None else "invalid_token"
    return OAuthBearerRefusal(status=status, scope=scope, reason=reason)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Jackson and jose4j refuse them


def _json(raw: bytes | str) -> object:
    """JSON as Kafka's readers take it (no NaN or Infinity); ValueError or RecursionError (nested
    too deep) otherwise."""
    return json.loads(raw, parse_constant=_no_constant)


def _section(text: str) -> dict[str, object] | None:
    """A base64url section holding a JSON object (padding optional), or None."""
    try:
        value = _json(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _number(value: object) -> float | None:
    """A JSON number (not a boolean) that a double holds, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past a double's range
        return None


def _numeric_date(value: object) -> int | None:
    """A JWT NumericDate as jose4j reads it: a JSON number, in whole seconds (truncated)."""
    number = _number(value)
    return None if number is None else int(number)


def _seconds_to_ms(seconds: float) -> int:
    return math.floor(seconds * 1000 + 0.5)  # Java's Math.round


def _java_text(value: object) -> str | list[str] | float:
    """A claim as Kafka's unsecured token reader keeps it: numbers, lists of texts, texts."""
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        number = _number(value)
        return "" if number is None else number
    return value if isinstance(value, str) else ""


class UnsecuredValidator:
    """Kafka's unsecured validator (see the module docstring)."""

    def __init__(self, settings: UnsecuredSettings) -> None:
        self.settings = settings

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken | OAuthBearerRefusal:
        if ".." in token:
            return _refusal("malformed compact serialization contains '..'")
        sections = token.split(".")
        if len(sections) != 3:
            return _refusal("an unsecured JWS has 3 dot-separated base64url values")
        header, body = _section(sections[0]), _section(sections[1])
        if header is None or body is None:
            return _refusal("malformed base64url or JSON")
        if header.get("alg") != "none":
            return _refusal("an unsecured JWS must have 'none' for an algorithm")
        if sections[2]:
            return _refusal("an unsecured JWS must not have a signature")
        claims = {key: _java_text(value) for key, value in body.items()}
        settings = self.settings
        scope_claim = claims.get(settings.scope_claim)
        if isinstance(scope_claim, float):
            return _refusal(f"the {settings.scope_claim!r} claim is not a list")
        if isinstance(scope_claim, str):
            scope = frozenset([scope_claim.strip()] if scope_claim.strip() else [])
        else:
            scope = frozenset(item.strip() for item in scope_claim or [] if item.strip())
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, float):
            return _refusal("no expiration time (a number) in the JWT")
        principal = claims.get(settings.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            return _refusal(f"no principal name in JWT claim {settings.principal_claim!r}")
        if iat is not None and not isinstance(iat, float):
            return _refusal("the 'iat' claim is not a number")
        skew = settings.clock_skew_ms
        if iat is not None and 1000 * iat > now_ms + skew:
            return _refusal("issued after now plus the allowable clock skew")
        if now_ms - skew >= 1000 * exp:
            return _refusal("expired: now minus the allowable clock skew is on or after its expiration time")
        if iat is not None and exp <= iat:
            return _refusal("the expiration time is not after the issued-at time")
        for item in settings.required_scope:
            if item not in scope:
                return _refusal(
                    f"scope {sorted(scope)} lacks {item!r}", f"[{', '.join(settings.required_scope)}]"
                )
        return OAuthBearerToken(
            principal,
            expires_ms=_seconds_to_ms(exp),
            start_ms=None if iat is None else _seconds_to_ms(iat),
            scope=scope,
        )


class KeySets:
    """The JSON Web Key Sets of the broker's OAUTHBEARER listeners, by URL, as the driver loaded
    them (an empty set until then: every signed token is refused)."""

    def __init__(self) -> None:
        self._sets: dict[str, PyJWKSet] = {}
        self._wanted: set[str] = set()

    def update(self, url: str, document: bytes) -> None:
        """The key set at ``url`` is ``document`` (a JWKS in JSON); :class:`KeySetError` when it
        is not one with at least one usable key (the keys held before stay)."""
        from jwt import PyJWKSet
        from jwt.exceptions import PyJWKSetError

        try:
            self._sets[url] = PyJWKSet.from_json(document.decode())
        except (PyJWKSetError, UnicodeDecodeError, ValueError, TypeError, AttributeError) as exc:
            raise KeySetError(f"{url}: not a usable JSON Web Key Set ({exc})") from None

    def keys(self, url: str) -> list[PyJWK]:
        held = self._sets.get(url)
        return [] if held is None else list(held.keys)

    def want(self, url: str) -> None:
        """A token named a key ``url``'s set lacks: fetch it again soon."""
        self._wanted.add(url)

    def take_wanted(self) -> set[str]:
        """The URLs to fetch again early (each reported once)."""
        wanted, self._wanted = self._wanted, set()
        return wanted


class SignedValidator:
    """Kafka's signed-token validator (see the module docstring)."""

    def __init__(self, settings: SignedSettings, keys: KeySets) -> None:
        self.settings = settings
        self._keys = keys

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken | OAuthBearerRefusal:
        sections = token.strip().split(".")
        if len(sections) != 3 or not all(sections):
            return _refusal("a JWT has three non-empty sections (header, payload, signature)")
        header = _section(sections[0])
        if header is None:
            return _refusal("the JWT header is not base64url JSON")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg == "none" or alg[:2] not in _KEY_TYPES:
            return _refusal(f"algorithm {alg!r} is not allowed")
        payload = self._verified(token, header, alg)
        if payload is None:
            return _refusal("no key of the key set verifies the signature")
        return self._check_claims(payload, now_ms)

    def _verified(self, token: str, header: Mapping[str, object], alg: str) -> dict[str, object] | None:
        from jwt import PyJWS
        from jwt.exceptions import PyJWTError

        url = self.settings.jwks_url
        kid = header.get("kid")
        kty = _KEY_TYPES[alg[:2]]
        candidates = [
            key
            for key in self._keys.keys(url)
            if (kid is None or key.key_id == kid)
            and key.key_type == kty
            and key.public_key_use in (None, "sig")
        ]
        if kid is not None and not candidates:
            self._keys.want(url)
        for key in candidates:
            try:
                decoded = PyJWS().decode_complete(token, key=key.key, algorithms=[alg])
            except (PyJWTError, TypeError, ValueError):
                continue
            try:
                payload = _json(decoded["payload"])
            except (ValueError, RecursionError):
                return None
            return payload if isinstance(payload, dict) else None
        return None

    def _check_claims(
        self, claims: Mapping[str, object], now_ms: int
    ) -> OAuthBearerToken | OAuthBearerRefusal:
        settings = self.settings
        skew_ms = settings.clock_skew_s * 1000
        exp, iat = _numeric_date(claims.get("exp")), _numeric_date(claims.get("iat"))
        if exp is None or iat is None:
            return _refusal("'exp' and 'iat' are required numeric dates")
        if now_ms >= 1000 * exp + skew_ms:
            return _refusal("the JWT has expired")
        if "nbf" in claims:
            nbf = _numeric_date(claims["nbf"])
            if nbf is None or now_ms + skew_ms < 1000 * nbf:
                return _refusal("the JWT is not valid yet ('nbf')")
        if settings.expected_audience:
            aud = claims.get("aud")
            audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if not any(a in settings.expected_audience for a in audiences if isinstance(a, str)):
                return _refusal(f"audience {aud!r} is not one of {list(settings.expected_audience)}")
        if settings.expected_issuer is not None and claims.get("iss") != settings.expected_issuer:
            return _refusal(f"issuer {claims.get('iss')!r} is not {settings.expected_issuer!r}")
        subject = claims.get(settings.sub_claim)
        if not isinstance(subject, str) or not subject.strip():
            return _refusal(f"the {settings.sub_claim!r} claim is not a non-blank string")
        raw_scope = claims.get(settings.scope_claim)
        items = (
            [raw_scope] if isinstance(raw_scope, str) else raw_scope if isinstance(raw_scope, list) else []
        )
        if not all(isinstance(item, str) and item.strip() for item in items):
            return _refusal(f"the {settings.scope_claim!r} claim holds a blank or non-text item")
        if exp < 0 or iat < 0:
            return _refusal("'exp' and 'iat' must not be negative")
        return OAuthBearerToken(
            subject.strip(),
            expires_ms=exp * 1000,
            start_ms=iat * 1000,
            scope=frozenset(str(item).strip() for item in items),
        )


OAuthValidator = UnsecuredValidator | SignedValidator


def validator(settings: UnsecuredSettings | SignedSettings, keys: KeySets) -> OAuthValidator:
    """The validator ``settings`` describe (signed ones read ``keys``)."""
    if isinstance(settings, UnsecuredSettings):
        return UnsecuredValidator(settings)
    return SignedValidator(settings, keys)
