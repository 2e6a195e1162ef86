"""One blocking connection to a broker: a request in, its decoded response out.

Requests are encoded with kafka_wire's codec (:func:`kafka_wire.protocol.framing.encode_request`)
at the version the test chooses, responses decoded strictly at that version (bytes left over are
an error), so both brokers' answers are read by the same code. A request with ``acks=0`` has no
response: :meth:`Connection.send_only`.
"""

from __future__ import annotations

import socket
import struct
from typing import Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import RequestHeader, ResponseHeader
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.interop.harness import Address

CLIENT_ID: Final = "kw-differential"
#: How long one response may take (a Fetch long poll waits at most what its max_wait_ms says).
RESPONSE_TIMEOUT_S: Final = 15.0


class Connection:
    """A client connection; reconnects on the next request after the broker closed it."""

    def __init__(self, address: Address) -> None:
        self.address = address
        self._sock: socket.socket | None = None
        self._correlation_id = 0

    def _socket(self) -> socket.socket:
        if self._sock is None:
            self._sock = socket.create_connection(self.address, timeout=RESPONSE_TIMEOUT_S)
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _frame(self, request: Message, version: int) -> tuple[int, bytes]:
        self._correlation_id += 1
        header = RequestHeader(correlation_id=self._correlation_id, client_id=CLIENT_ID)
        return self._correlation_id, encode_request(header, request, version)

    def send_only(self, request: Message, version: int) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        self._socket().sendall(self._frame(request, version)[1])

    def request(self, request: Message, version: int) -> Message:
        """Send ``request`` at ``version`` and return the decoded response; a closed connection
        raises ``ConnectionError`` (and the next request opens a new one)."""
        correlation_id, frame = self._frame(request, version)
        try:
            sock = self._socket()
            sock.sendall(frame)
            reply = self._read_frame(sock)
        except OSError:
            self.close()
            raise
        assert request.API_KEY is not None
        header, body = decode_response(reply, request.API_KEY, version, strict=True)
        assert isinstance(header, ResponseHeader)
        if header.correlation_id != correlation_id:
            raise AssertionError(f"correlation id {header.correlation_id}, expected {correlation_id}")
        return body

    def _read_frame(self, sock: socket.socket) -> bytes:
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"{self.address} closed the connection")
            data += chunk
        return data
