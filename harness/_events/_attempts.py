"""The events of a best-of run (``strategies.BestOf``): each attempt's start, its own events,
its end, and the winner's way into the user's workspace.

In a module of their own because only a best-of run emits them; the strategy imports them,
and the decoder loads them before it finds a name unknown (`_base`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import frozen

from .._halt import HaltReason
from .._result import AttemptScore
from .._usage import Usage
from .._work_progress import WorkProgress

# The readers of the WorkProgress and the HaltReason an attempt.finished carries.
from . import _checkpoint, _run  # noqa: F401
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
class AttemptsRanked(Event):
    """``pick = "best_verified"`` ranked the verified attempts with `ranking` (its name):
    `scores`, best first; the first is picked."""

    name: ClassVar[str] = "attempt.ranked"
    ranking: str
    scores: tuple[AttemptScore, ...]


@frozen
class WaveStarted(Event):
    """Wave `wave` of a best-of run (``BestOf(waves=...)``) starts attempts `first` to
    `last`, no attempt of the waves before having been verified; `digest` is what their task
    was told of the failed attempts (the whole text, bounded in size)."""

    name: ClassVar[str] = "attempt.wave"
    wave: int
    first: int
    last: int
    digest: str


@frozen
class AttemptWon(Event):
    """Attempt `attempt` was picked (`pick`: ``first_verified``, ``best_progress`` or
    ``best_verified``); its changes go to the user's workspace if the final check there
    accepts them."""

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


@reads(AttemptScore)
def _score(f: Fields) -> AttemptScore:
    cost = f.number("cost_usd", None)
    return AttemptScore(
        f.integer("attempt"),
        f.integer("lines"),
        f.integer("files"),
        tuple(f.texts("outside")),
        tuple(f.texts("guarded")),
        cost,
        f.integer("tokens", 0),
    )
