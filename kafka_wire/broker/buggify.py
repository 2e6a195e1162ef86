"""Rare paths on purpose, and planted bugs, for the simulator (FoundationDB's BUGGIFY).

The engine asks its :class:`Hooks` at a few named points. They are passed in where the engine is
built (``Broker(..., hooks=...)``; the parts it builds hand them on), never read from a global:
outside simulation they are :data:`OFF`, where nothing ever fires and no bug is planted, at the
cost of one attribute lookup and a call. The simulator passes its own (``sim.bugs.SimHooks``),
whose ``fire`` draws from the run's seeded generator, so a run stays a pure function of its seed.

- ``fire(point)``: take the rare path named ``point`` now? (e.g. ``"replica.delay_alter_partition"``)
- ``planted(bug)``: is the test-only bug named ``bug`` switched on? Each planted bug is a wrong
  branch beside the right one in the engine, named in ``kafka_wire.sim.bugs.BUGS``.
"""

from __future__ import annotations

from typing import Final, Protocol


class Hooks(Protocol):
    def fire(self, point: str) -> bool: ...

    def planted(self, bug: str) -> bool: ...


class Off:
    """Production: no rare path is forced, no bug is planted."""

    def fire(self, point: str) -> bool:
        return False

    def planted(self, bug: str) -> bool:
        return False


#: The hooks of an engine outside simulation.
OFF: Final[Hooks] = Off()
