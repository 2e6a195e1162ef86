"""``kafka_wire.quick_dataclass.dataclass`` makes the classes ``dataclasses.dataclass`` makes.

Every module that uses it is run a second time with the standard decorator in its place, and each
class of both runs is compared: fields, slots, ``__match_args__``, docstring, the signature of
``__init__``, and what the methods do with the same arguments (construction, ``__post_init__``'s
refusals, repr, equality, hashing, frozen assignment, ``replace``, copying). Small classes cover
the cases the modules do not (a field named ``self``, methods a class writes itself, a default
factory with ``init=False``, recursion in ``repr``), and the generated module must be current.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

import kafka_wire
from kafka_wire import quick_dataclass
from kafka_wire.codegen.generate import GENERATOR_VERSION, QUICK_DATACLASS_METHODS
from kafka_wire.codegen.quick_dataclass import generate, modules
from kafka_wire.quick_dataclass import dataclass

PACKAGE = Path(kafka_wire.__file__).parent


def test_generated_module_is_current() -> None:
    assert QUICK_DATACLASS_METHODS.read_text("utf-8") == generate(PACKAGE, GENERATOR_VERSION)


def _standard_twin(name: str) -> ModuleType:
    """Module ``name`` run again, under another name, with ``dataclasses.dataclass`` as its decorator."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    twin_spec = importlib.util.spec_from_file_location(f"_standard_twin.{name}", spec.origin)
    assert twin_spec is not None and twin_spec.loader is not None
    twin = importlib.util.module_from_spec(twin_spec)
    sys.modules[twin_spec.name] = twin
    namespace = vars(quick_dataclass)
    saved = namespace["dataclass"]
    namespace["dataclass"] = dataclasses.dataclass  # what the twin's ``from ... import dataclass`` reads
    try:
        twin_spec.loader.exec_module(twin)
    finally:
        namespace["dataclass"] = saved
        del sys.modules[twin_spec.name]
    return twin


def _arguments(cls: type) -> Iterator[dict[str, Any]]:
    """Keyword arguments for ``cls``: the required fields given distinct ints, then all the
    fields with an ``__init__`` parameter given them."""
    init = [f for f in dataclasses.fields(cls) if f.init]
    required = {
        f.name: 1000 + i
        for i, f in enumerate(init)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    yield required
    yield {f.name: 2000 + i for i, f in enumerate(init)}


def _unplaced(text: str | None) -> str | None:
    """``text`` without object addresses and the twin's module prefix (a default's repr may show them)."""
    return None if text is None else re.sub(r" at 0x[0-9a-f]+", "", text).replace("_standard_twin.", "")


def _written_by(cls: type) -> set[str]:
    """The methods of ``cls`` its class body wrote (not dataclasses: those are compiled from ``<string>``)."""
    return {
        name
        for name, value in vars(cls).items()
        if callable(value)
        and getattr(getattr(value, "__code__", None), "co_filename", "<string>") != "<string>"
    }


def _outcome(make: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "made", make()
    except Exception as exc:  # __post_init__ refusing an int where it checks a value
        return "raised", type(exc).__name__


def _compare_class(quick: type, standard: type) -> None:
    assert [
        (f.name, f.init, f.repr, f.compare, f.hash, f.kw_only, f.type) for f in dataclasses.fields(quick)
    ] == [
        (f.name, f.init, f.repr, f.compare, f.hash, f.kw_only, f.type) for f in dataclasses.fields(standard)
    ]
    for attribute in ("__slots__", "__match_args__"):
        assert getattr(quick, attribute, None) == getattr(standard, attribute, None), attribute
    for f in dataclasses.fields(quick):  # what the class keeps of each field (a default, or nothing)
        kept = _unplaced(repr(getattr(quick, f.name, None)))
        assert kept == _unplaced(repr(getattr(standard, f.name, None))), f.name
    assert _unplaced(quick.__doc__) == _unplaced(standard.__doc__)
    assert _unplaced(str(inspect.signature(quick))) == _unplaced(str(inspect.signature(standard)))
    q_params, s_params = quick.__dataclass_params__, standard.__dataclass_params__  # type: ignore[attr-defined]
    for flag in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(q_params, flag) == getattr(s_params, flag), flag
    assert (quick.__hash__ is None) == (standard.__hash__ is None)
    for kwargs in _arguments(quick):
        q_kind, q = _outcome(functools.partial(quick, **kwargs))
        s_kind, s = _outcome(functools.partial(standard, **kwargs))
        assert q_kind == s_kind, (quick, kwargs, q, s)
        if q_kind == "raised":
            assert q == s
            continue
        assert _unplaced(repr(q)) == _unplaced(repr(s))
        for f in dataclasses.fields(quick):
            # Values from the twin module are its own (its enums, its classes): compared by repr.
            assert _unplaced(repr(getattr(q, f.name))) == _unplaced(repr(getattr(s, f.name)))
        again, s_again = quick(**kwargs), standard(**kwargs)
        assert (q == again) == (s == s_again)
        if s_params.order:
            assert (q < again, q <= again, q > again, q >= again) == (
                s < s_again,
                s <= s_again,
                s > s_again,
                s >= s_again,
            )
        assert q != s  # different classes: NotImplemented both ways
        if s_params.eq and s_params.frozen and "__hash__" not in _written_by(standard):
            # The standard rule, over this instance's own values (the twin's may hash by identity).
            hashed = tuple(
                getattr(q, f.name)
                for f in dataclasses.fields(quick)
                if (f.compare if f.hash is None else f.hash)
            )
            assert _outcome(functools.partial(hash, q)) == _outcome(functools.partial(hash, hashed))
        if s_params.frozen:
            name = dataclasses.fields(quick)[0].name if dataclasses.fields(quick) else "x"
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(q, name, 1)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(q, name)
        assert copy.copy(q) == q or not s_params.eq
        assert (
            _outcome(functools.partial(dataclasses.replace, q))[0]
            == _outcome(functools.partial(dataclasses.replace, s))[0]
        )


@pytest.mark.parametrize("name", modules(PACKAGE))
def test_classes_match_the_standard_decorator(name: str) -> None:
    module = importlib.import_module(name)
    twin = _standard_twin(name)
    classes = [
        attribute
        for attribute, value in vars(module).items()
        if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)
    ]
    assert classes, f"{name} imports the decorator and makes no class with it"
    for attribute in classes:
        _compare_class(getattr(module, attribute), getattr(twin, attribute))


def _both(body: Callable[[Callable[..., Any]], type], **options: Any) -> tuple[type, type]:
    return body(dataclass(**options)), body(dataclasses.dataclass(**options))


def _selfish(decorate: Callable[..., Any]) -> type:
    @decorate
    class Selfish:
        self: int
        other: list[int] = dataclasses.field(default_factory=list)
        hidden: int = dataclasses.field(default=5, init=False, repr=False, compare=False)
        later: list[int] = dataclasses.field(default_factory=list, init=False)

    return Selfish


def _written(decorate: Callable[..., Any]) -> type:
    @decorate
    class Written:
        """Writes its own equality and hash."""

        a: int
        b: str = "b"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Written) and other.a == self.a

        def __hash__(self) -> int:
            return self.a

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    return Written


