"""Feedback values, triggers, the built-in providers and their config tables, in isolation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from harness import ConfigurationError, Plan, PlanStep, SessionStateSnapshot, ToolCall, Usage
from harness.extend import ToolOutcome
from termination import (
    Budget,
    BudgetFeedback,
    DeadlineFeedback,
    Feedback,
    FeedbackContext,
    FeedbackProviderConfig,
    FeedbackTrigger,
    Observation,
    PlanProgressFeedback,
    TerminationPolicy,
    ToolUsageFeedback,
    feedback_from_config,
    register_feedback,
)
from termination._feedback_runner import bound

NO_USAGE = Usage()


NO_BUDGET = Budget()


def snap(
    *,
    now: float = 0.0,
    deadline: float | None = None,
    turns: int = 1,
    tool_calls: int = 0,
    usage: Usage = NO_USAGE,
    store: dict[type, tuple[Any, ...]] | None = None,
    outcomes: Sequence[ToolOutcome] = (),
) -> SessionStateSnapshot:
    return SessionStateSnapshot.standalone(
        now=now,
        started_at=0.0,
        session_started_at=0.0,
        run_id="r",
        task="t",
        iteration=1,
        tool_outcomes=outcomes,
        turns=turns,
        tool_calls=tool_calls,
        usage=usage,
        run_turns=turns,
        run_tool_calls=tool_calls,
        run_usage=usage,
        deadline=deadline,
        store=store or {},
    )


def context(
    snapshot: SessionStateSnapshot, *, budget: Budget = NO_BUDGET, since: int = 0
) -> FeedbackContext:
    return FeedbackContext(
        snapshot=snapshot,
        budget=budget,
        deadline=snapshot.deadline,
        tool_calls_since_last_feedback=since,
        last_feedback=None,
        history=(),
    )


class Quiet:
    name = "Quiet"

    def should_run(self, context: FeedbackContext) -> bool:
        return True

    def provide(self, context: FeedbackContext) -> Feedback:
        return Feedback(self.name, "hello")


class Named(Quiet):
    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text

    def provide(self, context: FeedbackContext) -> Feedback:
        return Feedback(self.name, self.text)


def test_render_has_the_seed_layout() -> None:
    """Header, summary, observations as "- label: value", then one arrow per suggestion."""
    feedback = Feedback(
        "ToolUsageMonitor",
        "You have made 25 tool calls.",
        (Observation("Recent calls", "read_file, write_file"),),
        ("Review what you've accomplished so far.", "Check if you're making progress."),
        "caution",
    )
    assert feedback.render() == (
        "[Feedback - ToolUsageMonitor]\n\n"
        "You have made 25 tool calls.\n\n"
        "- Recent calls: read_file, write_file\n\n"
        "→ Review what you've accomplished so far.\n"
        "→ Check if you're making progress."
    )
    assert Feedback("Deadline", "You have 8 minutes remaining.").render() == (
        "[Feedback - Deadline]\n\nYou have 8 minutes remaining."
    )


def test_feedback_rejects_an_unknown_severity() -> None:
    """Severity is info, caution or warning."""
    with pytest.raises(ConfigurationError, match="'severity' must be one of"):
        Feedback("X", "y", severity="urgent")  # type: ignore[arg-type]


def test_bound_cuts_long_text_and_says_how_much() -> None:
    """The result never exceeds the limit and ends with the number of characters cut."""
    text = "x" * 5000
    cut = bound(text, 300)
    assert len(cut) <= 300
    assert cut.endswith(f"[... feedback truncated: {5000 - cut.index(chr(10))} more characters]")
    assert bound("short", 300) == "short"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"every_n_calls": 0}, "'every_n_calls' must be a positive int"),
        ({"every_n_calls": 2.5}, "'every_n_calls' must be a positive int"),
        ({"every_n_seconds": -1}, "'every_n_seconds' must be a positive number"),
        ({"file_appears": ""}, "'file_appears' must be a non-empty path"),
        ({"file_appears": "/etc/passwd"}, "must be a path inside the workspace"),
        ({"file_appears": "../x"}, "must be a path inside the workspace"),
    ],
)
def test_trigger_settings_are_validated(kwargs: dict[str, Any], message: str) -> None:
    """A trigger's conditions are checked when it is built, naming the field."""
    with pytest.raises(ConfigurationError, match=message):
        FeedbackTrigger(**kwargs)


def test_a_trigger_with_no_condition_never_fires() -> None:
    """No condition set means `never`."""
    assert FeedbackTrigger().never
    assert not FeedbackTrigger(every_n_calls=1).never


