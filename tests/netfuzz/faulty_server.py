"""A tiny Kafka-speaking server for the network fuzzer's tests, with one fault switched on.

It advertises ApiVersions, Metadata and Produce, answers each request with a default response
of its version, closes on anything it cannot decode or does not advertise (as Kafka does), and
misbehaves on Metadata (or acks=0 Produce) as ``fault`` says.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from typing import Final, Literal

from kafka_wire.errors import KafkaWireError
from kafka_wire.messages import (
    RESPONSES,
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ProduceRequest,
    ResponseHeader,
)
from kafka_wire.protocol.framing import decode_request_frame, encode_response

Fault = Literal["none", "close", "hang", "wrong-cid", "malformed", "acks0", "reorder", "die"]
FAULTS: Final[tuple[Fault, ...]] = ("close", "hang", "wrong-cid", "malformed", "acks0", "reorder", "die")
ADVERTISED: Final[dict[int, tuple[int, int]]] = {
    ApiKey.API_VERSIONS: (0, max(ApiVersionsRequest.VERSIONS)),
    ApiKey.METADATA: (0, 9),
    ApiKey.PRODUCE: (3, 8),
}
_SIZE: Final = struct.Struct(">i")


class _Handler(socketserver.BaseRequestHandler):
    server: FaultyServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        buffer = bytearray()
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            frames = []
            while len(buffer) >= 4:
                (size,) = _SIZE.unpack_from(buffer, 0)
                if size < 0 or size > 1 << 20:
                    return
                if len(buffer) < 4 + size:
                    break
                frames.append(bytes(buffer[: 4 + size]))
                del buffer[: 4 + size]
            answers: list[bytes] = []
            for frame in frames:
                answer = self.answer(frame)
                if answer is None:
                    break
                answers.extend(answer)
            else:
                if self.server.fault == "reorder" and len(answers) > 1:
                    answers.reverse()
                if self.server.fault == "die" and self.server.dead.is_set():
                    return
                sock.sendall(b"".join(answers))
                continue
            sock.sendall(b"".join(answers))  # what came before the frame that closes
            return

    def answer(self, frame: bytes) -> list[bytes] | None:
        """The answer frames to one request; None to close the connection."""
        fault = self.server.fault
        try:
            decoded = decode_request_frame(frame, strict=True)
        except KafkaWireError:
            return None
        header, body = decoded.header, decoded.body
        key, version, cid = header.request_api_key, header.request_api_version, header.correlation_id
        lo, hi = ADVERTISED.get(key, (0, -1))
        if not lo <= version <= hi:
            return None
        if key == ApiKey.API_VERSIONS:
            keys = [
                ApiVersionsResponseApiVersion(api_key=k, min_version=a, max_version=b)
                for k, (a, b) in ADVERTISED.items()
            ]
            return [
                encode_response(
                    ResponseHeader(correlation_id=cid), ApiVersionsResponse(api_keys=keys), version
                )
            ]
        response = encode_response(ResponseHeader(correlation_id=cid), RESPONSES[key](), version)
        if isinstance(body, ProduceRequest) and body.acks == 0:
            return [response] if fault == "acks0" else []
        if key != ApiKey.METADATA or fault in ("none", "acks0", "reorder"):
            return [response]
        if fault == "close":
            return None
        if fault == "hang":
            return []
        if fault == "wrong-cid":
            return [encode_response(ResponseHeader(correlation_id=cid + 1), RESPONSES[key](), version)]
        if fault == "malformed":
            cut = response[:-1]
            return [_SIZE.pack(len(cut) - 4) + cut[4:]]
        # die: the whole server goes away
        self.server.dead.set()
        threading.Thread(target=self.server.shutdown, daemon=True).start()
        self.server.socket.shutdown(socket.SHUT_RDWR)  # stop listening now (close waits for the poll)
        self.server.socket.close()
        return None


class FaultyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fault: Fault, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.fault = fault
        self.dead = threading.Event()
        host, port = self.socket.getsockname()[:2]
        self._address = f"{host}:{port}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return self._address

    def __enter__(self) -> FaultyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.dead.is_set():
            self.shutdown()
        self.server_close()
