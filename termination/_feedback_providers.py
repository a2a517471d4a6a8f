"""Built-in feedback providers: the deadline, the budget, tool use without progress, the plan."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from attrs import field, frozen

from harness import ConfigurationError, Plan, SessionStateSnapshot
from harness.extend import check_positive

from ._feedback import Feedback, FeedbackContext, Observation, Severity
from ._ignore import DEFAULT_IGNORE
from ._workspace_watch import WorkspaceWatch

if TYPE_CHECKING:
    from ._monitor import WorkspaceMonitor


def _number(owner: str, name: str, value: object, *, integer: bool = False) -> None:
    check_positive(name, value, integer=integer, owner=owner)


def _fraction(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigurationError(f"{owner}: {name!r} must be a fraction in (0, 1] (got {value!r})")


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{int(seconds // 60)} minutes"
    whole = max(int(seconds), 0)
    return "1 second" if whole == 1 else f"{whole} seconds"


@frozen
class DeadlineFeedback:
    """Tells the agent how much time is left; below `warning_threshold_seconds`, urgently.

    It says nothing when the run and the session have no wall-time limit.
    """

    warning_threshold_seconds: float = 120.0
    name: str = "Deadline"

    def __attrs_post_init__(self) -> None:
        _number("DeadlineFeedback", "warning_threshold_seconds", self.warning_threshold_seconds)

    def should_run(self, context: FeedbackContext) -> bool:
        return context.deadline is not None

    def provide(self, context: FeedbackContext) -> Feedback:
        remaining = context.remaining_time
        assert remaining is not None, "should_run() is False without a deadline"
        if remaining <= 0:
            return Feedback(
                self.name,
                "The time limit has been reached.",
                suggestions=("Stop starting new work; leave the workspace in a coherent state.",),
                severity="warning",
            )
        summary = f"You have {_duration(remaining)} remaining."
        if remaining >= self.warning_threshold_seconds:
            return Feedback(self.name, summary)
        return Feedback(
            self.name,
            summary,
            suggestions=(
                "Prioritize completing critical remaining work.",
                "Consider summarizing progress and remaining tasks.",
            ),
            severity="warning",
        )


_DIMENSIONS: tuple[tuple[str, str], ...] = (
    ("max_turns", "turns"),
    ("max_tool_calls", "tool calls"),
    ("max_total_tokens", "total tokens"),
    ("max_input_tokens", "input tokens"),
    ("max_output_tokens", "output tokens"),
    ("max_cost_usd", "cost"),
)


def _used(snapshot: SessionStateSnapshot, limit: str) -> float | None:
    usage = snapshot.run_usage
    return {
        "max_turns": snapshot.run_turns,
        "max_tool_calls": snapshot.run_tool_calls,
        "max_total_tokens": usage.total_tokens,
        "max_input_tokens": usage.input_tokens,
        "max_output_tokens": usage.output_tokens,
        "max_cost_usd": usage.cost_usd,
    }[limit]


def _amount(limit: str, value: float) -> str:
    return f"${value:,.2f}" if limit == "max_cost_usd" else f"{value:,.0f}"


@frozen
class BudgetFeedback:
    """Reports how much of the run's budget (turns, tool calls, tokens, cost) is left.

    Severity follows the most used-up dimension: ``caution`` from `caution_at`, ``warning``
    from `warning_at` (fractions of the limit). Wall time is `DeadlineFeedback`'s job. It says
    nothing when the budget sets none of these dimensions.
    """

    caution_at: float = 0.5
    warning_at: float = 0.8
    name: str = "Budget"

    def __attrs_post_init__(self) -> None:
        _fraction("BudgetFeedback", "caution_at", self.caution_at)
        _fraction("BudgetFeedback", "warning_at", self.warning_at)
        if self.caution_at > self.warning_at:
            raise ConfigurationError(
                f"BudgetFeedback: 'caution_at' must not exceed warning_at={self.warning_at} "
                f"(got {self.caution_at!r})"
            )

    def should_run(self, context: FeedbackContext) -> bool:
        return bool(self._readings(context))

    def _readings(self, context: FeedbackContext) -> list[tuple[float, str, str, float, float]]:
        found = []
        for limit, label in _DIMENSIONS:
            cap = getattr(context.budget, limit)
            used = _used(context.snapshot, limit)
            if cap is None or used is None:
                continue
            found.append((used / cap, limit, label, used, cap))
        return found

    def provide(self, context: FeedbackContext) -> Feedback:
        readings = self._readings(context)
        share, limit, label, used, cap = max(readings)
        left = max(cap - used, 0)
        observations = tuple(
            Observation(lab, f"{_amount(lim, u)} of {_amount(lim, c)} used")
            for _, lim, lab, u, c in readings
        )
        severity: Severity = (
            "warning"
            if share >= self.warning_at
            else "caution"
            if share >= self.caution_at
            else "info"
        )
        summary = f"{share:.0%} of the {label} budget is used; {_amount(limit, left)} left."
        suggestions: tuple[str, ...] = ()
        if severity == "warning":
            suggestions = (
                "Finish the most important remaining work first.",
                "The run stops when a budget runs out, and unverified work does not count.",
            )
        return Feedback(self.name, summary, observations, suggestions, severity)


def _names(value: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
        raise ConfigurationError(
            f"ToolUsageFeedback: 'ignore' must be a list of file or folder names (got {value!r})"
        )
    return tuple(value)


@frozen
class ToolUsageFeedback:
    """Speaks up when the agent has made `max_calls_without_progress` tool calls since the
    workspace's files or the plan last changed.

    Progress is looked for each time the trigger fires (through the run's `WorkspaceMonitor`,
    as `NoProgressSensor` does), so it is as fine-grained as the trigger. ``caution`` at the
    threshold, ``warning`` at twice it. Per-session memory: bound per session by the policy.
    """

    max_calls_without_progress: int = 20
    name: str = "ToolUsage"
    ignore: tuple[str, ...] = field(default=DEFAULT_IGNORE, converter=_names)

    def __attrs_post_init__(self) -> None:
        _number(
            "ToolUsageFeedback",
            "max_calls_without_progress",
            self.max_calls_without_progress,
            integer=True,
        )

    @property
    def workspace_ignore(self) -> tuple[str, ...]:
        return self.ignore

    def bind(self) -> _BoundToolUsage:
        return _BoundToolUsage(self)

    def should_run(self, context: FeedbackContext) -> bool:
        raise ConfigurationError("ToolUsageFeedback is bound per session; use bind()")

    def provide(self, context: FeedbackContext) -> Feedback:
        raise ConfigurationError("ToolUsageFeedback is bound per session; use bind()")


class _BoundToolUsage:
    __slots__ = ("_calls_at_progress", "_config", "_watch")

    def __init__(self, config: ToolUsageFeedback) -> None:
        self._config = config
        self._watch = WorkspaceWatch(config.ignore)
        self._calls_at_progress = 0

    def attach(self, monitor: WorkspaceMonitor) -> None:
        self._watch.attach(monitor)

    def wants_settled(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether it would speak this turn unless a change is still in flight."""
        idle = snapshot.tool_calls - self._calls_at_progress
        return self._watch.watching and idle >= self._config.max_calls_without_progress

    @property
    def name(self) -> str:
        return self._config.name

    def start(self, snapshot: SessionStateSnapshot) -> None:
        self._watch.look(snapshot)

    def should_run(self, context: FeedbackContext) -> bool:
        if self._watch.look(context.snapshot):
            self._calls_at_progress = context.tool_call_count
        return self._idle(context) >= self._config.max_calls_without_progress

    def _idle(self, context: FeedbackContext) -> int:
        return context.tool_call_count - self._calls_at_progress

    def provide(self, context: FeedbackContext) -> Feedback:
        idle = self._idle(context)
        limit = self._config.max_calls_without_progress
        recent = context.recent_tool_calls(5)
        observations = (
            (Observation("Recent calls", ", ".join(o.call.name for o in recent)),) if recent else ()
        )
        return Feedback(
            self.name,
            f"You have made {idle} tool calls since the workspace or your plan last changed.",
            observations,
            (
                "Review what you have accomplished so far.",
                "Make a concrete change toward the goal, or change your approach.",
            ),
            "warning" if idle >= 2 * limit else "caution",
        )

    def __repr__(self) -> str:
        return f"ToolUsageFeedback(bound, calls_at_progress={self._calls_at_progress})"


