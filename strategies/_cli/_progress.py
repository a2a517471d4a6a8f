"""Showing runs to a person while they happen.

The pieces, for `harness run` and for anything else that runs several at once (a board):

- `describe(event)`: the one line worth printing for an event, or None.
- `RunTracker`: an event sink that folds one run's events into a `RunStatus` (turn, session,
  tokens, cost, last tool, what it is doing now), and prints nothing.
- A display, made by `open_progress(stream)`: `LiveProgress` (in `_live`) on a terminal,
  which keeps a status line per run redrawn in place and prints what happened above it, or
  `PlainProgress` anywhere else, which prints one plain line per step. Both have the same API:

      with open_progress(sys.stderr) as progress:
          sink = progress.track(label="T-1", budget=policy.budget)  # one per run
          await Harness(..., sinks=[sink]).run(task)
          progress.write("a line from elsewhere\\n")  # e.g. a log line; never garbles the panel

  `track` returns an `EventSink` for that run; the display is thread-safe.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Literal, Protocol, TextIO

from attrs import define, evolve, field, frozen

from harness import (
    CheckFailed,
    CheckPassed,
    Event,
    EventSink,
    FeedbackInjected,
    IterationStarted,
    RunHalted,
    RunStarted,
    SensorRead,
    ToolCalled,
    TurnFinished,
    TurnStarted,
    VerdictReached,
)
from termination import Budget

_WIDTH = 110

Tone = Literal["plain", "good", "bad", "warn", "strong"]


def _short(text: str, width: int = _WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def describe(event: Event) -> tuple[str, Tone] | None:
    """The line to print for `event` (and how it reads: good, bad, ...), or None."""
    match event:
        case RunStarted():
            return f"run {event.run_id} started ({event.strategy}) in {event.workspace}", "plain"
        case IterationStarted():
            return f"{event.agent} session {event.iteration} started", "strong"
        case TurnFinished():
            calls = ", ".join(c.name for c in event.response.tool_calls)
            said = _short(event.response.text, 60) if event.response.text else ""
            what = f"calls {calls}" if calls else f"says done: {said!r}"
            return f"{event.agent} turn {event.turn}: {what}", "plain"
        case ToolCalled() if event.is_error:
            return f"  {event.call.name} failed: {_short(event.content, 80)}", "bad"
        case SensorRead():
            tone: Tone = "bad" if event.status == "halt" else "warn"
            return f"sensor {event.sensor} {event.status}: {_short(event.message)}", tone
        case CheckPassed():
            return "check passed", "good"
        case CheckFailed():
            return f"check failed: {_short(event.reason)}", "bad"
        case FeedbackInjected():
            return f"feedback from {event.source} goes into the next turn", "warn"
        case VerdictReached():
            verdict = "PASS" if event.passed else "FAIL"
            tone = "good" if event.passed else "bad"
            return f"evaluator round {event.round}: {verdict} {_short(event.reasons, 80)}", tone
        case RunHalted():
            return f"halted: {event.reason.describe()}", "good" if event.verified else "strong"
    return None


@frozen
class RunStatus:
    """Where one run is: a snapshot a display draws. `turns` counts the turns started (the one
    waiting for the model too); `at` is the run's clock at the last event; `cost_usd` is None
    once any price is unknown; `activity` says what the run is doing; `last_tool` is the
    latest finished call of this turn (name and first argument); `halted` is the halt's
    description."""

    label: str = ""
    run_id: str | None = None
    strategy: str | None = None
    agent: str | None = None
    iteration: int = 0
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    at: float = 0.0
    activity: str = "starting"
    last_tool: str | None = None
    halted: str | None = None
    verified: bool | None = None
    max_turns: int | None = None
    max_cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class RunTracker:
    """An event sink that keeps one run's `RunStatus` (`status`), and when it last changed on
    the monotonic clock (`changed_at`), so a display can tick the elapsed time between events.
    `on_event`, if given, is called after each event (a display's hook)."""

    def __init__(
        self,
        label: str = "",
        budget: Budget | None = None,
        on_event: OnEvent | None = None,
    ) -> None:
        self.status = RunStatus(
            label=label,
            max_turns=budget.max_turns if budget else None,
            max_cost_usd=budget.max_cost_usd if budget else None,
        )
        self.changed_at = time.monotonic()
        self._on_event = on_event

    def emit(self, event: Event) -> None:
        self.status = _fold(self.status, event)
        self.changed_at = time.monotonic()
        if self._on_event is not None:
            self._on_event(self, event)

    def elapsed(self, now: float | None = None) -> float:
        """The run's elapsed time now: the last event's time, plus the time since it came
        (until the run halts)."""
        if self.status.halted is not None:
            return self.status.at
        return self.status.at + max(0.0, (now or time.monotonic()) - self.changed_at)


class OnEvent(Protocol):
    def __call__(self, tracker: RunTracker, event: Event) -> None: ...


def _fold(status: RunStatus, event: Event) -> RunStatus:
    at = max(status.at, event.at)
    match event:
        case RunStarted():
            return evolve(status, run_id=event.run_id, strategy=event.strategy, at=at)
        case IterationStarted():
            return evolve(status, agent=event.agent, iteration=event.iteration, at=at)
        case TurnStarted():
            return evolve(
                status,
                agent=event.agent,
                iteration=event.iteration,
                turns=status.turns + 1,
                at=at,
                activity="waiting for the model",
            )
        case TurnFinished():
            usage = event.response.usage
            cost = status.cost_usd
            if cost is not None:
                cost = None if usage.cost_usd is None else cost + usage.cost_usd
            calls = event.response.tool_calls
            activity = f"running {', '.join(c.name for c in calls)}" if calls else "claims done"
            return evolve(
                status,
                last_tool=None,
                input_tokens=status.input_tokens + usage.input_tokens,
                output_tokens=status.output_tokens + usage.output_tokens,
                cost_usd=cost,
                at=at,
                activity=activity,
            )
        case ToolCalled():
            return evolve(
                status,
                tool_calls=status.tool_calls + 1,
                tool_errors=status.tool_errors + event.is_error,
                last_tool=_call_text(event),
                at=at,
            )
        case RunHalted():
            return evolve(
                status,
                turns=event.turns,
                tool_calls=event.tool_calls,
                input_tokens=event.usage.input_tokens,
                output_tokens=event.usage.output_tokens,
                cost_usd=event.usage.cost_usd,
                halted=event.reason.describe(),
                verified=event.verified,
                activity="halted",
                at=at,
            )
    return evolve(status, at=at)


def _call_text(event: ToolCalled) -> str:
    first = next(iter(event.call.arguments.values()), None)
    shown = f"{event.call.name}({_short(str(first), 30) if first is not None else ''})"
    return shown + (" failed" if event.is_error else "")


class Progress(Protocol):
    """What every display offers (see the module's docstring)."""

    def track(self, label: str = "", budget: Budget | None = None) -> EventSink: ...

    def write(self, text: str) -> None: ...

    def __enter__(self) -> Progress: ...

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


def is_live_terminal(stream: TextIO) -> bool:
    """True when `stream` is a terminal that can redraw in place (not TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
    return tty and os.environ.get("TERM", "") not in ("dumb", "")


def open_progress(stream: TextIO | None = None, *, live: bool | None = None) -> Progress:
    """The display for `stream` (stderr by default): live on a terminal, plain lines otherwise
    (`live` forces one or the other)."""
    out = stream if stream is not None else sys.stderr
    if live is None:
        live = is_live_terminal(out)
    if live:
        from ._live import LiveProgress

        return LiveProgress(out)
    return PlainProgress(out)
