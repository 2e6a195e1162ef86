"""Client quotas, for the active controller (Kafka's ``ClientQuotaControlManager``).

:class:`QuotaControl` owns the controller's view of the quotas (a
:class:`~kafka_wire.broker.controller.quotas_image.ClientQuotasImage`) and answers
AlterClientQuotas, which brokers forward to it. Each entry is checked as Kafka's controller checks
it, and fails alone with INVALID_REQUEST:

- the entity: not empty; each type ``user``, ``client-id`` or ``ip`` (others: "Unhandled client
  quota entity type"), once; a name is null (the default entity) or not empty; ``ip`` alone, and
  its name an IP address (Kafka also accepts a resolvable host name; the engine does no name
  lookups, so only literal addresses are accepted here);
- the operations: a key once per entry; a key valid for the entity (``producer_byte_rate``,
  ``consumer_byte_rate``, ``request_percentage``, ``controller_mutation_rate`` for users and
  client ids, ``connection_creation_rate`` for IPs); a value above 0, and a whole number for the
  integral keys (the byte rates and the connection rate) within their type's range.

An entity named by more than one entry is refused whole with one answer, INVALID_REQUEST "Ignoring
duplicate entity ..." (Kafka's results are a map by entity). One ClientQuotaRecord per value that
changes (removing an absent key writes nothing);
``validate_only`` checks only. The answer lists the entries in the request's order, each with its
entity as given.
"""

from __future__ import annotations

import ipaddress
import math
from collections import Counter
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.quotas_image import (
    CLIENT_ID,
    IP,
    USER,
    ClientQuotasImage,
    Entity,
    entity_of,
)
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:  # the API's classes load with its first request (``messages`` is lazy)
    from kafka_wire.messages import (
        AlterClientQuotasRequest,
        AlterClientQuotasRequestEntryData,
        AlterClientQuotasResponseEntityData,
        AlterClientQuotasResponseEntryData,
    )

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"

#: Quota keys of users and client ids (Kafka's ``QuotaConfig``) and the largest whole value of
#: the integral ones (None: a double).
CLIENT_KEYS: Final[dict[str, float | None]] = {
    PRODUCER_BYTE_RATE: float(2**63 - 1),
    CONSUMER_BYTE_RATE: float(2**63 - 1),
    REQUEST_PERCENTAGE: None,
    CONTROLLER_MUTATION_RATE: None,
}
#: Quota keys of IPs.
IP_KEYS: Final[dict[str, float | None]] = {CONNECTION_CREATION_RATE: float(2**31 - 1)}

#: Why an entry is refused.
Problem = str


