"""The outcome of a burst of requests: what the server did, and which of it is a finding.

:class:`BurstCheck` is told what came back, frame by frame, then a close, a timeout or nothing
more; it says when it has seen enough (``done``) and what it found. The rules:

- **crash**: the server closed the connection while a *valid* request (an advertised API at an
  advertised version, not mutated) was unanswered, and no Produce with acks=0 came before it
  (Kafka closes the connection when such a produce fails); or a new connection is refused afterwards
  (the server is gone: the adapter reports that with :meth:`BurstCheck.server_gone`).
- **hang**: no answer within the timeout to a valid request that needs one.
- **malformed-response**: our decoder rejects the answer to a valid request.
- **wrong-correlation-id**: an answer whose correlation id matches no request in flight.
- **protocol-violation**: an answer to a Produce with acks=0, or answers out of order.

A close or a silence after a mutated or unadvertised request is what Kafka does with garbage:
it is counted (:attr:`BurstCheck.outcome`), not reported.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kafka_wire.errors import KafkaWireError
from kafka_wire.messages import REQUESTS
from kafka_wire.netfuzz.plan import Sent
from kafka_wire.protocol.framing import decode_response

_SIZE: Final = struct.Struct(">i")


class FindingKind(enum.StrEnum):
    CRASH = "crash"
    HANG = "hang"
    MALFORMED_RESPONSE = "malformed-response"
    WRONG_CORRELATION_ID = "wrong-correlation-id"
    PROTOCOL_VIOLATION = "protocol-violation"


class Outcome(enum.StrEnum):
    """How a burst ended (the counters of the summary)."""

    ANSWERED = "answered"
    #: The server closed after a mutated or unadvertised request (Kafka's answer to garbage).
    CLOSED_AFTER_INVALID = "closed after invalid request"
    #: No answer to a mutated or unadvertised request within the timeout.
    SILENT_AFTER_INVALID = "silent after invalid request"
    #: The server closed after a Produce with acks=0 (Kafka's way to tell such a producer that
    #: its request failed), every request before it answered.
    CLOSED_AFTER_ACKS_ZERO = "closed after acks=0 produce"
    #: A mutated frame whose size prefix does not match its length: sent, then the connection
    #: was closed without waiting (the server rightly waits for the rest).
    INCOMPLETE_SENT = "incomplete frame sent"
    FINDING = "finding"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One finding: its kind, one line of detail, and the request it is about (its index in
    the burst)."""

    kind: FindingKind
    detail: str
    index: int
    #: A crash seen as a refused new connection (the server process is gone).
    server_gone: bool = False


def api_name(api_key: int) -> str:
    cls = REQUESTS.get(api_key)
    return cls.__name__.removesuffix("Request") if cls is not None else f"api {api_key}"


def describe(sent: Sent) -> str:
    return f"{api_name(sent.api_key)} v{sent.api_version} ({sent.kind.value})"


