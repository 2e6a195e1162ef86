"""Differential tests against Apache Kafka 4.4's own generated message classes (kafka-clients and
kafka-metadata 4.4.0, from ``make peers``).

Kafka's message generator writes one Java class per request, response, header and data message
(``FetchRequestData``, ``RequestHeaderData``, ``PartitionRecord``, ...) with ``read``/``write`` at
every version, and one ``*JsonConverter`` per class that builds and prints those objects as JSON.
``java/MessageOracle.java`` runs them in one long-lived JVM for the whole module, one JSON line in
and one out per batch of messages. It first says which versions 4.4 defines: every request and
response version of every API key ``ApiMessageType`` knows (the unstable latest versions
included), the header versions, and those of our data messages. For each of them, with our
messages, both directions:

* **our bytes -> Kafka**: Kafka's ``read`` consumes exactly our encoding, and its ``write`` of what
  it read gives back the same bytes (unknown tagged fields ride along as Kafka's raw tagged fields);
  what it read, printed by its JsonConverter, is field for field our message (same names, same
  values; tagged fields at their defaults are left out by both sides, records compare by size);
* **our values -> Kafka -> us**: Kafka's JsonConverter builds its message from the JSON of our
  message's values (no bytes of ours involved), Kafka writes it, and those bytes are our encoding
  (without the unknown tagged fields, which JSON does not carry); we decode them strictly to an
  equal message and re-encode them to the same bytes.

A field Kafka does not know, or knows at other versions, or a differing type, width, nullability,
tag or default, shows in one of the two: in the first as bytes Kafka cannot read or reads
differently, in the second as JSON Kafka rejects or bytes that differ from ours
(``test_the_oracle_sees_differences`` shows each).

The messages: per pair, :data:`RANDOM_EXAMPLES` from ``kafka_wire.testing.generate.random_message``
(seeded by class and version, so a failure replays; boundary values weighted, unknown tagged
fields now and then, ``records`` either a valid RecordBatch or any bytes: Kafka's classes keep
records as opaque ``MemoryRecords``, so every byte compares), and :data:`HYPOTHESIS_EXAMPLES` from
``kafka_wire.testing.strategies.messages`` on pairs drawn from all of them.

``test_coverage`` pins down how many pairs there are (docs/internals/codec.md quotes the count)
and which versions of ours 4.4 does not define (versions Kafka 4.0 removed, the share-group
draft), each with its reason.
"""

from __future__ import annotations

import base64
import json
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.codec.runtime import FieldSpec
from kafka_wire.codec.structs import Message, Struct
from kafka_wire.messages import DATA, HEADERS, ApiKey, MetadataRequest, MetadataRequestTopic, catalog
from kafka_wire.protocol.framing import request_header_version, response_header_version
from kafka_wire.testing.generate import random_message
from kafka_wire.testing.strategies import messages
from tests.interop.harness import java_command, peer_jars, stop_process_group

ORACLE_SOURCE: Final = Path(__file__).resolve().parent / "java" / "MessageOracle.java"
#: kafka-clients 4.4.0, kafka-metadata (the ``__cluster_metadata`` records), kafka-storage and
#: kafka-transaction-coordinator (:data:`STORED_PACKAGES`) and the Jackson the JsonConverters are
#: written against.
ORACLE_ARTIFACTS: Final = (
    "kafka-clients",
    "kafka-metadata",
    "kafka-storage",
    "kafka-transaction-coordinator",
    "jackson-core",
    "jackson-databind",
    "jackson-annotations",
)
#: Random messages per (class, version), checked in one round trip to the oracle: the ci profile's
#: example count (12), as many as the round-trip tests draw.
RANDOM_EXAMPLES: Final = settings().max_examples
#: Hypothesis messages, each of a pair drawn from all of them: Hypothesis draws nested messages at
#: about 20 ms each on two cores, so one for each of the 677 pairs would take this module past its
#: minute; the random messages above cover every pair.
HYPOTHESIS_EXAMPLES: Final = settings().max_examples * 10
#: How long the oracle may take to exit once its output has ended.
EXIT_TIMEOUT_S: Final = 10.0


