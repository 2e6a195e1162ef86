"""Which flavour the suite runs: the compiled extensions are in use exactly when they should be.

``tools/test_flavours.py`` (``make test``) runs the suite on the compiled flavour and the tests
where the flavours differ on the pure one, and tells each run what it must find in
``KAFKA_WIRE_EXPECT_FLAVOUR``: a compiled run that silently fell back to pure Python (a build that
failed to load, a missing ``librt``) fails here instead of passing as pure Python.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path

import pytest

import kafka_wire
from kafka_wire.codec import structs
from kafka_wire.codec.structs import Message
from kafka_wire.messages import CreateTopicsRequest, MetadataResponse
from kafka_wire.records import columnar, loops
from tools.build_backend import MYPYC
from tools.test_flavours import RECAP_LINES, WAITING, Output, waiting_run_args

PACKAGE = Path(kafka_wire.__file__).parent


def _active() -> dict[str, bool]:
    return {
        "records": loops.COMPILED,
        "messages": bool(MetadataResponse._native_decoders),
        "columnar": columnar.COMPILED,
    }


def _built() -> dict[str, bool]:
    return {
        "records": any(PACKAGE.glob("_compiled/records.*.so")),
        "messages": any(PACKAGE.glob("_compiled/messages/metadata.*.so")),
        "columnar": any(PACKAGE.glob("_compiled/columnar.*.so")),
    }


def test_the_expected_flavour_is_active() -> None:
    expected = os.environ.get("KAFKA_WIRE_EXPECT_FLAVOUR")
    if expected == "compiled":
        assert _active() == {"records": True, "messages": True, "columnar": True}
    elif expected == "pure":
        assert _active() == {"records": False, "messages": False, "columnar": False}
    else:  # a plain pytest run: compiled wherever it is built, unless KAFKA_WIRE_PURE says otherwise
        pure = bool(os.environ.get("KAFKA_WIRE_PURE"))
        assert _active() == {part: built and not pure for part, built in _built().items()}


def test_the_build_backend_pins_the_mypy_the_project_tests_with() -> None:
    assert [f"mypy=={version('mypy')}"] == MYPYC


def test_one_set_of_bases_for_both_flavours() -> None:
    """A compiled class and a pure one (a module that is not compiled) derive from the same
    ``Message``, with no metaclass: ``isinstance`` holds because it is true."""
    assert type(MetadataResponse) is type and type(CreateTopicsRequest) is type
    assert MetadataResponse.__mro__[1] is Message and CreateTopicsRequest.__mro__[1] is Message
    assert isinstance(MetadataResponse(), Message) and isinstance(CreateTopicsRequest(), Message)
    assert not CreateTopicsRequest._native_decoders  # not a hot module: it runs as Python
    base_file = Path(getattr(structs, "_base").__file__ or "")  # noqa: B009  # private, chosen at import
    assert base_file.suffix == (
        ".py" if os.environ.get("KAFKA_WIRE_PURE") or not _built()["messages"] else ".so"
    )


def test_the_runs_failures_are_printed_again_at_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    """CI shows the end of ``make test``'s output: what a run said of its failures is repeated
    there, after the last run, its last lines of each kind only."""
    output = Output()
    output.write("pure", "tests/a.py ...F\n")
    for n in range(RECAP_LINES + 2):
        output.write("pure", f"E   assert {n} == 0\n")
    output.write("compiled", "FAILED tests/b.py::test_b - AssertionError: no\n")
    output.write("pure", "FAILED tests/a.py::test_a - assert 13 == 0\n")
    capsys.readouterr()
    output.recap()
    assert capsys.readouterr().out.splitlines() == [
        *(f"test_flavours: recap [pure] E   assert {n} == 0" for n in range(2, RECAP_LINES + 2)),
        "test_flavours: recap [pure] FAILED tests/a.py::test_a - assert 13 == 0",
        "test_flavours: recap [compiled] FAILED tests/b.py::test_b - AssertionError: no",
    ]


def test_the_waiting_run_takes_the_named_tests_of_its_modules_only() -> None:
    """The other runs leave the waiting modules out, so the waiting run takes those of the named
    tests that are in them (and no others, which the other runs take)."""
    assert waiting_run_args(["--durations=5"]) == [*WAITING, "--durations=5"]
    assert waiting_run_args(["tests/codec", "-x"]) == []
    assert waiting_run_args(["tests/e2e/test_restart.py::test_a", "-x"]) == [
        "tests/e2e/test_restart.py::test_a",
        "-x",
    ]
    assert waiting_run_args(["tests/e2e"]) == [path for path in WAITING if path.startswith("tests/e2e/")]
    assert waiting_run_args(["tests"]) == WAITING
