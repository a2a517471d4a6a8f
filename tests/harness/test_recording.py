"""Recording real runs into fixture lines, and replaying them into the same events."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _provider_server import FakeProvider, FileCheck, Reply, fake_provider, openai_body

from harness import (
    BudgetExceeded,
    ConfigurationError,
    Event,
    FixtureUnconsumed,
    Harness,
    ModelClient,
    ModelFailed,
    OpenAIClient,
    RecordingModelClient,
    RetryPolicy,
    ScriptedModelClient,
    write_file,
)
from harness.testing import FakeClock, ListSink
from termination import Budget, TerminationPolicy

KEY = "sk-recording-5e6f7a8b9c0d"

pytestmark = pytest.mark.anyio


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with fake_provider() as server:
        yield server


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def keys(events: list[Event], *, times: bool = False) -> list[dict[str, Any]]:
    """Events without the run id (and without timing unless `times`), for comparing a replay
    with the original."""
    out = []
    for event in events:
        key = event.to_dict() if times else event.replay_key()
        key.pop("run_id", None)
        out.append(key)
    return out


def empty(workspace: Path) -> None:
    shutil.rmtree(workspace)
    workspace.mkdir()


async def run(
    model: ModelClient, workspace: Path, policy: TerminationPolicy | None = None
) -> tuple[ListSink, Any]:
    empty(workspace)
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=policy or TerminationPolicy(completion_check=FileCheck("a", "xy")),
        tools=[write_file],
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
    )
    return sink, await harness.run("write xy to a")


async def record(
    tmp_path: Path, inner: ModelClient, policy: TerminationPolicy | None = None
) -> tuple[Path, ListSink, Any]:
    """Run through a recorder in a fresh workspace: the fixture, the events and the result."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    fixture = tmp_path / "recorded.jsonl"
    events, result = await run(RecordingModelClient(inner, fixture), workspace, policy)
    return fixture, events, result


def write_call(call_id: str, content: str) -> dict[str, Any]:
    return {"id": call_id, "name": "write_file", "arguments": {"path": "a", "content": content}}


async def test_a_recorded_provider_run_replays_to_the_same_events(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """Record a real run (tools, a rejected claim, a pass), replay it: identical events."""
    provider.script(
        Reply(openai_body(None, tool_calls=[write_call("w1", "x")], finish_reason="tool_calls")),
        Reply(openai_body("done", prompt_tokens=40)),
        Reply(openai_body(None, tool_calls=[write_call("w2", "xy")], finish_reason="tool_calls")),
        Reply(openai_body("really done", prompt_tokens=80, cached_tokens=40)),
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fixture = tmp_path / "recorded.jsonl"
    real = OpenAIClient("gpt-4o", base_url=provider.url + "/v1")
    recorder = RecordingModelClient(real, fixture)
    original_events, original = await run(recorder, workspace)
    assert original.verified
    assert original.turns == 4

    lines = [json.loads(line) for line in fixture.read_text().splitlines()]
    assert len(lines) == 4
    assert set(lines[0]) == {
        "agent",
        "request_digest",
        "text",
        "tool_calls",
        "usage",
        "model",
        "stop_reason",
    }  # no `delay`: the provider answered while the run's FakeClock stood still
    assert lines[3]["usage"]["cached_tokens"] == 40

    replay = ScriptedModelClient.from_jsonl(fixture)
    replay_events, replayed = await run(replay, workspace)
    assert keys(replay_events.events) == keys(original_events.events)
    assert replayed.usage == original.usage
    assert [r.digest() for r in replay.requests] == [line["request_digest"] for line in lines]
    assert KEY not in fixture.read_text()


async def test_a_failed_call_is_recorded_and_replays_to_the_same_halt(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """A provider error is an error line; the replay halts with the same ModelFailed."""
    provider.script(
        Reply(openai_body(None, tool_calls=[write_call("w1", "x")], finish_reason="tool_calls")),
        Reply({"error": {"message": f"Incorrect API key provided: {KEY}"}}, 401),
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fixture = tmp_path / "recorded.jsonl"
    real = OpenAIClient("gpt-4o", base_url=provider.url + "/v1", retry=RetryPolicy.none())
    original_events, original = await run(RecordingModelClient(real, fixture), workspace)
    assert isinstance(original.halt_reason, ModelFailed)
    last = json.loads(fixture.read_text().splitlines()[-1])
    assert last["error"]["kind"] == "auth"
    assert KEY not in fixture.read_text()

    replay_events, replayed = await run(ScriptedModelClient.from_jsonl(fixture), workspace)
    assert replayed.halt_reason == original.halt_reason
    assert keys(replay_events.events) == keys(original_events.events)


async def test_a_call_cut_off_by_the_deadline_replays_to_the_same_cut(tmp_path: Path) -> None:
    """A call cancelled by the wall-time budget is recorded with its running time as delay."""
    inner = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [write_call("w1", "x")]},
            {"text": "never seen", "delay": 100},
        ]
    )
    policy = TerminationPolicy(
        budget=Budget(max_wall_time=10.0), completion_check=FileCheck("a", "xy")
    )
    fixture, original_events, original = await record(tmp_path, inner, policy)
    assert isinstance(original.halt_reason, BudgetExceeded)
    last = json.loads(fixture.read_text().splitlines()[-1])
    assert last["delay"] == 10.0
    assert "cancelled" in last["comment"]

    replay = ScriptedModelClient.from_jsonl(fixture)
    replay_events, replayed = await run(replay, tmp_path / "ws", policy)
    assert replayed.halt_reason == original.halt_reason
    assert keys(replay_events.events) == keys(original_events.events)


async def test_a_run_halted_by_its_wall_time_replays_to_the_same_budget_halt(
    tmp_path: Path,
) -> None:
    """Every answered call's latency on the run's clock is recorded as its line's `delay`, so
    a run stopped by max_wall_time replays to the same BudgetExceeded at the same times (not
    to a ModelFailed timeout that comes too early because the answered calls took no time)."""
    inner = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [write_call("w1", "x")], "delay": 6},
            {"tool_calls": [write_call("w2", "xy")], "delay": 3.25},
            {"text": "never seen", "delay": 100},
        ]
    )
    policy = TerminationPolicy(
        budget=Budget(max_wall_time=10.0), completion_check=FileCheck("a", "never")
    )
    fixture, original_events, original = await record(tmp_path, inner, policy)
    assert original.halt_reason == BudgetExceeded("max_wall_time", 10.0, 10.0)

    replay = ScriptedModelClient.from_jsonl(fixture)
    replay_events, replayed = await run(replay, tmp_path / "ws", policy)
    assert replayed.halt_reason == original.halt_reason
    assert keys(replay_events.events, times=True) == keys(original_events.events, times=True)
    assert replay.remaining == 0
    lines = [json.loads(line) for line in fixture.read_text().splitlines()]
    assert [line.get("delay") for line in lines] == [6, 3.25, 0.75]
    assert "error" not in lines[1]


