"""DescribeUserScramCredentials.

Behaviour: answered from this node's metadata image (the SCRAM credentials the controller
recorded, :class:`~kafka_wire.broker.controller.scram_image.ScramImage`), as a Kafka broker
answers it: each user's mechanisms and iteration counts, never the keys; every user with a
credential when the request names none (null or empty); a user named twice is
DUPLICATE_RESOURCE, a user without credentials RESOURCE_NOT_FOUND. With an authorizer, the
connection needs DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka).
Version notes: v0 only.
"""

from __future__ import annotations

from kafka_wire.broker.controller.scram_image import ScramImage
from kafka_wire.broker.metadata_view import MetadataView
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    ErrorCode,
)


def handle(
    ctx: Context, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    if not cluster_allowed(ctx, AclOperation.DESCRIBE):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return DescribeUserScramCredentialsResponse(error_code=code, error_message=code.description)
    view = ctx.state.cluster
    image = view.image.scram if isinstance(view, MetadataView) else ScramImage()
    return image.describe(request)
