"""The only part of kafka_wire that does I/O: sockets (asyncio) and, later, file storage."""
