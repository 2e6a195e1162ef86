"""The accept loop of :mod:`kafka_wire.adapters.acceptor` closes a connection it took just before
it was cancelled (a server stopping while a client connects): ``make test`` once failed at the
end of its cluster run on such a socket, left unclosed in a stopping in-process node."""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings

from kafka_wire.adapters.acceptor import Acceptors
from kafka_wire.broker.quotas.connection_rate import ConnectionRates


def _rates() -> ConnectionRates:
    return ConnectionRates(window_num=11, window_size_seconds=1)


async def _cancel_between_accept_and_resume(listener: socket.socket) -> tuple[list[object], socket.socket]:
    served: list[object] = []
    acceptors = Acceptors(_rates(), lambda conn, name, tls: served.append(conn))
    task = asyncio.create_task(acceptors.accept(listener, "PLAINTEXT", None))
    await asyncio.sleep(0)  # the task now waits for a connection
    client = socket.create_connection(listener.getsockname())  # the kernel completes it at once
    # The loop runs its ready callbacks in order: this coroutine's wake-up was queued before the
    # listener's readiness was seen, so the reader (the accept) runs after it in this turn and the
    # accept loop's wake-up comes in the next turn, after this coroutine's next one.
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()  # the connection is taken; the accept loop has not resumed yet
    try:
        await task
    except asyncio.CancelledError:
        pass
    return served, client


def test_a_connection_taken_as_the_accept_loop_is_cancelled_is_closed() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        served, client = asyncio.run(_cancel_between_accept_and_resume(listener))
        gc.collect()
    listener.close()
    client.settimeout(5)
    try:
        assert served == []  # cancelled before it was handed on
        assert client.recv(1) == b""  # the server's side closed it
    finally:
        client.close()
    unclosed = [w for w in caught if issubclass(w.category, ResourceWarning) and "socket" in str(w.message)]
    assert unclosed == []
