"""`BestOf`, end to end with scripted attempts: each attempt in its own worktree (or copy),
one verified attempt applied to the user's workspace after a final check there, the losers'
worktrees and branches gone, and the transcript replayed identically."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from _git_support import git, init_repo
from attrs import evolve

from checks import AnyOf, CommandCheck, FilesCheck, TestSuiteCheck
from harness import (
    Cancelled,
    Completed,
    ConfigurationError,
    Event,
    FixtureError,
    Harness,
    ModelLadder,
    RunResult,
    ScriptedModelClient,
    ToolCall,
    ToolContext,
    run_command_tool,
    tool,
    workspace_tools,
)
from harness.events import (
    AttemptApplied,
    AttemptEvent,
    AttemptFinished,
    AttemptRefused,
    AttemptStarted,
    AttemptWon,
    TranscriptReader,
)
from harness.extend import ModelRequest, ModelResponse
from harness.testing import FakeClock, ListSink
from strategies import BestOf, Loop, NoAttemptVerified, Ralph, RalphCompletionUnmet, WinnerRefused
from strategies._apply_changes import ApplyRefused, apply_changes
from strategies._attempt_workspaces import AttemptWorkspaces, Change
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a * b\n"
CHECK = "import calc\n\nassert calc.add(2, 3) == 5, 'add is wrong'\n"


USAGE = {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.001}


def write(attempt: int, path: str, content: str, **extra: Any) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": path, "content": content}}
    return {"attempt": attempt, "tool_calls": [call], "usage": USAGE, **extra}


def claim(attempt: int, text: str = "Done.", **extra: Any) -> dict[str, Any]:
    return {"attempt": attempt, "text": text, "usage": USAGE, **extra}


@tool
async def wait_for_the_others() -> str:
    """Wait until cancelled: an attempt still at work when another is verified."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def calc_repo(folder: Path) -> Path:
    return init_repo(
        folder, {"calc.py": BUGGY, "check_calc.py": CHECK, ".gitignore": "__pycache__/\n"}
    )


def best_of(
    rows: Sequence[dict[str, Any]],
    workspace: Path,
    sink: ListSink | None = None,
    *,
    check: Any = None,
    budget: Budget | None = None,
    transcript: Path | None = None,
    **kw: Any,
) -> Harness:
    kw.setdefault("strategy", Ralph(max_iterations=1))
    return Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(
            completion_check=check or CommandCheck(["python3", "check_calc.py"], timeout=60),
            protected=["check_calc.py"],
            budget=budget or Budget(),
        ),
        strategy=BestOf(**kw),
        tools=[*workspace_tools(), run_command_tool(), wait_for_the_others],
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink] if sink is not None else [],
        transcript=transcript,
    )


def user_state(repo: Path) -> tuple[str, ...]:
    """What of the user's repository a run must never touch: HEAD, branch, index, stash,
    refs, worktrees."""
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        git(repo, "stash", "list", "--format=%H"),
        (repo / ".git" / "index").read_bytes().hex(),
        git(repo, "for-each-ref", "refs/heads", "refs/tags", "refs/stash"),
        git(repo, "worktree", "list", "--porcelain"),
    )


def assert_no_attempts_left(repo: Path) -> None:
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "for-each-ref", "refs/heads/harness-best-of/") == ""
    state = repo / ".git" / "harness-best-of"
    assert not state.exists() or list(state.iterdir()) == []


def outline(result: RunResult) -> list[tuple[int, str, bool, bool]]:
    return [(a.number, type(a.halt_reason).__name__, a.won, a.applied) for a in result.attempts]