def test_policy_accepts_configs_and_pairs_and_refuses_bad_providers() -> None:
    """(provider, trigger) pairs work; duplicate names, bad names and async methods do not."""
    trigger = FeedbackTrigger(every_n_calls=1)
    policy = TerminationPolicy(feedback=[(Quiet(), trigger)])
    assert policy.feedback == (FeedbackProviderConfig(policy.feedback[0].provider, trigger),)
    with pytest.raises(ConfigurationError, match="two providers named 'Quiet'"):
        TerminationPolicy(feedback=[(Quiet(), trigger), (Quiet(), trigger)])
    with pytest.raises(ConfigurationError, match="must hold FeedbackProviderConfig"):
        TerminationPolicy(feedback=[Quiet()])

    class BadName(Quiet):
        name = 'x" onload="'

    with pytest.raises(ConfigurationError, match="name must be 1-64 letters"):
        FeedbackProviderConfig(BadName(), trigger)

    class Async(Quiet):
        async def provide(self, context: FeedbackContext) -> Feedback:  # type: ignore[override]
            return Feedback(self.name, "late")

    with pytest.raises(ConfigurationError, match="provide must be a plain function, not async"):
        FeedbackProviderConfig(Async(), trigger)
    with pytest.raises(ConfigurationError, match="'feedback_max_chars' must be an int >= 200"):
        TerminationPolicy(feedback_max_chars=10)


def test_deadline_feedback_is_calm_then_urgent() -> None:
    """Minutes while there is time; below the threshold, seconds and suggestions."""
    provider = DeadlineFeedback(warning_threshold_seconds=120)
    assert not provider.should_run(context(snap()))
    calm = provider.provide(context(snap(now=100, deadline=600)))
    assert (calm.summary, calm.severity, calm.suggestions) == (
        "You have 8 minutes remaining.",
        "info",
        (),
    )
    urgent = provider.provide(context(snap(now=510, deadline=600)))
    assert urgent.summary == "You have 90 seconds remaining."
    assert urgent.severity == "warning"
    assert urgent.suggestions[0] == "Prioritize completing critical remaining work."
    over = provider.provide(context(snap(now=600, deadline=600)))
    assert over.summary == "The time limit has been reached."


def test_budget_feedback_follows_the_most_used_dimension() -> None:
    """Severity comes from the tightest limit; every set dimension is an observation."""
    provider = BudgetFeedback(caution_at=0.5, warning_at=0.8)
    assert not provider.should_run(context(snap(), budget=Budget(max_wall_time=10)))
    budget = Budget(max_turns=20, max_total_tokens=10_000, max_cost_usd=1.0)
    usage = Usage(input_tokens=5000, output_tokens=1000, cost_usd=0.1)
    feedback = provider.provide(context(snap(turns=17, usage=usage), budget=budget))
    assert feedback.severity == "warning"
    assert feedback.summary == "85% of the turns budget is used; 3 left."
    assert [o.label for o in feedback.observations] == ["turns", "total tokens", "cost"]
    assert feedback.observations[2].value == "$0.10 of $1.00 used"
    assert feedback.suggestions
    calm = provider.provide(context(snap(turns=2, usage=usage), budget=budget))
    assert calm.severity == "caution"  # 6,000 of 10,000 tokens
    with pytest.raises(ConfigurationError, match="'caution_at' must not exceed"):
        BudgetFeedback(caution_at=0.9, warning_at=0.8)


def test_budget_feedback_skips_an_unknown_cost() -> None:
    """A run with an unknown price reports the dimensions it can."""
    provider = BudgetFeedback()
    budget = Budget(max_turns=10, max_cost_usd=1.0)
    feedback = provider.provide(context(snap(turns=1, usage=Usage(cost_usd=None)), budget=budget))
    assert [o.label for o in feedback.observations] == ["turns"]


def test_plan_progress_lists_the_first_open_steps() -> None:
    """Caution while most steps are open; a finished plan is info."""
    provider = PlanProgressFeedback(show=2)
    assert not provider.should_run(context(snap()))
    plan = Plan((PlanStep("read", "done"), PlanStep("fix"), PlanStep("test"), PlanStep("document")))
    feedback = provider.provide(context(snap(store={Plan: (plan,)})))
    assert feedback.summary == "3 of 4 plan steps remain open."
    assert feedback.observations == (Observation("Open steps", "fix, test (and 1 more)"),)
    assert feedback.severity == "caution"
    done = Plan((PlanStep("read", "done"),))
    assert provider.provide(context(snap(store={Plan: (done,)}))).summary == (
        "All 1 plan steps are done."
    )