# ---------------------------------------------------------------------------------------------
# The oracle process


class Oracle:
    """``MessageOracle`` in its own JVM: one JSON line in, one JSON line out."""

    def __init__(self, stderr_path: Path) -> None:
        command = java_command(ORACLE_SOURCE, jars=peer_jars(*ORACLE_ARTIFACTS))
        self.stderr_path = stderr_path
        with stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(EXIT_TIMEOUT_S)
            raise RuntimeError(
                f"MessageOracle exited with status {self.process.returncode}:\n"
                + self.stderr_path.read_text(errors="replace")[-3000:]
            )
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop_process_group(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    process = Oracle(tmp_path_factory.mktemp("oracle") / "stderr.log")
    try:
        yield process
    finally:
        process.close()


@pytest.fixture(scope="module")
def kafka_defines(oracle: Oracle) -> dict[str, Any]:
    """What 4.4 defines (``MessageOracle``'s ``describe``)."""
    return oracle.ask({"op": "describe", "data": sorted(JAVA_DATA_CLASSES.values())})


# ---------------------------------------------------------------------------------------------
# Our messages as Kafka's JsonConverters write and read them


def _b64(data: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(data)).decode()


def _scalar_json(kind: str, value: Any) -> Any:
    if kind == "uuid":
        # Kafka's Uuid.toString: URL-safe base64 without padding.
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if kind in ("bytes", "records"):
        return _b64(value)
    return value


def to_kafka_json(msg: Struct, version: int, *, records_as_size: bool = False) -> dict[str, Any]:
    """``msg`` as Kafka's JsonConverter for its class writes it at ``version``: fields present at
    the version under Kafka's names (``lowerCaseFirst`` of the schema name), tagged fields only
    when not at their default, uuids in Kafka's text form, bytes in base64.

    ``records_as_size`` prints records as ``<name>SizeInBytes``, as the converter does when asked
    not to serialize records (what ``MessageOracle`` prints Kafka's reading with)."""
    out: dict[str, Any] = {}
    for spec in type(msg).FIELDS:
        if version not in spec.versions:
            continue
        value = getattr(msg, spec.name)
        if version in spec.tagged and value == spec.default():
            continue
        name = spec.wire_name[:1].lower() + spec.wire_name[1:]
        if value is not None and spec.kind == "records" and records_as_size:
            out[f"{name}SizeInBytes"] = len(value)
        else:
            out[name] = _value_json(spec, value, version, records_as_size)
    return out


def _value_json(spec: FieldSpec, value: Any, version: int, records_as_size: bool) -> Any:
    if value is None:
        return None
    if spec.kind == "struct":
        return to_kafka_json(value, version, records_as_size=records_as_size)
    if spec.kind == "array":
        if spec.element == "struct":
            return [to_kafka_json(item, version, records_as_size=records_as_size) for item in value]
        assert spec.element is not None
        return [_scalar_json(spec.element, item) for item in value]
    return _scalar_json(spec.kind, value)


def without_unknown_tags(msg: Message, version: int) -> Message:
    """A copy of ``msg`` with no unknown tagged fields at any depth (what JSON cannot carry)."""
    copy: Message = type(msg).decode(msg.encode(version), version)
    _strip(copy, version)
    return copy


def _strip(msg: Struct, version: int) -> None:
    msg.unknown_tagged_fields = ()
    for spec in type(msg).FIELDS:
        if spec.struct is None or version not in spec.versions:
            continue
        value = getattr(msg, spec.name)
        for item in (value or ()) if spec.kind == "array" else (value,) if value is not None else ():
            _strip(item, version)


# ---------------------------------------------------------------------------------------------
# Which classes pair up


#: The stored schemas generated outside kafka-clients and kafka-metadata: the producer state
#: snapshot (kafka-storage) and the ``__transaction_state`` key and value
#: (kafka-transaction-coordinator), by their Kafka packages.
STORED_PACKAGES: Final = {
    "ProducerSnapshot": "org.apache.kafka.server.log.remote.metadata.storage.generated",
    "TransactionLogKey": "org.apache.kafka.coordinator.transaction.generated",
    "TransactionLogValue": "org.apache.kafka.coordinator.transaction.generated",
}
#: Kafka's class for each of our data messages: the ``__cluster_metadata`` records are in
#: kafka-metadata's package, the stored schemas in :data:`STORED_PACKAGES`, the rest
#: (ConsumerProtocol structures, control and KRaft records, AbortedTxn of the transaction index)
#: in kafka-clients'.
JAVA_DATA_CLASSES: Final = {
    cls.__name__: f"{STORED_PACKAGES.get(cls.__name__) or 'org.apache.kafka.common.' + ('metadata' if cls.KIND == 'metadata' else 'message')}.{cls.__name__}"
    for cls in DATA
}


def _our_pairs() -> dict[tuple[str, Any, int], type[Message]]:
    """(kind, API key, header name or Kafka's class name, version) -> our class, for everything
    our codec defines."""
    ours: dict[tuple[str, Any, int], type[Message]] = {}
    for api in catalog():
        for version in api.versions:
            ours[("request", int(api.api_key), version)] = api.request
            ours[("response", int(api.api_key), version)] = api.response
    for cls in HEADERS:
        for version in cls.VERSIONS:
            ours[("header", cls.__name__, version)] = cls
    for cls in DATA:
        for version in cls.VERSIONS:
            ours[("data", JAVA_DATA_CLASSES[cls.__name__], version)] = cls
    return ours


OURS: Final = _our_pairs()


def _kafka_pairs(description: dict[str, Any]) -> set[tuple[str, Any, int]]:
    pairs: set[tuple[str, Any, int]] = set()
    for api in description["apis"]:
        for kind in ("request", "response"):
            if kind in api:
                lo, hi = api[kind]
                pairs.update((kind, api["key"], version) for version in range(lo, hi + 1))
    for name, (lo, hi) in description["headers"].items():
        pairs.update(("header", name, version) for version in range(lo, hi + 1))
    for name, versions in description["data"].items():
        assert versions is not None, f"kafka-clients 4.4 has no class {name}"
        lo, hi = versions
        pairs.update(("data", name, version) for version in range(lo, hi + 1))
    return pairs


def _both(api_key: int, *versions: int) -> set[tuple[str, Any, int]]:
    return {(kind, int(api_key), v) for kind in ("request", "response") for v in versions}


#: API key -> our versions Kafka 4.0 removed (KIP-896 and the end of ZooKeeper: APIs 4-7 went
#: whole); the codec keeps them so that old clients and captures still decode.
REMOVED_BY_KAFKA_4_0: Final = {
    ApiKey.PRODUCE: (0, 1, 2),
    ApiKey.FETCH: (0, 1, 2, 3),
    ApiKey.LIST_OFFSETS: (0,),
    ApiKey.LEADER_AND_ISR: tuple(range(8)),
    ApiKey.STOP_REPLICA: tuple(range(5)),
    ApiKey.UPDATE_METADATA: tuple(range(9)),
    ApiKey.CONTROLLED_SHUTDOWN: tuple(range(4)),
    ApiKey.OFFSET_COMMIT: (0, 1),
    ApiKey.OFFSET_FETCH: (0,),
    ApiKey.CREATE_TOPICS: (0, 1),
    ApiKey.DELETE_TOPICS: (0,),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 1),
    ApiKey.WRITE_TXN_MARKERS: (0,),
    ApiKey.DESCRIBE_ACLS: (0,),
    ApiKey.CREATE_ACLS: (0,),
    ApiKey.DELETE_ACLS: (0,),
    ApiKey.DESCRIBE_CONFIGS: (0,),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0,),
    ApiKey.DESCRIBE_LOG_DIRS: (0,),
    ApiKey.CREATE_DELEGATION_TOKEN: (0,),
    ApiKey.RENEW_DELEGATION_TOKEN: (0,),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (0,),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (0,),
    ApiKey.ALTER_PARTITION: (0, 1),
}
#: The early-access share-group RPCs at v0, which Kafka 4.1 replaced with v1.
SHARE_GROUP_DRAFT: Final = (
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
)
#: Our versions that Kafka 4.4's classes do not define, and why (shared/reference/SCHEMA-DIFF.md).
NOT_IN_KAFKA_44: Final = {
    **{
        pair: "removed by Kafka 4.0"
        for key, versions in REMOVED_BY_KAFKA_4_0.items()
        for pair in _both(key, *versions)
    },
    **{
        pair: "the share-group draft v0, replaced by v1 in Kafka 4.1"
        for key in SHARE_GROUP_DRAFT
        for pair in _both(key, 0)
    },
    ("header", "RequestHeader", 0): "only ControlledShutdown v0 used it, removed by Kafka 4.0",
}