async def test_attempts_1_to_3_fail_and_attempt_4_is_verified_and_applied(tmp_path: Path) -> None:
    """Best-of-4 in a git repository: three attempts get add wrong and are rejected, the
    fourth fixes it; only its change reaches the user's workspace, after the final check
    there, and every attempt's worktree and branch is gone; HEAD, index, stash and refs are
    as the user left them."""
    repo = calc_repo(tmp_path / "repo")
    before = user_state(repo)
    rows = [row for k in (1, 2, 3) for row in (write(k, "calc.py", WRONG), claim(k))]
    rows += [write(4, "calc.py", FIXED), claim(4)]
    sink = ListSink()
    result = await best_of(rows, repo, sink, n=4, concurrency=1).run("Fix add in calc.py.")
    assert result.halt_reason == Completed()
    assert outline(result) == [
        (1, "RalphCompletionUnmet", False, False),
        (2, "RalphCompletionUnmet", False, False),
        (3, "RalphCompletionUnmet", False, False),
        (4, "Completed", True, True),
    ]
    assert [a.changed for a in result.attempts] == [("calc.py",)] * 4
    assert {a.workspace for a in result.attempts} == {"worktree"}
    assert "add is wrong" in result.attempts[0].halt_reason.describe()
    assert (repo / "calc.py").read_text() == FIXED
    assert user_state(repo) == before
    assert git(repo, "status", "--porcelain") == " M calc.py\n"
    assert_no_attempts_left(repo)
    assert result.turns == 8
    assert result.usage.input_tokens == 800
    assert result.usage.cost_usd == pytest.approx(0.008)
    names = [e.name for e in sink.events if not isinstance(e, AttemptEvent)]
    assert names == [
        "run.started",
        "protected.recorded",
        *["attempt.started", "attempt.finished"] * 4,
        "attempt.won",
        "check.passed",
        "attempt.applied",
        "run.halted",
    ]
    inner = [(e.attempt, e.inner.name) for e in sink.events if isinstance(e, AttemptEvent)]
    assert (4, "check.passed") in inner
    assert (1, "check.failed") in inner
    assert all(
        e.inner.name not in ("run.started", "run.halted")
        for e in sink.events
        if isinstance(e, AttemptEvent)
    )


async def test_concurrent_attempts_reach_the_same_winner(tmp_path: Path) -> None:
    """All four attempts side by side: the same attempt wins and the same files land."""
    repo = calc_repo(tmp_path / "repo")
    rows = [row for k in (1, 2, 3) for row in (write(k, "calc.py", WRONG), claim(k))]
    rows += [write(4, "calc.py", FIXED), claim(4)]
    result = await best_of(rows, repo, n=4).run("Fix add in calc.py.")
    assert result.verified
    assert [a.number for a in result.attempts if a.applied] == [4]
    assert (repo / "calc.py").read_text() == FIXED
    assert_no_attempts_left(repo)


async def test_an_attempt_that_weakens_the_protected_test_is_refused_and_another_wins(
    tmp_path: Path,
) -> None:
    """Attempt 1 "passes" by replacing the protected check script, through the shell (the
    file tools refuse protected paths), with one that asserts nothing: its claim is judged
    with the recorded script laid over its work and refused.
    Attempt 2 fixes the code and wins; the user's check script is untouched and the result
    names the tampering."""
    repo = calc_repo(tmp_path / "repo")
    rows = [
        {
            "attempt": 1,
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": "echo pass > check_calc.py"}}
            ],
        },
        claim(1, "All checks pass."),
        write(2, "calc.py", FIXED),
        claim(2),
    ]
    result = await best_of(rows, repo, n=2, concurrency=1).run("Fix add in calc.py.")
    assert result.halt_reason == Completed()
    assert outline(result) == [
        (1, "RalphCompletionUnmet", False, False),
        (2, "Completed", True, True),
    ]
    assert result.attempts[0].changed == ("check_calc.py",)
    assert [(t.path, t.change) for t in result.tampering] == [("check_calc.py", "modified")]
    assert (repo / "check_calc.py").read_text() == CHECK
    assert (repo / "calc.py").read_text() == FIXED
    assert_no_attempts_left(repo)


async def test_first_verified_cancels_the_others_and_never_starts_the_rest(
    tmp_path: Path,
) -> None:
    """Two at a time: attempt 1 is still at work (in a tool call that only ends when it is
    cancelled) when attempt 2 is verified; attempt 1 is cancelled where it was, attempts 3
    and 4 never start, and no worktree is left."""
    repo = calc_repo(tmp_path / "repo")
    rows = [
        {"attempt": 1, "tool_calls": [{"name": "wait_for_the_others", "arguments": {}}]},
        write(2, "calc.py", FIXED),
        claim(2),
        write(3, "calc.py", FIXED),
        claim(3),
        write(4, "calc.py", FIXED),
        claim(4),
    ]
    sink = ListSink()
    result = await best_of(rows, repo, sink, n=4, concurrency=2).run("Fix add in calc.py.")
    assert result.verified
    assert outline(result) == [
        (1, "Cancelled", False, False),
        (2, "Completed", True, True),
        (3, "Cancelled", False, False),
        (4, "Cancelled", False, False),
    ]
    assert result.attempts[0].result is not None  # it ran, and was stopped
    assert result.attempts[2].result is None  # it never started
    assert result.attempts[0].halt_reason == Cancelled("best_of: attempt 2 was verified first")
    assert [e.attempt for e in sink.events if isinstance(e, AttemptStarted)] == [1, 2]
    assert (repo / "calc.py").read_text() == FIXED
    assert_no_attempts_left(repo)


