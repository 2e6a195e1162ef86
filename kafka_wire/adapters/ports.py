"""Ports for servers started later, by this process or a child: :func:`free_port`.

A port the kernel picks for ``bind(("127.0.0.1", 0))`` comes from the ephemeral range, the range
that outgoing connections take their local ports from too; between its pick and the server's
bind, any connection on the machine (another test run's client, say) can take it: "Address
already in use". :func:`free_port` picks below that range instead, where no connection takes a
port by itself, and marks its pick for the other processes on the machine that use this function
(an advisory lock on a file in the temporary directory, held for :data:`HOLD_S`: by then the
server has bound it), so that two of them do not hand out the same port.
"""

from __future__ import annotations

import collections
import fcntl
import os
import random
import socket
import tempfile
import time
from pathlib import Path
from typing import Final

#: Ports are picked from ``LOWEST`` up to the start of the ephemeral range.
LOWEST: Final = 15_000
#: How long a pick stays marked for the other processes.
HOLD_S: Final = 120.0
_EPHEMERAL_RANGE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Picks still marked: (when, the locked file's descriptor).
_held: collections.deque[tuple[float, int]] = collections.deque()


def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _mark(port: int) -> bool:
    """Lock the file of ``port``; False if another process holds it."""
    folder = Path(tempfile.gettempdir()) / "kafka-wire-ports"
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / str(port), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held.append((time.monotonic(), fd))
    return True


def _release_old() -> None:
    now = time.monotonic()
    while _held and now - _held[0][0] > HOLD_S:
        os.close(_held.popleft()[1])


def free_port(host: str = "127.0.0.1", attempts: int = 200) -> int:
    """A TCP port of ``host`` free now, below the ephemeral range and not handed out by this
    function in another process in the last :data:`HOLD_S` seconds; the kernel's ephemeral pick
    if ``attempts`` random ports are all taken."""
    _release_old()
    top = _ephemeral_start()
    if top > LOWEST:
        for _ in range(attempts):
            port = random.randrange(LOWEST, top)
            if _mark(port):
                if _bindable(host, port):
                    return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        picked: int = sock.getsockname()[1]
        return picked


__all__ = ["HOLD_S", "LOWEST", "free_port"]
