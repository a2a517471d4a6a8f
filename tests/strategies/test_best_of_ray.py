"""`BestOf(engine=RayAttempts())`: each attempt runs as a Ray task on a local Ray instance,
in a checkout of its own on the worker; its events reach the run and the winner is applied
where the run started.

Skipped only where the ``ray`` extra is not installed (CI installs it with ``dev``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _git_support import git, init_repo

from checks import CommandCheck
from harness import Harness, ScriptedModelClient, run_command_tool, workspace_tools
from harness.events import AttemptEvent, ToolCalled
from harness.testing import FakeClock, ListSink
from strategies import BestOf, Ralph, RayAttempts
from termination import Budget, TerminationPolicy

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.anyio

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a * b\n"
CHECK = "import calc\n\nassert calc.add(2, 3) == 5, 'add is wrong'\n"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module (starting one takes seconds)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def write(attempt: int, path: str, content: str) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": path, "content": content}}
    return {"attempt": attempt, "tool_calls": [call]}


def shell(attempt: int, command: str) -> dict[str, Any]:
    call = {"name": "run_command", "arguments": {"command": command}}
    return {"attempt": attempt, "tool_calls": [call]}


def claim(attempt: int) -> dict[str, Any]:
    return {"attempt": attempt, "text": "Done."}


def on_ray(rows: list[dict[str, Any]], repo: Path, concurrency: int | None, **kw: Any) -> Harness:
    """Best-of-2 on Ray workers, one Ralph iteration per attempt, checked by check_calc.py."""
    return Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(
            completion_check=CommandCheck(["python3", "check_calc.py"], timeout=60),
            protected=["check_calc.py"],
            budget=Budget(),
        ),
        strategy=BestOf(
            n=2, concurrency=concurrency, strategy=Ralph(max_iterations=1), engine=RayAttempts()
        ),
        tools=[*workspace_tools(), run_command_tool(timeout=300)],
        workspace=repo,
        **kw,
    )


async def test_attempts_run_on_ray_workers_and_the_winner_is_applied_here(
    tmp_path: Path, local_ray: None
) -> None:
    """Attempt 1 gets add wrong, attempt 2 fixes it (and deletes a stale file); each ran
    on a Ray worker in a folder of its own (the shell's ``pwd`` there is no folder of this
    run), their events are in the run's stream, and only attempt 2's changes reach the
    user's repository, after the final check there."""
    repo = init_repo(
        tmp_path / "repo",
        {
            "calc.py": BUGGY,
            "check_calc.py": CHECK,
            "stale.txt": "old\n",
            ".gitignore": "__pycache__/\n",
        },
    )
    rows = [
        shell(1, "pwd"),
        write(1, "calc.py", WRONG),
        claim(1),
        shell(2, "pwd && rm stale.txt"),
        write(2, "calc.py", FIXED),
        claim(2),
    ]
    sink = ListSink()
    harness = on_ray(rows, repo, concurrency=1, clock=FakeClock(), sinks=[sink])
    result = await harness.run("Fix add in calc.py.")
    assert result.verified
    assert [(a.number, a.verified, a.applied) for a in result.attempts] == [
        (1, False, False),
        (2, True, True),
    ]
    assert [a.changed for a in result.attempts] == [("calc.py",), ("calc.py", "stale.txt")]
    assert (repo / "calc.py").read_text() == FIXED
    assert not (repo / "stale.txt").exists()
    where = [
        (e.attempt, e.inner.content.strip().splitlines()[-1])
        for e in sink.events
        if isinstance(e, AttemptEvent)
        and isinstance(e.inner, ToolCalled)
        and e.inner.call.name == "run_command"
    ]
    assert [number for number, _ in where] == [1, 2]
    for number, folder in where:
        assert f"harness-attempt-{number}-" in folder
        assert not folder.startswith(str(repo))
    inner = {(e.attempt, e.inner.name) for e in sink.events if isinstance(e, AttemptEvent)}
    assert {(1, "check.failed"), (2, "check.passed")} <= inner
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


async def test_an_attempt_still_running_on_a_worker_is_cancelled_there(
    tmp_path: Path, local_ray: None
) -> None:
    """Two at a time: attempt 1 is in a long shell command on its worker when attempt 2 is
    verified; attempt 1 is cancelled (its Ray task too) and its files never reach the run."""
    repo = init_repo(
        tmp_path / "repo",
        {"calc.py": BUGGY, "check_calc.py": CHECK, ".gitignore": "__pycache__/\n"},
    )
    rows = [
        write(1, "calc.py", WRONG),
        shell(1, "sleep 100"),
        claim(1),
        write(2, "calc.py", FIXED),
        claim(2),
    ]
    harness = on_ray(rows, repo, concurrency=None)  # the real clock: a shell command waits
    result = await harness.run("Fix add in calc.py.")
    assert [(a.number, type(a.halt_reason).__name__, a.applied) for a in result.attempts] == [
        (1, "Cancelled", False),
        (2, "Completed", True),
    ]
    assert result.attempts[0].halt_reason.describe().endswith("attempt 2 was verified first")
    assert result.attempts[0].changed == ()
    assert (repo / "calc.py").read_text() == FIXED
