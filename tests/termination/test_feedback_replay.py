"""Feedback providers in real runs: triggers fire at exact turns, the feedback reaches the next
request, a failing provider is skipped and logged, and feedback is bounded in size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from harness import (
    FeedbackInjected,
    HaltReason,
    Harness,
    RunResult,
    ScriptedModelClient,
    SessionStateSnapshot,
    ToolContext,
    update_plan,
)
from harness.extend import Run
from harness.testing import FakeClock, ListSink
from termination import (
    Budget,
    DeadlineFeedback,
    Feedback,
    FeedbackContext,
    FeedbackProviderConfig,
    FeedbackStatistics,
    FeedbackTrigger,
    PlanProgressFeedback,
    RepeatedToolCallSensor,
    TerminationPolicy,
    ToolUsageFeedback,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "feedback"
GENEROUS = Budget(max_turns=50)

pytestmark = pytest.mark.anyio


def step(n: int) -> str:
    """Do one step of the work."""
    return f"step {n} done"


def touch(path: str, ctx: ToolContext) -> str:
    """Create a file in the workspace."""
    assert ctx.workspace is not None
    target = ctx.workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("x")
    return f"created {path}"


class Counter:
    """Speaks every time it is asked, saying what its context showed."""

    name = "Counter"

    def should_run(self, context: FeedbackContext) -> bool:
        return True

    def provide(self, context: FeedbackContext) -> Feedback:
        return Feedback(
            self.name,
            f"{context.tool_call_count} tool calls so far, "
            f"{context.tool_calls_since_last_feedback} since I last spoke.",
        )


class Named(Counter):
    def __init__(self, name: str, text: str = "hello") -> None:
        self.name = name
        self.text = text

    def provide(self, context: FeedbackContext) -> Feedback:
        return Feedback(self.name, self.text)


class Broken(Counter):
    name = "Broken"

    def provide(self, context: FeedbackContext) -> Feedback:
        raise RuntimeError("provider bug")


class KeepPolicy:
    """The plain loop, keeping the policy session so a test can read its statistics."""

    name = "loop"

    def __init__(self) -> None:
        self.sessions: list[Any] = []

    async def run(self, run: Run) -> HaltReason:
        policy = run.policy.start_session(clock=run.clock)
        self.sessions.append(policy)
        end = await run.new_session(policy=policy).run()
        assert end.reason is not None
        return end.reason

    def statistics(self) -> FeedbackStatistics:
        stats: FeedbackStatistics = self.sessions[-1].statistics()
        return stats


class RejectOnce:
    def __init__(self) -> None:
        self.answers: list[str | None] = ["the report is missing", None]

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return self.answers.pop(0)

    def description(self) -> str:
        return "REPORT.md exists."


def steps(count: int, *, delay: float = 0, final: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "step", "arguments": {"n": i}}], "delay": delay}
        for i in range(1, count + 1)
    ]
    if final:
        rows.append({"text": "done"})
    return rows


async def run_with(
    rows: list[dict[str, Any]] | Path,
    feedback: list[Any],
    *,
    tmp_path: Path | None = None,
    budget: Budget = GENEROUS,
    tools: list[Any] | None = None,
    check: Any = None,
    sink: ListSink | None = None,
    **policy: Any,
) -> tuple[RunResult, KeepPolicy, ScriptedModelClient]:
    clock = FakeClock()
    model = (
        ScriptedModelClient.from_jsonl(rows, clock=clock)
        if isinstance(rows, Path)
        else ScriptedModelClient.from_responses(rows, clock=clock)
    )
    strategy = KeepPolicy()
    options: dict[str, Any] = {"budget": budget, "feedback": feedback, **policy}
    if check is not None:
        options["completion_check"] = check
    harness = Harness(
        model=model,
        policy=TerminationPolicy(**options),
        tools=tools if tools is not None else [step],
        strategy=strategy,
        workspace=tmp_path,
        clock=clock,
        sinks=[sink] if sink is not None else [],
    )
    result = await harness.run("Do the steps.")
    return result, strategy, model


async def test_every_n_calls_fires_at_exact_turns_and_reaches_the_next_request() -> None:
    """Every 3 calls: after turns 3 and 6, on the triggering tool result (fixture asserts)."""
    sink = ListSink()
    result, strategy, _ = await run_with(
        FIXTURES / "every_three_calls.jsonl",
        [(Counter(), FeedbackTrigger(every_n_calls=3))],
        sink=sink,
    )
    assert result.verified
    stats = strategy.statistics()
    assert [(f.turn, f.call_index) for f in stats.feedback] == [(3, 3), (6, 6)]
    assert stats.fired == {"Counter": 2}
    injected = [e for e in sink.events if isinstance(e, FeedbackInjected)]
    assert [(e.turn, e.source) for e in injected] == [
        (3, "feedback:Counter"),
        (6, "feedback:Counter"),
    ]


async def test_every_n_seconds_reads_the_injected_clock() -> None:
    """Model calls of 10 s and a 25 s trigger: the provider speaks after turns 3 and 6."""
    result, strategy, _ = await run_with(
        steps(7, delay=10), [(Counter(), FeedbackTrigger(every_n_seconds=25))]
    )
    assert result.verified
    assert [(f.turn, f.at) for f in strategy.statistics().feedback] == [(3, 30.0), (6, 60.0)]


async def test_conditions_are_ored_and_firing_resets_every_count() -> None:
    """Calls every 4 or 25 s: turn 3 (30 s) fires on time, turn 7 on calls; counts reset."""
    trigger = FeedbackTrigger(every_n_calls=4, every_n_seconds=25)
    _, strategy, _ = await run_with(steps(8, delay=10), [(Counter(), trigger)])
    assert [f.turn for f in strategy.statistics().feedback] == [3, 6]


async def test_the_deadline_provider_counts_down_on_the_fake_clock() -> None:
    """Calm with 6 minutes left, urgent with 200 s left (the fixture asserts the text)."""
    config = FeedbackProviderConfig(
        DeadlineFeedback(warning_threshold_seconds=240), FeedbackTrigger(every_n_seconds=150)
    )
    result, strategy, _ = await run_with(
        FIXTURES / "deadline.jsonl", [config], budget=Budget(max_wall_time=600)
    )
    assert result.verified
    severities = [(f.turn, f.severity) for f in strategy.statistics().feedback]
    assert severities == [(2, "info"), (4, "warning")]


async def test_a_file_trigger_fires_when_the_file_appears(tmp_path: Path) -> None:
    """A file there before the first model call never fires, even when rewritten; each new
    match of a glob fires once, on the turn it appears (the first turn included)."""
    (tmp_path / "README.md").write_text("old")
    rows: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "touch", "arguments": {"path": "out/a.json"}}]},
        {"tool_calls": [{"name": "touch", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "touch", "arguments": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "touch", "arguments": {"path": "out/b.json"}}]},
        {"tool_calls": [{"name": "touch", "arguments": {"path": "out/b.json"}}]},
        {"text": "done", "expect": {"not_contains": "[Feedback - Readme]"}},
    ]
    feedback = [
        (Named("Readme"), FeedbackTrigger(file_appears="README.md")),
        (Named("Outputs"), FeedbackTrigger(file_appears="out/*.json")),
    ]
    _, strategy, _ = await run_with(rows, feedback, tmp_path=tmp_path, tools=[touch])
    given = [(f.provider_name, f.turn) for f in strategy.statistics().feedback]
    assert given == [("Outputs", 1), ("Outputs", 4)]


async def test_a_file_trigger_without_a_workspace_is_a_configuration_error() -> None:
    """The trigger cannot watch a workspace the run does not have."""
    from harness import ConfigurationError

    with pytest.raises(ConfigurationError, match="file_appears trigger but the run has no"):
        await run_with([], [(Named("Files"), FeedbackTrigger(file_appears="x"))])


async def test_a_trigger_with_no_condition_never_fires() -> None:
    """FeedbackTrigger() is allowed and silent."""
    result, strategy, _ = await run_with(steps(3), [(Counter(), FeedbackTrigger())])
    assert result.verified
    assert strategy.statistics().fired == {"Counter": 0}


async def test_every_triggered_provider_runs_in_declared_order() -> None:
    """Two providers due on one turn both speak, first-declared first, on the same result."""
    final: dict[str, Any] = {
        "text": "done",
        "expect": {"last_message_contains": "step 1 done\n\n<harness-"},
    }
    rows = [*steps(1, final=False), final]
    trigger = FeedbackTrigger(every_n_calls=1)
    result, strategy, model = await run_with(
        rows, [(Named("First", "one"), trigger), (Named("Second", "two"), trigger)]
    )
    assert result.verified
    last = model.requests[-1].messages[-1].content
    assert last.index("[Feedback - First]") < last.index("[Feedback - Second]")
    assert [f.provider_name for f in strategy.statistics().feedback] == ["First", "Second"]


async def test_a_raising_provider_is_logged_and_skipped() -> None:
    """The run goes on, later providers still speak, and the failure is a structlog event."""
    trigger = FeedbackTrigger(every_n_calls=1)
    with capture_logs() as logs:
        result, strategy, _ = await run_with(
            steps(2), [(Broken(), trigger), (Named("After"), trigger)]
        )
    assert result.verified
    failures = [e for e in logs if e["event"] == "feedback.provider_failed"]
    assert [(e["provider"], e["stage"], e["turn"]) for e in failures] == [
        ("Broken", "provide", 1),
        ("Broken", "provide", 2),
    ]
    assert failures[0]["error"] == "RuntimeError: provider bug"
    assert failures[0]["log_level"] == "warning"
    stats = strategy.statistics()
    assert stats.failures == {"Broken": 2, "After": 0}
    assert [f.provider_name for f in stats.feedback] == ["After", "After"]


async def test_a_provider_returning_the_wrong_type_is_skipped() -> None:
    """should_run must return a bool and provide a Feedback; anything else is a failure."""

    class Sloppy(Counter):
        name = "Sloppy"

        def provide(self, context: FeedbackContext) -> Feedback:
            return "not feedback"  # type: ignore[return-value]

    with capture_logs() as logs:
        result, _, _ = await run_with(steps(1), [(Sloppy(), FeedbackTrigger(every_n_calls=1))])
    assert result.verified
    (failure,) = [e for e in logs if e["event"] == "feedback.provider_failed"]
    assert failure["error"] == "TypeError: returned str instead of a Feedback"


async def test_feedback_is_bounded_in_size() -> None:
    """A provider's 50,000-character summary reaches the model cut to the configured size."""
    huge = Named("Huge", "x" * 50_000)
    _, strategy, model = await run_with(
        steps(1), [(huge, FeedbackTrigger(every_n_calls=1))], feedback_max_chars=500
    )
    content = model.requests[-1].messages[-1].content
    body = content.split('<harness-feedback source="feedback:Huge">\n', 1)[1]
    body = body.removesuffix("\n</harness-feedback>")
    assert len(body) <= 500
    assert "[... feedback truncated:" in body
    assert len(strategy.statistics().feedback[0].summary) == 50_000  # the history keeps it all