def test_tool_usage_speaks_after_calls_without_progress() -> None:
    """Without a workspace or plan change, N calls bring a caution and 2N a warning."""
    provider = ToolUsageFeedback(max_calls_without_progress=3).bind()
    provider.start(snap(turns=0))
    outcome = ToolOutcome(0.0, "builder", 1, ToolCall("1", "read_file", {}), "x", False)
    assert not provider.should_run(context(snap(tool_calls=2, outcomes=[outcome])))
    assert provider.should_run(context(snap(tool_calls=3, outcomes=[outcome])))
    feedback = provider.provide(context(snap(tool_calls=3, outcomes=[outcome])))
    assert feedback.severity == "caution"
    assert feedback.summary.startswith("You have made 3 tool calls since")
    assert feedback.observations == (Observation("Recent calls", "read_file"),)
    assert provider.provide(context(snap(tool_calls=6))).severity == "warning"
    plan = Plan((PlanStep("a"),))
    assert not provider.should_run(context(snap(tool_calls=7, store={Plan: (plan,)})))


def test_feedback_from_config_builds_provider_and_trigger() -> None:
    """A [[feedback]] table gives a provider config with its trigger."""
    config = feedback_from_config(
        {
            "type": "deadline",
            "warning_threshold_seconds": 90,
            "trigger": {"every_n_seconds": 30, "file_appears": "DONE"},
        },
        where="spec: feedback[0]",
    )
    assert config.provider == DeadlineFeedback(warning_threshold_seconds=90)
    assert config.trigger == FeedbackTrigger(every_n_seconds=30, file_appears="DONE")
    for kind, cls in [
        ("budget", BudgetFeedback),
        ("tool_usage", ToolUsageFeedback),
        ("plan_progress", PlanProgressFeedback),
    ]:
        built = feedback_from_config({"type": kind, "trigger": {"every_n_calls": 5}}, where="f")
        assert isinstance(built.provider, cls)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"type": "x", "trigger": {}}, "spec: feedback[0].type must be one of"),
        ({"type": "deadline"}, "spec: feedback[0].trigger is required"),
        ({"type": "deadline", "trigger": 5}, "spec: feedback[0].trigger must be a table"),
        ({"type": "deadline", "trigger": {}}, "spec: feedback[0].trigger sets no condition"),
        (
            {"type": "deadline", "trigger": {"every_n_call": 3}},
            "spec: feedback[0].trigger: unknown key 'every_n_call' for a trigger; "
            "did you mean 'every_n_calls'?",
        ),
        (
            {"type": "deadline", "trigger": {"every_n_calls": "3"}},
            "spec: feedback[0].trigger.every_n_calls must be an integer",
        ),
        (
            {"type": "deadline", "treshold": 1, "trigger": {"every_n_calls": 3}},
            "spec: feedback[0]: unknown key 'treshold' for feedback provider 'deadline'",
        ),
        (
            {"type": "budget", "warning_at": 2, "trigger": {"every_n_calls": 3}},
            "spec: feedback[0]: BudgetFeedback: 'warning_at' must be a fraction",
        ),
        (
            {"type": "plan_progress", "name": "a b", "trigger": {"every_n_calls": 3}},
            "spec: feedback[0]: a feedback provider's name must be",
        ),
    ],
)
def test_feedback_config_errors_name_the_key(table: dict[str, Any], message: str) -> None:
    """Types, unknown keys and bad values are errors that say where they are."""
    pattern = message.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(ConfigurationError, match=pattern):
        feedback_from_config(table, where="spec: feedback[0]")


def test_registered_providers_are_available_to_config_tables() -> None:
    """register_feedback adds a type; its settings are checked against its signature."""

    def greeter(greeting: str = "hi") -> Named:
        return Named("Greeter", greeting)

    register_feedback("greeter", greeter)
    try:
        config = feedback_from_config(
            {"type": "greeter", "greeting": "hello", "trigger": {"every_n_calls": 1}}, where="f"
        )
        assert config.provider.provide(context(snap())).summary == "hello"
        with pytest.raises(
            ConfigurationError, match=r"f: unknown key 'greting' .*did you mean 'greeting'"
        ):
            feedback_from_config(
                {"type": "greeter", "greting": "x", "trigger": {"every_n_calls": 1}}, where="f"
            )
    finally:
        from termination._keys import FEEDBACK
        from termination._sensor_config import _PROVIDERS

        del _PROVIDERS["greeter"]
        del FEEDBACK.schemas["greeter"]
