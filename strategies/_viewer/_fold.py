"""Folding a transcript's events into what the viewer shows, one event at a time.

A run's events arrive in the order they happened. Each session (a Ralph iteration, a builder
or evaluator session) is known by its agent and iteration; a stretch of events from one
session is a segment, and a session that resumes after another one ran (the SelfVerifying
builder after its evaluator) opens a new segment marked resumed. Tool results attach to the
turn that called them. Events the viewer does not know are kept as notes, so a transcript
from a newer harness still shows everything.

Nothing is held longer than it has to be: a turn is drawn (by `TimelineWriter`, into the
view's timeline file) as soon as the next turn starts, its session ends or the run halts;
what came after it meanwhile (notes) waits for it, at most `MAX_WAITING` items. Each run
keeps only its counts (`RunTally`), its halt, and one small point per turn for the chart.
"""

from __future__ import annotations

import io
from typing import IO

from attrs import define, field

from harness import HaltReason, ToolCall, Usage
from harness.events import (
    BaselineRecorded,
    CheckFailed,
    CheckFlaky,
    CheckPassed,
    CheckpointFailed,
    CheckpointRestored,
    CheckpointSaved,
    Event,
    FeedbackInjected,
    IterationStarted,
    ModelEscalated,
    ProtectedPathsChanged,
    RunHalted,
    RunStarted,
    RunTally,
    SensorRead,
    ToolCalled,
    TranscriptReader,
    TurnFinished,
    TurnStarted,
    VerdictReached,
)

from ._records import (
    CallView,
    HaltView,
    NoteView,
    RunView,
    Tone,
    TranscriptView,
    TurnPoint,
    TurnView,
)
from ._timeline import TimelineWriter

MAX_WAITING = 1_000
"""Notes that wait for an unfinished turn before it is drawn as it is."""


def build_view(transcript: TranscriptReader, timeline: IO[bytes] | None = None) -> TranscriptView:
    """Fold a transcript's events into runs (a file normally holds one; each `run.started`
    begins another), drawing each run's timeline into `timeline` (in memory if None)."""
    out = timeline if timeline is not None else io.BytesIO()
    runs: list[RunView] = []
    builder: _RunBuilder | None = None
    events = 0
    for line, event in transcript:
        events += 1
        if isinstance(event, RunStarted) or builder is None:
            if builder is not None:
                runs.append(builder.finish())
            builder = _RunBuilder(TimelineWriter(out, f"r{len(runs) + 1}"), out.tell())
        builder.add(line, event)
    if builder is not None:
        runs.append(builder.finish())
    return TranscriptView(str(transcript.path), tuple(runs), transcript.cut_off_line, events, out)


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


_Segment = tuple[str | None, int | None]


