"""Which flavour the suite runs: the compiled extensions are in use exactly when they should be.

``tools/test_flavours.py`` (``make test``) runs the suite twice and tells each run what it must
find in ``KAFKA_WIRE_EXPECT_FLAVOUR``: a compiled run that silently fell back to pure Python (a
build that failed to load, a missing ``librt``) fails here instead of passing as pure Python.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path

import kafka_wire
import kafka_wire.messages.metadata
from kafka_wire.codec import runtime
from kafka_wire.records import loops
from tools.build_backend import MYPYC

PACKAGE = Path(kafka_wire.__file__).parent


def _active() -> dict[str, bool]:
    return {"records": loops.COMPILED, "messages": runtime.NATIVE.enabled}


def _built() -> dict[str, bool]:
    return {
        "records": any(PACKAGE.glob("_compiled/records.*.so")),
        "messages": any(PACKAGE.glob("messages_native/metadata.*.so")),
    }


def test_the_expected_flavour_is_active() -> None:
    expected = os.environ.get("KAFKA_WIRE_EXPECT_FLAVOUR")
    if expected == "compiled":
        assert _active() == {"records": True, "messages": True}
    elif expected == "pure":
        assert _active() == {"records": False, "messages": False}
    else:  # a plain pytest run: compiled wherever it is built, unless KAFKA_WIRE_PURE says otherwise
        pure = bool(os.environ.get("KAFKA_WIRE_PURE"))
        assert _active() == {part: built and not pure for part, built in _built().items()}


def test_the_build_backend_pins_the_mypy_the_project_tests_with() -> None:
    assert [f"mypy=={version('mypy')}"] == MYPYC
