"""ApiVersions.

Behaviour: lists every API this broker answers with the versions it handles (the table in
``kafka_wire.broker.apis``); an ApiVersions request of a version it lacks is answered by the
connection layer with a v0 UNSUPPORTED_VERSION response (KIP-511). v3+ requests carry a client
software name and version that must match Kafka's pattern, else INVALID_REQUEST.
"""

from __future__ import annotations

import re
from typing import Final

from kafka_wire.broker.state import Context
from kafka_wire.messages import ApiVersionsRequest, ApiVersionsResponse, ErrorCode
from kafka_wire.protocol.server import api_versions_response

#: Kafka's pattern for ``client_software_name`` / ``client_software_version``.
_SOFTWARE: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: Context, request: ApiVersionsRequest) -> ApiVersionsResponse:
    from kafka_wire.broker.apis import SUPPORTED

    response = api_versions_response(SUPPORTED)
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name)
        and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        response = ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    return response