async def test_without_a_tool_result_feedback_is_a_message_of_its_own() -> None:
    """After a rejected claim (no tool call), feedback is its own tagged user message, before
    the check's reason."""
    rows: list[dict[str, Any]] = [
        {"text": "done", "delay": 30},
        {
            "text": "done now",
            "expect": {"last_feedback_source": "completion_check", "last_role": "user"},
        },
    ]
    result, _, model = await run_with(
        rows,
        [(Named("Clock", "tick"), FeedbackTrigger(every_n_seconds=10))],
        check=RejectOnce(),
    )
    assert result.verified
    sent = model.requests[-1].messages
    assert [m.feedback_source for m in sent[-2:]] == ["feedback:Clock", "completion_check"]
    assert sent[-2].role == "user"
    assert "[Feedback - Clock]\n\ntick" in sent[-2].content


async def test_no_provider_runs_on_a_turn_that_halts() -> None:
    """A turn that completes the run or trips a sensor gives no feedback and uses no trigger."""
    trigger = FeedbackTrigger(every_n_calls=1)
    _, strategy, _ = await run_with(steps(2), [(Counter(), trigger)])
    assert [f.turn for f in strategy.statistics().feedback] == [1, 2]
    rows = [{"tool_calls": [{"name": "step", "arguments": {"n": 1}}]}] * 2
    result, strategy, _ = await run_with(
        rows, [(Counter(), trigger)], sensors=[RepeatedToolCallSensor(limit=2)]
    )
    assert not result.verified
    assert [f.turn for f in strategy.statistics().feedback] == [1]


