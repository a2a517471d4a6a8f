"""JSONL fixtures fail closed: running out, a line left over, a broken `expect` and a malformed
line are FixtureErrors naming the file, the line and the field; and a recorded run's transcript
turned into a fixture replays to the identical sequence of events."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import (
    BudgetExceeded,
    Completed,
    FixtureError,
    FixtureExhausted,
    FixtureUnconsumed,
    Harness,
    ModelFailed,
    ScriptedModelClient,
    SessionStateSnapshot,
    read_transcript,
    workspace_tools,
)
from harness.testing import (
    FakeClock,
    FixtureAssertionError,
    ListSink,
    fixture_from_transcript,
    write_fixture,
)
from strategies import Ralph, SelfVerifying
from termination import Budget, RepeatedToolCallSensor, TerminationPolicy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "loop"


def load(tmp_path: Path, *lines: str) -> ScriptedModelClient:
    path = tmp_path / "script.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return ScriptedModelClient.from_jsonl(path)


def echo(text: str) -> str:
    """Echo."""
    return text


def harness_for(model: ScriptedModelClient, **kwargs: Any) -> Harness:
    return Harness(
        model=model, policy=TerminationPolicy(), tools=[echo], clock=FakeClock(), **kwargs
    )


# --- fail closed at run time ------------------------------------------------------------------


@pytest.mark.anyio
async def test_running_out_of_lines_names_the_file_turn_and_last_line(tmp_path: Path) -> None:
    """A call beyond the script is FixtureExhausted; the partial result rides on the error."""
    model = load(
        tmp_path,
        "# one tool turn, then nothing",
        json.dumps({"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}),
    )
    with pytest.raises(FixtureExhausted) as caught:
        await harness_for(model).run("echo")
    error = caught.value
    assert str(error) == (
        f"{tmp_path / 'script.jsonl'}: the model was called for turn 2 of agent 'builder' but "
        "the script has no more lines (all 1 used; last was line 2)"
    )
    assert error.result is not None
    assert isinstance(error.result.halt_reason, ModelFailed)
    assert error.result.halt_reason.kind == "fixture"
    assert error.result.turns == 2


@pytest.mark.anyio
async def test_a_line_left_unconsumed_names_its_line(tmp_path: Path) -> None:
    """A run that ends with lines left is FixtureUnconsumed at the first unused line; the
    result it did produce rides on the error."""
    model = load(tmp_path, '{"text": "done"}', "", "# spare", '{"text": "spare"}')
    with pytest.raises(FixtureUnconsumed) as caught:
        await harness_for(model).run("echo")
    assert str(caught.value) == (
        f"{tmp_path / 'script.jsonl'}:4: the run ended with 1 script line(s) unused, starting here"
    )
    assert caught.value.line == 4
    assert caught.value.result is not None
    assert caught.value.result.halt_reason == Completed()


EXPECT_FAILURES = [
    (
        {"last_message_contains": "zebra"},
        "expect.last_message_contains",
        "the last message does not contain 'zebra'; it is: 'echo'",
    ),
    (
        {"any_message_contains": ["echo", "zebra"]},
        "expect.any_message_contains",
        "no message contains 'zebra'",
    ),
    (
        {"system_contains": "zebra"},
        "expect.system_contains",
        "the system prompt does not contain 'zebra'",
    ),
    (
        {"not_contains": "echo"},
        "expect.not_contains",
        "a message contains 'echo', which it must not",
    ),
    (
        {"last_role": "tool"},
        "expect.last_role",
        "the last message's role is 'user', expected 'tool'",
    ),
    (
        {"last_feedback_source": "completion_check"},
        "expect.last_feedback_source",
        "the latest feedback came from None, expected 'completion_check'",
    ),
    ({"message_count": 3}, "expect.message_count", "the request has 2 messages, expected 3"),
    (
        {"tools": ["echo", "done"]},
        "expect.tools",
        "the tools offered are ['echo'], expected ['done', 'echo']",
    ),
    ({"turn": 2}, "expect.turn", "this is turn 1 of the session, expected 2"),
    (
        {"agent": "evaluator"},
        "expect.agent",
        "the request is from agent 'builder', expected 'evaluator'",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("expect", "field", "message"), EXPECT_FAILURES)
async def test_a_failed_expectation_names_file_line_and_field(
    tmp_path: Path, expect: dict[str, Any], field: str, message: str
) -> None:
    """Each `expect` key checks the request it answers; a mismatch says what was expected and
    what came."""
    model = load(tmp_path, "# a comment first", json.dumps({"text": "hi", "expect": expect}))
    with pytest.raises(FixtureAssertionError) as caught:
        await harness_for(model).run("echo")
    assert str(caught.value) == f"{tmp_path / 'script.jsonl'}:2 field {field!r}: {message}"
    assert (caught.value.line, caught.value.field) == (2, field)


@pytest.mark.anyio
async def test_a_line_for_another_agent_fails(tmp_path: Path) -> None:
    """A line's `agent` must be the agent that asks."""
    model = load(tmp_path, json.dumps({"agent": "evaluator", "text": "VERDICT: PASS"}))
    with pytest.raises(FixtureAssertionError, match=r"script\.jsonl:1 field 'agent': this line"):
        await harness_for(model).run("echo")