class QuotaControl:
    """Client quotas by entity (see the module docstring)."""

    def __init__(self) -> None:
        self.image = ClientQuotasImage()

    def reset(self) -> None:
        self.image = ClientQuotasImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    def alter_client_quotas(self, version: int, req: AlterClientQuotasRequest, now_ms: int) -> Decision:
        results: list[AlterClientQuotasResponseEntryData] = []
        records: list[Message] = []
        named = Counter(_java_entity(entry) for entry in req.entries)
        answered: set[str] = set()
        for entry in req.entries:
            entity_text = _java_entity(entry)
            if named[entity_text] > 1:  # one answer for the entity, as Kafka's map of results
                if entity_text not in answered:
                    answered.add(entity_text)
                    results.append(
                        messages.AlterClientQuotasResponseEntryData(
                            error_code=ErrorCode.INVALID_REQUEST,
                            error_message=f"Ignoring duplicate entity ClientQuotaEntity(entries={entity_text})",
                            entity=_response_entity(entry),
                        )
                    )
                continue
            result = messages.AlterClientQuotasResponseEntryData(
                error_code=ErrorCode.NONE, error_message=None, entity=_response_entity(entry)
            )
            results.append(result)
            changes, problem = self._entry_changes(entry)
            if problem is not None:
                result.error_code, result.error_message = ErrorCode.INVALID_REQUEST, problem
            elif not req.validate_only:
                records += changes

        def fail(code: int) -> Message:
            return failure_answer(ApiKey.ALTER_CLIENT_QUOTAS, req, code)

        return ControllerResult(records, lambda: messages.AlterClientQuotasResponse(entries=results), fail)

    def _entry_changes(
        self, entry: AlterClientQuotasRequestEntryData
    ) -> tuple[list[Message], Problem | None]:
        names: dict[str, str | None] = {}
        for e in entry.entity:
            if e.entity_type in names:
                return [], f"Invalid empty client quota entity, duplicate entity entry {e.entity_type}"
            if e.entity_type not in (USER, CLIENT_ID, IP):
                return [], f"Unhandled client quota entity type: {e.entity_type}"
            if e.entity_name is not None and not e.entity_name:
                return [], f"Empty {e.entity_type} not supported"
            names[e.entity_type] = e.entity_name
        keys, problem = _keys_for(names)
        if problem is not None:
            return [], problem
        repeated = [key for key, n in Counter(op.key for op in entry.ops).items() if n > 1]
        if repeated:
            return [], f"Duplicate quota key {repeated[0]} not updating quota for this entity"
        entity = entity_of(names)
        current = self.image.values(entity)
        changes: list[Message] = []
        for op in entry.ops:
            if op.remove:
                if op.key in current:
                    changes.append(_record(entity, op.key, 0.0, remove=True))
                continue
            problem = _value_problem(keys, op.key, op.value)
            if problem is not None:
                return [], problem
            if current.get(op.key) != op.value:
                changes.append(_record(entity, op.key, op.value, remove=False))
        return changes, None


def _response_entity(entry: AlterClientQuotasRequestEntryData) -> list[AlterClientQuotasResponseEntityData]:
    return [
        messages.AlterClientQuotasResponseEntityData(entity_type=e.entity_type, entity_name=e.entity_name)
        for e in entry.entity
    ]


def _java_hash_slot(text: str) -> int:
    """Where a Java ``HashMap`` of up to 12 entries keeps ``text`` (its iteration order)."""
    h = 0
    for char in text:
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 15


def _java_entity(entry: AlterClientQuotasRequestEntryData) -> str:
    """The entity as Kafka prints its map (the duplicate-entity message names it so)."""
    names = {e.entity_type: e.entity_name for e in entry.entity}
    ordered = sorted(names, key=lambda t: (_java_hash_slot(t), list(names).index(t)))
    return "{" + ", ".join(f"{t}={'null' if names[t] is None else names[t]}" for t in ordered) + "}"


def _keys_for(names: dict[str, str | None]) -> tuple[dict[str, float | None], Problem | None]:
    if IP in names:
        if USER in names or CLIENT_ID in names:
            return (
                {},
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
            )
        address = names[IP]
        if address is not None:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                return {}, f"{address} is not a valid IP or resolvable host."
        return IP_KEYS, None
    if USER in names or CLIENT_ID in names:
        return CLIENT_KEYS, None
    return {}, "Invalid empty client quota entity"


def _value_problem(keys: dict[str, float | None], key: str, value: float) -> Problem | None:
    if key not in keys:
        return f"Invalid configuration key {key}"
    if not value > 0.0:
        return f"Quota {key} must be greater than 0"
    largest = keys[key]
    if largest is not None:
        if value > largest:
            return f"Proposed value for {key} is too large for {'an INT' if largest < 2**32 else 'a LONG'}."
        if value - math.floor(value) >= 1e-16:
            return f"{key} cannot be a fractional value."
    return None


def _record(entity: Entity, key: str, value: float, *, remove: bool) -> messages.ClientQuotaRecord:
    return messages.ClientQuotaRecord(
        entity=[messages.ClientQuotaRecordEntityData(entity_type=t, entity_name=n) for t, n in entity],
        key=key,
        value=value,
        remove=remove,
    )