def _cases() -> list[Any]:
    return [
        pytest.param(kind, api, version, cls, id=f"{cls.__name__}-v{version}")
        for (kind, api, version), cls in sorted(
            OURS.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])
        )
        if (kind, api, version) not in NOT_IN_KAFKA_44
    ]


CASES: Final = _cases()


def test_coverage(kafka_defines: dict[str, Any]) -> None:
    """Every version Kafka 4.4 defines is one of ours, and ours beyond it are the documented ones."""
    theirs = _kafka_pairs(kafka_defines)
    assert sorted(theirs - set(OURS), key=str) == []
    assert {pair: why for pair, why in NOT_IN_KAFKA_44.items() if pair in theirs} == {}
    assert sorted(set(OURS) - theirs - set(NOT_IN_KAFKA_44), key=str) == []
    assert {(kind, api, version) for kind, api, version, _ in (c.values for c in CASES)} == theirs
    assert len(CASES) == 677
    # The versions 4.4 marks unstable (its classes read and write them all the same).
    unstable = {
        (api["name"], v)
        for api in kafka_defines["apis"]
        if "request" in api
        for v in range(api["highestStable"] + 1, api["request"][1] + 1)
    }
    assert unstable == {("InitProducerId", 6)}


def test_header_versions(kafka_defines: dict[str, Any]) -> None:
    """The request and response header version of every API version is the one Kafka assigns."""
    for api in kafka_defines["apis"]:
        if "request" not in api:
            continue
        lo = api["request"][0]
        for offset, (request_header, response_header) in enumerate(
            zip(api["requestHeader"], api["responseHeader"], strict=True)
        ):
            version = lo + offset
            assert request_header_version(api["key"], version) == request_header, (api["name"], version)
            assert response_header_version(api["key"], version) == response_header, (api["name"], version)