@frozen
class PlanProgressFeedback:
    """Reminds the agent of its plan: how many steps remain and the first few of them.

    ``caution`` while more than half the steps are open, ``info`` otherwise; it says nothing
    until the agent has a plan (`harness.Plan`, written by the `update_plan` tool).
    """

    show: int = 3
    name: str = "PlanProgress"

    def __attrs_post_init__(self) -> None:
        _number("PlanProgressFeedback", "show", self.show, integer=True)

    def should_run(self, context: FeedbackContext) -> bool:
        return context.snapshot.latest(Plan) is not None

    def provide(self, context: FeedbackContext) -> Feedback:
        plan = context.snapshot.latest(Plan)
        assert plan is not None, "should_run() is False without a plan"
        total = len(plan.steps)
        open_steps = plan.open_steps
        if not open_steps:
            return Feedback(self.name, f"All {total} plan steps are done.")
        titles = [s.title for s in open_steps[: self.show]]
        more = len(open_steps) - len(titles)
        listed = ", ".join(titles) + (f" (and {more} more)" if more else "")
        return Feedback(
            self.name,
            f"{len(open_steps)} of {total} plan steps remain open.",
            (Observation("Open steps", listed),),
            ("Focus on the open steps before wrapping up.",),
            "caution" if len(open_steps) > total // 2 else "info",
        )
