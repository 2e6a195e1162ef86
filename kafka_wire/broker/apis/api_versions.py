"""ApiVersions.

Behaviour: lists every API this broker answers with the versions it handles (the table in
``kafka_wire.broker.apis``) and, from v3, the features it supports (``transaction.version`` 0-2)
and those the cluster finalized, with the metadata offset as their epoch (clients use
``transaction.version`` 2 once it is finalized, KIP-890); an ApiVersions request of a version it lacks is answered by the
connection layer with a v0 UNSUPPORTED_VERSION response (KIP-511). v3+ requests carry a client
software name and version that must match Kafka's pattern, else INVALID_REQUEST.
"""

from __future__ import annotations

import re
from typing import Final

from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseFinalizedFeatureKey,
    ApiVersionsResponseSupportedFeatureKey,
    ErrorCode,
)
from kafka_wire.protocol.server import api_versions_response

#: The features a broker tells clients it supports (name, min, max).
BROKER_FEATURES: Final = (("transaction.version", 0, 2),)
_CLIENT_FEATURES: Final = frozenset(name for name, _, _ in BROKER_FEATURES)
#: Kafka's pattern for ``client_software_name`` / ``client_software_version``.
_SOFTWARE: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: Context, request: ApiVersionsRequest) -> ApiVersionsResponse:
    from kafka_wire.broker.apis import SUPPORTED

    response = api_versions_response(SUPPORTED)
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name)
        and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    response.supported_features = [
        ApiVersionsResponseSupportedFeatureKey(name=name, min_version=low, max_version=high)
        for name, low, high in BROKER_FEATURES
    ]
    epoch, finalized = ctx.state.cluster.finalized_features()
    response.finalized_features_epoch = epoch
    response.finalized_features = [
        ApiVersionsResponseFinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
        for name, level in sorted(finalized.items())
        if name in _CLIENT_FEATURES
    ]
    return response
