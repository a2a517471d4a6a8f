"""The pytest plugin, as a user's test suite sees it: fixtures that replay a JSONL fixture,
halt and event assertions with readable failures, and --harness-record against a model server
on loopback, whose recording the next run replays."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _provider_server import Reply, fake_provider, openai_body

from harness import BudgetExceeded, CheckFailed, Completed, RunStarted, ToolCall, ToolCalled
from harness.testing import ListSink
from pytest_completion_harness import assert_events, assert_halted

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""

INI = "[pytest]\nfilterwarnings = error\naddopts = --strict-markers -p no:cacheprovider\n"

TESTS = """
import os

import pytest

from checks import FilesCheck
from harness import BudgetExceeded, CheckFailed, Completed, OpenAIClient, workspace_tools
from pytest_completion_harness import assert_events, assert_halted
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio


def real_model():
    return OpenAIClient("gpt-test", base_url=os.environ["FAKE_LLM_URL"] + "/v1", api_key_env=None)


async def test_writes_hello(harness_fixture, tmp_path):
    harness = harness_fixture(
        "fixtures/hello.jsonl",
        record=real_model,
        tools=workspace_tools(),
        workspace=tmp_path,
        policy=TerminationPolicy(completion_check=FilesCheck(["hello.txt"])),
    )
    result = await harness.run("Write hello.txt.")
    assert_halted(result, Completed, early=False)
    assert_events(
        result, ["run.started", "tool.called", ("check.passed", {"turn": 2}), "run.halted"]
    )
    assert (tmp_path / "hello.txt").read_text() == "hi"


async def test_budget_halts(harness_fixture, tmp_path):
    harness = harness_fixture(
        "fixtures/stuck.jsonl",
        tools=workspace_tools(),
        workspace=tmp_path,
        policy=TerminationPolicy(
            budget=Budget(max_turns=2), completion_check=FilesCheck(["never.txt"])
        ),
    )
    result = await harness.run("Never finishes.")
    assert_halted(result, BudgetExceeded, limit="max_turns", limit_value=2)
    assert_events(result, [CheckFailed, "turn.started", "run.halted"])