@pytest.mark.anyio
async def test_every_expectation_passes_when_the_request_matches(tmp_path: Path) -> None:
    """All expectation keys at once, on a request that satisfies them."""
    model = load(
        tmp_path,
        json.dumps(
            {
                "agent": "builder",
                "text": "done",
                "expect": {
                    "last_message_contains": ["echo", "this"],
                    "any_message_contains": "autonomous agent",
                    "system_contains": ["When the task is done"],
                    "not_contains": "zebra",
                    "last_role": "user",
                    "last_feedback_source": None,
                    "message_count": 2,
                    "tools": ["echo"],
                    "turn": 1,
                    "agent": "builder",
                },
            }
        ),
    )
    result = await harness_for(model).run("echo this")
    assert result.verified


MALFORMED = [
    (
        "{not json",
        None,
        "not valid JSON: Expecting property name enclosed in double quotes (column 2)",
    ),
    ("[1, 2]", None, "a line must be a JSON object (got list)"),
    ('{"txt": "typo"}', "txt", "unknown key; did you mean 'text'? (expected some of"),
    ('{"dealy": 2}', "dealy", "unknown key; did you mean 'delay'? (expected some of"),
    ('{"zzz": 2}', "zzz", "unknown key (expected some of"),
    ('{"text": 5}', "text", "must be a string (got int)"),
    ('{"tool_calls": {}}', "tool_calls", "must be a list (got dict)"),
    ('{"tool_calls": ["echo"]}', "tool_calls[0]", "must be an object with 'name' and 'arguments'"),
    (
        '{"tool_calls": [{"arguments": {}}]}',
        "tool_calls[0].name",
        "must be a non-empty string (got None)",
    ),
    (
        '{"tool_calls": [{"name": "echo", "arguments": "a"}]}',
        "tool_calls[0].arguments",
        "must be an object (got str)",
    ),
    ('{"tool_calls": [{"name": "echo", "id": 7}]}', "tool_calls[0].id", "must be a string (got 7)"),
    (
        '{"tool_calls": [{"name": "echo", "args": {}}]}',
        "tool_calls[0].args",
        "unknown key; did you mean 'arguments'? (expected some of ['arguments', 'id', 'name'])",
    ),
    ('{"usage": []}', "usage", "must be an object (got list)"),
    ('{"usage": {"zzz": 1}}', "usage.zzz", "unknown key (expected some of"),
    (
        '{"usage": {"input_token": 1}}',
        "usage.input_token",
        "unknown key; did you mean 'input_tokens'? (expected some of",
    ),
    ('{"usage": {"input_tokens": -1}}', "usage.input_tokens", "must be an integer >= 0 (got -1)"),
    (
        '{"usage": {"output_tokens": 1.5}}',
        "usage.output_tokens",
        "must be an integer >= 0 (got 1.5)",
    ),
    (
        '{"usage": {"cost_usd": -0.1}}',
        "usage.cost_usd",
        "must be a finite number >= 0 or null (got -0.1)",
    ),
    (
        '{"usage": {"cost_usd": true}}',
        "usage.cost_usd",
        "must be a finite number >= 0 or null (got True)",
    ),
    # Issue 41 item 9: Python's JSON reader takes NaN and Infinity, JSON has neither.
    (
        '{"usage": {"cost_usd": NaN}}',
        "usage.cost_usd",
        "must be a finite number >= 0 or null (got nan)",
    ),
    (
        '{"usage": {"cost_usd": Infinity}}',
        "usage.cost_usd",
        "must be a finite number >= 0 or null (got inf)",
    ),
    (
        '{"error": {"kind": "usage_limit", "message": "x", "retry_in": NaN}}',
        "error.retry_in",
        "must be a finite number >= 0 or null (got nan)",
    ),
    ('{"model": 4}', "model", "must be a string (got int)"),
    ('{"agent": null}', "agent", "must be a string (got NoneType)"),
    ('{"delay": -1}', "delay", "must be a number of seconds >= 0 (got -1)"),
    ('{"delay": "5"}', "delay", "must be a number of seconds >= 0 (got '5')"),
    ('{"expect": []}', "expect", "must be an object (got list)"),
    ('{"expect": {"zzz": "x"}}', "expect.zzz", "unknown expectation (expected some of"),
    (
        '{"expect": {"last_message_contain": "x"}}',
        "expect.last_message_contain",
        "unknown expectation; did you mean 'last_message_contains'? (expected some of",
    ),
    ('{"error": "boom"}', "error", "must be an object with a string 'message'"),
    ('{"error": {"kind": "auth"}}', "error", "must be an object with a string 'message'"),
    ('{"error": {"kind": "nope", "message": "x"}}', "error.kind", "must be one of"),
]


