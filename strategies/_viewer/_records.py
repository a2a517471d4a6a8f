"""What the viewer shows: runs, their sessions' stretches of events, turns, calls and notes.

Values built once from a transcript (`_fold`) and drawn by the page (`_page`, `_timeline`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from attrs import frozen

from harness import Usage

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
class Segment:
    """A stretch of one session's events (agent None: events of the run as a whole)."""

    agent: str | None
    iteration: int | None
    resumed: bool
    items: tuple[TurnView | NoteView, ...]


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
    run_id: str | None
    task: str | None
    strategy: str | None
    workspace: str | None
    check: str | None
    segments: tuple[Segment, ...]
    turns: tuple[TurnView, ...]
    halt: HaltView | None
    elapsed: float

    @property
    def tool_calls(self) -> int:
        return sum(len(t.calls) for t in self.turns)

    @property
    def last_rejection(self) -> NoteView | None:
        """The last time a check or an evaluator said the work was not done, if one did."""
        notes = [
            item
            for segment in self.segments
            for item in segment.items
            if isinstance(item, NoteView)
            and (
                item.kind == "check.failed"
                or (item.kind == "verdict.reached" and item.tone == "bad")
            )
        ]
        return max(notes, key=lambda note: note.line, default=None)

    @property
    def tool_errors(self) -> int:
        return sum(t.errors for t in self.turns)

    @property
    def sessions(self) -> int:
        return len({(s.agent, s.iteration) for s in self.segments if s.agent is not None})

    @property
    def usage(self) -> Usage:
        """The run's usage: as `run.halted` reported it, else the sum of the turns recorded."""
        if self.halt is not None:
            return self.halt.usage
        total = Usage()
        for turn in self.turns:
            if turn.usage is not None:
                total = total + turn.usage
        return total


@frozen
class TranscriptView:
    path: str
    runs: tuple[RunView, ...]
    cut_off_line: int | None
    events: int
