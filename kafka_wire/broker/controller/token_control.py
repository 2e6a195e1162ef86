"""Delegation tokens, for the active controller (Kafka's ``DelegationTokenControlManager``).

:class:`DelegationTokenControl` owns the controller's tokens (a
:class:`.tokens_image.DelegationTokenImage`) and answers CreateDelegationToken,
RenewDelegationToken and ExpireDelegationToken, which brokers forward here in an Envelope that
names the client's principal (the broker has refused what it refuses first: token requests on a
connection that is plaintext or authenticated by a token, a token for another owner without
CREATE_TOKENS on that user). Kafka 4.4's checks, in its order:

- Create: without ``delegation.token.secret.key``, DELEGATION_TOKEN_AUTH_DISABLED; a renewer whose
  type is not ``User``, INVALID_PRINCIPAL_TYPE. The owner is the request's (when it names one),
  else the requester. The token lives ``delegation.token.max.lifetime.ms`` at most (less when the
  request asks for less, ``max_lifetime_ms`` > 0) and expires ``delegation.token.expiry.time.ms``
  after its creation unless renewed. Its id is a new random id (Kafka's ``Uuid``, in base64), its
  HMAC the id's HmacSHA512 under the secret key. One DelegationTokenRecord.
- Renew: AUTH_DISABLED; no token with that HMAC, DELEGATION_TOKEN_NOT_FOUND; past its expiry or
  maximum, DELEGATION_TOKEN_EXPIRED; a principal neither its owner nor a renewer,
  DELEGATION_TOKEN_OWNER_MISMATCH. The new expiry is now plus the request's period (the default
  expiry time when the request's is not positive, never more than it), capped by the maximum.
- Expire: AUTH_DISABLED, NOT_FOUND, OWNER_MISMATCH (no expiry check first); a negative period
  removes the token at once (RemoveDelegationTokenRecord); else EXPIRED if it has, or the expiry
  becomes now plus the period, capped by the maximum.

:meth:`DelegationTokenControl.sweep` is Kafka's periodic removal of expired tokens (every
``delegation.token.expiry.check.interval.ms``, through the controller's tick).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.tokens_image import (
    USER_TYPE,
    DelegationTokenImage,
    Principal,
    TokenInfo,
    token_hmac,
)
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.metadata import random_uuid
from kafka_wire.codec.structs import Message
from kafka_wire.logformat.partition_metadata import kafka_uuid_text
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kafka_wire.broker.controller.settings import ControllerConfig

#: Java's ``Long.MAX_VALUE``: Kafka's sums of a time and a duration stop there.
_LONG_MAX: Final = (1 << 63) - 1


def _sum(now_ms: int, duration_ms: int) -> int:
    return _LONG_MAX if now_ms > _LONG_MAX - duration_ms else now_ms + duration_ms


class DelegationTokenControl:
    """The delegation tokens, as committed and proposed."""

    def __init__(self, config: ControllerConfig, rng: random.Random) -> None:
        self.secret_key = config.delegation_token_secret_key or None
        self.max_lifetime_ms = config.delegation_token_max_lifetime_ms
        self.expiry_time_ms = config.delegation_token_expiry_time_ms
        self.check_interval_ms = config.delegation_token_expiry_check_interval_ms
        self._rng = rng
        self.image = DelegationTokenImage()

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def reset(self) -> None:
        self.image = DelegationTokenImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    # -- requests ----------------------------------------------------------------------------------

    def create(
        self, version: int, req: messages.CreateDelegationTokenRequest, now_ms: int, requester: Principal
    ) -> Decision:
        owner = requester
        if req.owner_principal_name:
            owner = (req.owner_principal_type or "", req.owner_principal_name)
        answer = messages.CreateDelegationTokenResponse(principal_type=owner[0], principal_name=owner[1])
        if version >= 3:  # the requester is in v3+ answers only
            answer.token_requester_principal_type, answer.token_requester_principal_name = requester
        if self.secret_key is None:
            answer.error_code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            return answer
        lifetime = self.max_lifetime_ms
        if req.max_lifetime_ms > 0:
            lifetime = min(lifetime, req.max_lifetime_ms)
        max_timestamp = _sum(now_ms, lifetime)
        expiry = min(max_timestamp, _sum(now_ms, self.expiry_time_ms))
        token_id = self._token_id()
        if any(r.principal_type != USER_TYPE for r in req.renewers):
            answer.error_code = ErrorCode.INVALID_PRINCIPAL_TYPE
            return answer
        token = TokenInfo(
            token_id=token_id,
            owner=owner,
            requester=requester,
            renewers=tuple((r.principal_type, r.principal_name) for r in req.renewers),
            issue_timestamp_ms=now_ms,
            max_timestamp_ms=max_timestamp,
            expiry_timestamp_ms=expiry,
        )
        answer.issue_timestamp_ms = now_ms
        answer.expiry_timestamp_ms = expiry
        answer.max_timestamp_ms = max_timestamp
        answer.token_id = token_id
        answer.hmac = token_hmac(token_id, self.secret_key)
        return self._result(ApiKey.CREATE_DELEGATION_TOKEN, req, [token.record()], answer)

    def renew(
        self, version: int, req: messages.RenewDelegationTokenRequest, now_ms: int, principal: Principal
    ) -> Decision:
        answer = messages.RenewDelegationTokenResponse()
        if self.secret_key is None:
            answer.error_code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            return answer
        token = self.image.token_for_hmac(req.hmac, self.secret_key)
        if token is None:
            answer.error_code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND
            return answer
        if token.expired(now_ms):
            answer.error_code = ErrorCode.DELEGATION_TOKEN_EXPIRED
            return answer
        if not token.owner_or_renewer(principal):
            answer.error_code = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
            return answer
        period = self.expiry_time_ms
        if req.renew_period_ms > 0:
            period = min(period, req.renew_period_ms)
        expiry = min(token.max_timestamp_ms, now_ms + period)
        answer.expiry_timestamp_ms = expiry
        return self._result(ApiKey.RENEW_DELEGATION_TOKEN, req, [token.record(expiry)], answer)

    def expire(
        self, version: int, req: messages.ExpireDelegationTokenRequest, now_ms: int, principal: Principal
    ) -> Decision:
        answer = messages.ExpireDelegationTokenResponse()
        if self.secret_key is None:
            answer.error_code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            return answer
        token = self.image.token_for_hmac(req.hmac, self.secret_key)
        if token is None:
            answer.error_code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND
            return answer
        if not token.owner_or_renewer(principal):
            answer.error_code = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
            return answer
        record: Message
        if req.expiry_time_period_ms < 0:  # expire at once
            answer.expiry_timestamp_ms = now_ms
            record = messages.RemoveDelegationTokenRecord(token_id=token.token_id)
        elif token.expired(now_ms):
            answer.error_code = ErrorCode.DELEGATION_TOKEN_EXPIRED
            return answer
        else:
            expiry = min(token.max_timestamp_ms, _sum(now_ms, req.expiry_time_period_ms))
            answer.expiry_timestamp_ms = expiry
            record = token.record(expiry)
        return self._result(ApiKey.EXPIRE_DELEGATION_TOKEN, req, [record], answer)

    @staticmethod
    def not_allowed(api_key: int, version: int, req: Message, requester: Principal) -> Message:
        """DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, as Kafka's controller answers a token request
        that did not come from a broker's Envelope (a controller listener is PLAINTEXT) or names a
        token-authenticated principal; the times -1."""
        code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        if isinstance(req, messages.CreateDelegationTokenRequest):
            owner = (
                (req.owner_principal_type or "", req.owner_principal_name)
                if req.owner_principal_name
                else requester
            )
            answer = messages.CreateDelegationTokenResponse(
                error_code=code,
                principal_type=owner[0],
                principal_name=owner[1],
                issue_timestamp_ms=-1,
                expiry_timestamp_ms=-1,
                max_timestamp_ms=-1,
            )
            if version >= 3:
                answer.token_requester_principal_type, answer.token_requester_principal_name = requester
            return answer
        if api_key == ApiKey.RENEW_DELEGATION_TOKEN:
            return messages.RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=-1)
        return messages.ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=-1)

    def sweep(self, now_ms: int) -> list[Message]:
        """The removal records of the tokens past their expiry or maximum time."""
        return [
            messages.RemoveDelegationTokenRecord(token_id=token.token_id)
            for token in self.image.tokens.values()
            if token.expired(now_ms)
        ]

    # -- helpers -----------------------------------------------------------------------------------

    def _token_id(self) -> str:
        """A new token id as Kafka's ``Uuid.randomUuid().toString()`` makes one (base64url, no
        padding; never one starting with ``-``) and not the id of a live token."""
        while True:
            text = kafka_uuid_text(random_uuid(self._rng))
            if not text.startswith("-") and text not in self.image.tokens:
                return text

    @staticmethod
    def _result(api_key: int, req: Message, records: list[Message], answer: Message) -> ControllerResult:
        return ControllerResult(records, lambda: answer, lambda code: failure_answer(api_key, req, code))
