"""Fault injection between clients and a real cluster, with the broker's fault vocabulary.

:class:`FaultFilter` holds a :class:`~kafka_wire.broker.faults.FaultInjector` (the one
``kafka-wire serve --control-port`` and the pytest fixtures drive) and applies it in the proxy:

- **errors** (``push_errors``): the next requests of an API are answered by the proxy with the
  codes, in the request's shape (:func:`~kafka_wire.broker.faults.injected_answer`); the upstream
  never sees them;
- **latency** (``add_latency``): requests of an API (of every API) are held that long;
- **close** (``close_mid_response``): the next requests of an API reach the upstream, and when
  their answers come back the client's connection is closed instead (the request was handled,
  its answer lost, as with the broker's close mid-response).

The filter decodes only the requests (and, for closes, the responses) of the APIs it is built
for (``apis``; None: every API, which decodes every frame).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from kafka_wire.broker.faults import FaultInjector, injected_answer
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.proxy.filters import ALL_KEYS, FORWARD, Answer, Call, Close, Delay, Filter, Outcome


def parse_api(text: str) -> ApiKey:
    """An API by name (``PRODUCE``, ``produce``) or number."""
    text = text.strip()
    return ApiKey(int(text)) if text.lstrip("-").isdigit() else ApiKey[text.upper()]


def parse_code(text: str) -> int:
    """An error code by name (``NOT_LEADER_OR_FOLLOWER``) or number."""
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else int(ErrorCode[text.upper()])


class FaultFilter(Filter):
    """Errors, latency and dropped connections on demand (see the module docstring)."""

    name: ClassVar[str] = "faults"

    def __init__(self, apis: Iterable[int] | None = None, injector: FaultInjector | None = None) -> None:
        self.faults = injector or FaultInjector()
        keys = ALL_KEYS if apis is None else frozenset(apis)
        self.request_keys = keys
        self.response_keys = keys

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> FaultFilter:
        """``errors=API:CODE[:CODE...][;API:CODE...]``, ``count``, ``forever``, ``latency-ms``,
        ``latency-api``, ``close=API[;API]``, ``apis=API[;API]`` (what may be faulted later)."""
        forever = options.get("forever", "false").lower() in ("1", "true", "yes")
        count = int(options.get("count", "1"))
        apis: set[int] = {parse_api(a) for a in options.get("apis", "").split(";") if a}
        injector = FaultInjector()
        for item in filter(None, options.get("errors", "").split(";")):
            api, *codes = item.split(":")
            key = parse_api(api)
            injector.push_errors(key, [parse_code(c) for c in codes], count=count, forever=forever)
            apis.add(key)
        every = False
        if "latency-ms" in options:
            api_text = options.get("latency-api")
            latency_key = parse_api(api_text) if api_text else None
            injector.add_latency(int(options["latency-ms"]), latency_key)
            every = latency_key is None
            if latency_key is not None:
                apis.add(latency_key)
        for api in filter(None, options.get("close", "").split(";")):
            key = parse_api(api)
            injector.close_mid_response(key, count, forever=forever)
            apis.add(key)
        return cls(None if every else apis, injector)

    def on_request(self, call: Call) -> Outcome:
        key = call.api_key
        code = self.faults.take_error(key)
        if code is not None:
            return Answer(injected_answer(key, call.body, code))
        held = self.faults.held_until(key, 0)
        return Delay(held) if held else FORWARD

    def on_response(self, call: Call) -> Outcome:
        if self.faults.take_close(call.api_key):
            return Close(f"fault: connection closed instead of the {ApiKey(call.api_key).name} answer")
        return FORWARD
