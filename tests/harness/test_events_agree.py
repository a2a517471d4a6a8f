"""Every step of a run emits a typed event, and the three outlets agree event for event: the
structlog logger, the async iterator of `Harness.stream`, and the JSONL transcript."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from harness import (
    CheckFailed,
    CheckPassed,
    Event,
    FeedbackInjected,
    FixtureExhausted,
    Harness,
    IterationStarted,
    RunHalted,
    RunStarted,
    ScriptedModelClient,
    SensorRead,
    SessionStateSnapshot,
    ToolCalled,
    TurnFinished,
    TurnStarted,
    VerdictReached,
    read_transcript,
    tool,
    workspace_tools,
)
from harness.testing import FakeClock, ListSink
from strategies import SelfVerifying
from termination import RepeatedToolCallSensor, TerminationPolicy

pytestmark = pytest.mark.anyio

ALL_EVENTS = {
    RunStarted: "run.started",
    IterationStarted: "iteration.started",
    TurnStarted: "turn.started",
    TurnFinished: "turn.finished",
    ToolCalled: "tool.called",
    SensorRead: "sensor.reading",
    CheckFailed: "check.failed",
    CheckPassed: "check.passed",
    FeedbackInjected: "feedback.injected",
    VerdictReached: "verdict.reached",
    RunHalted: "run.halted",
}


class NeedsReadme:
    """Complete when README.md exists."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        assert state.workspace is not None
        return None if (state.workspace / "README.md").exists() else "README.md is missing"

    def description(self) -> str:
        return "README.md exists."


def write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def scenario(workspace: Path, transcript: Path, sinks: list[Any]) -> Harness:
    """A run that produces every kind of event: tools, a sensor warning, a rejected claim,
    feedback, a passed check, a failed and a passed verdict."""
    builder = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [write("notes.txt", "x")], "delay": 1.5},
            {"tool_calls": [write("notes.txt", "x")], "delay": 1.5},
            {"text": "done", "usage": {"input_tokens": 10, "output_tokens": 1}},
            {"tool_calls": [write("README.md", "# hi")], "delay": 2},
            {"text": "done now"},
            {"text": "fixed", "expect": {"last_feedback_source": "evaluator"}},
        ]
    )
    evaluator = ScriptedModelClient.from_responses(
        [{"text": "Too short.\nVERDICT: FAIL", "delay": 4}, {"text": "VERDICT: PASS"}]
    )
    return Harness(
        model=builder,
        policy=TerminationPolicy(
            sensors=[RepeatedToolCallSensor(limit=3, warn_at=2)], completion_check=NeedsReadme()
        ),
        strategy=SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        transcript=transcript,
        sinks=sinks,
    )


def as_json(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(event.to_dict()))
    return data


async def test_structlog_the_stream_and_the_transcript_agree(tmp_path: Path) -> None:
    """The same events, in the same order, with the same fields, reach all three outlets; every
    kind of event occurs; and the run's result matches the last event."""
    transcript = tmp_path / "run.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    listed = ListSink()
    streamed: list[Event] = []
    with capture_logs() as logs:
        async with scenario(workspace, transcript, [listed]).stream("write a README") as events:
            async for event in events:
                streamed.append(event)
        result = events.result

    assert result.verified
    assert {type(e) for e in streamed} == set(ALL_EVENTS)
    assert all(e.name == ALL_EVENTS[type(e)] for e in streamed)
    assert streamed == listed.events

    rows = read_transcript(transcript)
    assert rows == [as_json(e) for e in streamed]

    run_id = streamed[0].to_dict()["run_id"]
    assert run_id == result.run_id
    assert len(logs) == len(streamed)
    for log, event in zip(logs, streamed, strict=True):
        log = dict(log)
        assert log.pop("log_level") == event.level
        assert log.pop("run_id") == run_id  # on every line
        assert json.loads(json.dumps(log)) == {
            k: v for k, v in as_json(event).items() if k != "run_id"
        }

    halted = streamed[-1]
    assert isinstance(halted, RunHalted)
    assert halted.reason == result.halt_reason
    assert (halted.turns, halted.tool_calls, halted.usage) == (
        result.turns,
        result.tool_calls,
        result.usage,
    )


