"""How far the work is: a check that can count what it verifies reports `WorkProgress`.

`check(state)` answers "done or not"; a check that also `measure`s answers with an
`Assessment`: the same reason and, beside it, `done` of `total` (tests passing, features
passing, files present). `run_check` asks `measure` when a check has it, fails closed the same
way, and puts the progress on the `CheckVerdict`; a check that cannot measure gives none.

Composition: `AllOf` sums its parts' progress (every part must be done) and `AnyOf` takes the
alternative furthest along (one suffices); parts that do not measure are left out. An `AllOf`
stops at the first reason, as ever, unless progress is asked for (``progress=True``): the sum
needs every part, so then every part runs.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness import SessionStateSnapshot
from harness.checkpoints import Assessment, WorkProgress

__all__ = ["Assessment", "MeasuresProgress", "WorkProgress"]


@runtime_checkable
class MeasuresProgress(Protocol):
    """A check that can say how far the work is, along with its reason."""

    async def measure(self, state: SessionStateSnapshot) -> Assessment: ...
