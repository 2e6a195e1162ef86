"""The writer of one broker connection: what the engine sends, in order, with ``sendfile`` for
file regions (copied through user space on a TLS connection, where the kernel cannot encrypt)."""

from __future__ import annotations

import asyncio
import logging
from typing import Final

#: The driver's logger: these lines are the driver's.
_log: Final = logging.getLogger("kafka_wire.adapters.broker_server")


async def write_loop(
    conn_id: int, writer: asyncio.StreamWriter, queue: asyncio.Queue[list[object] | None]
) -> None:
    """Write what the engine sends on one connection, in order, until ``None``; then close it.
    The files of regions never sent are closed."""
    loop = asyncio.get_running_loop()
    # TLS encrypts in user space: file regions are copied, not sent by the kernel.
    copy_region = None
    if writer.get_extra_info("ssl_object") is not None:
        from kafka_wire.adapters import tls

        copy_region = tls.copy_region
    try:
        while (parts := await queue.get()) is not None:
            if writer.transport.is_closing():  # the peer went away: drop what it was sent
                close_regions(parts)
                continue
            for index, part in enumerate(parts):
                if isinstance(part, bytes):
                    writer.write(part)
                elif isinstance(part, tuple):
                    file, offset, count = part
                    with file:
                        await writer.drain()
                        if writer.transport.is_closing():
                            close_regions(parts[index + 1 :])
                            break
                        if copy_region is not None:
                            await copy_region(writer, file, offset, count)
                        else:
                            await loop.sendfile(writer.transport, file, offset, count)
            await writer.drain()
    except (ConnectionError, OSError) as exc:
        _log.debug("connection %d: %s", conn_id, exc)
    finally:
        writer.close()
        while not queue.empty():  # close files of regions never sent
            close_regions(queue.get_nowait() or [])


def close_regions(parts: list[object]) -> None:
    for part in parts:
        if isinstance(part, tuple):
            part[0].close()
