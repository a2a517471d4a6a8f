"""A recording of a run that used MCP tools replays without the server: the recording keeps
each server's listing and each call's result, a replay serves them and emits the same events,
and a replayed call that differs from the recorded one fails closed, naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _mcp_support import Answered, sdk_server

from harness import (
    Completed,
    Event,
    FixtureError,
    Harness,
    MCPServer,
    RecordingModelClient,
    ScriptedModelClient,
    ToolServerStarted,
)
from harness.extend import ModelClient
from harness.testing import FakeClock, ListSink, fixture_from_transcript, write_fixture
from strategies import Ralph
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

ROWS: list[dict[str, Any]] = [
    {"text": "", "tool_calls": [{"id": "a1", "name": "calc__add", "arguments": {"a": 1, "b": 2}}]},
    {
        "text": "",
        "tool_calls": [
            {"id": "e1", "name": "calc__echo", "arguments": {"text": "hi"}},
            {"id": "f1", "name": "calc__fail", "arguments": {"message": "no"}},
        ],
    },
    {"text": "3 and hi: done", "expect": {"last_message_contains": "error"}},
]
# Stands for the server in a replay: it cannot be started, so a replay that started it would
# halt before the first model call.
GONE = MCPServer.stdio("calc", "/nonexistent/mcp-server")


def _run(model: ModelClient, server: MCPServer, **options: Any) -> tuple[Harness, ListSink]:
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=Answered("done")),
        mcp_servers=[server],
        clock=FakeClock(),
        sinks=[sink],
        **options,
    )
    return harness, sink


def _keys(events: list[Event]) -> list[dict[str, Any]]:
    out = []
    for event in events:
        key = event.replay_key()
        key.pop("run_id", None)
        out.append(key)
    return out


async def _record(path: Path, transcript: Path | None = None) -> list[Event]:
    recorder = RecordingModelClient(ScriptedModelClient.from_responses(ROWS), path)
    harness, sink = _run(recorder, sdk_server(), transcript=transcript)
    result = await harness.run("add and echo")
    assert result.halt_reason == Completed(), result.halt_reason
    return sink.events


async def test_a_recording_replays_without_the_server_into_the_same_events(
    tmp_path: Path,
) -> None:
    """The recording holds the listing before the first response and each call after the
    response that made it; replayed with the server gone, the run's events are the same."""
    recording = tmp_path / "rec.jsonl"
    original = await _record(recording)
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    assert "mcp_server" in lines[0]
    assert lines[0]["tools"][0]["input_schema"]["required"] == ["a", "b"]
    calls = [line["mcp_call"] for line in lines if "mcp_call" in line]
    assert next((c["tool"], c["id"], c["agent"]) for c in calls) == ("add", "a1", "builder")
    assert sorted(c["id"] for c in calls) == ["a1", "e1", "f1"]
    replay, sink = _run(ScriptedModelClient.from_jsonl(recording), GONE)
    result = await replay.run("add and echo")
    assert result.halt_reason == Completed()
    assert _keys(sink.events) == _keys(original)
    assert any(isinstance(e, ToolServerStarted) for e in sink.events)


async def test_a_transcript_becomes_a_fixture_that_replays_without_the_server(
    tmp_path: Path,
) -> None:
    """`fixture_from_transcript` carries the listing and the calls from the transcript."""
    transcript = tmp_path / "run.jsonl"
    original = await _record(tmp_path / "rec.jsonl", transcript)
    fixture = write_fixture(fixture_from_transcript(transcript), tmp_path / "fixture.jsonl")
    replay, sink = _run(ScriptedModelClient.from_jsonl(fixture), GONE)
    result = await replay.run("add and echo")
    assert result.halt_reason == Completed()
    assert _keys(sink.events) == _keys(original)


async def test_a_replayed_call_that_differs_from_the_recording_fails_closed(
    tmp_path: Path,
) -> None:
    """Other arguments than recorded are a FixtureAssertionError naming the file, the line
    of the recorded call and the field."""
    recording = tmp_path / "rec.jsonl"
    await _record(recording)
    lines = recording.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"a1"' in line and "mcp_call" in line)
    lines[index] = lines[index].replace('"a": 1', '"a": 5')
    recording.write_text("\n".join(lines) + "\n")
    replay, _ = _run(ScriptedModelClient.from_jsonl(recording), GONE)
    with pytest.raises(FixtureError, match="arguments") as caught:
        await replay.run("add and echo")
    assert f"{recording}:{index + 1}" in str(caught.value)
    assert "mcp_call.arguments" in str(caught.value)


async def test_a_recorded_call_left_unused_and_a_missing_server_fail_closed(
    tmp_path: Path,
) -> None:
    recording = tmp_path / "rec.jsonl"
    await _record(recording)
    lines = recording.read_text().splitlines()
    extra = json.loads(next(line for line in lines if "mcp_call" in line))
    extra["mcp_call"]["id"] = "never"
    recording.write_text("\n".join([*lines, json.dumps(extra)]) + "\n")
    replay, _ = _run(ScriptedModelClient.from_jsonl(recording), GONE)
    with pytest.raises(FixtureError, match=r"'never'.*unused"):
        await replay.run("add and echo")
    other = MCPServer.stdio("files", "/nonexistent/mcp-server")
    replay, _ = _run(ScriptedModelClient.from_jsonl(recording), other)
    with pytest.raises(FixtureError, match="MCP server 'files' but the recording lists"):
        await replay.run("add and echo")


def test_a_malformed_mcp_line_names_the_file_line_and_field(tmp_path: Path) -> None:
    fixture = tmp_path / "bad.jsonl"
    fixture.write_text(
        '{"text": "hi"}\n{"mcp_call": {"server": "calc"}, "result": {"content": 3}}\n'
    )
    with pytest.raises(FixtureError, match=r"bad.jsonl:2 field 'mcp_call.tool'"):
        ScriptedModelClient.from_jsonl(fixture)


async def test_servers_start_once_per_run_and_every_iteration_uses_them(tmp_path: Path) -> None:
    """Two Ralph iterations share the one server started for the run."""
    rows: list[dict[str, Any]] = [
        {
            "text": "",
            "tool_calls": [{"id": "x1", "name": "calc__add", "arguments": {"a": 1, "b": 1}}],
        },
        {"text": "not yet"},
        {
            "text": "",
            "tool_calls": [{"id": "x2", "name": "calc__add", "arguments": {"a": 2, "b": 2}}],
        },
        {"text": "done", "expect": {"last_message_contains": "4"}},
    ]
    harness, sink = _run(
        ScriptedModelClient.from_responses(rows), sdk_server(), strategy=Ralph(max_iterations=2)
    )
    result = await harness.run("count")
    assert result.halt_reason == Completed(), result.halt_reason
    assert result.iterations == 2
    assert len([e for e in sink.events if isinstance(e, ToolServerStarted)]) == 1
