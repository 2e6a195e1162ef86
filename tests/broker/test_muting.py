"""Per-connection muting (``broker/muting.py``): its table, and the per-call request limit as a
client sees it."""

from __future__ import annotations

import itertools

import pytest

from kafka_wire.broker.effects import PauseReading, ResumeReading
from kafka_wire.broker.muting import MUTE_TRANSITIONS, REQUESTS_PER_CALL, MuteInput, MuteState
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import MetadataRequest, MetadataResponse
from kafka_wire.protocol import ClientConfig, ClientConnection
from kafka_wire.protocol.machine import step
from tests.broker.engine import Client, Engine


def test_the_muting_table() -> None:
    """Every pair the table lacks is refused; every state is reachable; a connection closing
    (after its answers, or after a failed authentication) is never read again."""
    for state, move in itertools.product(MuteState, MuteInput):
        target = MUTE_TRANSITIONS.get((state, move))
        if target is None:
            with pytest.raises(LocalProtocolError):
                step(MUTE_TRANSITIONS, state, move, machine="muting")
        else:
            assert step(MUTE_TRANSITIONS, state, move, machine="muting") is target
    reachable = {MuteState.READING}
    for _ in MuteState:
        reachable |= {t for (s, _), t in MUTE_TRANSITIONS.items() if s in reachable}
    assert reachable == set(MuteState)
    final = (MuteState.CLOSING, MuteState.AUTHENTICATION_DELAY)
    assert all(t is s for (s, _), t in MUTE_TRANSITIONS.items() if s in final)


def _pipelining(engine: Engine, count: int) -> Client:
    """Connection 1 of ``engine``: a client that sent ``count`` Metadata requests in one go."""
    client = Client(engine, 1, negotiate=False)
    client.conn = ClientConnection(ClientConfig(negotiate=False, max_in_flight=count))
    engine.feed(1, b"".join(client.conn.send(MetadataRequest(topics=[]), 12) for _ in range(count)))
    return client


def test_a_call_decodes_at_most_requests_per_call_and_the_rest_follow_at_once() -> None:
    engine = Engine()
    client = _pipelining(engine, 2 * REQUESTS_PER_CALL + 10)
    assert len(client.responses()) == REQUESTS_PER_CALL
    assert 1 in engine.paused
    assert engine.broker.next_deadline_ms() == engine.now_ms  # the rest are due at once
    engine.tick()
    assert len(client.responses()) == REQUESTS_PER_CALL and 1 in engine.paused
    engine.tick()
    answers = client.responses()
    assert len(answers) == 10 and all(isinstance(a.body, MetadataResponse) for a in answers)
    assert 1 not in engine.paused
    pauses = [e for e in engine.log if isinstance(e, PauseReading | ResumeReading)]
    assert pauses == [PauseReading(1), ResumeReading(1)]


def test_requests_left_over_from_a_call_go_on_at_a_tick_not_in_other_connections_calls() -> None:
    """Each connection of another client that opens, sends and closes is three engine calls; none
    of them reads on from a connection left over from an earlier call (else a driver serving many
    short connections would handle 64 pipelined requests per call, seconds per loop iteration)."""
    engine = Engine()
    client = _pipelining(engine, REQUESTS_PER_CALL + 10)
    assert len(client.responses()) == REQUESTS_PER_CALL and 1 in engine.paused
    for conn_id in range(2, 6):
        other = Client(engine, conn_id, negotiate=False)
        other.conn = ClientConnection(ClientConfig(negotiate=False))
        engine.feed(conn_id, other.conn.send(MetadataRequest(topics=[]), 12))
        assert len(other.responses()) == 1
        engine.close(conn_id)
    assert client.responses() == [] and 1 in engine.paused
    engine.tick()
    assert len(client.responses()) == 10 and 1 not in engine.paused