@pytest.mark.parametrize(("line", "field", "message"), MALFORMED)
def test_a_malformed_line_names_file_line_and_field(
    tmp_path: Path, line: str, field: str | None, message: str
) -> None:
    """A malformed line is refused when the fixture loads, naming the line (comments and blank
    lines count) and the field at fault."""
    path = tmp_path / "bad.jsonl"
    path.write_text(f'# header\n\n{{"text": "fine"}}\n{line}\n')
    with pytest.raises(FixtureError) as caught:
        ScriptedModelClient.from_jsonl(path)
    where = f"{path}:4" if field is None else f"{path}:4 field {field!r}"
    assert str(caught.value).startswith(f"{where}: {message}")
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 4, field)


def test_a_missing_fixture_file_names_the_file(tmp_path: Path) -> None:
    """A fixture that cannot be read is a FixtureError naming the file."""
    path = tmp_path / "missing.jsonl"
    with pytest.raises(FixtureError, match=r"missing\.jsonl: cannot read the fixture"):
        ScriptedModelClient.from_jsonl(path)


def test_a_line_that_is_not_utf8_names_file_line_and_byte(tmp_path: Path) -> None:
    """A fixture with a byte that is not UTF-8 is a FixtureError naming the line and the
    byte, not a UnicodeDecodeError."""
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'# header\n{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(FixtureError) as caught:
        ScriptedModelClient.from_jsonl(path)
    assert str(caught.value) == f"{path}:3: not UTF-8: byte 0xe9 at byte 14 of the line"
    assert (caught.value.path, caught.value.line) == (str(path), 3)


