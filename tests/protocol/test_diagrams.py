from __future__ import annotations

from kafka_wire.protocol.diagrams import DOC, document
from tests.conftest import ROOT


def test_state_diagrams_are_up_to_date() -> None:
    assert (ROOT / DOC).read_text(encoding="utf-8") == document(), "run: python -m kafka_wire.protocol.diagrams"
