"""Fixtures for the interop tests: a Tansu broker and the real clients' drivers (see harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.harness import Address, Tansu, start_tansu


@pytest.fixture(scope="session")
def tansu_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tansu]:
    """A Tansu broker with in-memory storage for the whole session, stopped (process group) at the end."""
    broker = start_tansu(tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def tansu(tansu_broker: Tansu) -> Address:
    """``(host, port)`` of the session's Tansu broker; ``.bootstrap`` is ``"host:port"``."""
    return tansu_broker.address
