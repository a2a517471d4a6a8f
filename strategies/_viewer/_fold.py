"""Folding a transcript's events into what the viewer shows: runs, sessions, turns, notes.

A run's events arrive in the order they happened. Each session (a Ralph iteration, a builder
or evaluator session) is known by its agent and iteration; a stretch of events from one
session is a `Segment`, and a session that resumes after another one ran (the SelfVerifying
builder after its evaluator) opens a new segment marked `resumed`. Tool results attach to
the turn that called them. Events the viewer does not know are kept as notes, so a
transcript from a newer harness still shows everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import define, field

from harness import HaltReason, Usage

from ._read import Row, Transcript
from ._records import (
    CallView,
    HaltView,
    NoteView,
    RunView,
    Segment,
    Tone,
    TranscriptView,
    TurnView,
)


def build_view(transcript: Transcript) -> TranscriptView:
    """Fold a transcript's events into runs (a file normally holds one; each `run.started`
    begins another)."""
    runs: list[RunView] = []
    builder: _RunBuilder | None = None
    for row in transcript.rows:
        if row.name == "run.started" or builder is None:
            if builder is not None:
                runs.append(builder.build())
            builder = _RunBuilder()
        builder.add(row)
    if builder is not None:
        runs.append(builder.build())
    return TranscriptView(
        str(transcript.path), tuple(runs), transcript.cut_off_line, len(transcript.rows)
    )


@define
class _TurnDraft:
    number: int
    agent: str
    iteration: int
    turn: int
    line: int
    started_at: float | None = None
    at: float | None = None
    text: str = ""
    calls: dict[str, CallView] = field(factory=dict)
    usage: Usage | None = None
    model: str | None = None
    stop_reason: str | None = None
    response_line: int | None = None

    def freeze(self) -> TurnView:
        return TurnView(
            self.number,
            self.agent,
            self.iteration,
            self.turn,
            self.started_at,
            self.at,
            self.text,
            tuple(self.calls.values()),
            self.usage,
            self.model,
            self.stop_reason,
            self.line,
            self.response_line,
        )


@define
class _SegmentDraft:
    agent: str | None
    iteration: int | None
    resumed: bool
    items: list[_TurnDraft | NoteView] = field(factory=list)


@define
class _RunBuilder:
    """Folds one run's events, in order, into a `RunView`."""

    started: Row | None = None
    segments: list[_SegmentDraft] = field(factory=list)
    turns: list[_TurnDraft] = field(factory=list)
    # Each agent has one live session at a time: its iteration and its latest turn.
    iteration_of: dict[str, int] = field(factory=dict)
    last_turn: dict[str, _TurnDraft] = field(factory=dict)
    seen: set[tuple[str | None, int | None]] = field(factory=set)
    halt: HaltView | None = None
    elapsed: float = 0.0

    def add(self, row: Row) -> None:
        self.elapsed = max(self.elapsed, row.at)
        handler = _HANDLERS.get(row.name, _RunBuilder._unknown)
        handler(self, row)

    def build(self) -> RunView:
        started = self.started
        segments = tuple(
            Segment(
                s.agent,
                s.iteration,
                s.resumed,
                tuple(i.freeze() if isinstance(i, _TurnDraft) else i for i in s.items),
            )
            for s in self.segments
        )
        turns = tuple(item for s in segments for item in s.items if isinstance(item, TurnView))
        return RunView(
            run_id=started.optional_text("run_id") if started else None,
            task=started.optional_text("task") if started else None,
            strategy=started.optional_text("strategy") if started else None,
            workspace=started.optional_text("workspace") if started else None,
            check=started.optional_text("check") if started else None,
            segments=segments,
            turns=turns,
            halt=self.halt,
            elapsed=self.elapsed,
        )

    # -- where an event goes

    def _segment(self, agent: str | None, iteration: int | None) -> _SegmentDraft:
        key = (agent, iteration)
        if self.segments and (self.segments[-1].agent, self.segments[-1].iteration) == key:
            return self.segments[-1]
        segment = _SegmentDraft(agent, iteration, resumed=key in self.seen and agent is not None)
        self.seen.add(key)
        self.segments.append(segment)
        return segment

    def _session_of(self, row: Row) -> _SegmentDraft:
        agent = row.text("agent")
        return self._segment(agent, self.iteration_of.get(agent, 1))

    def _note(self, row: Row, tone: Tone, title: str, body: str = "") -> NoteView:
        return NoteView(row.name, tone, title, body, row.at, row.line)

    # -- one method per event

    def _run_started(self, row: Row) -> None:
        self.started = row
        for name in ("run_id", "task", "strategy", "workspace", "check"):
            row.optional_text(name)

    def _iteration_started(self, row: Row) -> None:
        agent = row.text("agent")
        self.iteration_of[agent] = row.integer("iteration")
        self._segment(agent, self.iteration_of[agent])

    def _turn_started(self, row: Row) -> None:
        agent = row.text("agent")
        iteration = self.iteration_of[agent] = row.integer("iteration")
        draft = _TurnDraft(
            len(self.turns) + 1, agent, iteration, row.integer("turn"), row.line, row.at
        )
        self.turns.append(draft)
        self.last_turn[agent] = draft
        self._segment(agent, iteration).items.append(draft)

    def _turn_finished(self, row: Row) -> None:
        agent = row.text("agent")
        iteration = row.integer("iteration")
        turn = row.integer("turn")
        draft = self.last_turn.get(agent)
        if draft is None or (draft.iteration, draft.turn) != (iteration, turn):
            # No `turn.started` for it (a transcript cut at its start): the turn begins here.
            draft = _TurnDraft(len(self.turns) + 1, agent, iteration, turn, row.line)
            self.turns.append(draft)
            self.last_turn[agent] = draft
            self.iteration_of[agent] = iteration
            self._segment(agent, iteration).items.append(draft)
        response = row.nested("response")
        draft.at = row.at
        draft.response_line = row.line
        draft.text = response.text("text", "")
        draft.model = response.optional_text("model")
        draft.stop_reason = response.optional_text("stop_reason")
        draft.usage = _usage(response.nested("usage")) if response.has("usage") else None
        for call in response.nested_list("tool_calls"):
            view = _call(call)
            draft.calls[view.id] = view

    def _tool_called(self, row: Row) -> None:
        agent = row.text("agent")
        call = _call(row.nested("call"))
        view = CallView(
            call.id,
            call.name,
            call.arguments,
            row.text("content"),
            row.flag("is_error", False),
            row.line,
        )
        draft = self.last_turn.get(agent)
        if draft is None:
            draft = _TurnDraft(
                len(self.turns) + 1,
                agent,
                self.iteration_of.get(agent, 1),
                row.integer("turn"),
                row.line,
            )
            self.turns.append(draft)
            self.last_turn[agent] = draft
            self._session_of(row).items.append(draft)
        draft.calls[view.id] = view

    def _sensor(self, row: Row) -> None:
        status = row.text("status")
        tone: Tone = "bad" if status == "halt" else "warn"
        title = f"sensor {row.text('sensor')}: {status}"
        self._session_of(row).items.append(self._note(row, tone, title, row.text("message")))

    def _check_passed(self, row: Row) -> None:
        note = self._note(row, "good", "completion check passed", row.text("check", ""))
        self._session_of(row).items.append(note)

    def _check_failed(self, row: Row) -> None:
        note = self._note(row, "bad", "completion check failed", row.text("reason"))
        self._session_of(row).items.append(note)

    def _feedback(self, row: Row) -> None:
        title = f"feedback from {row.text('source')} goes into the next turn"
        self._session_of(row).items.append(self._note(row, "warn", title, row.text("text")))

    def _verdict(self, row: Row) -> None:
        passed = row.flag("passed")
        title = f"evaluator round {row.integer('round')}: {'PASS' if passed else 'FAIL'}"
        note = self._note(row, "good" if passed else "bad", title, row.text("reasons", ""))
        self._segment(None, None).items.append(note)

    def _halted(self, row: Row) -> None:
        reason = row.nested("reason")
        kind = reason.text("type")
        fields = {k: v for k, v in reason.data.items() if k != "type"}
        self.halt = HaltView(
            kind,
            fields,
            describe_halt(kind, fields),
            row.flag("verified"),
            row.integer("turns"),
            row.integer("tool_calls"),
            _usage(row.nested("usage")),
            row.at,
            row.line,
        )

    def _baseline(self, row: Row) -> None:
        baseline = row.nested("baseline")
        failing = [str(name) for name in baseline.data.get("failing") or ()]
        if baseline.has("unreadable"):
            title = "baseline: the suite's output could not be read into test names"
            body = baseline.text("unreadable")
        else:
            title = (
                f"baseline: {baseline.integer('passed')} passing, {len(failing)} failing "
                "before the first turn"
            )
            body = "\n".join(failing)
        self._segment(None, None).items.append(self._note(row, "info", title, body))

    def _protected(self, row: Row) -> None:
        lines = [
            f"{c.text('path')} ({c.text('change')}; protected by {c.text('rule')!r})"
            for c in row.nested_list("changes")
        ]
        note = self._note(row, "bad", "protected files changed", "\n".join(lines))
        self._session_of(row).items.append(note)

    def _unknown(self, row: Row) -> None:
        body = "\n".join(
            f"{key}: {value}" for key, value in row.data.items() if key not in ("event", "at")
        )
        note = self._note(row, "info", row.name, body)
        if isinstance(row.data.get("agent"), str):
            self._session_of(row).items.append(note)
        else:
            self._segment(None, None).items.append(note)


