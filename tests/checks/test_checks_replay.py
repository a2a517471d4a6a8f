"""Replay runs: each check rejects a premature "done", its reason reaches the agent's next
request, the agent finishes, and the run ends `Completed` and verified."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _checks_support import as_clock

from checks import (
    AlwaysComplete,
    CommandCheck,
    CompletionCheck,
    FeatureListCheck,
    FilesCheck,
    PlanCheck,
    QuestionAnsweredCheck,
    SignalCheck,
    SqlResultCheck,
    TestSuiteCheck,
    sqlite_query_tool,
)
from harness import (
    Completed,
    Harness,
    RunResult,
    ScriptedModelClient,
    Tool,
    update_plan,
    workspace_tools,
)
from harness.testing import FakeClock
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

REPLAY = Path(__file__).resolve().parents[2] / "fixtures" / "completion_checks" / "replay"
USAGE = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.001}


def say(text: str, expect: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"text": text, "usage": USAGE}
    if expect is not None:
        row["expect"] = {"last_message_contains": expect}
    return row


def call(name: str, expect: str | None = None, **arguments: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "tool_calls": [{"id": f"call-{name}", "name": name, "arguments": arguments}],
        "usage": USAGE,
    }
    if expect is not None:
        row["expect"] = {"last_message_contains": expect}
    return row


async def replay(
    model: ScriptedModelClient,
    check: CompletionCheck,
    workspace: Path | None,
    *,
    task: str = "Do the task.",
    tools: Sequence[Tool] = (),
) -> RunResult:
    harness = Harness(
        model=model,
        tools=[*workspace_tools(), *tools],
        policy=TerminationPolicy(completion_check=check),
        workspace=workspace,
        clock=as_clock(FakeClock()),
    )
    result = await harness.run(task)
    model.verify_consumed()
    return result


def assert_verified(result: RunResult, rejections: int) -> None:
    assert isinstance(result.halt_reason, Completed), result.halt_reason
    assert result.verified
    feedback = [m for m in result.transcript if m.feedback_source == "completion_check"]
    assert len(feedback) == rejections


async def test_feature_list_rejects_early_done_and_tampering(tmp_path: Path) -> None:
    """The list's failing features, then a dropped feature, are rejected before the real finish."""
    rows = [{"name": "a", "passes": False}, {"name": "b", "passes": False}]
    (tmp_path / "feature_list.json").write_text(json.dumps(rows))
    model = ScriptedModelClient.from_jsonl(REPLAY / "feature_list.jsonl")
    result = await replay(model, FeatureListCheck(), tmp_path, task="Implement every feature.")
    assert_verified(result, rejections=2)


async def test_test_suite_rejects_until_the_tests_pass(tmp_path: Path) -> None:
    """A real pytest run names the failing test; the agent fixes the code and the suite passes."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    model = ScriptedModelClient.from_responses(
        [
            say("I implemented add."),
            call(
                "write_file",
                expect="failing: test_calc.py::test_add",
                path="calc.py",
                content="def add(a, b):\n    return a + b\n",
            ),
            say("Fixed the sign; the tests pass."),
        ]
    )
    check = TestSuiteCheck((sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"))
    assert_verified(await replay(model, check, tmp_path), rejections=1)


async def test_question_answered_rejects_an_incomplete_answer(tmp_path: Path) -> None:
    """The fixture judge fails the first answer with its reasons and passes the full one."""
    judge = ScriptedModelClient.from_responses(
        [
            {"agent": "judge", "text": "It gives the city but not the year.\nVERDICT: FAIL"},
            {
                "agent": "judge",
                "expect": {"last_message_contains": "in 1913"},
                "text": "City and year are both right.\nVERDICT: PASS",
            },
        ]
    )
    model = ScriptedModelClient.from_responses(
        [
            say("Canberra."),
            say(
                "Canberra; it became the capital in 1913.",
                expect="It gives the city but not the year.",
            ),
        ]
    )
    question = "What is the capital of Australia and since when?"
    check = QuestionAnsweredCheck(judge, question, rubric="Both the city and the year.")
    assert_verified(await replay(model, check, tmp_path, task=question), rejections=1)
    judge.verify_consumed()


async def test_sql_result_rejects_a_query_without_the_right_columns(tmp_path: Path) -> None:
    """The agent's SQL tool queries a real SQLite database; the check reads its latest result."""
    with sqlite3.connect(tmp_path / "shop.db") as db:
        db.execute("CREATE TABLE orders (customer TEXT, total REAL)")
        db.executemany(
            "INSERT INTO orders VALUES (?, ?)",
            [("ada", 10.0), ("ada", 5.5), ("bob", 7.25), ("cy", None)],
        )
    model = ScriptedModelClient.from_jsonl(REPLAY / "sql_result.jsonl")
    check = SqlResultCheck(expected_columns=("customer", "spent"), min_rows=3)
    result = await replay(
        model,
        check,
        tmp_path,
        task="How much did each customer spend?",
        tools=[sqlite_query_tool("shop.db")],
    )
    assert_verified(result, rejections=1)


