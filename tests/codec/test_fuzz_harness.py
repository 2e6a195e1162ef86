"""The fuzz harness in fuzz/ holds its invariant on random input and on the golden captures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzz_decode import fuzz_one_input
from tests.conftest import CAPTURES


@given(st.binary(max_size=300))
def test_harness_random(data: bytes) -> None:
    fuzz_one_input(data)


def test_harness_seeds_from_captures() -> None:
    captures = sorted(CAPTURES.glob("*.hex"))
    assert len(captures) >= 50
    for path in captures:
        frame = bytes.fromhex(path.read_text().strip())
        for first in range(0, 95, 7):
            fuzz_one_input(bytes([first, 3]) + frame)
            fuzz_one_input(bytes([first, 3]) + frame[4:])