def kafka_answers(
    oracle: Oracle, kind: str, api: Any, version: int, msgs: list[Message]
) -> list[dict[str, Any]]:
    """Kafka's answers for ``msgs`` (our bytes, and the JSON of our values without the unknown
    tagged fields), one round trip for all of them."""
    cases = [
        {
            "bytes": _b64(msg.encode(version)),
            "json": to_kafka_json(without_unknown_tags(msg, version), version),
        }
        for msg in msgs
    ]
    request = {"op": "check", "kind": kind, "api": api, "version": version, "cases": cases}
    answers: list[dict[str, Any]] = oracle.ask(request)["answers"]
    assert len(answers) == len(msgs)
    return answers


def check_agreement(cls: type[Message], version: int, msg: Message, answer: dict[str, Any]) -> None:
    """What ``answer`` (Kafka's, for ``msg``) must be for the two codecs to agree."""
    assert "error" not in answer, f"Kafka failed at {answer['stage']}: {answer['error']}\n{msg!r}"
    encoded = msg.encode(version)
    # Our bytes -> Kafka's read -> Kafka's write: the same bytes, the same values.
    assert base64.b64decode(answer["reread"]) == encoded, msg
    assert answer["readJson"] == to_kafka_json(msg, version, records_as_size=True), msg
    # Our values as JSON -> Kafka's message -> Kafka's bytes: ours, and we read them back.
    plain = without_unknown_tags(msg, version)
    built = base64.b64decode(answer["built"])
    assert built == plain.encode(version), msg
    back = cls.decode(built, version, strict=True)
    assert back == plain
    assert back.encode(version) == built


