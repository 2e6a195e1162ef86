"""``dataclasses.dataclass`` with its methods compiled ahead of time: the same classes, made faster.

The standard decorator writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` as source text and compiles it with ``exec`` when the class
is defined: about a millisecond per frozen, slotted class on CPython 3.11, and ``kafka-wire
serve`` defines some 150 of them before it listens. :func:`dataclass` lets the standard
decorator do everything but those methods (fields, ``__slots__``, ``__match_args__``,
``__dataclass_fields__``), then installs methods whose code was generated ahead of time into
:mod:`kafka_wire.quick_dataclass_methods` (``python -m kafka_wire.codegen``; its bytecode is
cached as any module's is).

What the methods do is fixed by a class's *spec* (:func:`spec_of`: the decorator's options, each
field's flags, which methods the class defines itself); the generated module keeps the spec it
was made from beside each class's methods. When they differ (a class changed since the last
``make regen``, or a class the module does not know), the methods are made from the spec at
run time, as the standard decorator makes them: slower, never wrong. Options other than
``frozen``, ``slots``, ``kw_only``, ``eq`` and ``order``, subclasses of dataclasses and classes
with ``InitVar`` or ``KW_ONLY`` annotations go to the standard decorator whole.

The methods behave as CPython 3.11's: ``__eq__`` compares tuples of the compared fields of two
instances of the same class, ``__hash__`` (frozen classes) hashes that tuple, ``__repr__`` guards
against recursion, a frozen class refuses assignment and deletion of its fields with
``FrozenInstanceError`` and pickles through ``__getstate__``/``__setstate__`` when slotted.
``__init__`` is annotated with the fields' types and a class without a docstring is given its
signature as one, as the standard decorator does.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
import inspect
import sys
import types
import typing
from collections.abc import Callable
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, Final

#: A field's part of a spec: name, init, repr, compare, hash, kw_only, has a default value, has a
#: default factory.
FieldSpec = tuple[str, bool, bool, bool, bool | None, bool, bool, bool]
#: What a class's methods depend on: frozen, slots, eq, order, has ``__post_init__``, its fields,
#: and the methods it defines itself (which the decorator leaves alone), by name.
Spec = tuple[bool, bool, bool, bool, bool, tuple[FieldSpec, ...], tuple[str, ...]]
#: A function of the generated module: (the finished class, its fields) -> methods by name.
Factory = Callable[[type, tuple["dataclasses.Field[Any]", ...]], dict[str, Any]]

#: The methods the decorator writes unless the class defines them (``__hash__``: see
#: :func:`spec_of`).
_OWN: Final = ("__init__", "__repr__", "__eq__", "__hash__", "__getstate__", "__setstate__")
#: The methods of ``order=True``, with their operators.
_ORDER: Final = (("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">="))
_GENERATED_MODULE: Final = "kafka_wire.quick_dataclass_methods"
#: Specs of the classes this process made, by ``module:qualname`` (what the codegen writes).
MADE: dict[str, Spec] = {}
_generated: tuple[dict[str, Spec], dict[str, Factory]] | None = None


class _Factory:
    """The default of an ``__init__`` parameter whose field has a default factory."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Final = _Factory()


