"""What the engine keeps per client connection and per answer.

A :class:`Channel` is one connection (Kafka's ``KafkaChannel``): its protocol state machine, peer
address, principal and whether its reading is paused. An :class:`Answer` is a response built
during a call and released once the call's writes have succeeded; a :class:`Held` request waits
for data or for its job to finish.
"""

from __future__ import annotations

from kafka_wire import messages
from kafka_wire.broker.state import Spliced, Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.protocol.events import Request
from kafka_wire.protocol.server import ServerConnection
from kafka_wire.quick_dataclass import dataclass


@dataclass(slots=True)
class Channel:
    """One client connection as the engine keeps it."""

    server: ServerConnection
    host: str
    principal: str = ""
    #: Its SASL login was a delegation token's (``kafka_wire.broker.token_auth``).
    token_authenticated: bool = False
    #: The listener it came in on (``listeners``' name).
    listener: str = "PLAINTEXT"
    #: The client id of its latest request (its handling time counts against that client's quota).
    client_id: str = ""
    #: The driver was told to stop reading (``PauseReading``) and not yet to resume.
    paused: bool = False
    #: Answers built for it and not yet released (they wait for the end of the call, or for its
    #: writes): their requests are answered as far as reading on is concerned.
    unreleased: int = 0
    #: Requests that get no answer (acks=0 produces) still held: the connection reads on only
    #: once they are done, as Kafka mutes a channel until its request is handled.
    silent_held: int = 0

    @property
    def unanswered(self) -> bool:
        """A request of this connection is still held (Fetch waiting, a group join, an acks=0
        produce in slices ...)."""
        return self.server.responses_owed > self.unreleased or self.silent_held > 0


@dataclass(frozen=True, slots=True)
class Answer:
    """A response built during an engine call, sent when the call's writes have succeeded."""

    conn_id: int
    request: Request
    body: Message | Spliced
    #: Over a client quota: the connection is muted this long once the answer is out (KIP-219).
    throttle_ms: int = 0


@dataclass(slots=True)
class Held:
    """A request held until it can be answered (see ``Waiting``)."""

    conn_id: int
    request: Request
    waiting: Waiting


def failed_without_answer(request: Request, body: object) -> bool:
    """An acks=0 produce (no answer is sent) in which a partition failed."""
    return (
        not request.expects_response  # first: the other answers leave the Produce classes unloaded
        and isinstance(body, messages.ProduceResponse)
        and any(p.error_code for t in body.responses for p in t.partition_responses)
    )
