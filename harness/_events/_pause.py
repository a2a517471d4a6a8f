"""The events of a usage-limit pause (see `PauseSettings`): ``run.paused`` and ``run.resumed``.

Apart from the run's events because only a run that meets a usage limit emits them; the session
imports them when it pauses, and the transcript reader when it reads a transcript.
"""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from ._base import Event, omitted


@frozen
class RunPaused(Event):
    """The model client met a usage limit: the run waits `wait` seconds on its clock, then runs
    turn `turn` again (the turn is charged to no budget). `retry_in` and `resets_at` are what
    the limit reported (None: unreadable); `counted` says whether the pause uses up wall time."""

    name: ClassVar[str] = "run.paused"
    level: ClassVar[str] = "warning"
    agent: str
    iteration: int
    turn: int
    source: str = field(metadata=omitted(""))
    message: str = field(metadata=omitted(""))
    retry_in: float | None
    resets_at: float | None
    wait: float
    counted: bool = field(metadata=omitted(False))


@frozen
class RunResumed(Event):
    """The pause is over after `paused_for` seconds; turn `turn` runs again."""

    name: ClassVar[str] = "run.resumed"
    agent: str
    iteration: int
    turn: int
    paused_for: float
    counted: bool = field(metadata=omitted(False))