def test_lines_split_only_at_newlines_and_a_bom_is_dropped(tmp_path: Path) -> None:
    """JSONL lines end at \\n only: a raw U+2028 or U+0085 inside a string (as a recording
    writes model text) stays in the text, and a leading byte-order mark is ignored."""
    texts = ["one\u2028two", "three\x85four\x0cfive"]
    path = tmp_path / "odd.jsonl"
    body = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    model = ScriptedModelClient.from_jsonl(path)
    assert [line.response.text for line in model._lines if line.response] == texts


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"event": "run.started"}\n{"event": "\xff"}\n', ":2: not UTF-8: byte 0xff at byte 12"),
        (None, ": cannot read the transcript: No such file or directory"),
    ],
)
def test_a_transcript_that_cannot_be_read_is_a_fixture_error(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    """read_transcript and fixture_from_transcript name the file (and line) of a transcript
    that is missing or not UTF-8, instead of raising OSError or UnicodeDecodeError."""
    path = tmp_path / "t.jsonl"
    if content is not None:
        path.write_bytes(content)
    for read in (read_transcript, fixture_from_transcript):
        with pytest.raises(FixtureError) as caught:
            read(path)
        assert str(caught.value).startswith(f"{path}{message}")


@pytest.mark.anyio
async def test_an_error_line_is_a_typed_model_failure(tmp_path: Path) -> None:
    """An `error` line makes the call raise a ModelError of that kind: the run halts with
    ModelFailed, not an exception."""
    model = load(
        tmp_path,
        json.dumps(
            {"comment": "the provider is down", "error": {"kind": "server", "message": "503"}}
        ),
    )
    result = await harness_for(model).run("echo")
    assert result.halt_reason == ModelFailed("server", "503")


@pytest.mark.anyio
async def test_the_checked_in_fixtures_all_parse() -> None:
    """Every model script under fixtures/loop loads (a broken one would otherwise only fail when
    its test runs)."""
    paths = sorted(FIXTURES.glob("*.jsonl"))
    assert len(paths) >= 8
    for path in paths:
        ScriptedModelClient.from_jsonl(path)


# --- record, then replay ----------------------------------------------------------------------


class NeedsBoth:
    """Complete when notes.txt has both parts."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        assert state.workspace is not None
        notes = state.workspace / "notes.txt"
        text = notes.read_text() if notes.exists() else ""
        return None if "one" in text and "two" in text else "notes.txt needs one and two"

    def description(self) -> str:
        return "notes.txt has one and two."


def write(content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": "notes.txt", "content": content}}


def keys(sink: ListSink) -> list[dict[str, Any]]:
    """Each event without its time and without the run's id."""
    out = []
    for event in sink.events:
        key = event.replay_key()
        key.pop("run_id", None)
        out.append(key)
    return out


def full(sink: ListSink) -> list[dict[str, Any]]:
    """Each event with its time, without the run's id."""
    out = []
    for event in sink.events:
        data = event.to_dict()
        data.pop("run_id", None)
        out.append(data)
    return out


def reset(workspace: Path) -> Path:
    if workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir()
    (workspace / "README.md").write_text("notes project\n")
    return workspace


def ralph_run(
    model: ScriptedModelClient, workspace: Path, transcript: Path, sink: ListSink
) -> Harness:
    return Harness(
        model=model,
        policy=TerminationPolicy(
            sensors=[RepeatedToolCallSensor(limit=4, warn_at=2)], completion_check=NeedsBoth()
        ),
        strategy=Ralph(max_iterations=3, cooldown=5),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        transcript=transcript,
        sinks=[sink],
    )


@pytest.mark.anyio
async def test_a_recorded_run_replays_to_identical_events(tmp_path: Path) -> None:
    """A run's transcript turned into a fixture (fixture_from_transcript + write_fixture)
    replays, with the same tools, check and workspace, to the same events in the same order."""
    workspace = reset(tmp_path / "ws")
    original = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "list_files", "arguments": {}}], "usage": {"input_tokens": 9}},
            {"tool_calls": [write("one\n")], "delay": 3, "model": "m-1", "stop_reason": "tool_use"},
            {"tool_calls": [write("one\n")]},
            {"text": "done", "usage": {"input_tokens": 5, "output_tokens": 2, "cost_usd": 0.01}},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "nope.txt"}}]},
            {"tool_calls": [write("one\ntwo\n")]},
            {"text": "done again"},
        ]
    )
    recorded = ListSink()
    first = await ralph_run(original, workspace, tmp_path / "first.jsonl", recorded).run("notes")
    assert first.verified
    assert first.iterations == 2

    fixture = write_fixture(fixture_from_transcript(tmp_path / "first.jsonl"), tmp_path / "f.jsonl")
    replayed = ListSink()
    replay = ScriptedModelClient.from_jsonl(fixture)
    second = await ralph_run(replay, reset(workspace), tmp_path / "second.jsonl", replayed).run(
        "notes"
    )
    assert second.halt_reason == first.halt_reason
    assert second.run_id != first.run_id
    assert keys(replayed) == keys(recorded)
    assert full(replayed) == full(recorded)  # the times too: latency became `delay`
    assert [m.to_dict() for m in second.transcript] == [m.to_dict() for m in first.transcript]
    assert replay.remaining == 0