@define
class _RunBuilder:
    """Folds one run's events, in order: draws its timeline and sums it up as a `RunView`."""

    writer: TimelineWriter
    start: int
    started: RunStarted | None = None
    tally: RunTally = RunTally()
    points: list[TurnPoint] = field(factory=list)
    # Each agent has one live session at a time: its iteration.
    iteration_of: dict[str, int] = field(factory=dict)
    segment: _Segment | None = None
    seen: set[_Segment] = field(factory=set)
    # The turn not drawn yet (its results may still come), and what came after it meanwhile.
    draft: _TurnDraft | None = None
    waiting: list[NoteView | tuple[_Segment, bool]] = field(factory=list)
    unanswered: int | None = None
    halt: HaltView | None = None
    last_rejection: NoteView | None = None

    def add(self, line: int, event: Event) -> None:
        self.tally = self.tally.add(event)
        match event:
            case RunStarted():
                self.started = event
            case IterationStarted():
                self._draw()
                self.iteration_of[event.agent] = event.iteration
                self._enter(event.agent, event.iteration)
            case TurnStarted():
                self._draw()
                self.iteration_of[event.agent] = event.iteration
                self._enter(event.agent, event.iteration)
                self._new_turn(event.agent, event.iteration, event.turn, line, event.at)
            case TurnFinished():
                self._turn_finished(line, event)
            case ToolCalled():
                self._tool_called(line, event)
            case SensorRead():
                tone: Tone = "bad" if event.status == "halt" else "warn"
                title = f"sensor {event.sensor}: {event.status}"
                self._session_note(event.agent, _note(event, line, tone, title, event.message))
            case CheckFlaky():
                title = "flaky tests: failed and passed on the same code (neither pass nor fail)"
                body = "\n".join(event.flaky)
                self._session_note(event.agent, _note(event, line, "warn", title, body))
            case CheckPassed():
                note = _note(event, line, "good", "completion check passed", event.check)
                self._session_note(event.agent, note)
            case CheckFailed():
                body = event.reason
                if event.error is not None:  # the check raised: where, as data
                    body = f"{body}\n\n{event.error.rstrip()}"
                note = _note(event, line, "bad", "completion check failed", body)
                self.last_rejection = note
                self._session_note(event.agent, note)
            case FeedbackInjected():
                title = f"feedback from {event.source} goes into the next turn"
                self._session_note(event.agent, _note(event, line, "warn", title, event.text))
            case VerdictReached():
                verdict = "PASS" if event.passed else "FAIL"
                title = f"evaluator round {event.round}: {verdict}"
                note = _note(event, line, "good" if event.passed else "bad", title, event.reasons)
                if not event.passed:
                    self.last_rejection = note
                self._enter(None, None)
                self._put(note)
            case CheckpointSaved():
                progress = event.progress
                measured = "" if progress is None else f": {progress.describe()}"
                failing = "" if progress is None else "\n".join(progress.failing)
                title = f"checkpoint {event.checkpoint[:12]} ({event.label}{measured})"
                self._put(_note(event, line, "info", title, failing))
            case CheckpointRestored():
                title = f"rolled back to checkpoint {event.checkpoint[:12]} ({event.label})"
                changed = (
                    f"{event.modified} file(s) put back, {event.added} restored, "
                    f"{event.deleted} removed"
                )
                self._put(_note(event, line, "warn", title, f"{event.reason}\n{changed}"))
            case CheckpointFailed():
                title = f"checkpoint failed ({event.label})"
                self._put(_note(event, line, "bad", title, event.error))
            case RunHalted():
                self._draw()
                self.halt = _halt_view(line, event)
            case BaselineRecorded():
                self._enter(None, None)
                self._put(_baseline_note(line, event))
            case ModelEscalated():
                title = f"model ladder: {event.from_model} -> {event.to_model} ({event.trigger})"
                self._session_note(event.agent, _note(event, line, "warn", title, event.detail))
            case ProtectedPathsChanged():
                body = "\n".join(str(t) for t in event.changes)
                note = _note(event, line, "bad", "protected files changed", body)
                self._session_note(event.agent, note)
            case _:
                self._other(line, event)

    def finish(self) -> RunView:
        self._draw()
        self.writer.close()
        started = self.started
        return RunView(
            run_id=(started.run_id or None) if started else None,
            task=started.task if started else None,
            strategy=started.strategy if started else None,
            workspace=started.workspace if started else None,
            check=started.check if started else None,
            tally=self.tally,
            sessions=len([key for key in self.seen if key[0] is not None]),
            points=tuple(self.points),
            halt=self.halt,
            unanswered=self.unanswered,
            timeline=(self.start, self.writer.tell()),
            last_rejection=self.last_rejection,
        )

    # -- where an event goes

    def _enter(self, agent: str | None, iteration: int | None) -> None:
        """The session `agent`'s `iteration` is where the next items go."""
        key = (agent, iteration)
        if key == self.segment:
            return
        resumed = key in self.seen and agent is not None
        self.seen.add(key)
        self.segment = key
        if self.draft is None:
            self.writer.segment(agent, iteration, resumed)
        else:
            self.waiting.append((key, resumed))

    def _put(self, note: NoteView) -> None:
        if self.draft is None:
            self.writer.item(note)
            return
        self.waiting.append(note)
        if len(self.waiting) >= MAX_WAITING:
            self._draw()

    def _session_note(self, agent: str, note: NoteView) -> None:
        self._enter(agent, self.iteration_of.get(agent, 1))
        self._put(note)

    def _draw(self) -> None:
        """Draw the unfinished turn as it is, then what waited for it."""
        draft = self.draft
        if draft is None:
            return
        self.draft = None
        self.writer.item(draft.freeze())
        self.points.append(
            TurnPoint(draft.number, draft.agent, draft.iteration, draft.turn, draft.usage)
        )
        self.unanswered = draft.number if draft.response_line is None else None
        for item in self.waiting:
            if isinstance(item, NoteView):
                self.writer.item(item)
            else:
                (agent, iteration), resumed = item
                self.writer.segment(agent, iteration, resumed)
        self.waiting = []

    def _new_turn(
        self, agent: str, iteration: int, turn: int, line: int, at: float | None
    ) -> _TurnDraft:
        self.draft = _TurnDraft(len(self.points) + 1, agent, iteration, turn, line, at)
        return self.draft

    # -- turns and their calls

    def _turn_finished(self, line: int, event: TurnFinished) -> None:
        draft = self.draft
        if draft is None or (draft.agent, draft.iteration, draft.turn) != (
            event.agent,
            event.iteration,
            event.turn,
        ):
            # No `turn.started` for it (a transcript cut at its start): the turn begins here.
            self._draw()
            self.iteration_of[event.agent] = event.iteration
            self._enter(event.agent, event.iteration)
            draft = self._new_turn(event.agent, event.iteration, event.turn, line, None)
        response = event.response
        draft.at = event.at
        draft.response_line = line
        draft.text = response.text
        draft.model = response.model
        draft.stop_reason = response.stop_reason
        draft.usage = response.usage
        for call in response.tool_calls:
            draft.calls[call.id] = _call(call)

    def _tool_called(self, line: int, event: ToolCalled) -> None:
        view = _call(event.call, event.content, event.is_error, line)
        draft = self.draft
        if draft is None or draft.agent != event.agent:
            # A result whose turn is not open (a transcript cut before it): it stands alone.
            self._draw()
            iteration = self.iteration_of.get(event.agent, 1)
            self._enter(event.agent, iteration)
            draft = self._new_turn(event.agent, iteration, event.turn, line, None)
        draft.calls[view.id] = view

    def _other(self, line: int, event: Event) -> None:
        data = event.to_dict()
        kind = str(data.pop("event"))
        data.pop("at", None)
        body = "\n".join(f"{key}: {value}" for key, value in data.items())
        note = NoteView(kind, "info", kind, body, event.at, line)
        agent = data.get("agent")
        if isinstance(agent, str):
            self._session_note(agent, note)
        else:
            self._enter(None, None)
            self._put(note)


