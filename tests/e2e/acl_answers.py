"""Raw requests as a SASL PLAIN user, and their answers reduced to what authorization decides:
every ``error_code`` (and ``*_error_code``) and authorized-operations field with its path, every list's length, and the names
that identify an entry. Used by ``test_acl_answers.py`` against kafka-wire serve and Apache
Kafka 4.4."""

from __future__ import annotations

import socket
from typing import Any

from kafka_wire.codec.structs import Message, Struct
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, ClientState, Response
from kafka_wire.protocol.sasl import PlainClient

#: The fields kept besides the error codes and list lengths: what names an entry.
NAMES = frozenset({"name", "topic", "group_id", "transactional_id", "key", "resource_name"})


class Session:
    """One SASL PLAIN connection, used a request at a time."""

    def __init__(self, address: tuple[str, int], user: str, password: str) -> None:
        self.sock = socket.create_connection(address, timeout=30)
        self.conn = ClientConnection(
            ClientConfig(client_id="kw-acl-answers"), sasl=PlainClient(user, password)
        )
        self.sock.sendall(self.conn.data_to_send())  # ApiVersions, then SASL: READY once authenticated
        while self.conn.state is not ClientState.READY:
            event = self.conn.next_event()
            self.sock.sendall(self.conn.data_to_send())  # the next SASL step, once read
            if event is NEED_DATA:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("closed before authenticating")
                self.conn.receive_data(data)

    def request(self, body: Message, version: int) -> Message | str:
        """The response body, or "closed" when the broker closed the connection."""
        try:
            self.sock.sendall(self.conn.send(body, version))
            while True:
                event = self.conn.next_event()
                self.sock.sendall(self.conn.data_to_send())
                if event is NEED_DATA:
                    data = self.sock.recv(65536)
                    if not data:
                        return "closed"
                    self.conn.receive_data(data)
                    out = self.conn.data_to_send()
                    if out:
                        self.sock.sendall(out)
                elif isinstance(event, Response) and event.api_key == body.API_KEY:
                    return event.body
        except (ConnectionError, OSError):
            return "closed"

    def close(self) -> None:
        self.sock.close()


def reduced(value: Any, path: str = "") -> dict[str, object]:
    """The error codes, list lengths and names of a response, by path."""
    out: dict[str, object] = {}
    if isinstance(value, Struct):
        for spec in type(value).FIELDS:
            field = getattr(value, spec.name)
            where = f"{path}.{spec.name}" if path else spec.name
            if spec.name.endswith(("error_code", "authorized_operations")):
                out[where] = field
            elif spec.name in NAMES and isinstance(field, str | type(None)):
                out[where] = field
            elif spec.name == "configs":  # which configs a topic has is not authorization's business
                out[f"{where} is null"] = field is None
            elif isinstance(field, list):
                out[f"{where}#"] = len(field)
                for i, item in enumerate(field):
                    out.update(reduced(item, f"{where}[{i}]"))
            elif isinstance(field, Struct):
                out.update(reduced(field, where))
    return out
