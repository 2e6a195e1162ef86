"""A decoded frame log: every request and response through the proxy as one JSON line each (a
Kafka "tcpdump" through the project's decoder).

Each line is an object: ``connection``, ``client``, ``upstream``, ``direction`` (``request`` or
``response``), ``api`` (the API's name), ``version``, ``correlation_id``, ``client_id`` and
``body`` (the message as :func:`~kafka_wire.codec.jsonify.to_jsonable` gives it: fields in wire
order, bytes as hex, records payloads included). Lines go to a writer the caller gives (a file,
stdout, a list in a test).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kafka_wire.codec.jsonify import to_jsonable
from kafka_wire.messages import ApiKey
from kafka_wire.proxy.filters import ALL_KEYS, FORWARD, Call, Filter, Outcome


class FrameLog(Filter):
    """Writes each request and response it sees as a JSON line (see the module docstring)."""

    name: ClassVar[str] = "log"
    request_keys = ALL_KEYS
    response_keys = ALL_KEYS

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], sink_for: Callable[[str], Callable[[str], None]]
    ) -> FrameLog:
        return cls(sink_for(options.get("path", "-")))

    def _line(self, call: Call, direction: str, body: Any) -> None:
        info = call.connection
        try:
            api = ApiKey(call.api_key).name
        except ValueError:
            api = str(call.api_key)
        self.write(
            json.dumps(
                {
                    "connection": info.connection_id,
                    "client": info.client,
                    "upstream": info.upstream,
                    "direction": direction,
                    "api": api,
                    "version": call.api_version,
                    "correlation_id": call.header.correlation_id,
                    "client_id": call.header.client_id,
                    "body": body,
                },
                separators=(",", ":"),
            )
        )

    def on_request(self, call: Call) -> Outcome:
        self._line(call, "request", to_jsonable(call.body))
        return FORWARD

    def on_response(self, call: Call) -> Outcome:
        self._line(call, "response", to_jsonable(call.response))
        return FORWARD
