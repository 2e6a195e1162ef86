"""Delegation tokens as the metadata log records them (Kafka's ``DelegationTokenImage``): one per
token id, from DelegationTokenRecord (a new token, or a renewed one: the whole token again with
its new expiry), removed by RemoveDelegationTokenRecord.

Every node keeps this section of its image. A broker answers DescribeDelegationToken from it and
authenticates SCRAM clients that log in with a token (``tokenauth=true``) against it; the
controller's :class:`.token_control.DelegationTokenControl` owns the copy it decides Create,
Renew and ExpireDelegationToken with. The HMAC is not in the metadata: every node derives it
from the token id and its own ``delegation.token.secret.key`` (:func:`token_hmac`), as Kafka's
nodes do, so all of them must be given the same key.
"""

from __future__ import annotations

from typing import Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass

#: The records this section applies, by class name (a class loads with its first record).
TOKEN_RECORDS: Final = ("DelegationTokenRecord", "RemoveDelegationTokenRecord")

#: Kafka's ``KafkaPrincipal.USER_TYPE``.
USER_TYPE: Final = "User"

#: A principal as Kafka's ``KafkaPrincipal`` holds it: (type, name).
Principal = tuple[str, str]


def principal_text(principal: Principal) -> str:
    """``type:name``, as ``KafkaPrincipal.toString`` writes it (and the records hold it)."""
    return f"{principal[0]}:{principal[1]}"


def parse_principal(text: str) -> Principal:
    """The principal of ``type:name`` (Kafka's ``SecurityUtils.parseKafkaPrincipal``: split at
    the first colon; a text without one is a name of no type)."""
    kind, sep, name = text.partition(":")
    return (kind, name) if sep else ("", text)


def token_hmac(token_id: str, secret_key: str) -> bytes:
    """The token's HMAC: HmacSHA512 of its id's UTF-8 bytes, keyed by the secret key's (Kafka's
    ``DelegationTokenManager.createHmac``). Its base64 text is the token's SCRAM password."""
    import hashlib  # on the first token, not at start
    import hmac

    return hmac.digest(secret_key.encode(), token_id.encode(), hashlib.sha512)


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """One token, as its record holds it (Kafka's ``TokenInformation``)."""

    token_id: str
    owner: Principal
    requester: Principal
    renewers: tuple[Principal, ...]
    issue_timestamp_ms: int
    max_timestamp_ms: int
    expiry_timestamp_ms: int

    def owner_or_renewer(self, principal: Principal) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        """Past its expiry or its maximum time (Kafka compares with ``<``: the last millisecond
        is still valid)."""
        return self.max_timestamp_ms < now_ms or self.expiry_timestamp_ms < now_ms

    def record(self, expiry_timestamp_ms: int | None = None) -> messages.DelegationTokenRecord:
        return messages.DelegationTokenRecord(
            owner=principal_text(self.owner),
            requester=principal_text(self.requester),
            renewers=[principal_text(r) for r in self.renewers],
            issue_timestamp=self.issue_timestamp_ms,
            max_timestamp=self.max_timestamp_ms,
            expiration_timestamp=(
                self.expiry_timestamp_ms if expiry_timestamp_ms is None else expiry_timestamp_ms
            ),
            token_id=self.token_id,
        )


class DelegationTokenImage:
    """The tokens, by id, in the order they were first recorded."""

    def __init__(self) -> None:
        self.tokens: dict[str, TokenInfo] = {}
        #: HMACs already computed: token id -> (secret key, HMAC).
        self._hmacs: dict[str, tuple[str, bytes]] = {}

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.DelegationTokenRecord):
            self.tokens[record.token_id] = TokenInfo(
                token_id=record.token_id,
                owner=parse_principal(record.owner),
                requester=parse_principal(record.requester),
                renewers=tuple(parse_principal(r) for r in record.renewers),
                issue_timestamp_ms=record.issue_timestamp,
                max_timestamp_ms=record.max_timestamp,
                expiry_timestamp_ms=record.expiration_timestamp,
            )
        elif isinstance(record, messages.RemoveDelegationTokenRecord):
            self.tokens.pop(record.token_id, None)
            self._hmacs.pop(record.token_id, None)

    def snapshot_records(self) -> list[Message]:
        return [token.record() for token in self.tokens.values()]

    def hmac_of(self, token_id: str, secret_key: str) -> bytes:
        found = self._hmacs.get(token_id)
        if found is None or found[0] != secret_key:
            found = self._hmacs[token_id] = (secret_key, token_hmac(token_id, secret_key))
        return found[1]

    def token_for_hmac(self, mac: bytes, secret_key: str) -> TokenInfo | None:
        """The token whose HMAC is ``mac`` (Kafka's ``DelegationTokenCache.tokenForHmac``)."""
        import hmac

        for token in self.tokens.values():
            if hmac.compare_digest(self.hmac_of(token.token_id, secret_key), mac):
                return token
        return None
