"""The events of a best-of run (``strategies.BestOf``): each attempt's start, its own events,
its end, and the winner's way into the user's workspace.

In a module of their own because only a best-of run emits them; the strategy imports them,
and the decoder loads them before it finds a name unknown (`_base`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import frozen

from .._messages import Usage
from .._result import HaltReason
from .._work_progress import WorkProgress
from . import _checkpoint  # noqa: F401  # reads the WorkProgress an attempt.finished carries
from ._base import Event, Fields, event_from_dict, reads


@frozen
class AttemptStarted(Event):
    """Attempt `attempt` of `attempts` started in its own `workspace` (``worktree``,
    ``copy``, or ``shared`` when the run has no workspace)."""

    name: ClassVar[str] = "attempt.started"
    attempt: int
    attempts: int
    workspace: str


@frozen
class AttemptEvent(Event):
    """`inner`, an event of attempt `attempt`'s own run, as it happened (its ``at`` on the
    same clock, from the attempt's start)."""

    name: ClassVar[str] = "attempt.event"
    level: ClassVar[str] = "debug"
    attempt: int
    inner: Event

    def replay_key(self) -> dict[str, Any]:
        return {"event": self.name, "attempt": self.attempt, "inner": self.inner.replay_key()}


@frozen
class AttemptFinished(Event):
    """Attempt `attempt` halted (`reason`; `verified` when its check accepted the work),
    having changed `changed` files; `progress` is what the check measured of its work
    (None: not measured, or the check counts nothing)."""

    name: ClassVar[str] = "attempt.finished"
    attempt: int
    reason: HaltReason
    verified: bool
    progress: WorkProgress | None
    turns: int
    tool_calls: int
    usage: Usage
    changed: tuple[str, ...]


@frozen
class AttemptWon(Event):
    """Attempt `attempt` was picked (`pick`: ``first_verified`` or ``best_progress``); its
    changes go to the user's workspace if the final check there accepts them."""

    name: ClassVar[str] = "attempt.won"
    attempt: int
    pick: str
    progress: WorkProgress | None


@frozen
class AttemptApplied(Event):
    """The final check in the user's workspace accepted the winner's changes, which stay:
    `changed` names the files written or deleted."""

    name: ClassVar[str] = "attempt.applied"
    attempt: int
    changed: tuple[str, ...]


@frozen
class AttemptRefused(Event):
    """The final check in the user's workspace refused the winner's changes (`reason`); the
    workspace was put back as it was."""

    name: ClassVar[str] = "attempt.refused"
    level: ClassVar[str] = "warning"
    attempt: int
    reason: str


@reads(Event)
def _inner(f: Fields) -> Event:
    """The event an ``attempt.event`` line holds, decoded as any line is."""
    return event_from_dict(f.data, path=f.path, line=f.line)