async def test_a_failed_call_keeps_its_latency(tmp_path: Path) -> None:
    """A provider error that came after some time replays after the same time."""
    inner = ScriptedModelClient.from_responses(
        [{"error": {"kind": "server", "message": "overloaded", "retryable": True}, "delay": 4}]
    )
    fixture, original_events, original = await record(tmp_path, inner)
    line = json.loads(fixture.read_text())
    assert (line["delay"], line["error"]) == (
        4,
        {"kind": "server", "message": "overloaded", "retryable": True},
    )
    replay_events, replayed = await run(ScriptedModelClient.from_jsonl(fixture), tmp_path / "ws")
    assert replayed.halt_reason == original.halt_reason == ModelFailed("server", "overloaded")
    assert keys(replay_events.events, times=True) == keys(original_events.events, times=True)


async def test_an_older_recording_replays_its_latency_as_the_delay(tmp_path: Path) -> None:
    """Lines recorded before `delay` held the latency have only `latency`; it is the delay."""
    fixture = tmp_path / "old.jsonl"
    fixture.write_text(
        json.dumps({"tool_calls": [write_call("w1", "xy")], "latency": 2.5})
        + "\n"
        + json.dumps({"text": "done", "latency": 1, "delay": 0})
        + "\n"
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _, result = await run(ScriptedModelClient.from_jsonl(fixture), workspace)
    assert result.verified
    assert result.elapsed == 2.5  # the explicit `delay: 0` wins over the second `latency`


async def test_the_recorder_passes_prices_and_fixture_checks_through(tmp_path: Path) -> None:
    """prices_known and verify_consumed of the inner client survive the wrapping."""
    inner = ScriptedModelClient.from_responses([{"text": "a"}, {"text": "b"}])
    recorder = RecordingModelClient(inner, tmp_path / "r.jsonl")
    assert recorder.prices_known == inner.prices_known
    with pytest.raises(ConfigurationError, match="max_cost_usd"):
        Harness(
            model=RecordingModelClient(
                OpenAIClient("unpriced-model", api_key_env=None), tmp_path / "x.jsonl"
            ),
            policy=TerminationPolicy(budget=Budget(max_cost_usd=1.0)),
        )
    harness = Harness(model=recorder, policy=TerminationPolicy(), clock=FakeClock())
    with pytest.raises(FixtureUnconsumed):
        await harness.run("go")
    assert recorder.lines == 1
    assert "lines=1" in repr(recorder)
