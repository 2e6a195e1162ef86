"""Ports for servers started later, by this process or a child: :func:`free_port`, :func:`free_ports`.

A port the kernel picks for ``bind(("127.0.0.1", 0))`` comes from the ephemeral range, the range
that outgoing connections take their local ports from too; between its pick and the server's
bind, any connection on the machine (another test run's client, say) can take it: "Address
already in use". These functions pick below that range instead, where no connection takes a port
by itself, and reserve each port handed out for the rest of the process, against every other
process that uses them (the test suite runs several at once), by a lock on a file named after it
in the temporary directory: a node that has not bound its port yet, or is stopped to be started
again, keeps it. The kernel drops the locks when the process ends.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path
from typing import Final

#: Ports are picked from ``LOWEST`` up to the start of the ephemeral range.
LOWEST: Final = 10_000
_EPHEMERAL_RANGE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
_RESERVATIONS: Final = Path(tempfile.gettempdir()) / "kafka-wire-ports"
_PICK: Final = random.SystemRandom()
_held: dict[int, int] = {}  # port -> descriptor of its locked reservation file


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _reserve(port: int) -> bool:
    if port in _held:
        return False
    _RESERVATIONS.mkdir(exist_ok=True)
    descriptor = os.open(_RESERVATIONS / str(port), os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another process holds it
        os.close(descriptor)
        return False
    _held[port] = descriptor
    return True


def _bindable(port: int, host: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int, host: str = "127.0.0.1", attempts: int = 1000) -> int:
    """The first of ``count`` consecutive ports of ``host`` below the ephemeral range, free now
    and reserved for the rest of this process (see the module docstring). Raises ``OSError``
    when ``attempts`` random places hold none."""
    top = ephemeral_start()
    for _ in range(attempts):
        base = _PICK.randrange(LOWEST, max(top - count, LOWEST + 1))
        reserved: list[int] = []
        for port in range(base, base + count):
            if not _reserve(port):
                break
            reserved.append(port)
            if not _bindable(port, host):
                break
        else:
            return base
        for port in reserved:
            os.close(_held.pop(port))
    raise OSError(f"no {count} consecutive free ports from {LOWEST} to {top}")


def free_port(host: str = "127.0.0.1") -> int:
    """A port of ``host`` below the ephemeral range, free now and reserved (:func:`free_ports`)."""
    return free_ports(1, host)


__all__ = ["LOWEST", "ephemeral_start", "free_port", "free_ports"]