@pytest.mark.anyio
async def test_a_recorded_two_agent_run_replays_per_agent(tmp_path: Path) -> None:
    """With a builder and an evaluator, each agent's lines are cut from the one transcript and
    the replay reproduces the events of both."""
    workspace = reset(tmp_path / "ws")

    def build(builder: ScriptedModelClient, evaluator: ScriptedModelClient, name: str) -> Harness:
        return Harness(
            model=builder,
            policy=TerminationPolicy(completion_check=NeedsBoth()),
            strategy=SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False),
            tools=workspace_tools(),
            workspace=workspace,
            clock=FakeClock(),
            transcript=tmp_path / name,
            sinks=[sinks[name]],
        )

    sinks = {"first.jsonl": ListSink(), "second.jsonl": ListSink()}
    builder = ScriptedModelClient.from_responses(
        [{"tool_calls": [write("one\ntwo\n")]}, {"text": "done"}, {"text": "fixed it"}]
    )
    evaluator = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "No heading.\nVERDICT: FAIL", "delay": 7},
            {"text": "VERDICT: PASS"},
        ]
    )
    first = await build(builder, evaluator, "first.jsonl").run("notes")
    assert first.verified

    transcript = tmp_path / "first.jsonl"
    lines: dict[str, Sequence[dict[str, Any]]] = {
        agent: fixture_from_transcript(transcript, agent=agent)
        for agent in ("builder", "evaluator")
    }
    assert [len(lines["builder"]), len(lines["evaluator"])] == [3, 3]
    reset(workspace)
    second = await build(
        ScriptedModelClient.from_jsonl(write_fixture(lines["builder"], tmp_path / "b.jsonl")),
        ScriptedModelClient.from_jsonl(write_fixture(lines["evaluator"], tmp_path / "e.jsonl")),
        "second.jsonl",
    ).run("notes")
    assert second.verified
    assert keys(sinks["second.jsonl"]) == keys(sinks["first.jsonl"])
    assert full(sinks["second.jsonl"]) == full(sinks["first.jsonl"])


