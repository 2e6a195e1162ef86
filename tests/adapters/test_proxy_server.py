"""The proxy's asyncio adapter under back-pressure: a client that pipelines requests and reads its
answers slowly, in small pieces, through an in-process :class:`ProxyServer` to a fake upstream
that answers with large frames. Every answer arrives, whole and in order: a socket paused for
back-pressure (the client's write buffer over its high-water mark pauses reading the upstream, and
the other way round) is always resumed."""

from __future__ import annotations

import asyncio
import random
import socket
import struct

from kafka_wire.adapters.proxy_server import ProxyServer, _Link
from kafka_wire.messages import ApiVersionsRequest, FetchRequest, RequestHeader, ResponseHeader
from kafka_wire.protocol.framing import encode_request, encode_response
from kafka_wire.protocol.server_config import api_versions_response
from kafka_wire.proxy.proxy import Proxy, ProxyConfig

_SIZE = struct.Struct(">i")
#: Fetch v12: flexible, and below v16 (no broker addresses): the proxy relays its answers as they
#: came, so the fake upstream's answer bodies need not decode.
FETCH_VERSION = 12
VERSIONS = {1: (4, FETCH_VERSION), 18: (0, 3)}


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readexactly(4)
    return head + await reader.readexactly(_SIZE.unpack(head)[0])


async def _upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers ApiVersions, and each Fetch with a frame of the size its client id asks for."""
    try:
        while True:
            frame = await _read_frame(reader)
            key, version, correlation_id = struct.unpack_from(">hhi", frame, 4)
            if key == 18:
                body = api_versions_response(VERSIONS)
                writer.write(encode_response(ResponseHeader(correlation_id=correlation_id), body, version))
            else:
                (n,) = struct.unpack_from(">h", frame, 12)  # the client id's length: the size asked
                client_id = frame[14 : 14 + n].decode()
                size = int(client_id)
                writer.write(_SIZE.pack(size + 5) + _SIZE.pack(correlation_id) + b"\x00" + bytes(size))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _fetch(correlation_id: int, size: int) -> bytes:
    header = RequestHeader(
        request_api_key=1,
        request_api_version=FETCH_VERSION,
        correlation_id=correlation_id,
        client_id=str(size),
    )
    return encode_request(header, FetchRequest(max_wait_ms=0), FETCH_VERSION)


async def _client(port: int, rng: random.Random, requests: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1024)
    try:
        header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=0, client_id="c")
        writer.write(encode_request(header, ApiVersionsRequest(), 3))
        await _read_frame(reader)
        sizes = [rng.choice((0, 10, 4096, 70_000, 300_000, 1_200_000)) for _ in range(requests)]
        for at in range(0, requests, 7):  # pipelined in bursts
            writer.write(b"".join(_fetch(1 + i, sizes[i]) for i in range(at, min(at + 7, requests))))
        for i, size in enumerate(sizes):
            got = bytearray()
            want = 4 + 5 + size
            while len(got) < want:  # small reads with pauses: the proxy's buffers fill up
                got += await reader.read(min(want - len(got), rng.choice((1, 500, 65536))))
                if rng.random() < 0.05:
                    await asyncio.sleep(0.002)
            assert struct.unpack_from(">ii", got) == (size + 5, 1 + i)
    finally:
        writer.close()


def test_slow_readers_get_every_answer_through_back_pressure() -> None:
    async def main() -> None:
        upstream = await asyncio.start_server(_upstream, "127.0.0.1", 0)
        upstream_port = upstream.sockets[0].getsockname()[1]
        server = ProxyServer(
            lambda allocate: Proxy(
                [("127.0.0.1", upstream_port, None)],
                [],
                ProxyConfig(max_buffered_bytes=100_000),
                allocate,
            )
        )
        await server.start()
        try:
            port = server.routes[0].port
            rng = random.Random(5)
            clients = [_client(port, random.Random(rng.getrandbits(32)), 60) for _ in range(4)]
            await asyncio.wait_for(asyncio.gather(*clients), 60)
        finally:
            await server.close()
            upstream.close()

    asyncio.run(main())


class _ClosingPair:
    """What :meth:`_Link.flush` reads of a pair that has just closed (its client went)."""

    must_close = True
    wants_client_data = False

    def upstream_data_to_send(self) -> bytes:
        return b""

    def client_data_to_send(self) -> bytes:
        return b""

    def take_effects(self) -> list[object]:
        return []

    def next_deadline_ms(self) -> None:
        return None


def test_a_new_brokers_port_is_served_when_the_connection_that_named_it_closes_at_once() -> None:
    """A response that names a new broker makes a route (its port bound at once); the adapter
    then listens on it in a task. The client whose response it was may close right away (a
    metadata probe does): its link's end must not cancel that task midway, or the port stays
    bound, clients connect to it and nothing ever answers them."""

    async def main() -> None:
        server = ProxyServer(lambda allocate: Proxy([("127.0.0.1", 9, None)], [], ProxyConfig(), allocate))
        await server.start()
        try:
            route = server.proxy.book.add("127.0.0.2", 9092)
            link = _Link(server, server.routes[0].port)
            link.pair = _ClosingPair()  # type: ignore[assignment]
            link.flush()  # the book has a new route: listen on it; the pair is over: shut the link
            assert link.done
            for _ in range(100):
                if route.port in server._servers:
                    break
                await asyncio.sleep(0.01)
            assert route.port in server._servers
            # Served: the proxy takes the connection, finds no broker at 127.0.0.2:9092 and closes
            # it (a port bound and not served would leave the client waiting).
            reader, writer = await asyncio.open_connection("127.0.0.1", route.port)
            assert await asyncio.wait_for(reader.read(), 10) == b""
            writer.close()
        finally:
            await server.close()

    asyncio.run(main())


def test_both_sockets_of_a_client_send_without_delay() -> None:
    """TCP_NODELAY on the client's socket (accepted from the proxy's listener, which asyncio
    leaves alone) and the upstream's: with Nagle's algorithm on the client's, an answer written
    while the client had not acknowledged the one before waited for its delayed ACK (about
    40 ms; the first single produce after a new producer's first through the proxy to Tansu)."""

    async def main() -> None:
        upstream = await asyncio.start_server(_upstream, "127.0.0.1", 0)
        upstream_port = upstream.sockets[0].getsockname()[1]
        server = ProxyServer(
            lambda allocate: Proxy([("127.0.0.1", upstream_port, None)], [], ProxyConfig(), allocate)
        )
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.routes[0].port)
            header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=0, client_id="c")
            writer.write(encode_request(header, ApiVersionsRequest(), 3))
            await asyncio.wait_for(_read_frame(reader), 10)  # answered: both sockets are up
            [link] = server._links
            for side in (link.client, link.up):
                assert side is not None and side.transport is not None
                sock = side.transport.get_extra_info("socket")
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0, side
            writer.close()
        finally:
            await server.close()
            upstream.close()

    asyncio.run(main())
