"""Compaction keeps a long session inside the model's window: old tool outputs become notes, or
older turns become a tagged summary written by the model; each is a `context.compacted` event,
and a recorded run with compaction replays with the same requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import (
    BudgetExceeded,
    Compaction,
    ConfigurationError,
    Harness,
    RecordingModelClient,
    RunResult,
    ScriptedModelClient,
    workspace_tools,
)
from harness.events import ContextCompacted, RunTally, TranscriptReader
from harness.extend import ModelClient, ModelRequest, ModelResponse
from harness.testing import FakeClock, FixtureAssertionError, ListSink
from termination import Budget, TerminationPolicy

FIXTURES = Path(__file__).parents[2] / "fixtures" / "compaction"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "big.txt").write_text("BIG" * 1333 + "B")
    (root / "small.txt").write_text("a small file\n")
    return root


class _Digests:
    """A model client that forwards to `inner` and keeps each request's digest."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.digests: list[str] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.digests.append(request.digest())
        return await self.inner.complete(request)


async def _run(
    model: ModelClient, workspace: Path, compaction: Compaction | str | None
) -> tuple[RunResult, ListSink]:
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_turns=10)),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
        context_window=1000,
        compaction=compaction,
    )
    return await harness.run("Read the files."), sink


@pytest.mark.anyio
async def test_old_tool_outputs_are_replaced_by_a_note(workspace: Path) -> None:
    """Near the window, tool outputs older than the kept turns become a note naming the tool
    and the size dropped; the run goes on and the event says what was compacted."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "drop_tool_outputs.jsonl")
    result, sink = await _run(model, workspace, Compaction("drop_tool_outputs", keep_turns=1))
    assert result.halt_reason.verified
    [event] = [e for e in sink.events if isinstance(e, ContextCompacted)]
    assert (event.method, event.messages, event.turn) == ("drop_tool_outputs", 1, 2)
    assert event.tool_calls == ("r1",)
    assert event.tokens_before >= 1100  # the latest call's input, or the text's estimate
    assert event.chars_before - event.chars_after > 3500
    assert event.summary is None


@pytest.mark.anyio
async def test_older_turns_are_summarised_by_the_model_and_tagged(workspace: Path) -> None:
    """With "summarize" the older turns go to the model without tools, and a tagged summary
    replaces them; the summary call's usage is the run's."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "summarize.jsonl")
    result, sink = await _run(model, workspace, Compaction("summarize", keep_turns=1))
    assert result.halt_reason.verified
    [event] = [e for e in sink.events if isinstance(e, ContextCompacted)]
    assert (event.method, event.messages, event.turn) == ("summarize", 4, 3)
    assert event.tool_calls == ("r1", "r2")
    assert event.summary == "Read big.txt (4,000 characters of B and I) and small.txt."
    assert event.usage.input_tokens == 600
    assert result.usage.input_tokens == 100 + 1100 + 1150 + 600 + 300
    assert result.turns == 4  # the summary call is not a turn of the agent
    summary = [m for m in result.transcript if m.feedback_source == "compaction"]
    assert len(summary) == 1


@pytest.mark.anyio
async def test_without_compaction_nothing_is_dropped(workspace: Path) -> None:
    """The same script without compaction fails where the note was expected: compaction is
    what changed the request."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "drop_tool_outputs.jsonl")
    with pytest.raises(FixtureAssertionError, match="not_contains"):
        await _run(model, workspace, None)


@pytest.mark.anyio
@pytest.mark.parametrize("fixture", ["drop_tool_outputs", "summarize"])
async def test_a_recorded_run_with_compaction_replays_with_the_same_requests(
    workspace: Path, tmp_path: Path, fixture: str
) -> None:
    """Recording a run with compaction and replaying the recording sends the same requests
    (digests), in the same order, and emits the same events."""
    compaction = Compaction(fixture, keep_turns=1)  # type: ignore[arg-type]
    recording = tmp_path / "recording.jsonl"
    scripted = ScriptedModelClient.from_jsonl(FIXTURES / f"{fixture}.jsonl")
    first = _Digests(RecordingModelClient(scripted, recording))
    original, original_sink = await _run(first, workspace, compaction)
    recorded = [json.loads(line)["request_digest"] for line in recording.read_text().splitlines()]
    assert first.digests == recorded
    replay = _Digests(ScriptedModelClient.from_jsonl(recording))
    replayed, replay_sink = await _run(replay, workspace, compaction)
    assert replay.digests == recorded
    assert [e.replay_key() for e in replay_sink.events if e.name != "run.started"] == [
        e.replay_key() for e in original_sink.events if e.name != "run.started"
    ]
    assert replayed.halt_reason == original.halt_reason


def test_compaction_settings_are_checked() -> None:
    """An unknown method, a fraction outside (0, 1), and compaction without a context window
    are configuration errors that name the setting."""
    with pytest.raises(ConfigurationError, match=r"'compaction' must be one of"):
        Compaction("forget")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"'at' must be a fraction in \(0, 1\) \(got 1\)"):
        Compaction("summarize", at=1)
    with pytest.raises(ConfigurationError, match=r"'keep_turns' must be a positive int"):
        Compaction("summarize", keep_turns=0)
    with pytest.raises(ConfigurationError, match="needs the model's context window"):
        Harness(
            model=ScriptedModelClient.from_responses([]),
            policy=TerminationPolicy(),
            compaction="summarize",
        )
    harness = Harness(
        model=ScriptedModelClient.from_responses([]),
        policy=TerminationPolicy(),
        compaction="drop_tool_outputs",
        context_window=100,
    )
    assert harness.compaction == Compaction("drop_tool_outputs")


@pytest.mark.anyio
async def test_a_summary_that_uses_up_the_budget_halts_before_the_next_call(
    workspace: Path,
) -> None:
    """The budgets are asked again after the summary call: one that takes the run past its
    token budget halts it before the agent's next call."""
    lines = (FIXTURES / "summarize.jsonl").read_text().splitlines()
    script = [json.loads(line) for line in lines if line.startswith("{")][:-1]
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses(script),
        policy=TerminationPolicy(budget=Budget(max_total_tokens=2900)),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
        context_window=1000,
        compaction=Compaction("summarize", keep_turns=1),
    )
    result = await harness.run("Read the files.")
    assert isinstance(result.halt_reason, BudgetExceeded)
    assert result.halt_reason.limit == "max_total_tokens"
    assert result.turns == 3
    assert result.usage.total_tokens == 3000
    assert [e for e in sink.events if isinstance(e, ContextCompacted)] != []


@pytest.mark.anyio
async def test_the_transcript_reads_back_the_compaction_and_tallies_its_usage(
    workspace: Path, tmp_path: Path
) -> None:
    """`context.compacted` in a JSONL transcript reads back as the event the run emitted, and
    a tally of the events counts the summary call's usage as the run did."""
    transcript = tmp_path / "run.jsonl"
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_jsonl(FIXTURES / "summarize.jsonl"),
        policy=TerminationPolicy(),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
        transcript=transcript,
        context_window=1000,
        compaction=Compaction("summarize", keep_turns=1),
    )
    result = await harness.run("Read the files.")
    read = [event for _, event in TranscriptReader(transcript)]
    [emitted] = [e for e in sink.events if isinstance(e, ContextCompacted)]
    assert [e for e in read if isinstance(e, ContextCompacted)] == [emitted]
    tally = RunTally()
    for event in read[:-1]:  # up to, not including, run.halted
        tally = tally.add(event)
    assert tally.usage == result.usage
