"""A TCP relay in front of one broker listener that notes the api key of every request a client
sends, per connection: what the tests of re-authentication observe (KIP-368: a second
SaslHandshake and SaslAuthenticate on the same connection). A broker advertises the relay's
address, so every connection of a client goes through it. Plaintext listeners only (SASL_PLAINTEXT
frames are ordinary Kafka requests once the handshake is v1)."""

from __future__ import annotations

import socket
import struct
import threading
from collections import Counter
from typing import Final

from tests.interop.harness import Address

SASL_HANDSHAKE: Final = 17
SASL_AUTHENTICATE: Final = 36


class FrameTap:
    """Relays ``127.0.0.1:<port>`` to ``target`` once :meth:`start` ed; :meth:`close` stops it."""

    def __init__(self, target: Address, host: str = "127.0.0.1") -> None:
        self.target = target
        # Bound (and listening) from the start: a port only picked here and bound later can be
        # taken in between by anything on the machine, such as another test run's connection.
        self._server = socket.create_server((host, 0))
        self.address = Address(host, self._server.getsockname()[1])
        self._lock = threading.Lock()
        #: Per connection (numbered from 1), the api keys of its requests in order.
        self._requests: dict[int, list[int]] = {}
        self._sockets: list[socket.socket] = []

    def start(self) -> None:
        threading.Thread(target=self._accept, args=(self._server,), daemon=True).start()

    def close(self) -> None:
        self._server.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()

    def requests(self) -> dict[int, list[int]]:
        with self._lock:
            return {conn: list(keys) for conn, keys in self._requests.items()}

    def mark(self) -> int:
        """The number of the last connection so far (for :meth:`most_logins`)."""
        with self._lock:
            return len(self._requests)

    def most_logins(self, since: int = 0) -> int:
        """The most SaslHandshake requests any one connection opened after ``since`` sent."""
        counts = [Counter(keys)[SASL_HANDSHAKE] for conn, keys in self.requests().items() if conn > since]
        return max(counts, default=0)

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                conn = len(self._requests) + 1
                self._requests[conn] = []
                self._sockets += [client, upstream]
            threading.Thread(target=self._requests_of, args=(conn, client, upstream), daemon=True).start()
            threading.Thread(target=_copy, args=(upstream, client), daemon=True).start()

    def _requests_of(self, conn: int, source: socket.socket, sink: socket.socket) -> None:
        buffer = b""
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
            except OSError:
                break
            buffer += data
            while len(buffer) >= 6 and len(buffer) >= 4 + struct.unpack_from(">i", buffer)[0]:
                size, api_key = struct.unpack_from(">ih", buffer)
                with self._lock:
                    self._requests[conn].append(api_key)
                buffer = buffer[4 + size :]
        _shut(sink)


def _copy(source: socket.socket, sink: socket.socket) -> None:
    while True:
        try:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
        except OSError:
            break
    _shut(sink)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