@pytest.mark.anyio
async def test_a_replay_that_diverges_fails_closed(tmp_path: Path) -> None:
    """Replaying a recorded fixture against a changed tool set is caught, not papered over: the
    agent tag on each line and the unconsumed check keep the replay honest."""
    workspace = reset(tmp_path / "ws")
    original = ScriptedModelClient.from_responses(
        [{"tool_calls": [write("one\ntwo\n")]}, {"text": "done"}]
    )
    sink = ListSink()
    await ralph_run(original, workspace, tmp_path / "first.jsonl", sink).run("notes")
    lines = fixture_from_transcript(tmp_path / "first.jsonl")
    # Record an extra expectation, as a hand-edited fixture would: the replay must offer write_file.
    lines[0]["expect"] = {"tools": ["list_files", "read_file", "write_file"]}
    fixture = write_fixture(lines, tmp_path / "f.jsonl")
    harness = Harness(
        model=ScriptedModelClient.from_jsonl(fixture),
        policy=TerminationPolicy(completion_check=NeedsBoth()),
        tools=[t for t in workspace_tools() if t.read_only],
        workspace=reset(workspace),
        clock=FakeClock(),
    )
    with pytest.raises(FixtureAssertionError, match=r"f\.jsonl:1 field 'expect\.tools'"):
        await harness.run("notes")


@pytest.mark.anyio
async def test_a_replay_keeps_the_recorded_timing_and_deadline_cut(tmp_path: Path) -> None:
    """Model latency is carried into the fixture as `delay`, and a call the deadline cut off
    becomes a line that is cut off at the same point: under a wall-time budget the replay halts
    the same way, with every event at the same time."""

    def run(model: ScriptedModelClient, name: str, sink: ListSink) -> Harness:
        return Harness(
            model=model,
            policy=TerminationPolicy(budget=Budget(max_wall_time=60)),
            tools=[echo],
            clock=FakeClock(),
            transcript=tmp_path / name,
            sinks=[sink],
        )

    original = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}], "delay": 12.5},
            {"tool_calls": [{"name": "echo", "arguments": {"text": "b"}}], "delay": 30},
            {"text": "never seen", "delay": 1000},
        ]
    )
    recorded = ListSink()
    first = await run(original, "first.jsonl", recorded).run("echo")
    assert first.halt_reason == BudgetExceeded("max_wall_time", 60, 60)

    lines = fixture_from_transcript(tmp_path / "first.jsonl")
    assert [line.get("delay") for line in lines] == [12.5, 30, 17.5]
    assert lines[2]["error"]["kind"] == "timeout"
    replayed = ListSink()
    replay = ScriptedModelClient.from_jsonl(write_fixture(lines, tmp_path / "f.jsonl"))
    second = await run(replay, "second.jsonl", replayed).run("echo")
    assert second.halt_reason == first.halt_reason
    assert full(replayed) == full(recorded)


@pytest.mark.anyio
async def test_a_replay_reproduces_a_provider_error_and_an_iteration_cut(tmp_path: Path) -> None:
    """A Ralph iteration cut off by its own wall time, and a provider error that ends the run,
    both come back from the transcript as lines that replay to the same events."""

    def run(model: ScriptedModelClient, name: str, sink: ListSink) -> Harness:
        return Harness(
            model=model,
            policy=TerminationPolicy(completion_check=NeedsBoth()),
            strategy=Ralph(max_iterations=3, iteration_budget=Budget(max_wall_time=100)),
            tools=workspace_tools(),
            workspace=workspace,
            clock=FakeClock(),
            transcript=tmp_path / name,
            sinks=[sink],
        )

    workspace = reset(tmp_path / "ws")
    original = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [write("one\n")], "delay": 40},
            {"text": "thinking", "delay": 10_000},
            {"error": {"kind": "rate_limit", "message": "slow down"}, "delay": 2},
        ]
    )
    recorded = ListSink()
    first = await run(original, "first.jsonl", recorded).run("notes")
    assert first.halt_reason == ModelFailed("rate_limit", "slow down")

    lines = fixture_from_transcript(tmp_path / "first.jsonl")
    assert [(line.get("delay"), "error" in line) for line in lines] == [
        (40, False),
        (60, True),
        (2, True),
    ]
    reset(workspace)
    replayed = ListSink()
    replay = ScriptedModelClient.from_jsonl(write_fixture(lines, tmp_path / "f.jsonl"))
    second = await run(replay, "second.jsonl", replayed).run("notes")
    assert second.halt_reason == first.halt_reason
    assert full(replayed) == full(recorded)
