"""InitProducerId.

Behaviour: without a transactional id, every request gets a new producer id at epoch 0, including an idempotent producer that names its current id
and epoch (KIP-360, v3+): Kafka's transaction coordinator "blindly accepts" requests without a
transactional id and hands out a fresh id. A producer id without an epoch, or an epoch without a
producer id, is INVALID_REQUEST (Kafka checks this before anything else). A request with a
transactional id goes to the transaction coordinator (``kafka_wire.broker.txn``), not here.

The ids come from blocks the controller allocates (:mod:`kafka_wire.broker.producer_ids`; each
block is a metadata record, so no id is handed out twice, across brokers and restarts); while this
broker has no block with ids left it answers COORDINATOR_LOAD_IN_PROGRESS, as Kafka does, and
clients retry. With an authorizer, an id without a transactional id needs IDEMPOTENT_WRITE on the
cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED), as Kafka 4 checks.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.security.acls import AclOperation, ResourceType, principal_of
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import ErrorCode, InitProducerIdRequest, InitProducerIdResponse

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1


def handle(ctx: Context, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if (request.producer_id == NO_PRODUCER_ID) != (request.producer_epoch == NO_PRODUCER_EPOCH):
        return _error(ErrorCode.INVALID_REQUEST)
    if request.transactional_id is not None:
        return _error(ErrorCode.INVALID_REQUEST)
    if not _may_be_idempotent(ctx):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    blocks = ctx.state.producer_ids
    allocated = None if blocks is None else blocks.next_id(ctx.now_ms)
    if allocated is None:
        return _error(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    return InitProducerIdResponse(producer_id=allocated, producer_epoch=0)


def _may_be_idempotent(ctx: Context) -> bool:
    """IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (Kafka's check since KIP-679)."""
    authorizer = ctx.state.authorizer
    if authorizer is None or cluster_allowed(ctx, AclOperation.IDEMPOTENT_WRITE):
        return True
    return authorizer.authorize_any(
        principal_of(ctx.principal), ctx.client_host, AclOperation.WRITE, ResourceType.TOPIC
    )


def _error(code: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        error_code=code, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH
    )
