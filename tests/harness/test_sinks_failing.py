"""Sinks never crash a run: a sink that raises is detached and reported once, a transcript or a
recording line is never torn, and lone surrogates (a non-UTF-8 file name) are written as
escapes that round-trip."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _provider_server import FileCheck

from harness import (
    Event,
    Harness,
    ModelFailed,
    RecordingModelClient,
    RunResult,
    ScriptedModelClient,
    list_files,
    write_file,
)
from harness.events import SinkFailed
from harness.extend import ModelRequest, ModelResponse
from harness.testing import FakeClock, ListSink, fixture_from_transcript, write_fixture
from strategies._viewer import write_view
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

NAME = b"caf\xe9.txt"  # Latin-1, not UTF-8: Python lists it as 'caf\udce9.txt'
LISTED = os.fsdecode(NAME)

SCRIPT: list[dict[str, Any]] = [
    {"text": "what is here?", "tool_calls": [{"name": "list_files", "arguments": {}}]},
    {
        "text": f"I see {LISTED}; writing a",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a", "content": "xy"}}],
    },
    {"text": "done"},
]


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(os.path.join(os.fsencode(ws), NAME), "wb") as handle:
        handle.write(b"old")
    return ws


def harness(model: Any, ws: Path, **kwargs: Any) -> Harness:
    return Harness(
        model=model,
        policy=TerminationPolicy(completion_check=FileCheck("a", "xy")),
        tools=[list_files, write_file],
        workspace=ws,
        clock=FakeClock(),
        **kwargs,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    """The JSONL file's rows; the whole file must be valid UTF-8 ending in a newline."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


