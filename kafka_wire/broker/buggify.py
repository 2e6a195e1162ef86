"""Rare paths on purpose, and planted bugs, for the simulator (FoundationDB's BUGGIFY).

The engine asks :data:`hooks` at a few named points. Outside simulation the hooks are
:class:`Off`: nothing ever fires and no bug is planted, at the cost of one attribute lookup and
a call. The simulator installs its own :class:`Hooks` for the length of a run with
:func:`installed`; its ``fire`` draws from the run's seeded generator, so a run stays a pure
function of its seed.

- ``fire(point)``: take the rare path named ``point`` now? (e.g. ``"replica.delay_alter_partition"``)
- ``planted(bug)``: is the test-only bug named ``bug`` switched on? Each planted bug is a wrong
  branch beside the right one in the engine, named in ``kafka_wire.sim.bugs.BUGS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Hooks(Protocol):
    def fire(self, point: str) -> bool: ...

    def planted(self, bug: str) -> bool: ...


class Off:
    """Production: no rare path is forced, no bug is planted."""

    def fire(self, point: str) -> bool:
        return False

    def planted(self, bug: str) -> bool:
        return False


#: The hooks the engine asks; :class:`Off` except inside :func:`installed`.
hooks: Hooks = Off()


@contextmanager
def installed(new: Hooks) -> Iterator[None]:
    """Use ``new`` as the engine's hooks until the block ends."""
    global hooks
    previous, hooks = hooks, new
    try:
        yield
    finally:
        hooks = previous
