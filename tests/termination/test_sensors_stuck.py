"""Replays of stuck scripted agents: each new sensor halts its kind of stuck run, by name, long
before a generous budget, on asyncio and on trio."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks import CompletionCheck
from harness import (
    Harness,
    RunResult,
    ScriptedModelClient,
    SensorRead,
    SensorTripped,
    SessionStateSnapshot,
    workspace_tools,
)
from harness.testing import FakeClock, ListSink
from strategies import Ralph
from termination import (
    Budget,
    CheckChurnSensor,
    ContextPressureSensor,
    NoProgressSensor,
    OscillationSensor,
    RepeatedClaimSensor,
    Sensor,
    TerminationPolicy,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sensors"
GENEROUS = Budget(max_turns=50)

pytestmark = pytest.mark.anyio


class SameGap:
    """A check that always names the same missing piece."""

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls += 1
        return "tests/test_parser.py fails: parse('a  b') returned ['a', '', 'b']"

    def description(self) -> str:
        return "The test suite passes."


class SlowerEachTime:
    """A check whose reason names the same failure with a different timing each time."""

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls += 1
        return f"tests/test_parser.py: 1 failed in 0.{40 + self.calls}s"

    def description(self) -> str:
        return "The test suite passes."


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "parser.py").write_text("def parse(text):\n    return text.split()\n")
    (tmp_path / "test_parser.py").write_text("def test_parse():\n    assert True\n")
    (tmp_path / "README.md").write_text("# parser\n" + "words " * 200)
    return tmp_path


async def _replay(
    fixture: str,
    sensors: list[Sensor],
    tmp_path: Path,
    sink: ListSink,
    check: CompletionCheck | None = None,
    **harness: object,
) -> RunResult:
    clock = FakeClock()
    model = ScriptedModelClient.from_jsonl(FIXTURES / fixture, clock=clock)
    policy = TerminationPolicy(
        budget=GENEROUS,
        sensors=sensors,
        completion_check=check or SameGap(),
        max_rejections=10,
    )
    run = Harness(
        model=model,
        policy=policy,
        tools=workspace_tools(),
        workspace=_workspace(tmp_path),
        clock=clock,
        sinks=[sink],
        **harness,  # type: ignore[arg-type]
    )
    return await run.run("Make the parser handle repeated spaces.")


def _tripped(result: RunResult, sensor: str) -> SensorTripped:
    reason = result.halt_reason
    assert isinstance(reason, SensorTripped), reason
    assert reason.sensor == sensor
    assert not result.verified
    return reason


async def test_an_oscillating_agent_is_halted_by_the_oscillation_sensor(tmp_path: Path) -> None:
    """A, B, A, B, A, B: halted after turn 6 of 50 by `oscillation`, naming both calls."""
    sink = ListSink()
    result = await _replay("oscillating.jsonl", [OscillationSensor(limit=3)], tmp_path, sink)
    reason = _tripped(result, "oscillation")
    assert result.turns == 6
    assert "the same 2 calls (read_file, read_file) 3 times" in reason.message


async def test_a_repeating_agent_is_halted_by_the_oscillation_sensor(tmp_path: Path) -> None:
    """Exact repeats are the period-1 case: three identical calls halt after turn 3."""
    sink = ListSink()
    result = await _replay("repeating.jsonl", [OscillationSensor(limit=3)], tmp_path, sink)
    reason = _tripped(result, "oscillation")
    assert result.turns == 3
    assert "the same call (list_files) 3 times" in reason.message


async def test_an_agent_editing_nothing_is_halted_by_the_no_progress_sensor(
    tmp_path: Path,
) -> None:
    """Reads, a same-bytes rewrite and a listing change nothing: halted after turn 4 of 50."""
    sink = ListSink()
    sensors: list[Sensor] = [NoProgressSensor(limit=4), OscillationSensor(limit=3)]
    result = await _replay("editing_nothing.jsonl", sensors, tmp_path, sink)
    reason = _tripped(result, "no_progress")
    assert result.turns == 4
    assert reason.message == "the workspace and the plan have not changed for 4 turns"


async def test_an_agent_reclaiming_done_is_halted_by_the_check_churn_sensor(
    tmp_path: Path,
) -> None:
    """Three claims rejected for the same reason halt on the third turn, before max_rejections."""
    sink = ListSink()
    result = await _replay("same_gap.jsonl", [CheckChurnSensor(limit=3)], tmp_path, sink)
    reason = _tripped(result, "check_churn")
    assert result.turns == 3
    assert reason.message.startswith(
        "the completion check rejected 3 claims of done in a row for the same reason: "
        "tests/test_parser.py fails"
    )
    failed = [e for e in sink.events if e.name == "check.failed"]
    assert len(failed) == 3  # the third rejection is still recorded


async def test_an_agent_repeating_its_claim_is_halted_by_the_repeated_claim_sensor(
    tmp_path: Path,
) -> None:
    """The same claim of done, rejected three times for reasons that differ only in their
    timing: warned on the second, halted on the third turn that claims (turn 4 of 50), long
    before max_rejections; CheckChurnSensor, reading the reasons, never trips."""
    sink = ListSink()
    sensors: list[Sensor] = [
        CheckChurnSensor(limit=3),
        RepeatedClaimSensor(limit=3, warn_at=2),
    ]
    check = SlowerEachTime()
    result = await _replay("same_claim.jsonl", sensors, tmp_path, sink, check=check)
    reason = _tripped(result, "repeated_claim")
    assert result.turns == 4
    assert check.calls == 3
    assert reason.message == (
        "the agent made the same claim of done 3 times in a row and the completion check "
        "rejected it each time: 'All done: parse() now handles repeated spaces and the tests "
        "pass.'"
    )
    statuses = [(e.sensor, e.turn, e.status) for e in sink.events if isinstance(e, SensorRead)]
    assert statuses == [("repeated_claim", 3, "warn"), ("repeated_claim", 4, "halt")]


async def test_an_agent_filling_its_context_is_warned_then_halted(tmp_path: Path) -> None:
    """At 80% of the window the agent is warned (the fixture asserts it), at 95% halted."""
    sink = ListSink()
    result = await _replay(
        "filling_context.jsonl",
        [ContextPressureSensor(warn_at=0.75, limit=0.9)],
        tmp_path,
        sink,
        context_window=10_000,
    )
    reason = _tripped(result, "context_pressure")
    assert result.turns == 5
    assert "95% of the model's 10,000-token context window" in reason.message
    statuses = [(e.turn, e.status) for e in sink.events if isinstance(e, SensorRead)]
    assert statuses == [(4, "warn"), (5, "halt")]


async def test_check_churn_across_ralph_iterations_halts_the_next_iteration(
    tmp_path: Path,
) -> None:
    """When the check runs between Ralph iterations, the next session's first turn trips."""
    clock = FakeClock()
    model = ScriptedModelClient.from_responses(
        [{"text": "done"}, {"text": "done again"}, {"text": "and again"}], clock=clock
    )
    policy = TerminationPolicy(
        budget=GENEROUS, sensors=[CheckChurnSensor(limit=2)], completion_check=SameGap()
    )
    harness = Harness(
        model=model,
        policy=policy,
        strategy=Ralph(max_iterations=10),
        workspace=_workspace(tmp_path),
        clock=clock,
    )
    result = await harness.run("Fix the parser.")
    _tripped(result, "check_churn")
    assert result.iterations == 3
    assert result.turns == 3