async def test_best_progress_picks_the_verified_attempt_furthest_along(tmp_path: Path) -> None:
    """Every attempt runs; all three are accepted (the result file is there), and the check
    measures attempt 2 furthest along (all three parts written): it wins over attempt 1,
    which was verified first, and only its files are applied."""
    repo = init_repo(tmp_path / "repo", {"README": "x\n"})
    check = AnyOf([FilesCheck(["a.txt", "b.txt", "c.txt"]), FilesCheck(["a.txt"])])
    rows = [
        write(1, "a.txt", "1"),
        claim(1),
        write(2, "a.txt", "2"),
        write(2, "b.txt", "2"),
        write(2, "c.txt", "2"),
        claim(2),
        write(3, "a.txt", "3"),
        write(3, "b.txt", "3"),
        claim(3),
    ]
    sink = ListSink()
    result = await best_of(rows, repo, sink, check=check, n=3, pick="best_progress").run("Write.")
    assert result.verified
    assert outline(result) == [
        (1, "Completed", False, False),
        (2, "Completed", True, True),
        (3, "Completed", False, False),
    ]
    assert [(p.done, p.total) for a in result.attempts if (p := a.progress)] == [
        (1, 1),
        (3, 3),
        (1, 1),
    ]
    won = next(e for e in sink.events if isinstance(e, AttemptWon))
    assert (won.attempt, won.pick) == (2, "best_progress")
    assert {p.name: p.read_text() for p in repo.glob("*.txt")} == {
        "a.txt": "2",
        "b.txt": "2",
        "c.txt": "2",
    }
    assert_no_attempts_left(repo)


async def test_a_final_check_that_refuses_leaves_the_workspace_as_it_was(tmp_path: Path) -> None:
    """The user's workspace holds an ignored local setting (absent from every worktree)
    under which the check also wants a changelog entry: the winner passed in its worktree,
    the final check in the user's workspace refuses it, and every file is put back."""
    repo = init_repo(
        tmp_path / "repo",
        {
            "calc.py": BUGGY,
            "check_calc.py": CHECK
            + "import os\nif os.path.exists('strict.cfg'):\n"
            + "    assert os.path.exists('CHANGES'), 'strict: CHANGES is missing'\n",
            ".gitignore": "strict.cfg\n__pycache__/\n",
        },
    )
    (repo / "strict.cfg").write_text("on\n")
    rows = [write(1, "calc.py", FIXED), write(1, "src/new.py", "x = 1\n"), claim(1)]
    sink = ListSink()
    result = await best_of(rows, repo, sink, n=1).run("Fix add in calc.py.")
    assert isinstance(result.halt_reason, WinnerRefused)
    assert not result.verified
    assert "strict: CHANGES is missing" in result.halt_reason.reason
    assert outline(result) == [(1, "Completed", True, False)]
    assert (repo / "calc.py").read_text() == BUGGY
    assert not (repo / "src").exists()
    assert git(repo, "status", "--porcelain") == ""
    refused = [e for e in sink.events if isinstance(e, AttemptRefused)]
    assert [e.attempt for e in refused] == [1]
    assert not [e for e in sink.events if isinstance(e, AttemptApplied)]
    assert_no_attempts_left(repo)


async def test_no_verified_attempt_leaves_the_workspace_untouched(tmp_path: Path) -> None:
    """Both attempts fail: the run halts `NoAttemptVerified` with what stopped the last one
    (``first_verified`` measures nothing more), and nothing of theirs is in the user's
    workspace."""
    repo = calc_repo(tmp_path / "repo")
    rows = [write(1, "calc.py", WRONG), claim(1), write(2, "calc.py", WRONG), claim(2)]
    result = await best_of(rows, repo, n=2).run("Fix add in calc.py.")
    reason = result.halt_reason
    assert isinstance(reason, NoAttemptVerified)
    assert (reason.attempts, reason.best) == (2, 0)
    assert reason.reason.startswith("attempt 2: ralph ran 1 iterations")
    assert "add is wrong" in reason.reason
    assert (repo / "calc.py").read_text() == BUGGY
    assert git(repo, "status", "--porcelain") == ""
    assert_no_attempts_left(repo)


