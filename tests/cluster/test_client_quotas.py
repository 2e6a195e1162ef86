"""Client quotas in a three-node cluster: the Java 4.4 admin client sets a quota through one
node (the broker forwards AlterClientQuotas to the active controller, which writes a
ClientQuotaRecord), and every node describes it from its own metadata image, also after the
whole cluster restarted; a controller mutation quota set so is applied by another node to the
admin requests it forwards (THROTTLING_QUOTA_EXCEEDED, as a single node answers)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Final

import pytest

from kafka_wire.messages import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponentData,
    DescribeClientQuotasResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.cluster.harness import HOST, LocalCluster, wait_until
from tests.e2e.raw import exchange
from tests.interop.harness import java_command

pytestmark = pytest.mark.cluster

QUOTA_ADMIN: Final = Path(__file__).resolve().parents[1] / "e2e" / "java" / "QuotaAdmin.java"
MUTATION_QUOTA: Final = QUOTA_ADMIN.with_name("MutationQuota.java")


def described(port: int, client_id: str) -> dict[str, float] | None:
    """The node's quotas of ``client-id=client_id`` (None: none, or no answer)."""
    request = DescribeClientQuotasRequest(
        components=[
            DescribeClientQuotasRequestComponentData(entity_type="client-id", match_type=0, match=client_id)
        ],
        strict=True,
    )
    frame = encode_request(RequestHeader(correlation_id=1, client_id="quota-cluster"), request, 1)
    try:
        outcome = exchange((HOST, port), frame, probe="describe-quotas", timeout_s=5.0)
    except OSError:
        return None
    if not outcome.whole_frame:
        return None
    _, body = decode_response(outcome.reply, 48, 1)
    assert isinstance(body, DescribeClientQuotasResponse) and body.error_code == 0
    assert body.entries is not None
    return {v.key: v.value for e in body.entries for v in e.values} or None


def test_every_node_sees_a_quota_set_through_one(cluster: LocalCluster) -> None:
    first = next(iter(cluster.nodes.values()))
    result = subprocess.run(
        java_command(
            QUOTA_ADMIN,
            first.bootstrap,
            "client-id",
            "clustered",
            "producer_byte_rate=2048",
            "controller_mutation_rate=1",
            client="java4",
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (result.stdout, result.stderr[-3000:])
    assert result.stdout.splitlines() == [
        "quota controller_mutation_rate 1.0",
        "quota producer_byte_rate 2048.0",
    ]
    for node in cluster.nodes.values():
        wait_until(
            f"node {node.node_id} describes the quota",
            functools.partial(described, node.port, "clustered"),
            30,
        )
    last = list(cluster.nodes.values())[-1]
    mutations = subprocess.run(
        java_command(MUTATION_QUOTA, last.bootstrap, "clustered", "clustered", client="java4"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert mutations.returncode == 0, (mutations.stdout, mutations.stderr[-3000:])
    assert mutations.stdout.splitlines() == [  # as on one node (tests/e2e/test_client_quota_limits.py)
        "create clustered-a ok",
        "create clustered-b ThrottlingQuotaExceededException throttled",
        "partitions clustered-a ok",
        "delete clustered-a ThrottlingQuotaExceededException throttled",
    ]
    for node in cluster.nodes.values():
        node.terminate()
    cluster.start_all()
    for node in cluster.nodes.values():
        assert wait_until(
            f"node {node.node_id} describes the quota after the restart",
            functools.partial(described, node.port, "clustered"),
            60,
        ) == {"producer_byte_rate": 2048.0, "controller_mutation_rate": 1.0}