def _baseline_note(line: int, event: BaselineRecorded) -> NoteView:
    found = event.baseline
    if found.unreadable is not None:
        title = "baseline: the suite's output could not be read into test names"
        return _note(event, line, "info", title, found.unreadable)
    flaky = f" ({len(found.flaky)} of them flaky)" if found.flaky else ""
    title = (
        f"baseline: {found.passed} passing, {len(found.failing)} failing{flaky} before the "
        "first turn"
    )
    said = [f"{n} (flaky)" if n in found.flaky else n for n in found.failing]
    return _note(event, line, "info", title, "\n".join(said))


def _note(event: Event, line: int, tone: Tone, title: str, body: str = "") -> NoteView:
    return NoteView(event.name, tone, title, body, event.at, line)


def _call(
    call: ToolCall, result: str | None = None, is_error: bool = False, line: int | None = None
) -> CallView:
    return CallView(call.id, call.name, call.arguments, result, is_error, line)


def _halt_view(line: int, event: RunHalted) -> HaltView:
    data = event.reason.to_dict()
    kind = str(data.pop("type"))
    return HaltView(
        kind,
        data,
        event.reason.describe(),
        event.verified,
        event.turns,
        event.tool_calls,
        event.usage,
        event.at,
        line,
    )


def describe_halt(kind: str, fields: dict[str, object]) -> str:
    """The reason's own `describe()` when its type is known, else its type and fields."""
    return HaltReason.from_dict({**fields, "type": kind}).describe()
