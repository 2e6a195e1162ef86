"""The send side of a :class:`~kafka_wire.protocol.server.ServerConnection`: the responses it owes,
one slot per request in arrival order, released in that order whatever order they are answered
in, and the splices of zero-copy responses. Pure: bytes in, bytes (and opaque parts) out.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import field
from typing import Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.protocol.events import Response
from kafka_wire.protocol.frames import Buffer
from kafka_wire.quick_dataclass import dataclass

_SIZE: Final = struct.Struct(">i")


@dataclass(slots=True)
class ResponseSlot:
    """One response owed, in arrival order; ``data`` is None until it is ready."""

    correlation_id: int
    api_key: int
    api_version: int
    request: Message | None
    #: The encoded response: bytes, and opaque parts standing for bytes (file regions) when it
    #: was built with :meth:`ServerConnection.send_spliced`.
    data: tuple[object, ...] | None = None
    #: A request passed through undecoded (``request`` is None, yet it is supported).
    raw: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Splice:
    """Parts that take the place of one records payload when a response is encoded (zero-copy
    fetch): bytes, and objects standing for bytes, such as file regions a driver sends with
    ``sendfile``, ``size`` bytes in all.

    Put :attr:`placeholder` (``size`` bytes, never copied or sent) in the records field; the
    encoder records where each records payload lands, and :meth:`ServerConnection.send_spliced`
    cuts the frame at this one's position, so every length prefix is already right.
    """

    size: int
    parts: tuple[object, ...]
    placeholder: bytes = field(init=False)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a splice stands for at least one byte")
        object.__setattr__(self, "placeholder", bytes(self.size))  # calloc'd: pages never touched


class ResponseQueue:
    """The responses one server connection owes, in request order (see the module docstring)."""

    __slots__ = ("owed", "slots")

    def __init__(self) -> None:
        self.slots: deque[ResponseSlot] = deque()
        #: Slots without their response yet (kept as a count: servers ask after every request).
        self.owed = 0

    def __len__(self) -> int:
        return len(self.slots)

    def expect(
        self,
        correlation_id: int,
        api_key: int,
        api_version: int,
        request: Message | None,
        *,
        raw: bool = False,
    ) -> None:
        """A request that awaits its response (``request`` None: unsupported, or ``raw``)."""
        self.slots.append(ResponseSlot(correlation_id, api_key, api_version, request, raw=raw))
        self.owed += 1

    def answered(
        self, correlation_id: int, api_key: int, api_version: int, request: Message | None, data: bytes
    ) -> None:
        """A request the connection answered itself (SASL): its response is ready."""
        self.slots.append(ResponseSlot(correlation_id, api_key, api_version, request, (data,)))

    def unanswered(self) -> tuple[Message, ...]:
        """The decoded requests still awaiting their responses, in arrival order."""
        return tuple(s.request for s in self.slots if s.data is None and s.request is not None)

    # -- finding the slot an answer fills ------------------------------------------------------

    def _pending(self, correlation_id: int) -> ResponseSlot | None:
        return next((s for s in self.slots if s.correlation_id == correlation_id and s.data is None), None)

    def for_response(self, response: Response) -> ResponseSlot:
        """The slot ``response`` answers; :class:`LocalProtocolError` when none awaits it or it
        answers another api or version."""
        slot = self._pending(response.correlation_id)
        if slot is None:
            raise LocalProtocolError(
                f"no request with correlation id {response.correlation_id} awaits a response"
            )
        if (response.api_key, response.api_version) != (slot.api_key, slot.api_version) or (
            response.body.API_KEY != slot.api_key
        ):
            raise LocalProtocolError(
                f"correlation id {slot.correlation_id} asked api {slot.api_key} v{slot.api_version}; "
                f"got {type(response.body).__name__} v{response.api_version}"
            )
        return slot

    def for_raw(self, correlation_id: int) -> ResponseSlot:
        """The slot of a supported request (decoded or passed through) with ``correlation_id``."""
        slot = self._pending(correlation_id)
        if slot is None or (slot.request is None and not slot.raw):
            raise LocalProtocolError(f"no request with correlation id {correlation_id} awaits a response")
        return slot

    def for_unsupported(self, correlation_id: int) -> ResponseSlot:
        """The slot of an unsupported request with ``correlation_id``."""
        slot = self._pending(correlation_id)
        if slot is None or slot.request is not None or slot.raw:
            raise LocalProtocolError(
                f"no unsupported request with correlation id {correlation_id} is pending"
            )
        return slot

    # -- answering -----------------------------------------------------------------------------

    def fill(self, slot: ResponseSlot, data: tuple[object, ...]) -> None:
        """``slot``'s response is ready: bytes, and parts standing for bytes."""
        slot.data = data
        self.owed -= 1

    def fill_raw(self, slot: ResponseSlot, frame: Buffer) -> None:
        """``slot``'s response is the whole frame ``frame``, its correlation id field replaced."""
        if len(frame) < 8 or _SIZE.unpack_from(frame, 0)[0] != len(frame) - 4:
            raise LocalProtocolError("send_raw takes one whole size-prefixed response frame")
        with memoryview(frame) as view:  # one copy of the frame, its correlation id replaced
            self.fill(slot, (b"".join((view[:4], _SIZE.pack(slot.correlation_id), view[8:])),))

    def drop(self, slot: ResponseSlot) -> None:
        """``slot`` gets no response (the connection closes)."""
        self.slots.remove(slot)
        self.owed -= 1

    # -- output --------------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Responses that are ready, in request order, up to the first spliced one."""
        count = 0
        for slot in self.slots:
            if slot.data is None or not all(isinstance(part, bytes) for part in slot.data):
                break
            count += 1
        return b"".join(part for data in self._take(count) for part in data if isinstance(part, bytes))

    def parts_to_send(self) -> list[object]:
        """Responses that are ready, spliced parts kept: adjacent bytes are joined."""
        count = 0
        for slot in self.slots:
            if slot.data is None:
                break
            count += 1
        parts: list[object] = []
        for data in self._take(count):
            for part in data:
                if isinstance(part, bytes) and parts and isinstance(parts[-1], bytes):
                    parts[-1] += part
                else:
                    parts.append(part)
        return parts

    def _take(self, count: int) -> list[tuple[object, ...]]:
        taken = []
        for _ in range(count):
            data = self.slots.popleft().data
            assert data is not None
            taken.append(data)
        return taken
