"""The delegation-token APIs on the PLAINTEXT listener of both nodes: Kafka refuses every token
request there (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: a token must be asked for with credentials),
with the owner and requester of a creation (ANONYMOUS, or the owner it names) and times of -1. The
SASL listener's answers are compared in tests/e2e/test_scram_kafka.py."""

from __future__ import annotations

import pytest

from kafka_wire.messages import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenRequestCreatableRenewers,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenRequestOwner,
    ErrorCode,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
)
from tests.differential.pair import Pair


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create(pair: Pair, version: int) -> None:
    renewer = CreateDelegationTokenRequestCreatableRenewers(principal_type="User", principal_name="bob")
    kafka, _ = pair.check(CreateDelegationTokenRequest(renewers=[renewer], max_lifetime_ms=60_000), version)
    assert kafka.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_create_for_another_owner(pair: Pair) -> None:
    pair.check(CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="carol"), 3)


@pytest.mark.parametrize("version", [1, 2])
def test_renew_and_expire(pair: Pair, version: int) -> None:
    pair.check(RenewDelegationTokenRequest(hmac=b"hmac", renew_period_ms=1000), version)
    pair.check(ExpireDelegationTokenRequest(hmac=b"hmac", expiry_time_period_ms=-1), version)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe(pair: Pair, version: int) -> None:
    owner = DescribeDelegationTokenRequestOwner(principal_type="User", principal_name="bob")
    for owners in (None, [], [owner]):
        kafka, _ = pair.check(DescribeDelegationTokenRequest(owners=owners), version)
        assert kafka.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
