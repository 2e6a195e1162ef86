"""``Struct`` and ``Message``, the bases of every generated message class.

They come from one source, :mod:`kafka_wire._compiled.base`, chosen here once: its mypyc-compiled
extension when it is built and ``KAFKA_WIRE_PURE`` is unset, else the same file as Python
(:mod:`kafka_wire.flavour`). Both flavours' generated classes derive from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from kafka_wire.flavour import compiled_module, source_module

if TYPE_CHECKING:
    from kafka_wire._compiled.base import Message, Struct
else:
    _NAME = "kafka_wire._compiled.base"
    _base = compiled_module(_NAME) or source_module(_NAME)
    Struct = _base.Struct
    Message = _base.Message


T = TypeVar("T")


def _new_by_class(cls: Any) -> Any:
    return cls.__new__(cls)


if TYPE_CHECKING:

    def new_instance(cls: type[T]) -> T:
        """An empty instance of a generated class, for the pure decoders to fill in."""
        ...

else:
    # ``object.__new__`` on the Python base; ``cls.__new__(cls)`` on the compiled one, which
    # refuses ``object.__new__`` for its subclasses.
    new_instance = object.__new__ if Struct.__new__ is object.__new__ else _new_by_class

__all__ = ["Message", "Struct", "new_instance"]