"""

HELLO = [
    {
        "tool_calls": [
            {"id": "w", "name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}
        ]
    },
    {"text": "Wrote hello.txt."},
]
STUCK = [{"text": "Done?"}, {"text": "Done now?"}]


def _suite(pytester: pytest.Pytester, *, hello: bool = True) -> Path:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    fixtures = pytester.path / "fixtures"
    fixtures.mkdir(exist_ok=True)
    (fixtures / "stuck.jsonl").write_text("\n".join(json.dumps(line) for line in STUCK) + "\n")
    if hello:
        (fixtures / "hello.jsonl").write_text("\n".join(json.dumps(x) for x in HELLO) + "\n")
    return fixtures


def test_fixtures_replay_on_both_backends(pytester: pytest.Pytester) -> None:
    """harness_fixture builds a harness on the JSONL fixture beside the test, for each
    backend, and the assertion helpers pass on what the runs did."""
    _suite(pytester)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=4)


def test_failures_say_what_the_run_did(pytester: pytest.Pytester) -> None:
    """A wrong halt or a missing event fails with what actually happened."""
    fixtures = _suite(pytester)
    (fixtures / "one.jsonl").write_text('{"text": "Done."}\n')
    pytester.makepyfile(
        test_wrong="""
        import pytest
        from harness import SensorTripped
        from pytest_completion_harness import assert_events, assert_halted

        pytestmark = pytest.mark.anyio

        async def test_wrong_halt(harness_fixture):
            result = await harness_fixture("fixtures/one.jsonl").run("task")
            assert_halted(result, SensorTripped)

        async def test_missing_event(harness_fixture):
            result = await harness_fixture("fixtures/one.jsonl").run("task")
            assert_events(result, ["run.started", "tool.called"])
        """
    )
    result = pytester.runpytest_subprocess("test_wrong.py", "-k", "asyncio")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: the run halted with Completed (completed: the completion check "
            "passed), not SensorTripped",
            # fnmatch reads [...] as a character class: ? stands for the bracket.
            "*AssertionError: expected 'tool.called' (item 2 of the expected list) among events "
            "2 on; the run's events are ?'run.started', 'iteration.started', 'turn.started', "
            "'turn.finished', 'check.passed', 'run.halted'?",
        ]
    )


def test_record_mode_records_a_real_run_that_then_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--harness-record runs the test against the real model (here an OpenAI-compatible server
    on loopback) and saves the fixture; the next run, without the flag, replays it and never
    calls the server."""
    fixtures = _suite(pytester, hello=False)
    with fake_provider() as server:
        server.script(
            Reply(
                openai_body(
                    None,
                    tool_calls=[
                        {
                            "id": "call_1",
                            "name": "write_file",
                            "arguments": {"path": "hello.txt", "content": "hi"},
                        }
                    ],
                    finish_reason="tool_calls",
                )
            ),
            Reply(openai_body("Wrote hello.txt.")),
        )
        monkeypatch.setenv("FAKE_LLM_URL", server.url)
        recorded = pytester.runpytest_subprocess(
            "--harness-record", "-k", "writes_hello and asyncio"
        )
        recorded.assert_outcomes(passed=1, deselected=3)
        recorded.stdout.fnmatch_lines(["*harness fixtures recorded*", "*recorded *hello.jsonl"])
        assert len(server.requests) == 2
        assert server.requests[0].body["model"] == "gpt-test"

        lines = [json.loads(x) for x in (fixtures / "hello.jsonl").read_text().splitlines()]
        assert [line["tool_calls"][0]["name"] for line in lines[:1]] == ["write_file"]
        assert lines[1]["text"] == "Wrote hello.txt."
        assert not (fixtures / "hello.jsonl.recording").exists()

        replayed = pytester.runpytest_subprocess()
        replayed.assert_outcomes(passed=4)
        assert len(server.requests) == 2


