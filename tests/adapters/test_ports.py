"""Ports for servers started later: below the ephemeral range, free, never handed out twice by
processes that use ``kafka_wire.adapters.ports``."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from kafka_wire.adapters import ports


def test_ports_are_below_the_ephemeral_range_and_free() -> None:
    base = ports.free_ports(3)
    assert ports.LOWEST <= base < base + 3 <= ports.ephemeral_start()
    for port in range(base, base + 3):
        with socket.create_server(("127.0.0.1", port)):
            pass


def test_a_port_reserved_is_not_handed_out_again(monkeypatch: pytest.MonkeyPatch) -> None:
    first = ports.free_port()
    picks = [first, first]
    pick = ports._PICK.randrange
    monkeypatch.setattr(ports._PICK, "randrange", lambda lo, hi: picks.pop() if picks else pick(lo, hi))
    assert ports.free_port() != first


def test_another_process_does_not_hand_out_a_reserved_port() -> None:
    port = ports.free_port()
    script = (
        "import sys\nfrom kafka_wire.adapters import ports\n"
        "ports._PICK.randrange = lambda _lo, _hi: int(sys.argv[1])\n"
        "try:\n    ports.free_ports(1, attempts=3)\nexcept OSError:\n    print('refused')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(port)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "refused"


def test_a_port_in_use_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken, socket.create_server(("127.0.0.1", 0)) as other:
        busy, candidate = taken.getsockname()[1], other.getsockname()[1]
    with socket.create_server(("127.0.0.1", busy)):
        picks = iter([busy, candidate])
        monkeypatch.setattr(ports._PICK, "randrange", lambda _lo, _hi: next(picks))
        assert ports.free_ports(1, attempts=2) == candidate
