"""Differential tests against Apache Kafka 4.4's own generated message classes (kafka-clients 4.4.0).

Kafka's message generator writes one Java class per request, response and header (``FetchRequestData``,
``RequestHeaderData``, ...) with ``read``/``write`` at every version, and one ``*JsonConverter``
per class that builds and prints those objects as JSON. ``java/MessageOracle.java`` runs them in one
long-lived JVM for the whole module (jars from ``make peers``), one JSON line in and one out per
message. It first says which versions 4.4 defines: every request and response version of every
API key ``ApiMessageType`` knows (the unstable latest versions included), and the request and
response header versions. For each of them, with Hypothesis messages of our codec
(``kafka_wire.testing.strategies.messages``, unknown tagged fields included), both directions:

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
differently, in the second as JSON Kafka rejects or bytes that differ from ours.

``records`` fields hold arbitrary bytes: Kafka's classes keep them as opaque ``MemoryRecords``,
read and written without looking inside, so every byte compares exactly.

The pairs checked: ``test_coverage`` pins down how many (API, version, direction) pairs and header
versions there are (docs/internals/codec.md quotes the count), and which versions of ours 4.4 does
not define (ZooKeeper-era versions 4.0 removed, versions newer than 4.4), each with its reason.
"""

from __future__ import annotations

import base64
import json
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
from kafka_wire.testing.strategies import messages
from tests.interop.harness import java_command, peer_jars, stop_process_group

