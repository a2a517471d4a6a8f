"""`RunTracker`: an event sink that keeps where one run is (`RunStatus`) for a display."""

from __future__ import annotations

import time
from typing import Protocol

from attrs import evolve, frozen

from harness.events import (
    Event,
    IterationStarted,
    RunHalted,
    RunStarted,
    RunTally,
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
    """Where one run is: a snapshot a display draws. The counts come from `tally` (the run's
    `RunTally`): `turns` counts the turns started (the one waiting for the model too), `at`
    is the run's clock at the last event, `cost_usd` is None once any price is unknown.
    `activity` says what the run is doing; `last_tool` is the latest finished call of this
    turn (name and first argument); `halted` is the halt's description."""

    label: str = ""
    run_id: str | None = None
    strategy: str | None = None
    agent: str | None = None
    iteration: int = 0
    tally: RunTally = RunTally()
    activity: str = "starting"
    last_tool: str | None = None
    max_turns: int | None = None
    max_cost_usd: float | None = None

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
    def input_tokens(self) -> int:
        return self.tally.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.tally.usage.output_tokens

    @property
    def total_tokens(self) -> int:
        return self.tally.usage.total_tokens

    @property
    def cost_usd(self) -> float | None:
        return self.tally.usage.cost_usd

    @property
    def at(self) -> float:
        return self.tally.at

    @property
    def halted(self) -> str | None:
        halt = self.tally.halt
        return halt.reason.describe() if halt is not None else None

    @property
    def verified(self) -> bool | None:
        halt = self.tally.halt
        return halt.verified if halt is not None else None


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
    """The status after `event`: the counts from the run's tally, the rest from the event."""
    tally = status.tally.add(event)
    match event:
        case RunStarted():
            return evolve(status, tally=tally, run_id=event.run_id, strategy=event.strategy)
        case IterationStarted():
            return evolve(status, tally=tally, agent=event.agent, iteration=event.iteration)
        case TurnStarted():
            return evolve(
                status,
                tally=tally,
                agent=event.agent,
                iteration=event.iteration,
                activity="waiting for the model",
            )
        case TurnFinished():
            calls = event.response.tool_calls
            activity = f"running {', '.join(c.name for c in calls)}" if calls else "claims done"
            return evolve(status, tally=tally, last_tool=None, activity=activity)
        case ToolCalled():
            return evolve(status, tally=tally, last_tool=_call_text(event))
        case RunHalted():
            return evolve(status, tally=tally, activity="halted")
    return evolve(status, tally=tally)


def _call_text(event: ToolCalled) -> str:
    first = next(iter(event.call.arguments.values()), None)
    shown = f"{event.call.name}({short(str(first), 30) if first is not None else ''})"
    return shown + (" failed" if event.is_error else "")