_HANDLERS = {
    "run.started": _RunBuilder._run_started,
    "iteration.started": _RunBuilder._iteration_started,
    "turn.started": _RunBuilder._turn_started,
    "turn.finished": _RunBuilder._turn_finished,
    "tool.called": _RunBuilder._tool_called,
    "sensor.reading": _RunBuilder._sensor,
    "check.passed": _RunBuilder._check_passed,
    "check.failed": _RunBuilder._check_failed,
    "feedback.injected": _RunBuilder._feedback,
    "verdict.reached": _RunBuilder._verdict,
    "run.halted": _RunBuilder._halted,
    "baseline.recorded": _RunBuilder._baseline,
    "protected.changed": _RunBuilder._protected,
}


def _call(row: Row) -> CallView:
    arguments = row.data.get("arguments", {})
    if not isinstance(arguments, Mapping):
        raise row.error("arguments", "an object", arguments)
    return CallView(row.text("id"), row.text("name"), arguments)


def describe_halt(kind: str, fields: Mapping[str, Any]) -> str:
    """The reason's own `describe()` when its type is known, else its type and fields."""
    for cls in _halt_reasons():
        if cls.__name__ == kind:
            try:
                return cls(**fields).describe()
            except (TypeError, ValueError):
                break
    shown = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return f"{kind}({shown})"


def _halt_reasons() -> list[type[HaltReason]]:
    found: list[type[HaltReason]] = []
    pending = [HaltReason]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def _usage(row: Row) -> Usage:
    return Usage(
        row.integer("input_tokens", 0),
        row.integer("output_tokens", 0),
        row.integer("cached_tokens", 0),
        row.optional_number("cost_usd"),
    )
