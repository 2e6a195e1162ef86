"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken, DescribeDelegationToken.

Behaviour: as Kafka 4.4's broker. Token requests are refused with
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that authenticated with a delegation token,
on a PLAINTEXT one and on an SSL one without a client certificate (its principal ANONYMOUS): a
token must be asked for with real credentials. Create, Renew and Expire then go to the active
controller in an Envelope naming the client's principal
(:mod:`kafka_wire.broker.controller.envelope`; the controller's part,
:class:`~kafka_wire.broker.controller.token_control.DelegationTokenControl`, decides them), Create
after two checks of the broker's own: a token for another owner needs CREATE_TOKENS on that
``User`` resource (else DELEGATION_TOKEN_AUTHORIZATION_FAILED), and every renewer must be a
``User`` (else INVALID_PRINCIPAL_TYPE); those answers carry the owner and requester, times -1, no
token. Describe is answered from this node's metadata image: DELEGATION_TOKEN_AUTH_DISABLED
without ``delegation.token.secret.key``; an empty owner list (not null) describes nothing; else
each token of a requested owner (or renewer; every token when the list is null) that the
connection owns or renews, or may DESCRIBE (the DELEGATION_TOKEN resource of its id), or whose
owner it may DESCRIBE_TOKENS (a ``User`` resource), with its HMAC (derived from this node's key).
The tokens come in the order of Kafka's hash map of them.

Version notes: v0 to v3 of each; v3 of Create and Describe carry the requester, which older
versions leave out.
"""

from __future__ import annotations

from typing import Any, Final

from kafka_wire import messages
from kafka_wire.broker.apis.forward import FORWARD_TIMEOUT_MS, NOT_CONTROLLER_MESSAGE, Forwarded
from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.controller.envelope import open_response, seal_request
from kafka_wire.broker.controller.scram_image import java_hash_order
from kafka_wire.broker.controller.tokens_image import (
    USER_TYPE,
    DelegationTokenImage,
    Principal,
    TokenInfo,
    principal_text,
)
from kafka_wire.broker.error_answers import ERROR_ANSWERS
from kafka_wire.broker.metadata_view import MetadataView
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

#: Kafka's ``DelegationTokenManager.ErrorTimestamp``.
ERROR_TIMESTAMP: Final = -1
ANONYMOUS: Final = "ANONYMOUS"


def client_principal(ctx: Context) -> Principal:
    """The connection's principal as Kafka's ``KafkaPrincipal``: ``User:<name>``, ANONYMOUS
    without an authenticated user."""
    return (USER_TYPE, ctx.principal or ANONYMOUS)


def allows_token_requests(ctx: Context) -> bool:
    """Kafka's ``allowTokenRequests``: not on a token-authenticated connection, nor a PLAINTEXT one
    (whose principal is ANONYMOUS), nor an SSL one without a client certificate (ANONYMOUS too)."""
    return not ctx.token_authenticated and client_principal(ctx)[1] != ANONYMOUS


def handle(ctx: Context, request: Message) -> Message | Forwarded:
    if isinstance(request, messages.DescribeDelegationTokenRequest):
        return _describe(ctx, request)
    if isinstance(request, messages.CreateDelegationTokenRequest):
        return _create(ctx, request)
    if not allows_token_requests(ctx):
        cls: Any = (
            messages.RenewDelegationTokenResponse
            if isinstance(request, messages.RenewDelegationTokenRequest)
            else messages.ExpireDelegationTokenResponse
        )
        return cls(  # type: ignore[no-any-return]
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=ERROR_TIMESTAMP
        )
    return _forward(ctx, request)


def _create(ctx: Context, request: messages.CreateDelegationTokenRequest) -> Message | Forwarded:
    requester = client_principal(ctx)
    owner = requester
    if request.owner_principal_name:
        owner = (request.owner_principal_type or "", request.owner_principal_name)
    if not allows_token_requests(ctx):
        return create_refusal(ctx, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not allowed(
        ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, principal_text(owner)
    ):
        return create_refusal(ctx, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    if any(r.principal_type != USER_TYPE for r in request.renewers):
        return create_refusal(ctx, ErrorCode.INVALID_PRINCIPAL_TYPE, owner, requester)
    return _forward(ctx, request)


def create_refusal(
    ctx: Context, code: int, owner: Principal, requester: Principal
) -> messages.CreateDelegationTokenResponse:
    """Kafka's ``CreateDelegationTokenResponse.prepareResponse`` of an error."""
    answer = messages.CreateDelegationTokenResponse(
        error_code=code,
        principal_type=owner[0],
        principal_name=owner[1],
        issue_timestamp_ms=ERROR_TIMESTAMP,
        expiry_timestamp_ms=ERROR_TIMESTAMP,
        max_timestamp_ms=ERROR_TIMESTAMP,
    )
    if ctx.api_version >= 3:
        answer.token_requester_principal_type, answer.token_requester_principal_name = requester
    return answer


def _forward(ctx: Context, request: Message) -> Message | Forwarded:
    """``request`` to the active controller in an Envelope with the connection's principal."""
    key = ctx.request.api_key
    error_answer = ERROR_ANSWERS[key]
    view = ctx.state.cluster
    if view.controller_id < 0:
        return error_answer(request, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE)
    held = Forwarded(request, error_answer, ctx.now_ms + FORWARD_TIMEOUT_MS)
    version = ctx.api_version

    def on_reply(body: Message | None, now_ms: int) -> None:
        opened = open_response(body, key, version)
        if isinstance(opened, int):
            held.on_reply(error_answer(request, opened, None), now_ms)
        else:
            held.on_reply(opened, now_ms)

    envelope = seal_request(request, version, client_principal(ctx), ctx.token_authenticated, ctx.client_host)
    view.send(Outbound(view.controller_id, view.controller_listener, envelope, on_reply, FORWARD_TIMEOUT_MS))
    return held


def _describe(
    ctx: Context, request: messages.DescribeDelegationTokenRequest
) -> messages.DescribeDelegationTokenResponse:
    answer = messages.DescribeDelegationTokenResponse()
    secret_key = ctx.state.config.delegation_token_secret_key
    if not allows_token_requests(ctx):
        answer.error_code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        return answer
    if not secret_key:
        answer.error_code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        return answer
    if request.owners is not None and not request.owners:
        return answer
    owners = (
        None if request.owners is None else [(o.principal_type, o.principal_name) for o in request.owners]
    )
    requester = client_principal(ctx)
    view = ctx.state.cluster
    image = view.image.tokens if isinstance(view, MetadataView) else DelegationTokenImage()
    for token_id in java_hash_order(image.tokens):
        token = image.tokens[token_id]
        if not _eligible(ctx, requester, owners, token):
            continue
        described = messages.DescribeDelegationTokenResponseDescribedDelegationToken(
            principal_type=token.owner[0],
            principal_name=token.owner[1],
            issue_timestamp=token.issue_timestamp_ms,
            expiry_timestamp=token.expiry_timestamp_ms,
            max_timestamp=token.max_timestamp_ms,
            token_id=token.token_id,
            hmac=image.hmac_of(token.token_id, secret_key),
            renewers=[
                messages.DescribeDelegationTokenResponseDescribedDelegationTokenRenewer(
                    principal_type=r[0], principal_name=r[1]
                )
                for r in token.renewers
            ],
        )
        if ctx.api_version >= 3:
            described.token_requester_principal_type, described.token_requester_principal_name = (
                token.requester
            )
        answer.tokens.append(described)
    return answer


def _eligible(ctx: Context, requester: Principal, owners: list[Principal] | None, token: TokenInfo) -> bool:
    """Kafka's ``DelegationTokenManager.filterToken``."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    if token.owner_or_renewer(requester):
        return True
    return allowed(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id) or allowed(
        ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, principal_text(token.owner)
    )


#: The API keys this module answers.
TOKEN_APIS: Final = frozenset(
    {
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
    }
)
