"""Bad input over raw sockets (see raw.py): the broker answers as Apache Kafka does, and keeps
serving other connections afterwards.

What Kafka does, and so what these tests expect:

* garbage (a well-sized frame with api key 0xdead): closes the connection without a reply.
* an HTTP request, whose first four bytes read as a ~1.2 GB size, and a size prefix of 2**31 - 1:
  closes the connection (the size is over ``socket.request.max.bytes``, 100 MiB) without
  buffering the body.
* a truncated frame, then EOF: closes without a reply.
* Metadata for an unknown topic, without auto-creation: a Metadata response whose topic has
  error UNKNOWN_TOPIC_OR_PARTITION (3).
* ApiVersions v99: a response in the v0 format with UNSUPPORTED_VERSION (35) and one range, that
  of ApiVersions itself, so the client can retry at a version both know.
* Metadata one past the broker's maximum version: closes the connection without a reply.

Every probe runs against Apache Kafka 4.4 too (the ``apache_kafka`` target), which answers all of
them as above. Tansu 0.6.0 differs on four; each such case is an xfail (strict, so a change is
noticed) for the ``tansu`` target only, with what Tansu does as the reason. ``kafka_wire`` gets no
such allowance.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafka_wire.messages import ApiVersionsResponse, MetadataResponse
from tests.e2e import raw
from tests.e2e.brokers import BrokerProcess

UNKNOWN_TOPIC_OR_PARTITION = 3
UNSUPPORTED_VERSION = 35

#: (target, probe) -> what that broker does instead of what Kafka does.
KNOWN_DEVIATIONS: dict[tuple[str, str], str] = {
    ("tansu", "http"): "Tansu keeps the connection open, waiting for the 1.2 GB body",
    ("tansu", "oversized"): "Tansu keeps the connection open, waiting for the 2 GiB body",
    ("tansu", "api_versions_v99"): "Tansu answers ApiVersions v99 with a v3-format response and error 0",
    ("tansu", "metadata_unsupported"): "Tansu answers Metadata v13 with a full Metadata response",
}


def closed_without_reply(outcome: raw.Outcome) -> None:
    assert outcome.closed and not outcome.reply, outcome.describe()


def unknown_topic_answered(outcome: raw.Outcome) -> None:
    assert isinstance(outcome.response, MetadataResponse), outcome.describe()
    errors = {t.name: t.error_code for t in outcome.response.topics}
    assert errors == {raw.UNKNOWN_TOPIC: UNKNOWN_TOPIC_OR_PARTITION}, outcome.describe()


def unsupported_version_answered(outcome: raw.Outcome) -> None:
    assert isinstance(outcome.response, ApiVersionsResponse), outcome.describe()
    assert outcome.response.error_code == UNSUPPORTED_VERSION, outcome.describe()
    assert [k.api_key for k in outcome.response.api_keys] == [raw.API_VERSIONS], outcome.describe()


EXPECTED: dict[str, Callable[[raw.Outcome], None]] = {
    "garbage": closed_without_reply,
    "http": closed_without_reply,
    "oversized": closed_without_reply,
    "truncated": closed_without_reply,
    "unknown_topic": unknown_topic_answered,
    "api_versions_v99": unsupported_version_answered,
    "metadata_unsupported": closed_without_reply,
}


@pytest.mark.parametrize("probe", list(raw.PROBES))
def test_answer_like_kafka(target: BrokerProcess, probe: str, request: pytest.FixtureRequest) -> None:
    deviation = KNOWN_DEVIATIONS.get((target.name, probe))
    if deviation is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=deviation))
    outcome = raw.PROBES[probe](target.address)
    EXPECTED[probe](outcome)


@pytest.mark.parametrize("probe", list(raw.PROBES))
def test_still_serves_afterwards(target: BrokerProcess, probe: str) -> None:
    outcome = raw.PROBES[probe](target.address)
    assert target.running(), f"{target.name} exited after {outcome.describe()}\n{target.log()[-3000:]}"
    assert raw.serves(target.address), f"no ApiVersions answer after {outcome.describe()}"
