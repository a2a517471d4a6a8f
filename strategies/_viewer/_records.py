"""What the viewer shows: turns, calls and notes (drawn as they are folded, one at a time),
and each run summed up for the top of its page.

Values built from a transcript by `_fold` and drawn by `_timeline` and `_page`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any, Literal

from attrs import field, frozen

from harness import Usage
from harness.events import RunTally

Tone = Literal["good", "bad", "warn", "info"]


@frozen
class CallView:
    """A tool call and its result (None when the transcript has none: a crash, a refusal)."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    result: str | None = None
    is_error: bool = False
    line: int | None = None


@frozen
class TurnView:
    """One model call of a session. `response_line` is None when the call never returned."""

    number: int  # the run's count of turns, from 1
    agent: str
    iteration: int
    turn: int  # the session's count of turns
    started_at: float | None
    at: float | None
    text: str
    calls: tuple[CallView, ...]
    usage: Usage | None
    model: str | None
    stop_reason: str | None
    line: int
    response_line: int | None

    @property
    def errors(self) -> int:
        return sum(c.is_error for c in self.calls)


@frozen
class NoteView:
    """Anything else that happened: a check's verdict, feedback, a sensor, an evaluator."""

    kind: str
    tone: Tone
    title: str
    body: str
    at: float
    line: int


@frozen
class TurnPoint:
    """What the usage chart needs of a turn (the turn itself is already on the page)."""

    number: int
    agent: str
    iteration: int
    turn: int
    usage: Usage | None


@frozen
class HaltView:
    type: str
    fields: Mapping[str, Any]
    description: str
    verified: bool
    turns: int
    tool_calls: int
    usage: Usage
    at: float
    line: int


@frozen
class RunView:
    """One run of a transcript, summed up; its timeline is already rendered, at the bytes
    `timeline` of the view's timeline file."""

    run_id: str | None
    task: str | None
    strategy: str | None
    workspace: str | None
    check: str | None
    tally: RunTally
    sessions: int
    points: tuple[TurnPoint, ...]
    halt: HaltView | None
    unanswered: int | None
    """The number of the run's last turn when its model call never returned."""
    timeline: tuple[int, int]
    last_rejection: NoteView | None = None
    """The last time a check or an evaluator said the work was not done, if one did."""

    @property
    def turns(self) -> int:
        return self.tally.turns

    @property
    def tool_calls(self) -> int:
        return self.tally.tool_calls

    @property
    def tool_errors(self) -> int:
        return self.tally.tool_errors

    @property
    def usage(self) -> Usage:
        """The run's usage: as `run.halted` reported it, else the sum of the turns recorded."""
        return self.tally.usage

    @property
    def elapsed(self) -> float:
        return self.tally.at


@frozen
class TranscriptView:
    """A transcript folded for the page: its runs, and `timeline`, the file holding each run's
    rendered timeline (a temporary file while `write_view` runs, else in memory)."""

    path: str
    runs: tuple[RunView, ...]
    cut_off_line: int | None
    events: int
    timeline: IO[bytes] = field(eq=False, repr=False)
