"""SASL mechanism state machines: every (state, call) pair, and garbage into every legal step.

A call is legal exactly when its (state, call) pair is in the mechanism's transition table; an
illegal call raises LocalProtocolError and leaves the mechanism in ERROR, where every later call
fails too. A legal step with any bytes gives a token (or None on a client) or raises
AuthenticationError, never anything else.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.errors import AuthenticationError, LocalProtocolError
from kafka_wire.protocol.sasl import (
    OAUTHBEARER_CLIENT_TRANSITIONS,
    OAUTHBEARER_SERVER_TRANSITIONS,
    PLAIN_CLIENT_TRANSITIONS,
    PLAIN_SERVER_TRANSITIONS,
    SCRAM_CLIENT_TRANSITIONS,
    SCRAM_SERVER_TRANSITIONS,
    OAuthBearerClient,
    OAuthBearerClientInput,
    OAuthBearerClientState,
    OAuthBearerServer,
    OAuthBearerServerInput,
    OAuthBearerServerState,
    PlainClient,
    PlainClientInput,
    PlainClientState,
    PlainServer,
    PlainServerInput,
    PlainServerState,
    ScramClient,
    ScramClientInput,
    ScramClientState,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    ScramServerInput,
    ScramServerState,
)
from tests.protocol.test_sasl_mechanisms import (
    RFC_CLIENT_FINAL,
    RFC_CLIENT_FIRST,
    RFC_CLIENT_NONCE,
    RFC_SALT,
    RFC_SERVER_FINAL,
    RFC_SERVER_FIRST,
    RFC_SERVER_NONCE,
)

Mechanism = PlainClient | PlainServer | ScramClient | ScramServer | OAuthBearerClient | OAuthBearerServer
CALLS = ("initial_response", "step")
GOOD_OAUTH = b"n,,\x01auth=Bearer good\x01\x01"
BAD_OAUTH = b"n,,\x01auth=Bearer bad\x01\x01"
REFUSAL = b'{"status":"invalid_token"}'
_RFC_CREDENTIAL = ScramCredential.from_password(ScramMechanism.SHA_256, "pencil", RFC_SALT, 4096)


def _scram_client() -> ScramClient:
    return ScramClient(ScramMechanism.SHA_256, "user", "pencil", RFC_CLIENT_NONCE)


def _scram_server() -> ScramServer:
    return ScramServer(
        ScramMechanism.SHA_256, lambda name: _RFC_CREDENTIAL if name == "user" else None, RFC_SERVER_NONCE
    )


def _plain_server() -> PlainServer:
    return PlainServer(lambda user, password: (user, password) == ("alice", "secret"))


def _oauth_server() -> OAuthBearerServer:
    return OAuthBearerServer(lambda token, extensions: "alice" if token == "good" else None)


@dataclass(frozen=True)
class Kind:
    """One machine: how to make it, its table, and the calls that lead to each state."""

    name: str
    make: Callable[[], Mechanism]
    table: Mapping[tuple[enum.Enum, enum.Enum], enum.Enum]
    inputs: type[enum.Enum]
    paths: Mapping[enum.Enum, tuple[tuple[str, bytes], ...]]
    #: Tokens a legal step is fed in each state, besides random bytes: the valid next message.
    valid: Mapping[enum.Enum, bytes]

    @property
    def states(self) -> list[enum.Enum]:
        return list(self.paths)

    def reach(self, state: enum.Enum) -> Mechanism:
        machine = self.make()
        path = self.paths[state]
        for index, (call, token) in enumerate(path):
            if state.name == "ERROR" and index == len(path) - 1:
                with pytest.raises(AuthenticationError):
                    invoke(machine, call, token)
            else:
                invoke(machine, call, token)
        assert machine.state is state
        return machine

    @property
    def calls(self) -> tuple[str, ...]:
        return tuple(c for c in CALLS if c in {i.value for i in self.inputs})

    def legal(self, state: enum.Enum, call: str) -> bool:
        return (state, self.inputs(call)) in self.table

    def after(self, state: enum.Enum, call: str) -> set[enum.Enum]:
        """States a legal call may end in: its target, states internal moves reach from it, ERROR."""
        calls = {self.inputs(c) for c in self.calls}
        found = {self.table[state, self.inputs(call)]}
        frontier = set(found)
        while frontier:
            here = frontier.pop()
            for (source, move), target in self.table.items():
                if source is here and move not in calls and target not in found:
                    found.add(target)
                    frontier.add(target)
        return found | {next(s for s in self.paths if s.name == "ERROR")}


def invoke(machine: Mechanism, call: str, token: bytes) -> bytes | None:
    if call == "initial_response":
        if isinstance(machine, PlainServer | ScramServer | OAuthBearerServer):
            raise TypeError("servers have no initial_response")
        return machine.initial_response()
    return machine.step(token)


INIT, S = "initial_response", "step"
_SC, _SS = ScramClientState, ScramServerState
_PC, _PS = PlainClientState, PlainServerState
_OC, _OS = OAuthBearerClientState, OAuthBearerServerState

KINDS = [
    Kind(
        "scram-client",
        _scram_client,
        SCRAM_CLIENT_TRANSITIONS,  # type: ignore[arg-type]  # a concrete table as the generic mapping
        ScramClientInput,
        {
            _SC.INITIAL: (),
            _SC.AWAITING_SERVER_FIRST: ((INIT, b""),),
            _SC.AWAITING_SERVER_FINAL: ((INIT, b""), (S, RFC_SERVER_FIRST)),
            _SC.COMPLETE: ((INIT, b""), (S, RFC_SERVER_FIRST), (S, RFC_SERVER_FINAL)),
            _SC.ERROR: ((INIT, b""), (S, b"garbage")),
        },
        {_SC.AWAITING_SERVER_FIRST: RFC_SERVER_FIRST, _SC.AWAITING_SERVER_FINAL: RFC_SERVER_FINAL},
    ),
    Kind(
        "scram-server",
        _scram_server,
        SCRAM_SERVER_TRANSITIONS,  # type: ignore[arg-type]  # a concrete table as the generic mapping
        ScramServerInput,
        {
            _SS.AWAITING_CLIENT_FIRST: (),
            _SS.AWAITING_CLIENT_FINAL: ((S, RFC_CLIENT_FIRST),),
            _SS.COMPLETE: ((S, RFC_CLIENT_FIRST), (S, RFC_CLIENT_FINAL)),
            _SS.ERROR: ((S, b"garbage"),),
        },
        {_SS.AWAITING_CLIENT_FIRST: RFC_CLIENT_FIRST, _SS.AWAITING_CLIENT_FINAL: RFC_CLIENT_FINAL},
    ),
    Kind(
        "plain-client",
        lambda: PlainClient("alice", "secret"),
        PLAIN_CLIENT_TRANSITIONS,  # type: ignore[arg-type]  # a concrete table as the generic mapping
        PlainClientInput,
        {
            _PC.INITIAL: (),
            _PC.AWAITING_OUTCOME: ((INIT, b""),),
            _PC.COMPLETE: ((INIT, b""), (S, b"")),
            _PC.ERROR: ((INIT, b""), (S, b"x")),
        },
        {_PC.AWAITING_OUTCOME: b""},
    ),
    Kind(
        "plain-server",
        _plain_server,
        PLAIN_SERVER_TRANSITIONS,  # type: ignore[arg-type]  # a concrete table as the generic mapping
        PlainServerInput,
        {
            _PS.AWAITING_RESPONSE: (),
            _PS.COMPLETE: ((S, b"\x00alice\x00secret"),),
            _PS.ERROR: ((S, b"\x00alice\x00wrong"),),
        },
        {_PS.AWAITING_RESPONSE: b"\x00alice\x00secret"},
    ),
    Kind(
        "oauthbearer-client",
        lambda: OAuthBearerClient("tok"),
        OAUTHBEARER_CLIENT_TRANSITIONS,  # type: ignore[arg-type]  # a concrete table as the generic mapping
        OAuthBearerClientInput,
        {
            _OC.INITIAL: (),
            _OC.AWAITING_OUTCOME: ((INIT, b""),),
            _OC.REFUSED: ((INIT, b""), (S, REFUSAL)),
            _OC.COMPLETE: ((INIT, b""), (S, b"")),
            _OC.ERROR: ((INIT, b""), (S, REFUSAL), (S, b"")),
        },
        {_OC.AWAITING_OUTCOME: b""},
    ),
    Kind(
        "oauthbearer-server",
        _oauth_server,
        OAUTHBEARER_SERVER_TRANSITIONS,  # type: ignore[arg-type]  # a concrete table as the generic mapping
        OAuthBearerServerInput,
        {
            _OS.AWAITING_RESPONSE: (),
            _OS.REFUSED: ((S, BAD_OAUTH),),
            _OS.COMPLETE: ((S, GOOD_OAUTH),),
            _OS.ERROR: ((S, b"\x01"),),
        },
        {_OS.AWAITING_RESPONSE: GOOD_OAUTH, _OS.REFUSED: b"\x01"},
    ),
]
BY_NAME = {kind.name: kind for kind in KINDS}
PAIRS = [(kind.name, state, call) for kind in KINDS for state in kind.states for call in kind.calls]


def _is_server(kind: Kind) -> bool:
    return kind.name.endswith("server")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_tables_name_every_state_and_calls_match_methods(kind: Kind) -> None:
    state_type = type(kind.states[0])
    assert set(kind.paths) == set(state_type), "every state must be reachable in the sweep"
    sources = {source for source, _ in kind.table}
    targets = set(kind.table.values())
    error = state_type["ERROR"]
    assert error not in sources, "ERROR is terminal"
    assert sources | targets | {error} == set(state_type)
    assert state_type["COMPLETE"] not in sources, "COMPLETE is terminal"
    assert kind.calls == (("step",) if _is_server(kind) else ("initial_response", "step"))
    assert all(callable(getattr(kind.make(), call)) for call in kind.calls)


@pytest.mark.parametrize(("name", "state", "call"), PAIRS, ids=lambda v: getattr(v, "name", str(v)))
def test_every_state_and_call(name: str, state: enum.Enum, call: str) -> None:
    kind = BY_NAME[name]
    machine = kind.reach(state)
    token = kind.valid.get(state, b"")
    if kind.legal(state, call):
        try:
            invoke(machine, call, token)
        except AuthenticationError:
            assert machine.state.name == "ERROR"
        else:
            assert machine.state in kind.after(state, call) - {type(state)["ERROR"]}
    else:
        with pytest.raises(LocalProtocolError, match=f"in state {state.name}"):
            invoke(machine, call, token)
        assert machine.state.name == "ERROR"
        with pytest.raises(LocalProtocolError, match="in state ERROR"):
            invoke(machine, "step", token)


@given(pair=st.sampled_from(PAIRS), token=st.binary(max_size=80))
def test_random_state_call_and_token(pair: tuple[str, enum.Enum, str], token: bytes) -> None:
    """Hypothesis sweep: illegal calls raise LocalProtocolError and move to ERROR; legal ones
    return or raise AuthenticationError (then ERROR), and land only where the table allows."""
    name, state, call = pair
    kind = BY_NAME[name]
    machine = kind.reach(state)
    if not kind.legal(state, call):
        with pytest.raises(LocalProtocolError):
            invoke(machine, call, token)
        assert machine.state.name == "ERROR"
        return
    try:
        invoke(machine, call, token)
    except AuthenticationError:
        assert machine.state.name == "ERROR"
    else:
        assert machine.state in kind.after(state, call)
        assert machine.state.name != "ERROR"


# -- garbage into every legal step -----------------------------------------------------------------

STEP_STATES = [(kind.name, state) for kind in KINDS for state in kind.states if kind.legal(state, "step")]
# Text close to the real messages reaches deeper into the parsers than random bytes do.
NEAR_TEXT = st.text(alphabet='nypmarcsive=,\x01\x00 AaBb0123+/=%$éauthBearer{}":', max_size=60).map(
    str.encode
)


def _mutations(valid: bytes) -> st.SearchStrategy[bytes]:
    """The valid message with a slice replaced by random bytes."""

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        start = draw(st.integers(0, len(valid)))
        end = draw(st.integers(start, len(valid)))
        return valid[:start] + draw(st.binary(max_size=12)) + valid[end:]

    return mutate()


@st.composite
def garbage_cases(draw: st.DrawFn) -> tuple[str, enum.Enum, bytes]:
    name, state = draw(st.sampled_from(STEP_STATES))
    valid = BY_NAME[name].valid.get(state, b"")
    token = draw(st.one_of(st.binary(max_size=120), NEAR_TEXT, _mutations(valid)))
    return name, state, token


@given(garbage_cases())
def test_garbage_gives_a_token_or_authentication_error(case: tuple[str, enum.Enum, bytes]) -> None:
    name, state, token = case
    machine = BY_NAME[name].reach(state)
    try:
        reply = machine.step(token)
    except AuthenticationError as exc:
        assert machine.state.name == "ERROR"
        assert exc.reason
        if _is_server(BY_NAME[name]):
            assert exc.error_code == 58
    else:
        assert reply is None or isinstance(reply, bytes)
        assert machine.state.name != "ERROR"


@pytest.mark.parametrize(("name", "state"), STEP_STATES, ids=lambda v: getattr(v, "name", str(v)))
def test_each_byte_flip_of_a_valid_message_is_handled(name: str, state: enum.Enum) -> None:
    """Every single-byte corruption of each valid message: a token or AuthenticationError."""
    valid = BY_NAME[name].valid.get(state, b"")
    for i in range(len(valid)):
        for flip in (0x01, 0x80, 0xFF):
            corrupt = valid[:i] + bytes([valid[i] ^ flip]) + valid[i + 1 :]
            machine = BY_NAME[name].reach(state)
            try:
                machine.step(corrupt)
            except AuthenticationError:
                assert machine.state.name == "ERROR"