def spec_of(cls: type, own: dict[str, Any], frozen: bool, slots: bool, eq: bool, order: bool) -> Spec:
    """The spec of ``cls`` (a dataclass made without methods), ``own`` its namespace as written."""
    fields = tuple(
        (
            f.name,
            f.init,
            f.repr,
            f.compare,
            f.hash,
            bool(f.kw_only),
            f.default is not dataclasses.MISSING,
            f.default_factory is not dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    )
    defined = [name for name in _OWN if name in own]
    hash_ = own.get("__hash__", dataclasses.MISSING)
    if hash_ is None and "__eq__" in own:  # ``__eq__`` without ``__hash__``: Python's own None
        defined.remove("__hash__")
    return frozen, slots, eq, order, hasattr(cls, "__post_init__"), fields, tuple(defined)


def _tuple(obj: str, names: list[str]) -> str:
    return f"({','.join(f'{obj}.{n}' for n in names)},)" if names else "()"


def source_of(name: str, spec: Spec) -> list[str]:
    """The lines of the factory ``name`` for ``spec`` (typed for ``mypy --strict``)."""
    frozen, slots, eq, order, post_init, fields, defined = spec
    names = [f[0] for f in fields]
    self_ = "__dataclass_self__" if "self" in names else "self"
    out = [f"def {name}(cls: Any, fields: tuple[Field[Any], ...]) -> dict[str, Any]:"]
    made: list[str] = []
    if "__init__" not in defined:
        params: list[str] = []
        kw_params: list[str] = []
        body: list[str] = []
        for i, (fname, init, _r, _c, _h, kw_only, has_default, has_factory) in enumerate(fields):
            if has_factory:
                out.append(f"    _dflt_{fname}: Any = fields[{i}].default_factory")
            elif has_default and (init or slots):
                out.append(f"    _dflt_{fname} = fields[{i}].default")
            if init:
                default = "=FACTORY" if has_factory else f"=_dflt_{fname}" if has_default else ""
                (kw_params if kw_only else params).append(f"{fname}: Any{default}")
            if has_factory:
                value = f"_dflt_{fname}() if {fname} is FACTORY else {fname}" if init else f"_dflt_{fname}()"
            elif init:
                value = fname
            elif slots and has_default:
                value = f"_dflt_{fname}"
            else:
                continue
            if frozen:
                body.append(f"        _object_setattr({self_}, {fname!r}, {value})")
            else:
                body.append(f"        {self_}.{fname} = {value}")
        if post_init:
            body.append(f"        {self_}.__post_init__()")
        signature = ", ".join([f"{self_}: Any", *params, *(["*", *kw_params] if kw_params else [])])
        out += [f"    def __init__({signature}) -> None:", *(body or ["        pass"])]
        made.append("__init__")
    if "__repr__" not in defined:
        shown = ", ".join(f"{f[0]}={{self.{f[0]}!r}}" for f in fields if f[2])
        out += [
            "    def __repr__(self: Any) -> Any:",
            f'        return self.__class__.__qualname__ + f"({shown})"',
        ]
        made.append("__repr__")
    compared = [f[0] for f in fields if f[3]]
    if eq and "__eq__" not in defined:
        out += [
            "    def __eq__(self: Any, other: Any) -> Any:",
            "        if other.__class__ is self.__class__:",
            f"            return {_tuple('self', compared)} == {_tuple('other', compared)}",
            "        return NotImplemented",
        ]
        made.append("__eq__")
    for method, operator in _ORDER if order else ():
        out += [
            f"    def {method}(self: Any, other: Any) -> Any:",
            "        if other.__class__ is self.__class__:",
            f"            return {_tuple('self', compared)} {operator} {_tuple('other', compared)}",
            "        return NotImplemented",
        ]
        made.append(method)
    if frozen:
        hashed = [f[0] for f in fields if (f[3] if f[4] is None else f[4])]
        if eq and "__hash__" not in defined:
            out += ["    def __hash__(self: Any) -> int:", f"        return hash({_tuple('self', hashed)})"]
            made.append("__hash__")
        assigned = f"({','.join(repr(n) for n in names)},)" if names else "()"
        out += [
            "    def __setattr__(self: Any, name: str, value: Any) -> None:",
            f"        if type(self) is cls or name in {assigned}:",
            '            raise FrozenInstanceError(f"cannot assign to field {name!r}")',
            "        super(cls, self).__setattr__(name, value)",
            "    def __delattr__(self: Any, name: str) -> None:",
            f"        if type(self) is cls or name in {assigned}:",
            '            raise FrozenInstanceError(f"cannot delete field {name!r}")',
            "        super(cls, self).__delattr__(name)",
        ]
        made += ["__setattr__", "__delattr__"]
    out.append("    return {" + ", ".join(f"{m!r}: {m}" for m in made) + "}")
    return out


def _load_generated() -> tuple[dict[str, Spec], dict[str, Factory]]:
    global _generated
    if _generated is None:
        try:
            module = importlib.import_module(_GENERATED_MODULE)
            _generated = module.SPECS, module.FACTORIES
        except ImportError:  # before the first ``make regen``
            _generated = {}, {}
    return _generated


def _compiled_now(spec: Spec) -> Factory:
    """The factory for ``spec`` compiled now (a class the generated module does not know as it is)."""
    lines = ["from dataclasses import Field, FrozenInstanceError", "from typing import Any", ""]
    lines += source_of("factory", spec)
    namespace: dict[str, Any] = {"FACTORY": FACTORY, "_object_setattr": object.__setattr__}
    exec("\n".join(lines), namespace)  # what dataclasses does for every class
    factory: Factory = namespace["factory"]
    return factory


#: The standard decorator's own steps are taken here (:func:`_fields_made`) on the CPython it was
#: written against; elsewhere the standard decorator takes them.
_LEAN: Final = sys.version_info[:2] == (3, 11)
#: What an annotation names, as ``dataclasses`` reads a string annotation (its module's pattern).
_ANNOTATION_NAME: Final = getattr(dataclasses, "_MODULE_IDENTIFIER_RE", None)
#: What ``getattr`` finds on any class whose metaclass is ``type``.
_BUILTIN_NAMES: Final = frozenset(vars(type)) | frozenset(vars(object))
#: The names whose annotations the standard decorator may read as a pseudo-field or a marker.
_MARKER_NAMES: Final = frozenset({"ClassVar", "InitVar", "KW_ONLY"})


def _is_marker(value: object) -> bool:
    """``value`` is ``ClassVar`` (bare or subscripted), an ``InitVar`` or ``KW_ONLY``."""
    return (
        value is typing.ClassVar
        or (type(value) is typing._GenericAlias and value.__origin__ is typing.ClassVar)  # type: ignore[attr-defined]
        or value is dataclasses.InitVar
        or isinstance(value, dataclasses.InitVar)
        or value is dataclasses.KW_ONLY
    )


def _plain(annotation: object, namespace: dict[str, Any]) -> bool:
    """``annotation`` is a string the standard decorator reads as a plain field's type: the name
    it starts with (what ``dataclasses`` looks up) is none of the markers, neither in the class's
    module nor in ``typing`` and ``dataclasses``."""
    if not isinstance(annotation, str) or _ANNOTATION_NAME is None:
        return False
    match = _ANNOTATION_NAME.match(annotation)
    if match is None:
        return True
    name = match.group(2)
    return name not in _MARKER_NAMES and not _is_marker(namespace.get(name))


def _fields_made(
    cls: type, own: dict[str, Any], annotations: dict[str, Any], kw_only: bool, slots: bool
) -> type | None:
    """What ``dataclasses.dataclass(cls, init=False, repr=False, eq=False, slots=slots,
    kw_only=kw_only)`` makes of ``cls``, made in fewer steps (None: a case left to it): the
    fields (from the annotations, defaults from the class), ``__dataclass_fields__``,
    ``__dataclass_params__`` (as that call sets them: :func:`_quick` sets its flags after),
    ``__match_args__``, and the slotted class made anew. Only for string annotations that name
    no ``ClassVar``, ``InitVar`` or ``KW_ONLY``, no ``Field`` without an annotation and no
    unhashable default: the standard decorator takes (and refuses) the rest itself."""
    module = sys.modules.get(cls.__module__)
    namespace = module.__dict__ if module is not None else {}
    if not all(_plain(a, namespace) for a in annotations.values()):
        return None
    if any(isinstance(value, dataclasses.Field) and name not in annotations for name, value in own.items()):
        return None
    # Where ``getattr(cls, name)`` may find something (unless the metaclass is not ``type``).
    found_in = (cls.__dict__, *(vars(c) for c in cls.__mro__[1:-1])) if type(cls) is type else None
    missing = dataclasses.MISSING
    found: dict[str, tuple[dataclasses.Field[Any], bool]] = {}
    for name in annotations:
        # ``getattr`` as the standard decorator reads a default, without raising (and formatting)
        # an AttributeError for each field without one.
        if found_in is not None and name not in _BUILTIN_NAMES and not any(name in d for d in found_in):
            default: Any = missing
        else:
            default = getattr(cls, name, missing)
        given = isinstance(default, dataclasses.Field)
        if given:
            made = default
        else:
            if isinstance(default, types.MemberDescriptorType):
                default = missing  # a slot of a base: no default
            made = dataclasses.field(default=default)
        if made.default.__class__.__hash__ is None:
            return None  # a mutable default: refused by the standard decorator
        found[name] = made, given
    fields: dict[str, dataclasses.Field[Any]] = {}
    for name, (made, given) in found.items():
        made.name = name
        made.type = annotations[name]
        made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # as dataclasses marks it
        if made.kw_only is missing:
            made.kw_only = kw_only
        fields[name] = made
        if given:  # the class keeps the field's default, or nothing
            if made.default is missing:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
    params = dataclasses._DataclassParams(False, False, False, False, False, False)  # type: ignore[attr-defined]
    setattr(cls, "__dataclass_params__", params)  # noqa: B010  # not a declared attribute
    setattr(cls, "__dataclass_fields__", fields)  # noqa: B010
    if "__match_args__" not in own:
        setattr(cls, "__match_args__", tuple(f.name for f in fields.values() if f.init and not f.kw_only))  # noqa: B010
    if slots:
        cls = dataclasses._add_slots(cls, False, False)  # type: ignore[attr-defined]  # the standard step
    abc.update_abstractmethods(cls)
    return cls


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


def _quick(cls: type, frozen: bool, slots: bool, kw_only: bool, eq: bool, order: bool) -> type:
    own = dict(cls.__dict__)
    annotations = own.get("__annotations__", {})
    if (
        (order and (not eq or any(method in own for method, _ in _ORDER)))
        or any("InitVar" in str(a) or "KW_ONLY" in str(a) for a in annotations.values())
        or (frozen and ("__setattr__" in own or "__delattr__" in own))
        or any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])
    ):
        return dataclasses.dataclass(cls, frozen=frozen, slots=slots, kw_only=kw_only, eq=eq, order=order)
    if not own.get("__doc__"):
        cls.__doc__ = "-"  # written below, once ``__init__`` is there to be described
    lean = _fields_made(cls, own, annotations, kw_only, slots) if _LEAN else None
    made: type = lean or dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, slots=slots, kw_only=kw_only
    )
    params = made.__dataclass_params__  # type: ignore[attr-defined]  # set by dataclasses
    params.init = params.repr = True
    params.eq, params.order, params.frozen = eq, order, frozen
    key = f"{made.__module__}:{made.__qualname__}"
    fields = dataclasses.fields(made)
    spec = spec_of(made, own, frozen, slots, eq, order)
    MADE[key] = spec
    specs, factories = _load_generated()
    factory = factories[key] if specs.get(key) == spec else _compiled_now(spec)
    for name, method in factory(made, fields).items():
        method.__qualname__ = f"{made.__qualname__}.{name}"
        setattr(made, name, recursive_repr()(method) if name == "__repr__" else method)
    if "__init__" not in spec[6]:
        init = [f for f in fields if f.init]
        made.__init__.__annotations__ = {  # type: ignore[misc]  # as dataclasses annotates it
            **{f.name: f.type for f in init if not f.kw_only},
            **{f.name: f.type for f in init if f.kw_only},
            "return": None,
        }
    if eq and not frozen and "__hash__" not in spec[6]:
        made.__hash__ = None  # type: ignore[assignment]  # eq without frozen: unhashable, as dataclasses
    if frozen and slots:
        if "__getstate__" not in own:  # for pickling and copying, as dataclasses does
            setattr(made, "__getstate__", _getstate)  # noqa: B010  # object declares it: no plain assignment
        if "__setstate__" not in own:
            setattr(made, "__setstate__", _setstate)  # noqa: B010
    if not own.get("__doc__"):
        setattr(made, "__doc__", _Signature(made))  # noqa: B010  # a descriptor, not a str
    return made


