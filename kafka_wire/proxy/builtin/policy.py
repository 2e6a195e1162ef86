"""A produce policy: batches whose records fail a predicate are refused with INVALID_RECORD.

The predicate sees each record (topic name, :class:`~kafka_wire.records.Record`) and returns None
to accept it or a reason to refuse it. A partition whose records include a refused one is taken
out of the request and answered by the proxy as Kafka answers a record the broker refuses:
``INVALID_RECORD`` with ``record_errors`` (the batch index and the reason) and an error message;
the other partitions of the request go on to the broker and their answers are merged with these.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kafka_wire.errors import DecodeError
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    ProduceRequest,
    ProduceResponse,
    ProduceResponseBatchIndexAndErrorMessage,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)
from kafka_wire.proxy.filters import FORWARD, Answer, Call, Filter, Outcome
from kafka_wire.records import read_batches

#: A record check: None accepts, a text refuses (it becomes the error message).
Predicate = Callable[[str, Any], str | None]


@dataclass(frozen=True, slots=True)
class _Refused:
    topic: str
    topic_id: Any
    partition: int
    batch_index: int
    reason: str


def rules(*, max_value_bytes: int | None = None, require_key: bool = False) -> Predicate:
    """A predicate from simple rules: a largest value and a key on every record."""

    def check(topic: str, record: Any) -> str | None:
        if require_key and record.key is None:
            return f"record at offset {record.offset} has no key"
        if max_value_bytes is not None and record.value is not None and len(record.value) > max_value_bytes:
            return f"record value of {len(record.value)} bytes is over {max_value_bytes}"
        return None

    return check


class ProducePolicy(Filter):
    """Refuses produced records that fail ``predicate`` (see the module docstring)."""

    name: ClassVar[str] = "policy"
    request_keys = frozenset({ApiKey.PRODUCE})
    response_keys = frozenset({ApiKey.PRODUCE})

    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ProducePolicy:
        """``predicate=module:function``, or rules: ``max-value-bytes=N``, ``require-key=true``."""
        if "predicate" in options:
            module, _, attr = options["predicate"].partition(":")
            predicate = getattr(importlib.import_module(module), attr)
            if not callable(predicate):
                raise ValueError(f"{options['predicate']} is not callable")
            return cls(predicate)
        limit = options.get("max-value-bytes")
        return cls(
            rules(
                max_value_bytes=int(limit) if limit else None,
                require_key=options.get("require-key", "false").lower() in ("1", "true", "yes"),
            )
        )

    def _check(self, topic: str, records: bytes | memoryview) -> tuple[int, str] | None:
        try:
            for batch in read_batches(records):
                for index, record in enumerate(batch):
                    reason = self.predicate(topic, record)
                    if reason is not None:
                        return index, reason  # Kafka's batch_index: the record's index in its batch
        except DecodeError as exc:
            return 0, f"records do not decode: {exc}"
        return None

    def on_request(self, call: Call) -> Outcome:
        body = call.body
        assert isinstance(body, ProduceRequest)
        refused: list[_Refused] = []
        for topic in body.topic_data:
            name = topic.name or str(topic.topic_id)
            kept = []
            for partition in topic.partition_data:
                failure = self._check(name, partition.records) if partition.records else None
                if failure is None:
                    kept.append(partition)
                else:
                    refused.append(_Refused(topic.name, topic.topic_id, partition.index, *failure))
            topic.partition_data = kept
        if not refused:
            return FORWARD
        call.notes[self.name] = refused
        body.topic_data = [t for t in body.topic_data if t.partition_data]
        if body.topic_data:
            return FORWARD
        return Answer(ProduceResponse())  # nothing left for the broker: on_response adds the refusals

    def on_response(self, call: Call) -> Outcome:
        refused = call.notes.get(self.name)
        response = call.response
        if not isinstance(refused, list) or not isinstance(response, ProduceResponse):
            return FORWARD
        for r in refused:
            topic = next(
                (t for t in response.responses if t.name == r.topic and t.topic_id == r.topic_id), None
            )
            if topic is None:
                topic = ProduceResponseTopicProduceResponse(name=r.topic, topic_id=r.topic_id)
                response.responses.append(topic)
            topic.partition_responses.append(
                ProduceResponsePartitionProduceResponse(
                    index=r.partition,
                    error_code=ErrorCode.INVALID_RECORD,
                    base_offset=-1,
                    record_errors=[
                        ProduceResponseBatchIndexAndErrorMessage(
                            batch_index=r.batch_index, batch_index_error_message=r.reason
                        )
                    ],
                    error_message=r.reason,
                )
            )
        return FORWARD
