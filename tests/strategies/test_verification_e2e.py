"""End to end, in a real git repository with a real pytest as the suite: an agent that weakens
a test is refused and caught whatever route it takes, and an agent is not held back by a
failure that predates its task (the loop and Ralph alike)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _checks_support import as_clock

from checks import TestSuiteCheck
from harness import (
    Completed,
    Harness,
    RunResult,
    ScriptedModelClient,
    SensorTripped,
    ToolContext,
    tool,
    workspace_tools,
)
from harness.events import BaselineRecorded, ProtectedPathsChanged, ProtectedPathsRecorded
from harness.extend import Strategy, Tampering
from harness.testing import FakeClock, ListSink
from strategies import Ralph, SelfVerifying
from termination import TamperingSensor, TerminationPolicy

pytestmark = pytest.mark.anyio

USAGE = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.001}
TESTS = """\
from calc import add, sub


def test_add():
    assert add(2, 2) == 4


def test_sub():
    assert sub(3, 1) == 2


def test_legacy():
    assert add(0.1, 0.2) == 0.3  # failed before the task began; not the task
"""
WEAKENED = "def test_sub():\n    pass\n"
BROKEN_CODE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return 0\n"
FIXED_CODE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose suite has the task's failing test and an older failure."""
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_calc.py").write_text(TESTS, encoding="utf-8")
    (root / "calc.py").write_text(BROKEN_CODE, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


@tool(name="sh")
def shell(command: str, ctx: ToolContext) -> str:
    """Run a shell command in the workspace (the route a command-line agent takes).

    Args:
        command: the command line
    """
    assert ctx.workspace is not None
    done = subprocess.run(
        ["/bin/sh", "-c", command], cwd=ctx.workspace, capture_output=True, text=True, check=False
    )
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def say(text: str, expect: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"text": text, "usage": USAGE}
    if expect is not None:
        row["expect"] = {"last_message_contains": expect}
    return row


def call(name: str, expect: str | None = None, **arguments: Any) -> dict[str, Any]:
    row = say("", expect)
    row["tool_calls"] = [{"id": f"call-{name}", "name": name, "arguments": arguments}]
    return row


def suite(*, fast_reject: bool = True) -> TestSuiteCheck:
    return TestSuiteCheck(
        (sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"),
        baseline=True,
        must_pass=["test_sub"],
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        fast_reject=fast_reject,
    )


async def run(
    repo: Path,
    script: list[dict[str, Any]],
    *,
    strategy: Strategy | None = None,
    sensors: tuple[TamperingSensor, ...] = (),
    fast_reject: bool = True,
) -> tuple[RunResult, ListSink]:
    model = ScriptedModelClient.from_responses(script)
    events = ListSink()
    check = suite(fast_reject=fast_reject)
    policy = TerminationPolicy(completion_check=check, protected=["tests/**"], sensors=sensors)
    options: dict[str, Any] = {} if strategy is None else {"strategy": strategy}
    harness = Harness(
        model=model,
        tools=[*workspace_tools(), shell],
        policy=policy,
        workspace=repo,
        clock=as_clock(FakeClock()),
        sinks=[events],
        **options,
    )
    return await harness.run("Make test_sub pass."), events


def status(repo: Path) -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout


async def test_a_weakened_test_is_refused_caught_and_never_passes(repo: Path) -> None:
    """(a) The write tool refuses the test file; the shell route is caught at the claim,
    which is judged with the test as it was (still failing); fixing the code but keeping
    the weakened test is still rejected; restoring it with git completes the run."""
    script = [
        call("write_file", path="tests/test_calc.py", content=WEAKENED),
        call("sh", "protected by the rule 'tests/**'", command=f"printf '{WEAKENED}' > x"),
        call("sh", command="mv x tests/test_calc.py"),
        say("Done: test_sub passes now."),
        call(
            "write_file",
            "With them as they were, the completion check reports",
            path="calc.py",
            content=FIXED_CODE,
        ),
        say("Fixed sub."),
        call("sh", "restore them and claim again", command="git checkout -- tests/test_calc.py"),
        say("Restored the test; sub is fixed."),
    ]
    result, events = await run(repo, script)
    assert result.halt_reason == Completed()
    assert result.verified
    # Found at both claims (an event each), listed once in the result.
    assert result.tampering == (Tampering("tests/test_calc.py", "modified", "tests/**"),)
    assert [type(e) for e in events.events if isinstance(e, ProtectedPathsChanged)] == [
        ProtectedPathsChanged,
        ProtectedPathsChanged,
    ]
    recorded = events.of_type(ProtectedPathsRecorded)
    assert [(e.rules, e.files) for e in recorded] == [(("tests/**",), 1)]  # type: ignore[attr-defined]
    first_rejection = result.sessions[0].messages[9].content
    assert "tests/test_calc.py (modified; protected by 'tests/**')" in first_rejection
    assert "test_sub (tests/test_calc.py::test_sub failed)" in first_rejection
    assert status(repo) == " M calc.py\n"  # the user's workspace holds the agent's work only


async def test_repeated_tampering_halts_the_run(repo: Path) -> None:
    """A sensor stops an agent that answers each rejection by tampering again."""
    script = [
        call("sh", command=f"printf '{WEAKENED}' > tests/test_calc.py"),
        say("Done."),
        call("sh", "Protected files were changed", command="echo again >> tests/test_calc.py"),
        say("Done now."),
    ]
    result, _ = await run(repo, script, sensors=(TamperingSensor(limit=2),))
    assert isinstance(result.halt_reason, SensorTripped)
    assert result.halt_reason.sensor == "tampering"
    assert not result.verified


@pytest.mark.parametrize("strategy", ["loop", "ralph", "self_verifying"])
async def test_a_failure_that_predates_the_task_does_not_hold_the_agent_back(
    repo: Path, strategy: str
) -> None:
    """(c) `test_legacy` failed before the run: it is recorded in the transcript and on the
    result, listed apart in the rejection of an early claim by the whole suite, and never
    blocks."""
    script = [
        say("Nothing to do."),
        call(
            "write_file",
            "failing since before the run began (these do not block): "
            "tests/test_calc.py::test_legacy",
            path="calc.py",
            content=FIXED_CODE,
        ),
        say("sub is fixed."),
    ]
    evaluator = ScriptedModelClient.from_responses([{"text": "VERDICT: PASS", "usage": USAGE}])
    chosen = {
        "loop": None,
        "ralph": Ralph(max_iterations=3),
        "self_verifying": SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False),
    }[strategy]
    result, events = await run(repo, script, strategy=chosen, fast_reject=False)
    assert result.halt_reason == Completed()
    assert result.verified
    (baseline,) = result.baselines
    assert baseline.failing == ("tests/test_calc.py::test_legacy", "tests/test_calc.py::test_sub")
    assert baseline.passed == 1
    assert baseline.runner == "pytest"
    assert [e.baseline for e in events.of_type(BaselineRecorded)] == [baseline]  # type: ignore[attr-defined]
    assert result.tampering == ()


async def test_ralph_carries_the_tampering_rejection_into_the_next_iteration(repo: Path) -> None:
    """Ralph judges the claim between iterations the same way: the next iteration's fresh
    context says which protected file changed, and restoring it and fixing the code wins."""
    script = [
        call("sh", command=f"printf '{WEAKENED}' > tests/test_calc.py"),
        say("Done."),
        call(
            "sh",
            "tests/test_calc.py (modified; protected by 'tests/**')",
            command="git checkout -- tests/test_calc.py",
        ),
        call("write_file", path="calc.py", content=FIXED_CODE),
        say("Restored the test and fixed sub."),
    ]
    result, events = await run(repo, script, strategy=Ralph(max_iterations=2))
    assert result.halt_reason == Completed()
    assert result.iterations == 2
    assert result.tampering == (Tampering("tests/test_calc.py", "modified", "tests/**"),)
    assert len(events.of_type(ProtectedPathsChanged)) == 1


async def test_both_halves_judge_with_the_pristine_test(repo: Path, tmp_path: Path) -> None:
    """A claim that weakened the must_pass test is judged with the test as it was by the fast
    half and by the whole suite alike: the pristine test_sub writes to a log outside the
    workspace at every run (the baseline and the rerun of its failure, then both halves of
    both claims), and the weakened one never runs."""
    log = tmp_path / "ran.log"
    write = f"    open({str(log)!r}, 'a').write('{{}}\\n')\n"
    (repo / "tests" / "test_calc.py").write_text(
        TESTS.replace("def test_sub():\n", "def test_sub():\n" + write.format("pristine"))
    )
    git(repo, "commit", "-q", "-am", "test_sub logs its runs")
    weakened = "def test_sub():\n" + write.format("weakened")
    script = [
        call("sh", command=f"cat > tests/test_calc.py <<'END'\n{weakened}END\n"),
        call("write_file", path="calc.py", content=FIXED_CODE),
        say("Done."),
        call(
            "sh",
            "With them as they were, the completion check passes",
            command="git checkout -- tests/test_calc.py",
        ),
        say("Restored the test."),
    ]
    result, _ = await run(repo, script)
    assert result.halt_reason == Completed()
    assert result.verified
    assert log.read_text().split() == ["pristine"] * 6