@pytest.mark.parametrize(("kind", "api", "version", "cls"), CASES)
def test_kafka_agrees(oracle: Oracle, kind: str, api: Any, version: int, cls: type[Message]) -> None:
    """RANDOM_EXAMPLES messages of ``random_message`` (boundary values weighted, records either a
    valid batch or any bytes, unknown tagged fields now and then), from a generator seeded with the
    class and version: a failure replays."""
    rng = random.Random(f"{cls.__name__}-v{version}")
    msgs = [random_message(cls, version, rng, max_text=40, max_bytes=200) for _ in range(RANDOM_EXAMPLES)]
    for msg, answer in zip(msgs, kafka_answers(oracle, kind, api, version, msgs), strict=True):
        check_agreement(cls, version, msg, answer)


@settings(max_examples=HYPOTHESIS_EXAMPLES)
@given(data=st.data())
def test_kafka_agrees_on_hypothesis_messages(oracle: Oracle, data: st.DataObject) -> None:
    """Hypothesis messages (``kafka_wire.testing.strategies``) of pairs drawn from all of them."""
    kind, api, version, cls = data.draw(st.sampled_from([c.values for c in CASES]))
    msg = data.draw(messages(cls, version, max_text=40, max_bytes=200))
    (answer,) = kafka_answers(oracle, kind, api, version, [msg])
    check_agreement(cls, version, msg, answer)


def _check(oracle: Oracle, data: bytes, json_value: dict[str, Any]) -> dict[str, Any]:
    """Kafka's answers for ``data`` and ``json_value`` as a MetadataRequest v12."""
    request = {
        "op": "check",
        "kind": "request",
        "api": int(ApiKey.METADATA),
        "version": 12,
        "cases": [{"bytes": _b64(data), "json": json_value}],
    }
    answer: dict[str, Any] = oracle.ask(request)["answers"][0]
    return answer


def test_the_oracle_sees_differences(oracle: Oracle) -> None:
    """Each way a codec could differ shows in one of the answers test_kafka_agrees checks."""
    msg = MetadataRequest(
        topics=[MetadataRequestTopic(name="t")],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )
    encoded = msg.encode(12)
    as_json = to_kafka_json(msg, 12)
    agreed = _check(oracle, encoded, as_json)
    assert base64.b64decode(agreed["reread"]) == encoded and base64.b64decode(agreed["built"]) == encoded
    assert agreed["readJson"] == to_kafka_json(msg, 12, records_as_size=True)
    # Bytes of another layout (v8, not flexible): Kafka cannot read them as v12.
    assert _check(oracle, msg.encode(8), as_json)["stage"] == "read"
    # A field under another name: Kafka's JsonConverter finds no value for its own.
    renamed = {("autoTopicCreation" if k == "allowAutoTopicCreation" else k): v for k, v in as_json.items()}
    assert _check(oracle, encoded, renamed)["stage"] == "build"
    # Another value: Kafka's bytes are not ours.
    flipped = {**as_json, "allowAutoTopicCreation": True}
    assert base64.b64decode(_check(oracle, encoded, flipped)["built"]) != encoded
    # Two fields of one type in the other order: the bytes round-trip, the values do not.
    swapped = MetadataRequest(
        topics=[MetadataRequestTopic(name="t")],
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    ).encode(12)
    answer = _check(oracle, swapped, as_json)
    assert base64.b64decode(answer["reread"]) == swapped
    assert answer["readJson"] != to_kafka_json(msg, 12, records_as_size=True)