async def test_always_complete_accepts_the_first_claim(tmp_path: Path) -> None:
    """With AlwaysComplete the agent's own claim ends the run, verified."""
    model = ScriptedModelClient.from_responses([say("42")])
    assert_verified(await replay(model, AlwaysComplete(), tmp_path), rejections=0)


async def test_files_rejects_until_the_artifact_exists(tmp_path: Path) -> None:
    """A missing artifact is named; the agent writes it and the run completes."""
    model = ScriptedModelClient.from_responses(
        [
            say("The report is written."),
            call(
                "write_file",
                expect="missing 1 of 1: report.md",
                path="report.md",
                content="# Findings\n",
            ),
            say("Now it really is."),
        ]
    )
    check = FilesCheck(("report.md",), non_empty=True)
    assert_verified(await replay(model, check, tmp_path), rejections=1)


async def test_signal_in_the_prompt_does_not_count(tmp_path: Path) -> None:
    """The signal in the task is ignored; only the agent's own final line completes the run."""
    model = ScriptedModelClient.from_responses(
        [
            say("Working on it; I will say <promise>DONE</promise> at the end."),
            say("Finished the migration.\n<promise>DONE</promise>", expect="not as a line of its"),
        ]
    )
    task = "Migrate the data.\n<promise>DONE</promise>\n(say that line when finished)"
    assert_verified(await replay(model, SignalCheck(), tmp_path, task=task), rejections=1)


async def test_command_rejects_until_the_verify_command_passes(tmp_path: Path) -> None:
    """The verify command's exit code and output reach the agent, which then fixes the build."""
    model = ScriptedModelClient.from_responses(
        [
            say("Build finished."),
            call(
                "write_file",
                expect="exited with code 1\nthe end of its output:\nno build/app.txt",
                path="build/app.txt",
                content="binary",
            ),
            say("The artifact is built."),
        ]
    )
    check = CommandCheck("test -s build/app.txt || { echo no build/app.txt; exit 1; }")
    assert_verified(await replay(model, check, tmp_path), rejections=1)


async def test_plan_rejects_until_every_step_is_done(tmp_path: Path) -> None:
    """Open plan steps are counted and named; the agent finishes them and the run completes."""
    steps = [{"title": "write", "status": "done"}, {"title": "test", "status": "pending"}]
    done = [{"title": "write", "status": "done"}, {"title": "test", "status": "done"}]
    model = ScriptedModelClient.from_responses(
        [
            call("update_plan", steps=steps),
            say("All done."),
            call("update_plan", expect="1 of 2 plan steps are not done: 'test'", steps=done),
            say("Tested too."),
        ]
    )
    result = await replay(model, PlanCheck(), tmp_path, tools=[update_plan])
    assert_verified(result, rejections=1)


async def test_a_composite_rejects_with_the_first_missing_part(tmp_path: Path) -> None:
    """Files & signal: the cheap file check speaks first, then the signal is required."""
    model = ScriptedModelClient.from_responses(
        [
            say("Done.\n<promise>DONE</promise>"),
            call("write_file", expect="missing 1 of 1: out.txt", path="out.txt", content="x"),
            say("Wrote it."),
            say(
                "Wrote out.txt.\n<promise>DONE</promise>", expect="does not contain the completion"
            ),
        ]
    )
    check = FilesCheck(("out.txt",)) & SignalCheck()
    assert_verified(await replay(model, check, tmp_path), rejections=2)