async def test_the_event_order_of_a_run(tmp_path: Path) -> None:
    """Budgets, tools, sensors, the check and feedback appear in the order the loop runs them,
    each stamped with the run's clock."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sink = ListSink()
    result = await scenario(workspace, tmp_path / "run.jsonl", [sink]).run("write a README")
    assert result.verified
    timeline = [
        (e.name, e.at, getattr(e, "agent", None), getattr(e, "turn", None)) for e in sink.events
    ]
    assert timeline == [
        ("run.started", 0.0, None, None),
        ("iteration.started", 0.0, "builder", None),
        ("turn.started", 0.0, "builder", 1),
        ("turn.finished", 1.5, "builder", 1),
        ("tool.called", 1.5, "builder", 1),
        ("turn.started", 1.5, "builder", 2),
        ("turn.finished", 3.0, "builder", 2),
        ("tool.called", 3.0, "builder", 2),
        ("sensor.reading", 3.0, "builder", 2),
        ("feedback.injected", 3.0, "builder", 2),
        ("turn.started", 3.0, "builder", 3),
        ("turn.finished", 3.0, "builder", 3),
        ("check.failed", 3.0, "builder", 3),
        ("feedback.injected", 3.0, "builder", 3),
        ("turn.started", 3.0, "builder", 4),
        ("turn.finished", 5.0, "builder", 4),
        ("tool.called", 5.0, "builder", 4),
        ("turn.started", 5.0, "builder", 5),
        ("turn.finished", 5.0, "builder", 5),
        ("check.passed", 5.0, "builder", 5),
        ("iteration.started", 5.0, "evaluator", None),
        ("turn.started", 5.0, "evaluator", 1),
        ("turn.finished", 9.0, "evaluator", 1),
        ("verdict.reached", 9.0, None, None),
        ("feedback.injected", 9.0, "builder", 5),
        ("turn.started", 9.0, "builder", 6),
        ("turn.finished", 9.0, "builder", 6),
        ("check.passed", 9.0, "builder", 6),
        ("iteration.started", 9.0, "evaluator", None),
        ("turn.started", 9.0, "evaluator", 1),
        ("turn.finished", 9.0, "evaluator", 1),
        ("verdict.reached", 9.0, None, None),
        ("run.halted", 9.0, None, None),
    ]


async def test_a_debug_filtering_logger_drops_only_debug_events(tmp_path: Path) -> None:
    """A logger that filters out debug still gets every info and warning event."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    capturing = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(
        capturing,
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        processors=[],
    )
    harness = scenario(workspace, tmp_path / "run.jsonl", [])
    harness.logger = logger
    sink = ListSink()
    harness.sinks = [sink]
    await harness.run("write a README")
    captured = capturing.calls
    expected = [e.name for e in sink.events if e.level != "debug"]
    assert [call.kwargs["event"] for call in captured] == expected
    assert {call.method_name for call in captured} == {"info", "warning"}


async def test_a_run_that_completes_logs_one_info_line(tmp_path: Path) -> None:
    """At INFO a completed run is one line, its outcome, as an HTTP client logs a request;
    its start, turns, tool calls and the passing check are DEBUG."""
    capturing = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(
        capturing,
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        processors=[],
    )
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "note", "arguments": {"text": "hi"}}]}, {"text": "done"}]
    )

    @tool(inline=True)
    def note(text: str) -> str:
        """Take a note."""
        return text

    sink = ListSink()
    harness = Harness(
        model=model, policy=TerminationPolicy(), tools=[note], sinks=[sink], logger=logger
    )
    result = await harness.run("take a note")
    assert result.verified
    assert [(c.method_name, c.kwargs["event"]) for c in capturing.calls] == [("info", "run.halted")]
    assert {e.name for e in sink.events if e.level == "debug"} == {
        "run.started",
        "iteration.started",
        "turn.started",
        "turn.finished",
        "tool.called",
        "check.passed",
    }


async def test_a_broken_fixture_still_ends_the_stream_with_run_halted(tmp_path: Path) -> None:
    """When the script runs out mid-run, the stream still ends with `run.halted` (a fixture
    failure) and leaving the block raises the FixtureError."""
    model = ScriptedModelClient.from_responses([{"tool_calls": [{"name": "list_files"}]}])
    harness = Harness(
        model=model,
        policy=TerminationPolicy(),
        tools=workspace_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
        transcript=tmp_path / "run.jsonl",
    )
    names: list[str] = []

    async def consume() -> None:
        async with harness.stream("list") as events:
            async for event in events:
                names.append(event.name)

    with pytest.raises(FixtureExhausted):
        await consume()
    assert names[-1] == "run.halted"
    last = read_transcript(tmp_path / "run.jsonl")[-1]
    assert last["reason"]["type"] == "ModelFailed"
    assert last["reason"]["kind"] == "fixture"
