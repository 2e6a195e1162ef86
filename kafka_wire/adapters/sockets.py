"""Listening sockets and the process's file limit, for the broker's driver (``broker_server``)."""

from __future__ import annotations

import socket
import struct
from typing import Final

try:
    import resource
except ImportError:  # not POSIX: no file limit to manage
    resource = None  # type: ignore[assignment]  # the module or nothing

#: Kafka's ``socket.listen.backlog.size`` default.
LISTEN_BACKLOG: Final = 50
#: SO_LINGER on, 0 s: closing sends a reset and frees the socket at once.
RESET: Final = struct.pack("ii", 1, 0)


def listen(host: str, port: int) -> list[socket.socket]:
    """Non-blocking listening sockets on every address of ``host`` (``port`` 0: one free port,
    the same on each)."""
    listeners: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(
            _host_bytes(host), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            sock = socket.socket(family, kind, proto)
            listeners.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(listeners) > 1:
                address = (address[0], listeners[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in listeners:
            sock.close()
        raise
    return listeners


def _host_bytes(host: str) -> str | bytes:
    """``host`` for ``getaddrinfo``: a numeric address as its ASCII bytes, which ``getaddrinfo``
    takes as they are (a ``str`` it encodes with the ``idna`` codec first, and loading that codec
    with ``unicodedata`` and ``stringprep`` costs a start about a millisecond); a name as given."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return host.encode("ascii")
    return host


def raise_file_limit() -> int | None:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; return the limit now in force (None:
    unlimited or unknown)."""
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # some systems cap the soft limit lower (macOS: OPEN_MAX); keep what we have
    return None if soft == resource.RLIM_INFINITY else soft