async def test_best_progress_without_a_verified_attempt_names_the_furthest(
    tmp_path: Path,
) -> None:
    """No attempt writes all three files: the halt names attempt 2, which wrote two, with
    what the check says is still missing."""
    repo = init_repo(tmp_path / "repo", {"README": "x\n"})
    check = FilesCheck(["a.txt", "b.txt", "c.txt"])
    rows = [
        write(1, "a.txt", "1"),
        claim(1),
        write(2, "a.txt", "2"),
        write(2, "b.txt", "2"),
        claim(2),
    ]
    result = await best_of(rows, repo, check=check, n=2, pick="best_progress").run("Write.")
    reason = result.halt_reason
    assert isinstance(reason, NoAttemptVerified)
    assert reason.best == 2
    assert "c.txt" in reason.reason
    assert [(p.done, p.total) for a in result.attempts if (p := a.progress)] == [(1, 3), (2, 3)]
    assert sorted(p.name for p in repo.iterdir()) == [".git", "README"]
    assert_no_attempts_left(repo)


async def test_a_plain_folder_works_in_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside git each attempt works in a copy; the winner's changed files are carried
    over, the others stay as they were, and the copies are removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "calc.py").write_text(BUGGY)
    (folder / "check_calc.py").write_text(CHECK)
    (folder / "old.txt").write_text("obsolete\n")
    rows = [write(1, "calc.py", WRONG), claim(1), write(2, "calc.py", FIXED), claim(2)]
    result = await best_of(rows, folder, n=2, concurrency=1).run("Fix add in calc.py.")
    assert result.verified
    assert {a.workspace for a in result.attempts} == {"copy"}
    assert (folder / "calc.py").read_text() == FIXED
    assert (folder / "old.txt").exists()
    state = tmp_path / "tmp"
    leftovers = [p for p in state.rglob("*") if "harness-best-of" in str(p)]
    assert [p for p in leftovers if p.is_file()] == []


async def test_each_attempt_has_its_share_of_the_budget(tmp_path: Path) -> None:
    """A run budget of 6 turns over 2 attempts: each attempt may take 3; the first is still
    writing at its third turn and runs out, the second fits and wins."""
    repo = calc_repo(tmp_path / "repo")
    rows = [
        write(1, "calc.py", WRONG),
        write(1, "calc.py", WRONG),
        write(1, "calc.py", WRONG),
        write(2, "calc.py", FIXED),
        claim(2),
    ]
    result = await best_of(rows, repo, n=2, concurrency=1, budget=Budget(max_turns=6)).run(
        "Fix add in calc.py."
    )
    assert result.verified
    first = result.attempts[0].halt_reason
    assert type(first).__name__ == "BudgetExceeded"
    assert (first.limit, first.limit_value) == ("max_turns", 3)  # type: ignore[attr-defined]
    assert result.turns == 5


async def test_the_run_budget_bounds_attempts_with_their_own_budget(tmp_path: Path) -> None:
    """Attempts of 3 turns each under a run of 5: attempt 1 uses 3, attempt 2 starts with
    the 2 left, and attempt 3 does not start (the run's turns are used up)."""
    repo = calc_repo(tmp_path / "repo")
    rows = [
        write(1, "calc.py", WRONG),
        write(1, "calc.py", WRONG),
        write(1, "calc.py", WRONG),
        write(2, "calc.py", WRONG),
        write(2, "calc.py", WRONG),
    ]
    result = await best_of(
        rows,
        repo,
        n=3,
        concurrency=1,
        budget=Budget(max_turns=5),
        attempt_budget=Budget(max_turns=3),
    ).run("Fix add in calc.py.")
    assert isinstance(result.halt_reason, NoAttemptVerified)
    limits = [
        (a.halt_reason.limit_value, a.result is not None)  # type: ignore[attr-defined]
        for a in result.attempts
    ]
    assert limits == [(3, True), (2, True), (5, False)]
    assert result.turns == 5
    assert_no_attempts_left(repo)


