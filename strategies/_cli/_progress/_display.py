"""Showing runs to a person while they happen.

The pieces, for `harness run` and for anything else that runs several at once (a board):

- `describe(event)`: the one line worth printing for an event, or None.
- `RunTracker`: an event sink that folds one run's events into a `RunStatus` (turn, session,
  tokens, cost, last tool, what it is doing now), and prints nothing.
- A display, made by `open_progress(stream)` (in `_open`): `LiveProgress` (in `_live`) on a
  terminal, which keeps a status line per run redrawn in place and prints what happened above it, or
  `PlainProgress` anywhere else, which prints one plain line per step. Both have the same
  API, the `ProgressDisplay` protocol:

      with open_progress(sys.stderr) as progress:
          sink = progress.track(label="T-1", budget=policy.budget)  # one per run
          await Harness(..., sinks=[sink]).run(task)
          progress.write("a line from elsewhere\\n")  # e.g. a log line; never garbles the panel
          progress.forget(sink)  # a run that ended without halting (a board's failed attempt)

  `track` returns an `EventSink` for that run; a run leaves the panel when it halts or is
  forgotten. The display is thread-safe.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Literal, Protocol, TextIO

from attrs import define, field

from harness.events import (
    AttemptApplied,
    AttemptEvent,
    AttemptFinished,
    AttemptRefused,
    AttemptsRanked,
    AttemptStarted,
    AttemptWon,
    BaselineRecorded,
    CheckFailed,
    CheckFlaky,
    CheckPassed,
    CheckpointFailed,
    CheckpointRestored,
    CheckpointSaved,
    Event,
    EventSink,
    FeedbackInjected,
    IterationStarted,
    ModelEscalated,
    ProtectedPathsChanged,
    RunHalted,
    RunStarted,
    RunWarning,
    SensorRead,
    ToolCalled,
    TurnFinished,
    VerdictReached,
    WaveStarted,
)
from harness.extend import Baseline
from termination import Budget

from .._terminal import for_terminal
from ._tracker import RunStatus, RunTracker, short

__all__ = [
    "PlainProgress",
    "ProgressDisplay",
    "ProgressPrinter",
    "RunStatus",
    "RunTracker",
    "TracebackPrinter",
    "describe",
]

Tone = Literal["plain", "good", "bad", "warn", "strong"]


def describe(event: Event) -> tuple[str, Tone] | None:
    """The line to print for `event` (and how it reads: good, bad, ...), or None; what the
    agent, a tool or a check wrote is shown escaped (`for_terminal`)."""
    described = _describe(event)
    return None if described is None else (for_terminal(described[0]), described[1])


def _describe(event: Event) -> tuple[str, Tone] | None:
    match event:
        case AttemptEvent():
            inner = _describe(event.inner)
            return None if inner is None else (f"[attempt {event.attempt}] {inner[0]}", inner[1])
        case AttemptStarted():
            where = f" in a {event.workspace}" if event.workspace != "shared" else ""
            return f"attempt {event.attempt} of {event.attempts} started{where}", "strong"
        case AttemptFinished():
            measured = f" ({event.progress.describe()})" if event.progress is not None else ""
            tone: Tone = "good" if event.verified else "bad"
            halt = short(event.reason.describe().partition("\n")[0], 120)
            return f"attempt {event.attempt} ended: {halt}{measured}", tone
        case AttemptsRanked():
            order = ", ".join(f"{s.attempt} ({s.describe()})" for s in event.scores)
            return f"verified attempts ranked by {event.ranking}: {order}", "plain"
        case WaveStarted():
            return (
                f"wave {event.wave} started (attempts {event.first} to {event.last}), told "
                "what the attempts before it tried",
                "strong",
            )
        case AttemptWon():
            return f"attempt {event.attempt} picked ({event.pick})", "strong"
        case AttemptApplied():
            return (
                f"attempt {event.attempt} applied to the workspace "
                f"({len(event.changed)} files) after the final check passed there",
                "good",
            )
        case AttemptRefused():
            return (
                f"the final check refused attempt {event.attempt} in the workspace, "
                f"which was left as it was: {short(event.reason)}",
                "bad",
            )
        case RunStarted():
            return f"run {event.run_id} started ({event.strategy}) in {event.workspace}", "plain"
        case IterationStarted():
            return f"{event.agent} session {event.iteration} started", "strong"
        case TurnFinished():
            calls = ", ".join(c.name for c in event.response.tool_calls)
            said = short(event.response.text, 60) if event.response.text else ""
            what = f"calls {calls}" if calls else f"says done: {said!r}"
            return f"{event.agent} turn {event.turn}: {what}", "plain"
        case ToolCalled() if event.is_error:
            return f"  {event.call.name} failed: {short(event.content, 80)}", "bad"
        case SensorRead():
            tone = "bad" if event.status == "halt" else "warn"
            return f"sensor {event.sensor} {event.status}: {short(event.message)}", tone
        case CheckFlaky():
            return f"flaky (failed and passed on the same code): {short(', '.join(event.flaky))}", (
                "warn"
            )
        case CheckPassed():
            return "check passed", "good"
        case CheckFailed():
            hint = " (-v for the traceback)" if event.error is not None else ""
            return f"check failed: {short(event.reason)}{hint}", "bad"
        case FeedbackInjected():
            return f"feedback from {event.source} goes into the next turn", "warn"
        case VerdictReached():
            verdict = "PASS" if event.passed else "FAIL"
            tone = "good" if event.passed else "bad"
            return f"evaluator round {event.round}: {verdict} {short(event.reasons, 80)}", tone
        case CheckpointSaved():
            measured = f": {event.progress.describe()}" if event.progress is not None else ""
            return f"checkpoint {event.checkpoint[:12]} ({event.label}{measured})", "plain"
        case CheckpointRestored():
            return f"rolled back to checkpoint {event.checkpoint[:12]}: {event.reason}", "warn"
        case CheckpointFailed():
            return f"checkpoint {event.label} failed: {short(event.error)}", "bad"
        case RunHalted():
            # One line: the outcome below prints the whole reason, its lines as lines.
            halt = event.reason.describe().partition("\n")[0]
            return f"halted: {halt}", "good" if event.verified else "strong"
        case BaselineRecorded():
            return f"baseline: {_baseline(event.baseline)}", "plain"
        case RunWarning():
            return f"warning from {event.source}: {event.message}", "warn"
        case ModelEscalated():
            return (
                f"model ladder: {event.from_model} -> {event.to_model} "
                f"({event.trigger}: {short(event.detail, 80)})",
                "warn",
            )
        case ProtectedPathsChanged():
            changed = ", ".join(str(t) for t in event.changes)
            return f"protected files changed: {short(changed)}", "bad"
    return None


class TracebackPrinter:
    """With ``-v``: an event sink that prints the traceback of a check that raised (the
    ``check.failed`` event's `error`), escaped, through `write` (a display's, or stderr's)."""

    __slots__ = ("_write",)

    def __init__(self, write: Callable[[str], object]) -> None:
        self._write = write

    def emit(self, event: Event) -> None:
        if isinstance(event, CheckFailed) and event.error is not None:
            self._write(
                f"the completion check raised ({event.agent}, turn {event.turn}):\n"
                f"{for_terminal(event.error.rstrip(), lines=True)}\n"
            )


def _baseline(baseline: Baseline) -> str:
    if baseline.unreadable is not None:
        return f"{baseline.check} could not be read into test names ({short(baseline.unreadable)})"
    failing = ", ".join(baseline.failing)
    flaky = f" ({len(baseline.flaky)} of them flaky)" if baseline.flaky else ""
    return (
        f"{baseline.passed} passing, {len(baseline.failing)} failing{flaky} before the first turn"
        + (f": {short(failing, 80)}" if failing else "")
    )


class ProgressDisplay(Protocol):
    """What every display offers (see the module's docstring)."""

    def track(self, label: str = "", budget: Budget | None = None) -> EventSink: ...

    def forget(self, sink: EventSink) -> None: ...

    def write(self, text: str) -> None: ...

    def __enter__(self) -> ProgressDisplay: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None: ...


class ProgressPrinter:
    """A sink that prints each notable event as ``[  1.2s] what happened`` (with the run's
    label first, when it has one)."""

    def __init__(self, stream: TextIO | None = None, label: str = "") -> None:
        self._out = stream if stream is not None else sys.stderr
        self._prefix = f"{label}: " if label else ""

    def emit(self, event: Event) -> None:
        described = describe(event)
        if described is not None:
            self._out.write(f"[{event.at:7.2f}s] {self._prefix}{described[0]}\n")
            self._out.flush()


@define
class PlainProgress:
    """The display for a log, a pipe or a dumb terminal: one plain line per step."""

    stream: TextIO = field(factory=lambda: sys.stderr)

    def track(self, label: str = "", budget: Budget | None = None) -> EventSink:
        return ProgressPrinter(self.stream, label)

    def forget(self, sink: EventSink) -> None:
        return None

    def write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        return None
