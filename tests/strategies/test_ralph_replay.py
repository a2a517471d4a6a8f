"""Ralph: every iteration starts from a fresh context that carries only the check's last reason;
the workspace persists; each iteration has its own budget inside the run's; iterations are capped
and separated by a cooldown on the injected clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import (
    BudgetExceeded,
    Completed,
    ConfigurationError,
    Harness,
    IterationStarted,
    ScriptedModelClient,
    SensorTripped,
    SessionStateSnapshot,
    workspace_tools,
)
from harness.testing import FakeClock, ListSink
from strategies import Ralph, RalphCompletionUnmet
from termination import Budget, RepeatedToolCallSensor, TerminationPolicy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "loop"

pytestmark = pytest.mark.anyio


class PartsCheck:
    """Complete when notes.txt in the workspace has both parts."""

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls += 1
        assert state.workspace is not None
        notes = state.workspace / "notes.txt"
        text = notes.read_text() if notes.exists() else ""
        missing = [part for part in ("part one", "part two") if part not in text]
        return f"notes.txt lacks {' and '.join(missing)}" if missing else None

    def description(self) -> str:
        return "notes.txt has part one and part two."


def ralph_harness(
    model: ScriptedModelClient,
    workspace: Path,
    *,
    ralph: Ralph,
    budget: Budget | None = None,
    clock: FakeClock | None = None,
    sink: ListSink | None = None,
    check: Any = None,
) -> Harness:
    return Harness(
        model=model,
        policy=TerminationPolicy(budget=budget or Budget(), completion_check=check or PartsCheck()),
        strategy=ralph,
        tools=workspace_tools(),
        workspace=workspace,
        clock=clock or FakeClock(),
        sinks=[sink] if sink is not None else [],
    )


def writes(content: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.txt", "content": content}}
        ]
    }


async def test_each_iteration_starts_fresh_and_the_workspace_persists(tmp_path: Path) -> None:
    """Iteration 2's first request is system + task + the carried reason (3 messages), and it
    finds iteration 1's file in the workspace."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "ralph_fresh_context.jsonl")
    sink = ListSink()
    result = await ralph_harness(model, tmp_path, ralph=Ralph(max_iterations=3), sink=sink).run(
        "Write notes.txt with part one and part two."
    )
    assert result.halt_reason == Completed()
    assert result.verified
    assert result.iterations == 2
    assert [s.iteration for s in result.sessions] == [1, 2]
    assert (tmp_path / "notes.txt").read_text() == "part one\npart two\n"
    second = result.sessions[1].messages
    assert [m.role for m in second[:3]] == ["system", "user", "user"]
    assert second[2].feedback_source == "previous_iteration"
    assert [e.iteration for e in sink.events if isinstance(e, IterationStarted)] == [1, 2]
    assert result.turns == 5


async def completes_in_two_iterations_of_two_turns(
    model: ScriptedModelClient, workspace: Path
) -> None:
    """Run `model` under Ralph with two-turn iterations: complete after two, each checked."""
    check = PartsCheck()
    result = await ralph_harness(
        model,
        workspace,
        ralph=Ralph(max_iterations=3, iteration_budget=Budget(max_turns=2)),
        check=check,
    ).run("notes")
    assert result.halt_reason == Completed()
    assert result.iterations == 2
    assert check.calls == 2


async def test_an_iteration_that_runs_out_of_its_budget_is_checked_and_carried(
    tmp_path: Path,
) -> None:
    """An iteration stopped by iteration_budget still has its work checked; the reason and how
    the iteration ended are carried into the next one."""
    model = ScriptedModelClient.from_responses(
        [
            writes("part one\n"),
            {"tool_calls": [{"name": "list_files", "arguments": {}}]},
            {
                **writes("part one\npart two\n"),
                "expect": {
                    "message_count": 3,
                    "last_message_contains": [
                        "Iteration 1 ran out of its iteration budget (budget exceeded "
                        "(session): max_turns used 2 of 2) before you claimed the task was done",
                        "the completion check then looked at the workspace and reported what "
                        "is still missing:\nnotes.txt lacks part two",
                    ],
                    "not_contains": "claimed the task was done, and",
                },
            },
            {"text": "done"},
        ]
    )
    await completes_in_two_iterations_of_two_turns(model, tmp_path)