async def test_the_transcript_holds_every_attempt_and_replays_identically(
    tmp_path: Path,
) -> None:
    """Two runs from the same fixture write the same transcript (the attempts' own folders
    aside), and every best-of event reads back as its own type."""
    keys = []
    for name in ("one", "two"):
        repo = calc_repo(tmp_path / name)
        rows = [write(1, "calc.py", WRONG), claim(1), write(2, "calc.py", FIXED), claim(2)]
        transcript = tmp_path / f"{name}.jsonl"
        result = await best_of(rows, repo, n=2, concurrency=1, transcript=transcript).run(
            "Fix add in calc.py."
        )
        assert result.verified
        events = [event for _, event in TranscriptReader(transcript)]
        kinds = {type(e) for e in events}
        assert {AttemptStarted, AttemptEvent, AttemptFinished, AttemptWon, AttemptApplied} <= kinds
        finished = [e for e in events if isinstance(e, AttemptFinished)]
        assert [(e.attempt, e.verified, e.changed) for e in finished] == [
            (1, False, ("calc.py",)),
            (2, True, ("calc.py",)),
        ]
        assert isinstance(finished[0].reason, RalphCompletionUnmet)
        text = transcript.read_text()
        text = text.replace(str(repo), "<repo>").replace(result.run_id, "<run>")
        rows_read = [json.loads(line) for line in text.splitlines()]
        keys.append([Event.from_dict(row).replay_key() for row in rows_read])
    assert keys[0] == keys[1]


async def test_a_fixture_without_lines_for_an_attempt_names_it(tmp_path: Path) -> None:
    """A scripted fixture that tags lines with attempts must have some for every attempt
    that starts: the error names the attempt and the ones it has."""
    repo = calc_repo(tmp_path / "repo")
    rows = [write(1, "calc.py", WRONG), claim(1)]
    with pytest.raises(FixtureError, match=r"attempt 2 has no lines.*attempts \[1\]"):
        await best_of(rows, repo, n=2, concurrency=1).run("Fix add in calc.py.")
    assert_no_attempts_left(repo)


def test_bad_settings_name_the_field() -> None:
    """Every setting is checked when the strategy is made, and the error names it."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"n": 0}, "'n'"),
        ({"concurrency": 0}, "'concurrency'"),
        ({"pick": "fastest"}, "'pick'"),
        ({"isolation": "docker"}, "'isolation'"),
        ({"strategy": "ralph"}, "'strategy'"),
        ({"strategy": BestOf()}, "'strategy'"),
        ({"attempt_budget": {"max_turns": 3}}, "'attempt_budget'"),
    ]
    for kw, field in cases:
        with pytest.raises(ConfigurationError, match=field):
            BestOf(**kw)


KILLED_RUN = """
import sys
from pathlib import Path

import anyio

from checks import FilesCheck
from harness import Harness, ScriptedModelClient, tool, workspace_tools
from strategies import BestOf, Ralph
from termination import TerminationPolicy

repo, marker = Path(sys.argv[1]), Path(sys.argv[2])


@tool
async def wait_for_the_others() -> str:
    \"\"\"Say it is at work, then wait until killed.\"\"\"
    with marker.open("a") as out:
        out.write("at work\\n")
    await anyio.sleep_forever()
    return "unreachable"


