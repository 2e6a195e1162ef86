"""Ports for servers started later: below the ephemeral range, never handed out twice while
marked (``kafka_wire.adapters.ports``)."""

from __future__ import annotations

import random
import socket
import subprocess
import sys

import pytest

from kafka_wire.adapters import ports


def test_a_port_is_below_the_ephemeral_range_and_free() -> None:
    port = ports.free_port()
    assert ports.LOWEST <= port < ports._ephemeral_start()
    with socket.create_server(("127.0.0.1", port)):
        pass


def test_a_port_marked_is_not_handed_out_again(monkeypatch: pytest.MonkeyPatch) -> None:
    first = ports.free_port()
    picks = [first, first]
    pick = random.randrange
    monkeypatch.setattr(random, "randrange", lambda lo, hi: picks.pop() if picks else pick(lo, hi))
    second = ports.free_port()
    assert second != first


def test_another_process_does_not_hand_out_a_marked_port() -> None:
    port = ports.free_port()
    script = (
        "import sys\nfrom kafka_wire.adapters import ports\n"
        "ports.random.randrange = lambda _lo, _hi: int(sys.argv[1])\n"
        "print(ports.free_port(attempts=3))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(port)], capture_output=True, text=True, check=True
    )
    assert int(out.stdout) != port  # all three picks were marked: the kernel's ephemeral pick


def test_a_port_in_use_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken, socket.create_server(("127.0.0.1", 0)) as other:
        busy, candidate = taken.getsockname()[1], other.getsockname()[1]
    with socket.create_server(("127.0.0.1", busy)):
        picks = iter([busy, candidate])
        monkeypatch.setattr(random, "randrange", lambda _lo, _hi: next(picks))
        assert ports.free_port(attempts=2) == candidate
