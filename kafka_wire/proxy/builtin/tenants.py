"""Multi-tenancy: topic, group and transactional-id names prefixed per tenant.

Which fields are names is read from the schemas: every string (or array of strings) whose
entity type is ``topicName``, ``groupId`` or ``transactionalId``, in every request and response,
at every depth. In a request the tenant's prefix is put in front of each; in a response it is
taken off, and an array element naming something of another tenant (a topic in a Metadata answer
for all topics, a group in ListGroups) is dropped, so a tenant never sees another's names.
Topic ids are not names: they are unguessable, and a tenant learns only its own from Metadata.

The tenant of a connection is fixed (``prefix``) or read from each request's client id
(``by=client-id``: the text before the first ``separator``, ``acme.app-1`` is tenant ``acme``
with prefix ``acme.``); a client id without the separator closes the connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from kafka_wire.codec.structs import Struct
from kafka_wire.messages import REQUESTS, RESPONSES
from kafka_wire.proxy.filters import ALL_KEYS, FORWARD, Call, Close, Filter, Outcome

#: The entity types a tenant's prefix applies to.
NAMED: Final = frozenset({"topicName", "groupId", "transactionalId"})

#: One step of a walk: (attribute, kind, struct class or None, prefixed?) where kind is
#: "string", "strings" (an array of strings), "struct" or "structs".
_Step = tuple[str, str, "type[Struct] | None", bool]


_PLANS: dict[tuple[type[Struct], int], tuple[_Step, ...]] = {}


def name_plan(cls: type[Struct], version: int) -> tuple[_Step, ...]:
    """The fields of ``cls`` at ``version`` that are names, or lead to some (worked out once)."""
    plan = _PLANS.get((cls, version))
    if plan is None:
        plan = _PLANS[(cls, version)] = _plan(cls, version)
    return plan


def _plan(cls: type[Struct], version: int) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    for f in cls.FIELDS:
        if version not in f.versions:
            continue
        if f.entity_type in NAMED and f.kind == "string":
            steps.append((f.name, "string", None, True))
        elif f.entity_type in NAMED and f.kind == "array" and f.element == "string":
            steps.append((f.name, "strings", None, True))
        elif f.struct is not None and name_plan(f.struct, version):
            steps.append((f.name, "structs" if f.kind == "array" else "struct", f.struct, False))
    return tuple(steps)


def add_prefix(obj: Any, cls: type[Struct], version: int, prefix: str) -> None:
    for name, kind, child, _ in name_plan(cls, version):
        value = getattr(obj, name)
        if value is None:
            continue
        if kind == "string":
            setattr(obj, name, prefix + value)
        elif kind == "strings":
            setattr(obj, name, [prefix + v for v in value])
        elif kind == "struct":
            assert child is not None
            add_prefix(value, child, version, prefix)
        else:
            assert child is not None
            for item in value:
                add_prefix(item, child, version, prefix)


def strip_prefix(obj: Any, cls: type[Struct], version: int, prefix: str) -> bool:
    """Take ``prefix`` off every name; False when a name of ``obj`` itself belongs to another
    tenant (its parent array drops it)."""
    mine = True
    for name, kind, child, _ in name_plan(cls, version):
        value = getattr(obj, name)
        if value is None:
            continue
        if kind == "string":
            if value.startswith(prefix):
                setattr(obj, name, value[len(prefix) :])
            elif value:
                mine = False
        elif kind == "strings":
            setattr(obj, name, [v[len(prefix) :] for v in value if v.startswith(prefix)])
        elif kind == "struct":
            assert child is not None
            strip_prefix(value, child, version, prefix)
        else:
            assert child is not None
            setattr(obj, name, [item for item in value if strip_prefix(item, child, version, prefix)])
    return mine


class TenantFilter(Filter):
    """Names prefixed per tenant (see the module docstring)."""

    name: ClassVar[str] = "tenant"
    request_keys = ALL_KEYS
    response_keys = ALL_KEYS

    def __init__(self, *, prefix: str | None = None, separator: str = ".") -> None:
        if prefix is not None and not prefix:
            raise ValueError("a tenant prefix cannot be empty")
        self.prefix = prefix
        self.separator = separator

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> TenantFilter:
        if options.get("by", "") == "client-id":
            return cls(separator=options.get("separator", "."))
        if "prefix" in options:
            return cls(prefix=options["prefix"])
        raise ValueError("tenant needs prefix=TEXT or by=client-id")

    def prefix_of(self, call: Call) -> str | None:
        """The call's tenant prefix, or None when the client id names no tenant."""
        if self.prefix is not None:
            return self.prefix
        client_id = call.header.client_id or ""
        tenant, sep, _ = client_id.partition(self.separator)
        return tenant + sep if sep and tenant else None

    def on_request(self, call: Call) -> Outcome:
        prefix = self.prefix_of(call)
        if prefix is None:
            return Close(f"client id {call.header.client_id!r} names no tenant")
        cls = REQUESTS[call.api_key]
        add_prefix(call.body, cls, call.api_version, prefix)
        return FORWARD

    def on_response(self, call: Call) -> Outcome:
        prefix = self.prefix_of(call)
        if prefix is not None and call.response is not None:
            strip_prefix(call.response, RESPONSES[call.api_key], call.api_version, prefix)
        return FORWARD