call = {"name": "wait_for_the_others", "arguments": {}}
rows = [{"attempt": k, "tool_calls": [call]} for k in (1, 2)]
harness = Harness(
    model=ScriptedModelClient.from_responses(rows),
    policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
    strategy=BestOf(n=2, strategy=Ralph(max_iterations=1)),
    tools=[*workspace_tools(), wait_for_the_others],
    workspace=repo,
)
anyio.run(harness.run, "Write done.txt.")
"""


def kill_mid_run(repo: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    """Start `KILLED_RUN` on `repo` and SIGKILL it once both attempts are at work."""
    script, marker = tmp_path / "killed_run.py", tmp_path / "marker"
    script.write_text(KILLED_RUN)
    process = subprocess.Popen(
        [sys.executable, str(script), str(repo), str(marker)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text().count("at work") == 2):
            assert process.poll() is None, process.stderr.read() if process.stderr else b""
            assert time.monotonic() < deadline, "the attempts never started"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
    return process


async def test_worktrees_of_a_run_killed_with_sigkill_are_removed_at_the_next_start(
    tmp_path: Path,
) -> None:
    """A best-of run in a real process is killed with SIGKILL while both attempts are at
    work in their worktrees: they and their branches are left behind, and the next best-of
    run on the repository removes them before it starts its own; the user's files and
    refs are as they were."""
    repo = calc_repo(tmp_path / "repo")
    before = git(repo, "for-each-ref", "refs/heads")
    process = kill_mid_run(repo, tmp_path)
    assert process.returncode == -signal.SIGKILL
    left = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/harness-best-of/")
    assert len(left.split()) == 2
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 3

    rows = [write(1, "calc.py", FIXED), claim(1)]
    result = await best_of(rows, repo, n=1).run("Fix add in calc.py.")
    assert result.verified
    assert_no_attempts_left(repo)
    assert git(repo, "for-each-ref", "refs/heads") == before
    assert (repo / "calc.py").read_text() == FIXED


def test_a_fixture_line_names_a_real_attempt() -> None:
    """``attempt`` must be a number from 1, and once one line names an attempt every line
    must: each error names the line and the field."""
    with pytest.raises(FixtureError, match="attempt number >= 1") as bad:
        ScriptedModelClient.from_responses([{"attempt": 0, "text": "x"}])
    assert (bad.value.line, bad.value.field) == (1, "attempt")
    mixed = ScriptedModelClient.from_responses([{"attempt": 1, "text": "x"}, {"text": "y"}])
    with pytest.raises(FixtureError, match="must give every line an attempt") as untagged:
        mixed.for_attempt(1)
    assert (untagged.value.line, untagged.value.field) == (2, "attempt")


def test_a_fixture_without_attempts_gives_each_attempt_the_whole_script() -> None:
    """Each attempt's client replays every line and checks its own are used; the fixture's
    own client, once forked, leaves that to them."""
    script = ScriptedModelClient.from_responses([{"text": "a"}, {"text": "b"}])
    one, two = script.for_attempt(1), script.for_attempt(2)
    assert (one.remaining, two.remaining) == (2, 2)
    script.verify_consumed()
    with pytest.raises(FixtureError, match="2 script line"):
        one.verify_consumed()


async def test_copies_carry_written_and_deleted_files_and_undo_restores_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a copy an attempt writes a file in a new folder, deletes one and changes a link;
    the changes found are exactly those, applying them makes the workspace match, and undo
    puts every file (and no new folder) back."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "a.py").write_text("a = 1\n")
    (work / "old.txt").write_text("old\n")
    (work / "link").symlink_to("old.txt")
    (work / ".git").mkdir()
    (work / ".git" / "HEAD").write_text("x\n")
    spaces = await AttemptWorkspaces.open(work, "unit", "copy")
    try:
        attempt = await spaces.make(1)
        (attempt.path / "new" / "deep").mkdir(parents=True)
        (attempt.path / "new" / "deep" / "b.py").write_text("b = 2\n")
        (attempt.path / "old.txt").unlink()
        (attempt.path / "link").unlink()
        (attempt.path / "link").symlink_to("pkg/a.py")
        (attempt.path / ".git" / "HEAD").write_text("changed\n")
        changes = await spaces.changes(attempt)
        assert [(c.path, c.deleted) for c in changes] == [
            ("link", False),
            ("new/deep/b.py", False),
            ("old.txt", True),
        ]
        applied = await apply_changes(changes, attempt.path, work)
        assert (work / "new" / "deep" / "b.py").read_text() == "b = 2\n"
        assert not (work / "old.txt").exists()
        assert os.readlink(work / "link") == "pkg/a.py"
        assert (work / ".git" / "HEAD").read_text() == "x\n"
        applied.undo()
        assert (work / "old.txt").read_text() == "old\n"
        assert os.readlink(work / "link") == "old.txt"
        assert not (work / "new").exists()
        assert sorted(p.name for p in work.iterdir()) == [".git", "link", "old.txt", "pkg"]
    finally:
        await spaces.close()
    assert not (spaces.state / "unit").exists()


async def test_a_change_that_would_leave_the_workspace_is_refused_before_writing(
    tmp_path: Path,
) -> None:
    """A path that climbs out, or passes through a link, is refused and nothing is written."""
    source, work = tmp_path / "source", tmp_path / "work"
    source.mkdir()
    work.mkdir()
    (work / "out").symlink_to(tmp_path)
    (source / "ok.txt").write_text("ok\n")
    for bad in ("../escape.txt", "out/escape.txt"):
        with pytest.raises(ApplyRefused):
            await apply_changes([Change("ok.txt"), Change(bad)], source, work)
        assert not (work / "ok.txt").exists()
    assert not (tmp_path / "escape.txt").exists()


@tool
async def nap(ctx: ToolContext) -> str:
    """Sleep a minute on the run's clock."""
    await ctx.clock.sleep(60)
    return "rested"