class Failing:
    """A sink that raises on its `fail_at`-th event (counting from 1)."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at
        self.seen: list[str] = []

    def emit(self, event: Event) -> None:
        self.seen.append(event.name)
        if len(self.seen) == self.fail_at:
            raise BrokenPipeError(32, "Broken pipe")

    def __repr__(self) -> str:
        return "Failing()"


async def test_lone_surrogates_reach_the_transcript_and_recording_as_escapes(
    tmp_path: Path,
) -> None:
    """A non-UTF-8 file name from `list_files` goes into the transcript and the recording as
    a ``\\udcxx`` escape: both files are valid UTF-8, the name round-trips, and the transcript
    replays to the same events."""
    ws = workspace(tmp_path)
    transcript = tmp_path / "run.jsonl"
    recording = tmp_path / "rec.jsonl"
    model = RecordingModelClient(ScriptedModelClient.from_responses(SCRIPT), recording)
    sink = ListSink()
    result = await harness(model, ws, transcript=transcript, sinks=[sink]).run("write xy to a")
    assert result.verified
    assert result.sink_failures == ()
    rows = lines(transcript)
    assert rows[-1]["event"] == "run.halted"
    (called,) = [r for r in rows if r["event"] == "tool.called" and r["call"]["id"] == "call_1_0"]
    assert LISTED in called["content"].splitlines()
    assert "\\udce9" in transcript.read_text(encoding="utf-8")
    recorded = lines(recording)
    assert len(recorded) == 3
    assert recorded[1]["text"] == f"I see {LISTED}; writing a"
    # The transcript turns back into a fixture that replays to the identical events.
    fixture = write_fixture(fixture_from_transcript(transcript), tmp_path / "replay.jsonl")
    lines(fixture)  # valid UTF-8 too
    (ws / "a").unlink()
    replay = ListSink()
    again = await harness(ScriptedModelClient.from_jsonl(fixture), ws, sinks=[replay]).run(
        "write xy to a"
    )
    assert again.verified
    assert [e.replay_key() for e in replay.events][1:] == [e.replay_key() for e in sink.events][1:]
    # The run viewer shows the name as its escape.
    page = tmp_path / "run.html"
    write_view(transcript, page)
    assert "caf\\udce9.txt" in page.read_text(encoding="utf-8")


async def test_a_sink_that_raises_is_detached_and_reported_once(tmp_path: Path) -> None:
    """The run goes on to its result; the failing sink gets nothing more; the others get one
    `sink.failed` event; the result lists the failure."""
    bad = Failing(fail_at=3)
    sink = ListSink()
    result = await harness(
        ScriptedModelClient.from_responses(SCRIPT), workspace(tmp_path), sinks=[bad, sink]
    ).run("write xy to a")
    assert result.verified
    assert bad.seen == ["run.started", "iteration.started", "turn.started"]
    failed = sink.of_type(SinkFailed)
    assert len(failed) == 1
    assert failed[0].to_dict() == {
        "event": "sink.failed",
        "at": failed[0].at,
        "sink": "Failing()",
        "failed_on": "turn.started",
        "error": "BrokenPipeError: [Errno 32] Broken pipe",
    }
    assert result.sink_failures == tuple(failed)
    assert sink.names()[-1] == "run.halted"


async def test_a_sink_failing_on_the_failure_report_is_detached_too(tmp_path: Path) -> None:
    """Two sinks failing one after the other (the second on the first one's `sink.failed`)
    are both detached and both reported; the run still returns its result."""
    first, second = Failing(fail_at=2), Failing(fail_at=3)
    sink = ListSink()
    result = await harness(
        ScriptedModelClient.from_responses(SCRIPT), workspace(tmp_path), sinks=[first, second, sink]
    ).run("write xy to a")
    assert result.verified
    assert second.seen[-1] == "sink.failed"
    assert [f.failed_on for f in result.sink_failures] == ["iteration.started", "sink.failed"]
    assert sink.of_type(SinkFailed) == list(result.sink_failures)
    assert sink.names()[-1] == "run.halted"


async def test_a_transcript_on_a_full_disk_is_detached_and_the_run_returns(
    tmp_path: Path,
) -> None:
    """`/dev/full` refuses every write (ENOSPC): the run still returns its result, which says
    the transcript stopped."""
    sink = ListSink()
    result = await harness(
        ScriptedModelClient.from_responses(SCRIPT),
        workspace(tmp_path),
        transcript="/dev/full",
        sinks=[sink],
    ).run("write xy to a")
    assert result.verified
    (failure,) = result.sink_failures
    assert failure.sink == "JsonlTranscript('/dev/full')"
    assert failure.failed_on == "run.started"
    assert "No space left on device" in failure.error
    assert sink.of_type(SinkFailed) == [failure]


class Counting:
    """A model that counts its calls, answering each with a tool call."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return ModelResponse(text="again")


async def test_a_recording_that_cannot_be_written_halts_with_a_typed_reason(
    tmp_path: Path,
) -> None:
    """A recording on a full disk halts the run with `ModelFailed("recording")`, keeping the
    transcript; the model is not asked again."""
    inner = Counting()
    model = RecordingModelClient(inner, "/dev/full")
    transcript = tmp_path / "run.jsonl"
    result: RunResult = await harness(model, workspace(tmp_path), transcript=transcript).run(
        "write xy to a"
    )
    assert isinstance(result.halt_reason, ModelFailed)
    assert result.halt_reason.kind == "recording"
    assert "cannot write the recording '/dev/full': No space left on device" in str(
        result.halt_reason.message
    )
    assert inner.calls == 1
    assert lines(transcript)[-1]["reason"]["kind"] == "recording"
    with pytest.raises(Exception, match="cannot write the recording"):
        await model.complete(ModelRequest(()))
    assert inner.calls == 1


def test_a_line_written_in_part_is_cut_back_to_the_last_whole_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that stops part-way (the disk fills after some bytes) leaves the file at its
    last whole line, raises, and the file takes whole lines again afterwards."""
    from harness._fs import _jsonl

    path = tmp_path / "t.jsonl"
    file = _jsonl.LineFile("transcript", path)
    file.write({"n": 1})
    real = os.write
    calls: list[int] = []

    def fill_up(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[:5]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", fill_up)
    with pytest.raises(OSError, match="No space"):
        file.write({"n": 2, "text": "long enough to be cut"})
    assert path.read_bytes() == b'{"n": 1}\n'
    monkeypatch.setattr(os, "write", real)
    file.write({"n": 3})
    file.close()
    assert lines(path) == [{"n": 1}, {"n": 3}]
