"""The same request to both brokers, and the verdict on their answers.

A :class:`Pair` holds one connection to Apache Kafka and one to kafka-wire. :meth:`Pair.check`
sends one request at one version to each, compares the answers (:mod:`tests.differential.compare`)
and raises :class:`Differences` with a report when they differ; :meth:`Pair.check_each` does the
same with each broker's own request (its topic ids, producer ids, session and member ids). A test
that shows a deliberate difference is marked ``@pytest.mark.deliberate("path pattern", ...,
reason="...")``: the conftest turns that into a strict xfail whose failure must be
:class:`DeliberateDifference`, which is raised only when every difference found matches one of the
patterns (by its path as reported or with ``[]`` for every index), so a new difference still
fails the test, and the mark must go when the difference does.

:meth:`Pair.both` sends a request to both without comparing (set-up); :meth:`Pair.create_topic`
creates a topic on both and waits until each broker's Metadata shows a leader for every partition
and every partition answers a ListOffsets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar
from uuid import UUID

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from tests.differential.compare import Difference, Rule, Side, differences, matches, report
from tests.differential.wire import Connection

R = TypeVar("R", bound=Message)
R_co = TypeVar("R_co", bound=Message, covariant=True)


class Asks(Protocol[R_co]):
    """A request message: it names its response class (every generated request does)."""

    def response_class(self) -> type[R_co]: ...


#: How long a broker may take to show a change it acknowledged (a topic's leader in Metadata).
SETTLE_TIMEOUT_S: Final = 15.0
CREATE_TOPICS_VERSION: Final = 7
METADATA_VERSION: Final = 12
LIST_OFFSETS_VERSION: Final = 7


class Differences(AssertionError):
    """The two brokers answered differently (the message is the report)."""


class DeliberateDifference(AssertionError):
    """The two brokers answered differently, only in ways documented as deliberate."""


@dataclass
class Peer:
    """One broker as the suite talks to it."""

    side: Side
    connection: Connection

    def request(self, request: Asks[R], version: int) -> R:
        """``request``'s answer, which must be of its response class."""
        assert isinstance(request, Message)
        answer = self.connection.request(request, version)
        expected = request.response_class()
        assert isinstance(answer, expected), f"{type(answer).__name__}, expected {expected.__name__}"
        return answer


@dataclass
class Statistics:
    """What the session compared (printed at the end of the run)."""

    checks: int = 0
    by_api: dict[str, int] = field(default_factory=dict)


@dataclass
class Pair:
    """Kafka and kafka-wire, for one test (or one module's set-up)."""

    kafka: Peer
    kafka_wire: Peer
    statistics: Statistics
    #: The path patterns of the running test's deliberate differences.
    deliberate: tuple[str, ...] = ()

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.kafka.side, self.kafka_wire.side

    def both(self, request: Asks[R], version: int) -> tuple[R, R]:
        """``request`` at ``version`` to Kafka, then to kafka-wire; both answers, not compared."""
        assert isinstance(request, Message)
        return self.kafka.request(request, version), self.kafka_wire.request(request, version)

    def check(
        self,
        request: Asks[R],
        version: int,
        rules: Iterable[Rule] = (),
    ) -> tuple[R, R]:
        """Send ``request`` to both at ``version`` and compare the answers; return them (Kafka's
        first)."""
        a, b = self.both(request, version)
        self.judge(a, b, f"{type(request).__name__} v{version}", rules)
        return a, b

    def check_each(
        self,
        make: Callable[[Peer], Asks[R]],
        version: int,
        rules: Iterable[Rule] = (),
    ) -> tuple[R, R]:
        """Like :meth:`check`, with each broker's own request: ``make(peer)`` puts in what each
        chose itself (topic ids, producer ids, fetch session ids); the rest must be the same."""
        a, b = (peer.request(make(peer), version) for peer in (self.kafka, self.kafka_wire))
        self.judge(a, b, f"{type(a).__name__.replace('Response', 'Request')} v{version}", rules)
        return a, b

    def judge(
        self,
        a: Any,
        b: Any,
        title: str,
        rules: Iterable[Rule] = (),
    ) -> None:
        """Compare two answers (Kafka's first); raise when they differ."""
        self.statistics.checks += 1
        api = title.split(" ")[0]
        self.statistics.by_api[api] = self.statistics.by_api.get(api, 0) + 1
        found = differences(a, b, self.sides, rules)
        if not found:
            return
        text = report(found, title)
        if self.deliberate and all(self._deliberate(d) for d in found):
            raise DeliberateDifference(text)
        raise Differences(text)

    def _deliberate(self, difference: Difference) -> bool:
        return any(
            matches(pattern, difference.canon) or matches(pattern, difference.path)
            for pattern in self.deliberate
        )

    # -- set-up on both brokers ------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        """Create ``name`` on both and wait until both show a leader for each partition."""
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=1,
                    configs=[
                        CreateTopicsRequestCreatableTopicConfig(name=k, value=v)
                        for k, v in (configs or {}).items()
                    ],
                )
            ],
            timeout_ms=10_000,
        )
        for peer in (self.kafka, self.kafka_wire):
            response = peer.request(request, CREATE_TOPICS_VERSION)
            assert isinstance(response, CreateTopicsResponse)
            code = response.topics[0].error_code
            assert code == ErrorCode.NONE, f"{peer.side.name}: creating {name}: error {code}"
        self.wait_for_leaders(name, partitions)

    def topic_ids(self, topic: str) -> dict[str, UUID]:
        """Each broker's id of ``topic``, by the broker's side name."""
        request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
        return {
            peer.side.name: peer.request(request, METADATA_VERSION).topics[0].topic_id
            for peer in (self.kafka, self.kafka_wire)
        }

    def wait_for_leaders(self, topic: str, partitions: int) -> None:
        request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
        for peer in (self.kafka, self.kafka_wire):

            def ready(peer: Peer = peer) -> bool:
                response = peer.request(request, METADATA_VERSION)
                assert isinstance(response, MetadataResponse)
                found = response.topics[0]
                return (
                    found.error_code == ErrorCode.NONE
                    and len(found.partitions) == partitions
                    and all(p.leader_id >= 0 for p in found.partitions)
                )

            poll(f"{peer.side.name} to show {topic}'s leaders", ready)
        # Kafka's Metadata shows a leader before its replica manager has made the partition's log
        # (until then a Fetch or Produce there answers NOT_LEADER_OR_FOLLOWER): wait until each
        # partition answers a ListOffsets without an error.
        latest = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequestTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequestPartition(partition_index=p, timestamp=-1)
                        for p in range(partitions)
                    ],
                )
            ],
        )
        for peer in (self.kafka, self.kafka_wire):

            def served(peer: Peer = peer) -> bool:
                response = peer.request(latest, LIST_OFFSETS_VERSION)
                assert isinstance(response, ListOffsetsResponse)
                return all(p.error_code == ErrorCode.NONE for t in response.topics for p in t.partitions)

            poll(f"{peer.side.name} to serve {topic}'s partitions", served)


def poll(what: str, condition: Callable[[], bool], timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """Call ``condition`` until it holds; AssertionError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)