async def test_the_run_deadline_cuts_every_attempt_off_and_cleans_up(tmp_path: Path) -> None:
    """The run's wall time is not divided: at its deadline every attempt still at work is
    cancelled, the run halts on that budget naming each attempt, and no worktree is left."""
    repo = calc_repo(tmp_path / "repo")
    call = {"name": "nap", "arguments": {}}
    rows = [{"attempt": k, "tool_calls": [call]} for k in (1, 2)]
    harness = best_of(rows, repo, n=2, budget=Budget(max_wall_time=30))
    harness = evolve(harness, tools=[*workspace_tools(), nap])
    result = await harness.run("Fix add in calc.py.")
    assert type(result.halt_reason).__name__ == "BudgetExceeded"
    assert result.halt_reason.limit == "max_wall_time"  # type: ignore[attr-defined]
    assert [(a.number, type(a.halt_reason).__name__) for a in result.attempts] == [
        (1, "Cancelled"),
        (2, "Cancelled"),
    ]
    assert (repo / "calc.py").read_text() == BUGGY
    assert_no_attempts_left(repo)


LEGACY_TESTS = """import unittest

from calc import add, mul


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)
"""


async def test_best_progress_prefers_the_attempt_that_also_fixed_what_failed_before(
    tmp_path: Path,
) -> None:
    """With a baseline, test_mul failing before the run does not block: both attempts fix
    add and are verified. Attempt 2 also fixes mul; the suite counts 2 of 2 tests passing
    for it against 1 of 2, and it wins although attempt 1 was verified first."""
    repo = init_repo(
        tmp_path / "repo",
        {
            "calc.py": BUGGY + "\n\ndef mul(a, b):\n    return a + b\n",
            "test_calc.py": LEGACY_TESTS,
            ".gitignore": "__pycache__/\n",
        },
    )
    fixed_add = FIXED + "\n\ndef mul(a, b):\n    return a + b\n"
    fixed_both = FIXED + "\n\ndef mul(a, b):\n    return a * b\n"
    rows = [write(1, "calc.py", fixed_add), claim(1), write(2, "calc.py", fixed_both), claim(2)]
    check = TestSuiteCheck("python3 -m unittest -v", baseline=True, timeout=120)
    result = await best_of(rows, repo, check=check, n=2, concurrency=1, pick="best_progress").run(
        "Fix add in calc.py."
    )
    assert result.verified
    assert outline(result) == [(1, "Completed", False, False), (2, "Completed", True, True)]
    assert [(p.done, p.total) for a in result.attempts if (p := a.progress)] == [(1, 2), (2, 2)]
    assert (repo / "calc.py").read_text() == fixed_both
    assert_no_attempts_left(repo)


