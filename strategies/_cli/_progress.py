"""A sink that prints a run's progress for a person: one short line per step."""

from __future__ import annotations

import sys
from typing import TextIO

from harness import (
    CheckFailed,
    CheckPassed,
    Event,
    FeedbackInjected,
    IterationStarted,
    RunHalted,
    RunStarted,
    SensorRead,
    ToolCalled,
    TurnFinished,
    VerdictReached,
)

_WIDTH = 110


def _short(text: str, width: int = _WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class ProgressPrinter:
    """Prints each notable event as ``[  1.2s] what happened``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._out = stream if stream is not None else sys.stderr

    def emit(self, event: Event) -> None:
        line = self._describe(event)
        if line is not None:
            self._out.write(f"[{event.at:7.2f}s] {line}\n")
            self._out.flush()

    def _describe(self, event: Event) -> str | None:
        match event:
            case RunStarted():
                return f"run {event.run_id} started ({event.strategy}) in {event.workspace}"
            case IterationStarted():
                return f"{event.agent} session {event.iteration} started"
            case TurnFinished():
                calls = ", ".join(c.name for c in event.response.tool_calls)
                said = _short(event.response.text, 60) if event.response.text else ""
                what = f"calls {calls}" if calls else f"says done: {said!r}"
                return f"{event.agent} turn {event.turn}: {what}"
            case ToolCalled() if event.is_error:
                return f"  {event.call.name} failed: {_short(event.content, 80)}"
            case SensorRead():
                return f"sensor {event.sensor} {event.status}: {_short(event.message)}"
            case CheckPassed():
                return "check passed"
            case CheckFailed():
                return f"check failed: {_short(event.reason)}"
            case FeedbackInjected():
                return f"feedback from {event.source} goes into the next turn"
            case VerdictReached():
                verdict = "PASS" if event.passed else "FAIL"
                return f"evaluator round {event.round}: {verdict} {_short(event.reasons, 80)}"
            case RunHalted():
                return f"halted: {event.reason.describe()}"
        return None