class BurstCheck:
    """Checks the answers to one burst; feed it ``on_frame`` / ``on_close`` / ``on_timeout``
    until ``done``."""

    def __init__(self, burst: Sequence[Sent]) -> None:
        self.burst = list(burst)
        #: Indexes into burst of the requests awaiting an answer, oldest first.
        self.pending = [i for i, s in enumerate(burst) if s.expects_response and s.size_consistent]
        self.acks_zero = {s.correlation_id: i for i, s in enumerate(burst) if s.acks_zero and s.valid}
        self.verdict: Verdict | None = None
        self.outcome: Outcome | None = None
        if any(not s.size_consistent for s in burst):
            self.outcome = Outcome.INCOMPLETE_SENT
        elif not self.pending:
            self.outcome = Outcome.ANSWERED

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def connection_usable(self) -> bool:
        """Whether later requests may follow on this connection."""
        return self.outcome is Outcome.ANSWERED

    def _find(self, kind: FindingKind, detail: str, index: int) -> None:
        self.verdict = Verdict(kind, detail, index)
        self.outcome = Outcome.FINDING

    def on_frame(self, frame: bytes) -> None:
        """A size-prefixed response frame arrived."""
        assert not self.done, "the burst is already decided"
        if len(frame) < 8:
            index = self.pending[0]
            if self.burst[index].valid:
                self._find(
                    FindingKind.MALFORMED_RESPONSE,
                    f"a {len(frame) - 4}-byte response has no correlation id",
                    index,
                )
            else:
                self.outcome = Outcome.ANSWERED
            return
        (cid,) = _SIZE.unpack_from(frame, 4)
        if cid in self.acks_zero:
            index = self.acks_zero[cid]
            self._find(
                FindingKind.PROTOCOL_VIOLATION,
                f"a response (correlation id {cid}) to a Produce with acks=0",
                index,
            )
            return
        # A mutated or unadvertised request may get no answer (it may have become an acks=0
        # produce): an answer to a later request means it got none.
        while (
            len(self.pending) > 1
            and not self.burst[self.pending[0]].valid
            and cid != self.burst[self.pending[0]].correlation_id
            and any(self.burst[i].correlation_id == cid for i in self.pending[1:])
        ):
            self.pending.pop(0)
        index = self.pending[0]
        sent = self.burst[index]
        if sent.correlation_id is not None and cid != sent.correlation_id:
            later = [i for i in self.pending[1:] if self.burst[i].correlation_id == cid]
            if later:
                self._find(
                    FindingKind.PROTOCOL_VIOLATION,
                    f"the response to request {later[0]} ({describe(self.burst[later[0]])}) came before "
                    f"the response to request {index} ({describe(sent)})",
                    later[0],
                )
            else:
                self._find(
                    FindingKind.WRONG_CORRELATION_ID,
                    f"response correlation id {cid}, expected {sent.correlation_id} for {describe(sent)}",
                    index,
                )
            return
        if sent.valid:
            try:
                decode_response(frame, sent.api_key, sent.api_version)
            except KafkaWireError as exc:
                self._find(FindingKind.MALFORMED_RESPONSE, f"response to {describe(sent)}: {exc}", index)
                return
        self.pending.pop(0)
        if not self.pending:
            self.outcome = Outcome.ANSWERED

    def on_unreadable(self, reason: str) -> None:
        """The response stream cannot be framed (a negative or oversized size prefix)."""
        assert not self.done, "the burst is already decided"
        index = self.pending[0]
        if self.burst[index].valid:
            self._find(
                FindingKind.MALFORMED_RESPONSE, f"response to {describe(self.burst[index])}: {reason}", index
            )
        else:
            self.outcome = Outcome.CLOSED_AFTER_INVALID

    def on_close(self) -> None:
        """The server closed (or reset) the connection before every answer came."""
        assert not self.done, "the burst is already decided"
        valid = [i for i in self.pending if self.burst[i].valid]
        if valid and any(not s.valid for s in self.burst[: valid[0]]):
            self.outcome = Outcome.CLOSED_AFTER_INVALID  # the sentinel after a mutated request
        elif valid and any(s.acks_zero for s in self.burst[: valid[0]]):
            self.outcome = Outcome.CLOSED_AFTER_ACKS_ZERO
        elif valid:
            self._find(
                FindingKind.CRASH,
                f"the server closed the connection with {describe(self.burst[valid[0]])} unanswered",
                valid[0],
            )
        else:
            self.outcome = Outcome.CLOSED_AFTER_INVALID

    def on_timeout(self, timeout_ms: int) -> None:
        """Nothing more came within the timeout."""
        assert not self.done, "the burst is already decided"
        index = self.pending[0]
        if any(not s.valid for s in self.burst[:index]):
            self.outcome = Outcome.SILENT_AFTER_INVALID  # the sentinel after a mutated request
        elif self.burst[index].valid:
            self._find(
                FindingKind.HANG,
                f"no response to {describe(self.burst[index])} within {timeout_ms} ms",
                index,
            )
        else:
            self.outcome = Outcome.SILENT_AFTER_INVALID

    def server_gone(self) -> None:
        """After this burst's connection ended, a new connection was refused."""
        index = self.verdict.index if self.verdict is not None else len(self.burst) - 1
        self.verdict = Verdict(
            FindingKind.CRASH,
            f"the server is gone: a new connection was refused after {describe(self.burst[index])}",
            index,
            server_gone=True,
        )
        self.outcome = Outcome.FINDING
