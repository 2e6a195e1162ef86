"""Answers for requests whose writes failed: nothing in them may read as a success.

When the storage effects of an engine call fail, every answer built in that call is replaced by a
copy of itself in which each successful outcome carries an error instead: every ``error_code``
that says NONE gets the failure's code (and ``error_message`` its reason where the message has
one), offsets and records that the failed writes would have backed are cleared, as Kafka clears
them for a storage error. Outcomes that were errors already keep their own code: they did not
depend on the write.

The code is Kafka's for a failed log directory, KAFKA_STORAGE_ERROR, except for the group
coordinator's APIs: Kafka's coordinator reports a failed ``__consumer_offsets`` write as
NOT_COORDINATOR, which clients treat as retriable (they look the coordinator up again).
"""

from __future__ import annotations

import copy
from typing import Final

from kafka_wire.codec.structs import Message, Struct
from kafka_wire.messages import ErrorCode

#: Fields whose value a failed write makes meaningless, and what they become: Kafka's values
#: for a storage error (its ``LogAppendResult`` and ``LogReadResult``: offsets -1, empty records,
#: null aborted transactions), not the generated defaults (0 for ``base_offset`` and
#: ``high_watermark``, null records).
_CLEARED: Final[dict[str, object]] = {
    "records": b"",
    "aborted_transactions": None,
    "base_offset": -1,
    "log_append_time_ms": -1,
    "log_start_offset": -1,
    "high_watermark": -1,
    "last_stable_offset": -1,
    "low_watermark": -1,
}


def failed_answer(body: Message, error_code: int, reason: str) -> Message:
    """A copy of ``body`` reporting ``error_code`` wherever it reported success."""
    answer = copy.deepcopy(body)
    _mark(answer, error_code, reason)
    return answer


def _mark(struct: Struct, error_code: int, reason: str) -> None:
    fields = {spec.name: spec for spec in type(struct).FIELDS}
    if "error_code" in fields and struct.error_code == ErrorCode.NONE:  # type: ignore[attr-defined]  # checked through FIELDS
        struct.error_code = error_code  # type: ignore[attr-defined]  # checked through FIELDS above
        if "error_message" in fields:
            struct.error_message = reason  # type: ignore[attr-defined]  # checked through FIELDS above
        for name in _CLEARED.keys() & fields.keys():
            setattr(struct, name, _CLEARED[name])
    for spec in fields.values():
        if spec.struct is None:
            continue
        value = getattr(struct, spec.name)
        if spec.kind == "struct" and value is not None:
            _mark(value, error_code, reason)
        elif spec.kind == "array" and value:
            for item in value:
                _mark(item, error_code, reason)
