"""ApiVersions as the 4.4 Java client sends it after bootstrapping: v5 with the cluster id and node
id the broker gave in Metadata (KIP-1242). Kafka answers with error 0 and its version ranges.

Tansu 0.6.0 closes the connection instead (a strict xfail for the ``tansu`` target, so a fix is
noticed): this is why the e2e tests skip the ``java4`` client against Tansu
(``tests/interop/harness.py``, ``UNSERVED``).
"""

from __future__ import annotations

import pytest

from kafka_wire.messages import ApiVersionsResponse
from tests.e2e import raw
from tests.e2e.brokers import BrokerProcess
from tests.interop.harness import UNSERVED


def test_identified_api_versions_are_answered(target: BrokerProcess, request: pytest.FixtureRequest) -> None:
    if (target.name, "java4") in UNSERVED:
        request.applymarker(pytest.mark.xfail(strict=True, reason=UNSERVED[target.name, "java4"]))
    outcome = raw.api_versions_v5_identified(target.address)
    assert isinstance(outcome.response, ApiVersionsResponse), outcome.describe()
    assert outcome.response.error_code == 0, outcome.describe()
    assert raw.API_VERSIONS in {k.api_key for k in outcome.response.api_keys}, outcome.describe()