class _Signature:
    """The docstring of a class written without one, made on its first read: the class's name and
    its ``__init__``'s signature, what the standard decorator writes when it makes the class
    (``inspect.signature`` takes about as long as the rest of a quick class: a start pays it for
    some 40 classes whose docstring nobody reads). ``cls.__doc__`` calls :meth:`__get__` (a
    class's ``__doc__`` in its namespace may be a descriptor), which puts the text in its place."""

    __slots__ = ("_cls",)

    def __init__(self, cls: type) -> None:
        self._cls = cls

    def __get__(self, instance: object, owner: type | None = None) -> str:
        cls = self._cls
        try:
            described = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            described = ""
        text = cls.__name__ + described
        type.__setattr__(cls, "__doc__", text)
        return text


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass  # mypy's dataclass plugin sees the standard one
else:

    def dataclass(cls=None, /, *, frozen=False, slots=False, kw_only=False, eq=True, order=False, **options):
        """``dataclasses.dataclass``; see the module docstring."""
        if options:
            standard = dataclasses.dataclass(
                frozen=frozen, slots=slots, kw_only=kw_only, eq=eq, order=order, **options
            )
            return standard if cls is None else standard(cls)
        if cls is None:
            return lambda c: _quick(c, frozen, slots, kw_only, eq, order)
        return _quick(cls, frozen, slots, kw_only, eq, order)