async def test_a_claim_on_the_last_budgeted_turn_is_carried_as_a_claim(tmp_path: Path) -> None:
    """An iteration that claims done on the turn that uses up its budget ended with a claim:
    the next iteration is told the check rejected its claim, not that it ran out of budget."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "ralph_claim_on_last_turn.jsonl")
    await completes_in_two_iterations_of_two_turns(model, tmp_path)


async def test_a_sensor_trip_ends_the_run_and_carries_nothing(tmp_path: Path) -> None:
    """A sensor that halts inside an iteration halts the run by name: no check, no next
    iteration, so there is nothing to carry (and nothing mislabelled as a budget or a claim)."""
    look = {"tool_calls": [{"name": "list_files", "arguments": {}}]}
    model = ScriptedModelClient.from_responses([look, look])
    check = PartsCheck()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(sensors=[RepeatedToolCallSensor(limit=2)], completion_check=check),
        strategy=Ralph(max_iterations=3, iteration_budget=Budget(max_turns=5)),
        tools=workspace_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
    )
    result = await harness.run("notes")
    assert isinstance(result.halt_reason, SensorTripped)
    assert result.halt_reason.sensor == "repeated_tool_call"
    assert result.iterations == 1
    assert check.calls == 0
    assert not any(m.feedback_source == "previous_iteration" for m in result.sessions[0].messages)


async def test_the_run_budget_bounds_the_whole_run_across_iterations(tmp_path: Path) -> None:
    """The run's budget counts every iteration: it halts the run (unverified, no check) even
    though the iteration still had turns left."""
    model = ScriptedModelClient.from_responses(
        [writes("part one\n"), {"text": "done"}, writes("part one\n")]
    )
    check = PartsCheck()
    result = await ralph_harness(
        model,
        tmp_path,
        ralph=Ralph(max_iterations=5, iteration_budget=Budget(max_turns=10)),
        budget=Budget(max_turns=3),
        check=check,
    ).run("notes")
    assert result.halt_reason == BudgetExceeded("max_turns", 3, 3, "run")
    assert not result.verified
    assert result.iterations == 2
    assert check.calls == 1  # only iteration 1's claim; the run budget skipped the rest


async def test_iteration_budget_is_per_iteration_not_cumulative(tmp_path: Path) -> None:
    """Each iteration gets the whole iteration budget afresh."""
    model = ScriptedModelClient.from_responses(
        [
            {**writes("part one\n"), "expect": {"turn": 1}},
            {"text": "done", "expect": {"turn": 2}},
            {"tool_calls": [{"name": "list_files"}], "expect": {"turn": 1}},
            {**writes("part one\npart two\n"), "expect": {"turn": 2}},
        ]
    )
    result = await ralph_harness(
        model, tmp_path, ralph=Ralph(max_iterations=2, iteration_budget=Budget(max_turns=2))
    ).run("notes")
    assert result.halt_reason == Completed()
    assert result.turns == 4


async def test_max_iterations_halts_with_completion_unmet(tmp_path: Path) -> None:
    """When every iteration ends without the check passing, the run halts with
    RalphCompletionUnmet naming the iterations and the last reason."""
    model = ScriptedModelClient.from_responses([{"text": "done"}, {"text": "done"}])
    result = await ralph_harness(model, tmp_path, ralph=Ralph(max_iterations=2)).run("notes")
    assert result.halt_reason == RalphCompletionUnmet(2, "notes.txt lacks part one and part two")
    assert not result.verified
    assert result.iterations == 2
    assert result.halt_reason.describe() == (
        "ralph ran 2 iterations and the check still fails: notes.txt lacks part one and part two"
    )


async def test_cooldown_advances_the_injected_clock_exactly(tmp_path: Path) -> None:
    """Between iterations the run waits `cooldown` seconds on its own clock, exactly, and not
    before the first iteration."""
    clock = FakeClock(start=1000.0)
    model = ScriptedModelClient.from_responses([{"text": "done"}] * 3)
    sink = ListSink()
    result = await ralph_harness(
        model, tmp_path, ralph=Ralph(max_iterations=3, cooldown=30), clock=clock, sink=sink
    ).run("notes")
    assert isinstance(result.halt_reason, RalphCompletionUnmet)
    assert [e.at for e in sink.events if isinstance(e, IterationStarted)] == [0.0, 30.0, 60.0]
    assert clock.now() == 1060.0
    assert result.elapsed == 60.0


async def test_an_iteration_wall_time_cuts_off_a_hung_call_and_moves_on(tmp_path: Path) -> None:
    """A model call hanging past the iteration's wall time is cancelled at that time; the check
    runs and the next iteration starts."""
    clock = FakeClock()
    model = ScriptedModelClient.from_responses(
        [
            {**writes("part one\n")},
            {"text": "thinking very hard", "delay": 10_000},
            {
                **writes("part one\npart two\n"),
                "expect": {
                    "last_message_contains": "Iteration 1 ran out of its iteration budget "
                    "(budget exceeded (session): max_wall_time used 100 of 100)"
                },
            },
            {"text": "done"},
        ]
    )
    sink = ListSink()
    result = await ralph_harness(
        model,
        tmp_path,
        ralph=Ralph(max_iterations=2, iteration_budget=Budget(max_wall_time=100)),
        clock=clock,
        sink=sink,
    ).run("notes")
    assert result.halt_reason == Completed()
    assert [e.at for e in sink.events if isinstance(e, IterationStarted)] == [0.0, 100.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_iterations": 0}, "'max_iterations' must be a positive int (got 0)"),
        ({"cooldown": -1}, "'cooldown' must be a number >= 0 (got -1)"),
        ({"iteration_budget": {"max_turns": 3}}, "'iteration_budget' must be a Budget"),
    ],
)
def test_bad_ralph_settings_are_configuration_errors(kwargs: dict[str, Any], message: str) -> None:
    """Ralph refuses settings that cannot work, naming the setting."""
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Ralph(**kwargs)
