"""Client quotas as the metadata log builds them (Kafka's ``ClientQuotasImage``): per quota entity
(a combination of ``user``, ``client-id`` and ``ip`` names, a null name being that type's default)
its quota values, from ClientQuotaRecord (``remove`` drops one; an entity left without values is
gone). DescribeClientQuotas is answered from it (:meth:`ClientQuotasImage.describe`), on every
broker, and the quota manager reads the values the broker enforces from it.

Filter semantics of DescribeClientQuotas, as Kafka's image applies them: each component names an
entity type once; ``MATCH_TYPE_EXACT`` (0) wants that name, ``MATCH_TYPE_DEFAULT`` (1) the type's
default entity, ``MATCH_TYPE_SPECIFIED`` (2) any entity having that type; ``strict`` also wants
no other types. An empty entity type, a type named twice, a name with DEFAULT or SPECIFIED, no
name with EXACT and an ``ip`` component beside a ``user`` or ``client-id`` one are
INVALID_REQUEST, as is an unknown match type; an unknown entity type is UNSUPPORTED_VERSION (Kafka's
exceptions for them). A success carries an empty error message, as Kafka's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:  # the API's classes load with its first request (``messages`` is lazy)
    from kafka_wire.messages import (
        DescribeClientQuotasRequest,
        DescribeClientQuotasRequestComponentData,
        DescribeClientQuotasResponse,
    )

#: Kafka's ``ClientQuotaEntity`` types.
USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
ENTITY_TYPES: Final = (USER, CLIENT_ID, IP)

#: ``DescribeClientQuotasRequest`` match types.
MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2

#: A quota entity: (entity type, name or None for the default) pairs, sorted by type.
Entity = tuple[tuple[str, str | None], ...]

#: The records this section applies, by class name (a class loads with its first record).
QUOTA_RECORDS: Final = ("ClientQuotaRecord",)


def entity_of(pairs: Mapping[str, str | None]) -> Entity:
    """The entity of a type -> name mapping."""
    return tuple(sorted(pairs.items()))


class FilterError(Exception):
    """A DescribeClientQuotas filter Kafka refuses: its error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ClientQuotasImage:
    """Quota values by entity."""

    def __init__(self) -> None:
        self.quotas: dict[Entity, dict[str, float]] = {}

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.ClientQuotaRecord):
            entity = entity_of({e.entity_type: e.entity_name for e in record.entity})
            values = self.quotas.setdefault(entity, {})
            if record.remove:
                values.pop(record.key, None)
                if not values:
                    del self.quotas[entity]
            else:
                values[record.key] = record.value

    def snapshot_records(self) -> list[Message]:
        return [
            messages.ClientQuotaRecord(
                entity=[
                    messages.ClientQuotaRecordEntityData(entity_type=t, entity_name=n) for t, n in entity
                ],
                key=key,
                value=values[key],
                remove=False,
            )
            for entity, values in sorted(self.quotas.items(), key=lambda item: _sort_key(item[0]))
            for key in sorted(values)
        ]

    def values(self, entity: Entity) -> Mapping[str, float]:
        return self.quotas.get(entity, {})

    # -- DescribeClientQuotas --------------------------------------------------------------------

    def describe(self, request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
        try:
            exact, specified = _parse_filter(request.components)
        except FilterError as exc:
            return messages.DescribeClientQuotasResponse(
                error_code=exc.code, error_message=exc.message, entries=None
            )
        entries = []
        for entity in sorted(self.quotas, key=_sort_key):
            names = dict(entity)
            if request.strict and len(names) != len(exact) + len(specified):
                continue
            if any(t not in names or names[t] != n for t, n in exact.items()):
                continue
            if any(t not in names for t in specified):
                continue
            values = self.quotas[entity]
            entries.append(
                messages.DescribeClientQuotasResponseEntryData(
                    entity=[
                        messages.DescribeClientQuotasResponseEntityData(entity_type=t, entity_name=n)
                        for t, n in entity
                    ],
                    values=[
                        messages.DescribeClientQuotasResponseValueData(key=k, value=values[k])
                        for k in sorted(values)
                    ],
                )
            )
        # Kafka's broker answers a success with an empty message, not null.
        return messages.DescribeClientQuotasResponse(
            error_code=ErrorCode.NONE, error_message="", entries=entries
        )


def _sort_key(entity: Entity) -> tuple[tuple[str, bool, str], ...]:
    return tuple((t, n is not None, n or "") for t, n in entity)


def _parse_filter(
    components: Sequence[DescribeClientQuotasRequestComponentData],
) -> tuple[dict[str, str | None], list[str]]:
    exact: dict[str, str | None] = {}
    specified: list[str] = []
    for c in components:
        entity_type, match, match_type = c.entity_type, c.match, c.match_type
        if not entity_type:
            raise FilterError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise FilterError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        if entity_type not in ENTITY_TYPES:
            raise FilterError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise FilterError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise FilterError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise FilterError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.append(entity_type)
        else:
            raise FilterError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
    named = set(exact) | set(specified)
    if IP in named and (USER in named or CLIENT_ID in named):
        raise FilterError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component.",
        )
    return exact, specified
