"""FindCoordinator: the leader of the group's __consumer_offsets partition."""

from __future__ import annotations

from kafka_wire.broker.apis import find_coordinator, metadata
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.group import partition_for_group
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    RequestHeader,
)
from kafka_wire.protocol.events import Request
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine

from .fakes import NOW, PARTITIONS, FakeCluster, node_state

E = ErrorCode


def find(
    state: BrokerState, key: str, *, version: int = 3, listener: str = "PLAINTEXT", now_ms: int = NOW
) -> FindCoordinatorResponse:
    body = FindCoordinatorRequest(key=key, key_type=0, coordinator_keys=[key])
    header = RequestHeader(request_api_key=10, request_api_version=version, correlation_id=1, client_id="c")
    ctx = Context(
        state=state,
        effects=EffectSink(),
        conn_id=1,
        request=Request(header, body),
        now_ms=now_ms,
        listener=listener,
    )
    return find_coordinator.handle(ctx, body)


def groups_by_partition() -> dict[int, str]:
    """A group id for each partition of the offsets topic."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < PARTITIONS:
        found.setdefault(partition_for_group(f"group-{n}", PARTITIONS), f"group-{n}")
        n += 1
    return found


def test_the_coordinator_is_the_partition_leader_on_the_request_listener() -> None:
    cluster = FakeCluster()
    leaders = {0: 1, 1: 2, 2: 3, 3: 1, 4: 2, 5: 3}
    cluster.lead_offsets(leaders)
    state = node_state(cluster, MemoryStorage())
    for partition, group in groups_by_partition().items():
        leader = leaders[partition]
        answer = find(state, group)
        assert (answer.error_code, answer.node_id) == (E.NONE, leader)
        assert (answer.host, answer.port) == (f"broker{leader}.example", 9000 + leader)
        internal = find(state, group, listener="INTERNAL", version=4).coordinators[0]
        assert (internal.node_id, internal.host, internal.port) == (
            leader,
            f"internal{leader}.example",
            19000 + leader,
        )
        unnamed = find(state, group, listener="")  # no listener known: the inter-broker one
        assert (unnamed.host, unnamed.port) == (f"internal{leader}.example", 19000 + leader)
    assert not cluster.sent


def test_java_string_hash_places_the_group() -> None:
    # "abc".hashCode() == 96354; a hash of Integer.MIN_VALUE counts as 0 (Kafka's Utils.abs).
    assert partition_for_group("abc", 50) == 96354 % 50
    assert partition_for_group("polygenelubricants", 50) == 0  # hashCode == Integer.MIN_VALUE


def test_no_leader_or_no_endpoint_is_coordinator_not_available() -> None:
    cluster = FakeCluster()
    cluster.lead_offsets({p: -1 for p in range(PARTITIONS)})
    state = node_state(cluster, MemoryStorage())
    answer = find(state, "g")
    assert (answer.error_code, answer.node_id, answer.port) == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
    cluster.lead_offsets({p: 2 for p in range(PARTITIONS)})
    assert find(state, "g", listener="SSL").error_code == E.COORDINATOR_NOT_AVAILABLE
    assert find(state, "g").error_code == E.NONE


def test_a_missing_offsets_topic_is_asked_of_the_controller_once() -> None:
    cluster = FakeCluster()
    state = node_state(cluster, MemoryStorage())
    del state.metadata.topics[OFFSETS_TOPIC]  # the cluster has no __consumer_offsets yet
    first = find(state, "g", version=4).coordinators[0]
    assert first.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert find(state, "g").error_code == E.COORDINATOR_NOT_AVAILABLE
    [outbound] = cluster.sent  # one request in flight
    assert (outbound.destination, outbound.listener) == (3, "CONTROLLER")
    assert isinstance(outbound.body, CreateTopicsRequest)
    [topic] = outbound.body.topics
    assert (topic.name, topic.num_partitions, topic.replication_factor) == (OFFSETS_TOPIC, PARTITIONS, 3)
    assert {c.name: c.value for c in topic.configs} == {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": str(state.config.offsets_topic_segment_bytes),
    }
    assert OFFSETS_TOPIC not in state.metadata.topics  # nothing created locally
    # A failed request is sent again after a backoff; TOPIC_ALREADY_EXISTS ends the matter.
    outbound.on_reply(None, NOW + 1)
    find(state, "g", now_ms=NOW + 2)
    assert len(cluster.sent) == 1
    find(state, "g", now_ms=NOW + 500)
    assert len(cluster.sent) == 2
    exists = CreateTopicsResponse(
        topics=[
            CreateTopicsResponseCreatableTopicResult(name=OFFSETS_TOPIC, error_code=E.TOPIC_ALREADY_EXISTS)
        ]
    )
    cluster.sent[1].on_reply(exists, NOW + 501)
    find(state, "g", now_ms=NOW + 502)
    assert len(cluster.sent) == 3  # still not in the view: asked again at once
    cluster.lead_offsets({})
    assert find(state, "g", now_ms=NOW + 503).node_id == 2


def test_no_controller_known_sends_nothing() -> None:
    cluster = FakeCluster(controller_id=-1)
    state = node_state(cluster, MemoryStorage())
    assert find(state, "g").error_code == E.COORDINATOR_NOT_AVAILABLE
    assert not cluster.sent


def test_a_single_node_coordinates_every_group_once_its_controller_made_the_topic() -> None:
    engine = Engine()
    client = Client(engine, 1)
    request = FindCoordinatorRequest(key="g", key_type=0)
    first = client.request(request, 3).body
    assert isinstance(first, FindCoordinatorResponse)
    assert first.error_code == E.COORDINATOR_NOT_AVAILABLE, "the topic is asked of the controller first"
    answer = client.request(request, 3).body
    assert isinstance(answer, FindCoordinatorResponse)
    assert (answer.error_code, answer.node_id, answer.port) == (E.NONE, 1, engine.config.port)
    topic = engine.broker.state.topic_named(OFFSETS_TOPIC)
    assert topic is not None and topic.partitions == engine.config.offsets_topic_num_partitions


def test_metadata_auto_creation_of_the_offsets_topic_goes_to_the_controller() -> None:
    cluster = FakeCluster()
    state = node_state(cluster, MemoryStorage())
    del state.metadata.topics[OFFSETS_TOPIC]
    body = MetadataRequest(topics=[MetadataRequestTopic(name=OFFSETS_TOPIC)], allow_auto_topic_creation=True)
    header = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=1, client_id="c")
    ctx = Context(state=state, effects=EffectSink(), conn_id=1, request=Request(header, body), now_ms=NOW)
    answer = metadata.handle(ctx, body)
    assert answer.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION  # until the image has it
    assert OFFSETS_TOPIC not in state.metadata.topics
    [outbound] = cluster.sent
    assert isinstance(outbound.body, CreateTopicsRequest) and outbound.body.topics[0].name == OFFSETS_TOPIC
