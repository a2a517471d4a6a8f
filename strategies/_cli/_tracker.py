"""`RunTracker`: an event sink that keeps where one run is (`RunStatus`) for a display."""

from __future__ import annotations

import time
from typing import Protocol

from attrs import evolve, frozen

from harness import (
    Event,
    IterationStarted,
    RunHalted,
    RunStarted,
    ToolCalled,
    TurnFinished,
    TurnStarted,
)
from termination import Budget


def short(text: str, width: int = 110) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


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
    shown = f"{event.call.name}({short(str(first), 30) if first is not None else ''})"
    return shown + (" failed" if event.is_error else "")