ORACLE_SOURCE: Final = Path(__file__).resolve().parent / "java" / "MessageOracle.java"
#: kafka-clients 4.4.0 and the Jackson its JsonConverters are written against.
#: kafka-clients 4.4.0, kafka-metadata (the ``__cluster_metadata`` records) and the Jackson the
#: JsonConverters are written against.
ORACLE_ARTIFACTS: Final = (
    "kafka-clients",
    "kafka-metadata",
    "jackson-core",
    "jackson-databind",
    "jackson-annotations",
)
#: Examples per (class, version): about 1,150 pairs at a few milliseconds each keep this module
#: within its minute on two busy cores (the ci profile's 12 would take about three).
EXAMPLES: Final = max(2, settings().max_examples // 3)
#: How long one answer of the oracle may take (its JVM starts in about half a second).
ANSWER_TIMEOUT_S: Final = 60.0


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
            self.process.wait(ANSWER_TIMEOUT_S)
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
            self.process.wait(10)
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


_DESCRIPTION: dict[str, Any] = {}


def kafka_versions(oracle: Oracle) -> dict[str, Any]:
    """What 4.4 defines (``MessageOracle``'s ``describe``), asked once."""
    if not _DESCRIPTION:
        _DESCRIPTION.update(oracle.ask({"op": "describe", "data": sorted(JAVA_DATA_CLASSES.values())}))
    return _DESCRIPTION


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


#: Kafka's class for each of our data messages: the ``__cluster_metadata`` records are in
#: kafka-metadata's package, the rest (ConsumerProtocol structures, control and KRaft records,
#: AbortedTxn of the transaction index) in kafka-clients'.
JAVA_DATA_CLASSES: Final = {
    cls.__name__: f"org.apache.kafka.common.{'metadata' if cls.KIND == 'metadata' else 'message'}.{cls.__name__}"
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
    return {(kind, api_key, v) for kind in ("request", "response") for v in versions}


#: Our versions that Kafka 4.4's classes do not define, and why (shared/reference/SCHEMA-DIFF.md).
#: Kafka 4.0 removed the ZooKeeper-era APIs and versions (KIP-896, KIP-724 and the end of
#: ZooKeeper); the codec keeps them so that old clients and captures still decode.
NOT_IN_KAFKA_44: Final = {
    **{pair: "removed by Kafka 4.0" for pair in _both(0, 0, 1, 2)},  # Produce
    **{pair: "removed by Kafka 4.0" for pair in _both(1, 0, 1, 2, 3)},  # Fetch
    **{pair: "removed by Kafka 4.0" for pair in _both(2, 0)},  # ListOffsets
    **{pair: "removed by Kafka 4.0" for pair in _both(4, *range(8))},  # LeaderAndIsr
    **{pair: "removed by Kafka 4.0" for pair in _both(5, *range(5))},  # StopReplica
    **{pair: "removed by Kafka 4.0" for pair in _both(6, *range(9))},  # UpdateMetadata
    **{pair: "removed by Kafka 4.0" for pair in _both(7, *range(4))},  # ControlledShutdown
    **{pair: "removed by Kafka 4.0" for pair in _both(8, 0, 1)},  # OffsetCommit
    **{pair: "removed by Kafka 4.0" for pair in _both(9, 0)},  # OffsetFetch
    **{pair: "removed by Kafka 4.0" for pair in _both(19, 0, 1)},  # CreateTopics
    **{pair: "removed by Kafka 4.0" for pair in _both(20, 0)},  # DeleteTopics
    **{pair: "removed by Kafka 4.0" for pair in _both(23, 0, 1)},  # OffsetForLeaderEpoch
    **{pair: "removed by Kafka 4.0" for pair in _both(27, 0)},  # WriteTxnMarkers
    **{pair: "removed by Kafka 4.0" for pair in _both(29, 0)},  # DescribeAcls
    **{pair: "removed by Kafka 4.0" for pair in _both(30, 0)},  # CreateAcls
    **{pair: "removed by Kafka 4.0" for pair in _both(31, 0)},  # DeleteAcls
    **{pair: "removed by Kafka 4.0" for pair in _both(32, 0)},  # DescribeConfigs
    **{pair: "removed by Kafka 4.0" for pair in _both(34, 0)},  # AlterReplicaLogDirs
    **{pair: "removed by Kafka 4.0" for pair in _both(35, 0)},  # DescribeLogDirs
    **{pair: "removed by Kafka 4.0" for pair in _both(38, 0)},  # CreateDelegationToken
    **{pair: "removed by Kafka 4.0" for pair in _both(39, 0)},  # RenewDelegationToken
    **{pair: "removed by Kafka 4.0" for pair in _both(40, 0)},  # ExpireDelegationToken
    **{pair: "removed by Kafka 4.0" for pair in _both(41, 0)},  # DescribeDelegationToken
    **{pair: "removed by Kafka 4.0" for pair in _both(56, 0, 1)},  # AlterPartition
    **{pair: "the early-access share-group v0, replaced by v1 in Kafka 4.1" for pair in _both(76, 0)},
    **{pair: "the early-access share-group v0, replaced by v1 in Kafka 4.1" for pair in _both(77, 0)},
    **{pair: "the early-access share-group v0, replaced by v1 in Kafka 4.1" for pair in _both(78, 0)},
    **{pair: "the early-access share-group v0, replaced by v1 in Kafka 4.1" for pair in _both(79, 0)},
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


def test_coverage(oracle: Oracle) -> None:
    """Every version Kafka 4.4 defines is one of ours, and ours beyond it are the documented ones."""
    theirs = _kafka_pairs(kafka_versions(oracle))
    assert sorted(theirs - set(OURS), key=str) == []
    assert {pair: why for pair, why in NOT_IN_KAFKA_44.items() if pair in theirs} == {}
    assert sorted(set(OURS) - theirs - set(NOT_IN_KAFKA_44), key=str) == []
    assert {(kind, api, version) for kind, api, version, _ in (c.values for c in CASES)} == theirs
    assert len(CASES) == 666


def test_header_versions(oracle: Oracle) -> None:
    """The request and response header version of every API version is the one Kafka assigns."""
    for api in kafka_versions(oracle)["apis"]:
        if "request" not in api:
            continue
        lo = api["request"][0]
        for offset, (request_header, response_header) in enumerate(
            zip(api["requestHeader"], api["responseHeader"], strict=True)
        ):
            version = lo + offset
            assert request_header_version(api["key"], version) == request_header, (api["name"], version)
            assert response_header_version(api["key"], version) == response_header, (api["name"], version)


@pytest.mark.parametrize(("kind", "api", "version", "cls"), CASES)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_kafka_agrees(
    oracle: Oracle, kind: str, api: Any, version: int, cls: type[Message], data: st.DataObject
) -> None:
    msg = data.draw(messages(cls, version, max_text=40, max_bytes=200))
    encoded = msg.encode(version)
    plain = without_unknown_tags(msg, version)
    answer = oracle.ask(
        {
            "op": "check",
            "kind": kind,
            "api": api,
            "version": version,
            "bytes": _b64(encoded),
            "json": to_kafka_json(plain, version),
        }
    )
    assert "error" not in answer, f"Kafka failed at {answer['stage']}: {answer['error']}"
    # Our bytes -> Kafka's read -> Kafka's write: the same bytes, the same values.
    assert base64.b64decode(answer["reread"]) == encoded
    assert answer["readJson"] == to_kafka_json(msg, version, records_as_size=True)
    # Our values as JSON -> Kafka's message -> Kafka's bytes: ours, and we read them back.
    built = base64.b64decode(answer["built"])
    assert built == plain.encode(version)
    back = cls.decode(built, version, strict=True)
    assert back == plain
    assert back.encode(version) == built


def _check(oracle: Oracle, data: bytes, json_value: dict[str, Any]) -> dict[str, Any]:
    """Kafka's answers for ``data`` and ``json_value`` as a MetadataRequest v12."""
    return oracle.ask(
        {
            "op": "check",
            "kind": "request",
            "api": int(ApiKey.METADATA),
            "version": 12,
            "bytes": _b64(data),
            "json": json_value,
        }
    )


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