def test_a_failed_recording_leaves_the_fixture_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded run whose test fails does not replace the fixture; it stays beside it."""
    fixtures = _suite(pytester)
    before = (fixtures / "hello.jsonl").read_text()
    with fake_provider() as server:
        server.script(Reply(openai_body("I will not write anything.")))
        monkeypatch.setenv("FAKE_LLM_URL", server.url)
        result = pytester.runpytest_subprocess("--harness-record", "-k", "writes_hello and asyncio")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(["*failed; the recording is kept at *hello.jsonl.recording"])
    assert (fixtures / "hello.jsonl").read_text() == before
    assert "I will not write anything." in (fixtures / "hello.jsonl.recording").read_text()


def test_the_plugin_is_installed_and_loads_no_harness_module() -> None:
    """The plugin comes with the package (pytest11 entry point) and imports nothing of the
    harness until a test uses it, so it costs other test suites nothing at start-up."""
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="pytest11") if e.name == "completion_harness"]
    assert entry.value == "pytest_completion_harness"
    code = (
        "import sys, pytest_completion_harness; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('harness', 'checks', 'termination', 'strategies', 'anyio', 'structlog')))"
    )
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def _events() -> list[object]:
    call = ToolCall("c1", "write_file", {"path": "a"})
    return [
        RunStarted(0.0, "r", "task", "loop", None, "check"),
        ToolCalled(1.0, "builder", 1, call, "ok", False),
        CheckFailed(2.0, "builder", 1, "check", "a is empty"),
    ]


def test_assert_events_reads_sinks_lists_and_transcripts(tmp_path: Path) -> None:
    """The same expectations hold on a ListSink, a list of events and a JSONL transcript,
    with fields compared in their plain form."""
    sink = ListSink()
    for event in _events():
        sink.emit(event)  # type: ignore[arg-type]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        "".join(json.dumps(e.to_dict()) + "\n" for e in sink.events), encoding="utf-8"
    )
    expected = [
        "run.started",
        ("tool.called", {"call": ToolCall("c1", "write_file", {"path": "a"})}),
        (CheckFailed, {"reason": "a is empty"}),
    ]
    for source in (sink, sink.events, transcript, os.fspath(transcript)):
        assert_events(source, expected, exact=True)  # type: ignore[arg-type]
        assert_events(source, ["run.started", "check.failed"])
    with pytest.raises(AssertionError, match="expected exactly 2 events, the run emitted 3"):
        assert_events(sink, ["run.started", "check.failed"], exact=True)
    with pytest.raises(AssertionError, match=r"expected 'check.failed' with \{'reason': 'x'\}"):
        assert_events(sink, [("check.failed", {"reason": "x"})])
    with pytest.raises(AssertionError, match=r"item 2 of the expected list\) at position 2;"):
        assert_events(sink, ["run.started", "check.failed", "tool.called"], exact=True)
    with pytest.raises(TypeError, match="takes a RunResult"):
        assert_events([1, 2], ["x"])  # type: ignore[list-item]


def test_assert_events_matches_an_unknown_event_as_written(tmp_path: Path) -> None:
    """An event this harness does not know (a newer harness's) is matched by its own name
    and fields, as its line has them, beside the known ones."""
    transcript = tmp_path / "t.jsonl"
    rows = [
        {"event": "run.started", "at": 0.0, "run_id": "r1", "task": "t", "strategy": "loop"},
        {"event": "shiny.new", "at": 1.0, "colour": "blue"},
    ]
    transcript.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert_events(transcript, ["run.started", ("shiny.new", {"colour": "blue"})], exact=True)
    with pytest.raises(AssertionError, match=r"expected 'shiny\.new' with"):
        assert_events(transcript, [("shiny.new", {"colour": "red"})])


def test_assert_halted_names_a_missing_field() -> None:
    """Asking for a field the halt reason does not have is an error that lists its fields."""
    from harness import RunResult, Usage

    result = RunResult("r", BudgetExceeded("max_turns", 3, 3), (), Usage(), 3, 0, 1, 1.0)
    assert assert_halted(result, BudgetExceeded, limit="max_turns", used=3).limit == "max_turns"  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match=r"BudgetExceeded has no field 'limt' \(fields: limit"):
        assert_halted(result, BudgetExceeded, limt="max_turns")
    with pytest.raises(AssertionError, match=r"BudgetExceeded.limit is 'max_turns', expected"):
        assert_halted(result, BudgetExceeded, limit="max_tool_calls")
    with pytest.raises(AssertionError, match="events were not kept"):
        assert_events(result, ["run.started"])
    assert not isinstance(result.halt_reason, Completed)


def test_a_spec_gives_the_harness_its_tools_checks_and_budget(pytester: pytest.Pytester) -> None:
    """``harness_fixture(path, spec=...)`` builds the spec's harness (its tools, checks and
    budget) with the fixture as its model; a spec needs neither a [model] nor a prompt."""
    fixtures = _suite(pytester)
    (fixtures / "run.toml").write_text(
        'tools = ["write_file"]\n[budget]\nmax_turns = 5\n'
        '[[checks]]\ntype = "files"\npaths = ["hello.txt"]\n'
    )
    pytester.makepyfile(
        test_agent_spec="""
        import pytest
        from harness import Completed
        from pytest_completion_harness import assert_events, assert_halted

        pytestmark = pytest.mark.anyio

        async def test_spec_harness(harness_fixture, tmp_path):
            harness = harness_fixture(
                "fixtures/hello.jsonl", spec="fixtures/run.toml", workspace=tmp_path
            )
            assert [t.name for t in harness.tools] == ["write_file"]
            assert harness.policy.budget.max_turns == 5
            result = await harness.run("Write hello.txt.")
            assert_halted(result, Completed)
            assert_events(result, ["tool.called", "check.passed"])
            assert (tmp_path / "hello.txt").read_text() == "hi"
        """
    )
    result = pytester.runpytest_subprocess("test_agent_spec.py")
    result.assert_outcomes(passed=2)
