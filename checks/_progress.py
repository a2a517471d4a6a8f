"""How far the work is: a check that can count what it verifies reports `WorkProgress`.

`check(state)` answers "done or not"; a check that also `measure`s answers with an
`Assessment`: the same reason and, beside it, `done` of `total` (tests passing, features
passing, files present). `checks.assess` asks any check and fails closed like the plain
verdict; a check that cannot measure gives its reason and no progress.

Composition: `AllOf` sums its parts' progress (every part must be done) and `AnyOf` takes the
alternative furthest along (one suffices); parts that do not measure are left out. Measuring
an `AllOf` runs every part, where `check` stops at the first reason: the sum needs them all.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from attrs import frozen

from harness import SessionStateSnapshot
from harness.checkpoints import WorkProgress

__all__ = ["Assessment", "MeasuresProgress", "WorkProgress"]


@frozen
class Assessment:
    """A check's answer with its measure: `reason` as `check` gives it (None: complete) and
    the `progress` it counted, when it can count."""

    reason: str | None
    progress: WorkProgress | None = None


@runtime_checkable
class MeasuresProgress(Protocol):
    """A check that can say how far the work is, along with its reason."""

    async def measure(self, state: SessionStateSnapshot) -> Assessment: ...