def _eq_only(decorate: Callable[..., Any]) -> type:
    @decorate
    class EqOnly:
        """Writes ``__eq__`` without ``__hash__``."""

        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, EqOnly)

    return EqOnly


class _Plain:
    """Not a dataclass: what it holds is a default for a field of that name."""

    inherited: int = 7


def _inherits(decorate: Callable[..., Any]) -> type:
    @decorate
    class Inherits(_Plain):
        a: int
        inherited: int
        kept: str = dataclasses.field(default="k", repr=False)
        made: list[int] = dataclasses.field(default_factory=list)
        empty: tuple[int, ...] = ()

    return Inherits


def _marked(decorate: Callable[..., Any]) -> type:
    @decorate
    class Marked:
        a: int
        count: ClassVar[int] = 0
        b: int = 2

    return Marked


@pytest.mark.parametrize("body", [_selfish, _written, _eq_only, _inherits, _marked])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"slots": True},
        {"frozen": True},
        {"frozen": True, "slots": True},
        {"frozen": True, "slots": True, "kw_only": True},
        {"frozen": True, "slots": True, "order": True},
        {"slots": True, "eq": False},
        {"frozen": True, "eq": False},
    ],
)
def test_edge_cases_match_the_standard_decorator(
    body: Callable[[Callable[..., Any]], type], options: dict[str, Any]
) -> None:
    quick, standard = _both(body, **options)
    _compare_class(quick, standard)
    assert f"{quick.__module__}:{quick.__qualname__}" in quick_dataclass.MADE  # not the standard path


@pytest.mark.parametrize("slots", [False, True])
def test_refusals_match_the_standard_decorator(slots: bool) -> None:
    def mutable(decorate: Callable[..., Any]) -> type:
        @decorate
        class Mutable:
            a: list[int] = []  # noqa: RUF012  # refused: a mutable default

        return Mutable

    def unannotated(decorate: Callable[..., Any]) -> type:
        @decorate
        class Unannotated:
            a: int
            b = dataclasses.field(default=1)

        return Unannotated

    for body in (mutable, unannotated):
        quick = _outcome(functools.partial(body, dataclass(slots=slots)))
        standard = _outcome(functools.partial(body, dataclasses.dataclass(slots=slots)))
        assert quick[0] == standard[0] == "raised"
        assert quick[1] == standard[1]


def test_docstring_is_written_on_first_read() -> None:
    quick, standard = _both(_inherits, frozen=True, slots=True)
    assert type(vars(quick)["__doc__"]) is not str  # not made yet: nobody read it
    assert quick.__doc__ == standard.__doc__
    assert vars(quick)["__doc__"] == quick.__doc__  # made once, then in its place


def test_frozen_slotted_instances_pickle_and_repr_guards_recursion() -> None:
    quick, _ = _both(_selfish, frozen=True, slots=True)
    instance = quick(self=1, other=[2])
    assert copy.deepcopy(instance) == instance  # through __getstate__ / __setstate__
    mutable, standard = _both(_selfish, slots=True)
    a, b = mutable(self=1), standard(self=1)
    a.other.append(a)
    b.other.append(b)
    assert repr(a).replace("quick", "") == repr(b).replace("standard", "")
    assert "..." in repr(a)


def test_other_options_go_to_the_standard_decorator() -> None:
    @dataclass(frozen=True, slots=True, unsafe_hash=True)
    class Ordered:
        """Hashed."""

        a: int

    assert hash(Ordered(1)) == hash((1,))
    assert not any(
        key.endswith(":test_other_options_go_to_the_standard_decorator.<locals>.Ordered")
        for key in quick_dataclass.MADE
    )