async def test_context_carries_history_and_recent_calls() -> None:
    """A provider sees the last feedback, the history so far and the last N tool calls."""
    seen: list[tuple[int, str | None, list[str]]] = []

    class Curious(Counter):
        name = "Curious"

        def provide(self, context: FeedbackContext) -> Feedback:
            last = context.last_feedback
            calls = [o.content for o in context.recent_tool_calls(2)]
            seen.append((len(context.history), last.summary if last else None, calls))
            return Feedback(self.name, f"turn {context.snapshot.turns}")

    await run_with(steps(3), [(Curious(), FeedbackTrigger(every_n_calls=1))])
    assert seen == [
        (0, None, ["step 1 done"]),
        (1, "turn 1", ["step 1 done", "step 2 done"]),
        (2, "turn 2", ["step 2 done", "step 3 done"]),
    ]


async def test_tool_usage_and_plan_progress_in_a_run(tmp_path: Path) -> None:
    """Reading without changing anything draws ToolUsage; a plan draws PlanProgress."""
    (tmp_path / "a.txt").write_text("a")
    read = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt", "n": i}}]}
        for i in range(4)
    ]
    plan: dict[str, Any] = {
        "tool_calls": [
            {
                "name": "update_plan",
                "arguments": {"steps": [{"title": "write b", "status": "in_progress"}]},
            }
        ]
    }
    rows = [*read, plan, {"text": "done"}]
    feedback = [
        (ToolUsageFeedback(max_calls_without_progress=4), FeedbackTrigger(every_n_calls=2)),
        (PlanProgressFeedback(), FeedbackTrigger(every_n_calls=1)),
    ]

    def read_file(path: str, n: int, ctx: ToolContext) -> str:
        """Read a file."""
        assert ctx.workspace is not None
        return (ctx.workspace / path).read_text()

    _, strategy, _ = await run_with(
        rows, feedback, tmp_path=tmp_path, tools=[read_file, update_plan]
    )
    given = [(f.provider_name, f.turn, f.severity) for f in strategy.statistics().feedback]
    assert given == [("ToolUsage", 4, "caution"), ("PlanProgress", 5, "caution")]
    assert strategy.sessions[-1].statistics().feedback[-1].summary == (
        "1 of 1 plan steps remain open."
    )


async def test_statistics_and_repr_describe_the_session() -> None:
    """The policy session reports its providers and how much feedback they gave."""
    _, strategy, _ = await run_with(steps(1), [(Counter(), FeedbackTrigger(every_n_calls=1))])
    session = strategy.sessions[-1]
    assert repr(session) == "PolicySession(sensors=[], FeedbackRunner([Counter], given=1))"