async def test_worktree_isolation_outside_a_repository_is_an_error_naming_the_folder(
    tmp_path: Path,
) -> None:
    """``isolation="worktree"`` on a plain folder is a configuration error that names the
    folder, raised before any attempt starts."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "calc.py").write_text(BUGGY)
    rows = [write(1, "calc.py", FIXED), claim(1)]
    harness = best_of(rows, folder, n=1, isolation="worktree")
    with pytest.raises(ConfigurationError, match=f"needs a git repository.*{folder}"):
        await harness.run("Fix add in calc.py.")
    assert (folder / "calc.py").read_text() == BUGGY


class SharedClient:
    """A model client that knows nothing of attempts (as a provider's, or a model ladder,
    which is just a client): it answers from the request alone, so the attempts share it."""

    def __init__(self) -> None:
        self.workspaces: list[Path | None] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.workspaces.append(request.workspace)
        if request.turn == 1:
            args = {"path": "calc.py", "content": FIXED}
            return ModelResponse(tool_calls=(ToolCall("c1", "write_file", args),))
        return ModelResponse(text="Done.")


async def test_any_model_client_is_shared_by_the_attempts(tmp_path: Path) -> None:
    """A client without `for_attempt` serves every attempt, each in its own worktree (its
    requests name them), and the run is verified as with a forked one."""
    repo = calc_repo(tmp_path / "repo")
    client = SharedClient()
    harness = evolve(best_of([], repo, n=2, concurrency=1, pick="best_progress"), model=client)
    result = await harness.run("Fix add in calc.py.")
    assert result.verified
    assert [a.verified for a in result.attempts] == [True, True]
    assert len(client.workspaces) == 4
    assert len(set(client.workspaces)) == 2
    assert repo not in client.workspaces
    assert (repo / "calc.py").read_text() == FIXED
    assert_no_attempts_left(repo)


async def test_a_file_the_user_changed_during_the_run_is_not_overwritten(
    tmp_path: Path,
) -> None:
    """While the attempt works, the user edits calc.py in the workspace: the verified
    winner also changed it, so nothing is applied and the run says which file."""
    repo = calc_repo(tmp_path / "repo")

    @tool
    async def meanwhile() -> str:
        """The user edits calc.py while the attempt works."""
        (repo / "calc.py").write_text("# the user's own edit\n" + BUGGY)
        return "ok"

    rows = [
        {"attempt": 1, "tool_calls": [{"name": "meanwhile", "arguments": {}}]},
        write(1, "calc.py", FIXED),
        claim(1),
    ]
    harness = evolve(best_of(rows, repo, n=1), tools=[*workspace_tools(), meanwhile])
    result = await harness.run("Fix add in calc.py.")
    reason = result.halt_reason
    assert isinstance(reason, WinnerRefused)
    assert "changed during the run in files the winner also changed (calc.py)" in reason.reason
    assert (repo / "calc.py").read_text() == "# the user's own edit\n" + BUGGY
    assert_no_attempts_left(repo)


async def test_a_model_ladder_forks_per_attempt_and_each_attempt_climbs_on_its_own(
    tmp_path: Path,
) -> None:
    """A ladder is just a model client: forked per attempt, each attempt starts on the
    cheap rung with its own lines. Attempt 1's cheap model is rejected and the ladder climbs
    to the strong one, whose fix is verified and applied; attempt 2 never starts."""
    repo = calc_repo(tmp_path / "repo")
    cheap = ScriptedModelClient.from_responses(
        [write(1, "calc.py", WRONG), claim(1), write(2, "calc.py", WRONG), claim(2)]
    )
    strong = ScriptedModelClient.from_responses([write(1, "calc.py", FIXED), claim(1)])
    ladder = ModelLadder([cheap, strong], escalate_after=1, names=["cheap", "strong"])
    sink = ListSink()
    harness = evolve(best_of([], repo, sink, n=2, concurrency=1, strategy=Loop()), model=ladder)
    result = await harness.run("Fix add in calc.py.")
    assert result.verified
    assert outline(result) == [(1, "Completed", True, True), (2, "Cancelled", False, False)]
    climbs = [
        (e.attempt, e.inner.name)
        for e in sink.events
        if isinstance(e, AttemptEvent) and e.inner.name == "model.escalated"
    ]
    assert climbs == [(1, "model.escalated")]
    assert (repo / "calc.py").read_text() == FIXED
    assert_no_attempts_left(repo)


async def test_measuring_an_attempt_judges_with_the_untouched_verifier_and_records_nothing(
    tmp_path: Path,
) -> None:
    """``best_progress`` measures each attempt once more with the run's verifier: attempt 1,
    which emptied the protected check script through the shell, is judged with the recorded
    script laid over its work (the check still says add is wrong), and that measuring records
    no second tampering: the change is listed once, from the attempt's own run, and no
    ``protected.changed`` is emitted outside the attempt's events."""
    repo = calc_repo(tmp_path / "repo")
    empty = {"name": "run_command", "arguments": {"command": "echo pass > check_calc.py"}}
    rows = [{"attempt": 1, "tool_calls": [empty]}, claim(1), write(2, "calc.py", FIXED), claim(2)]
    sink = ListSink()
    result = await best_of(rows, repo, sink, n=2, concurrency=1, pick="best_progress").run(
        "Fix add in calc.py."
    )
    assert [a.number for a in result.attempts if a.applied] == [2]
    assert [(t.path, t.change) for t in result.tampering] == [("check_calc.py", "modified")]
    assert "protected.changed" not in [e.name for e in sink.events]
    inner = [e.inner.name for e in sink.events if isinstance(e, AttemptEvent) and e.attempt == 1]
    assert inner.count("protected.changed") == 1
    assert (repo / "check_calc.py").read_text() == CHECK
