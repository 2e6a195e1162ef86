"""ApiVersions: the same answer but for the version ranges, which are compared key by key: for every
API both brokers serve, kafka-wire's range lies inside Kafka's, or is one of the documented
supersets (:data:`SUPERSETS`)."""

from __future__ import annotations

from typing import Final

import pytest

from kafka_wire.messages import ApiKey, ApiVersionsRequest, ApiVersionsResponse, ErrorCode
from tests.differential.compare import Rule, clock, ignored
from tests.differential.pair import Pair

#: The versions kafka-wire serves beyond Kafka 4.4's, per API: (low, high) of kafka-wire's range
#: outside Kafka's, and why (docs/reference/kafka-differences.md).
SUPERSETS: Final = {
    ApiKey.LIST_OFFSETS: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.OFFSET_COMMIT: ((0, 1), "v0-1, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.OFFSET_FETCH: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.CREATE_TOPICS: ((0, 1), "v0-1, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.DELETE_TOPICS: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ((0, 1), "v0-1, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.DESCRIBE_CONFIGS: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.DESCRIBE_LOG_DIRS: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.CREATE_DELEGATION_TOKEN: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.RENEW_DELEGATION_TOKEN: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.EXPIRE_DELEGATION_TOKEN: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: ((0, 0), "v0, which Kafka 4 removed (KIP-896), for old clients"),
}

#: Compared in their own tests: the version ranges (test_ranges) and the features (deliberate).
RANGES: Final = (Rule("api_keys", ignored, "compared range by range in test_ranges"),)
FEATURES: Final = (
    Rule("finalized_features_epoch", clock, "the offset of the last feature record in each metadata log"),
    *RANGES,
)
APART: Final = (
    Rule("*features", ignored, "compared in test_features"),
    Rule("finalized_features_epoch", ignored, "compared in test_features"),
    *RANGES,
)


def ranges(response: ApiVersionsResponse) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def request() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="kw-differential", client_software_version="1.0")


@pytest.mark.parametrize("version", [0, 3, 4])
def test_response(pair: Pair, version: int) -> None:
    kafka, _ = pair.check(request(), version, APART)
    assert kafka.error_code == ErrorCode.NONE


@pytest.mark.deliberate(
    "supported_features*",
    "finalized_features*",
    reason="kafka-wire reports transaction.version only (it has no group, share or streams "
    "versions; its metadata log is 3.9's)",
)
@pytest.mark.parametrize("version", [3, 4])
def test_features(pair: Pair, version: int) -> None:
    """Kafka lists the features whose lowest version is 0 only from v4."""
    pair.check(request(), version, FEATURES)


def test_ranges(pair: Pair) -> None:
    """For every API both serve: kafka-wire's range inside Kafka's, or a documented superset."""
    kafka, wire = (ranges(r) for r in pair.both(request(), 4))
    outside = {}
    for key in sorted(kafka.keys() & wire.keys()):
        (k_low, k_high), (w_low, w_high) = kafka[key], wire[key]
        if w_low < k_low or w_high > k_high:
            outside[key] = (w_low, k_low - 1) if w_low < k_low else (k_high + 1, w_high)
    assert outside == {key: extra for key, (extra, _) in SUPERSETS.items()}


def test_kafka_wire_serves_no_api_kafka_lacks(pair: Pair) -> None:
    kafka, wire = (ranges(r) for r in pair.both(request(), 4))
    assert sorted(wire.keys() - kafka.keys()) == []


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize(("name", "software_version"), [("bad name!", "1.0"), ("kw", "-1"), ("", "")])
def test_invalid_client_software(pair: Pair, version: int, name: str, software_version: str) -> None:
    invalid = ApiVersionsRequest(client_software_name=name, client_software_version=software_version)
    kafka, _ = pair.check(invalid, version, APART)
    assert kafka.error_code == ErrorCode.INVALID_REQUEST
