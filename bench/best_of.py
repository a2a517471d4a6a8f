"""What an attempt of a best-of run costs besides its model calls and checks.

    python bench/best_of.py            # a repository of 5,000 files of 4 KB (20 MB)
    python bench/best_of.py --quick    # 500 files

In a git repository (each attempt a worktree on its own branch):
  O  opening the run's attempts: sweeping dead runs' leftovers, and one commit of the user's
     files as they are (a private copy of the index, so `git add` rehashes only what changed)
  W  one attempt's worktree made (``git worktree add``: every file written out)
  C  what the attempt changed, read after it changed 10 files (``git add -A``, ``git diff``)
  A  the winner's 10 files written into the user's workspace, then undone (a refusal's path)
  X  one attempt's worktree and branch removed
In a plain folder (each attempt a copy):
  W  one attempt's copy made;  C  its changes found by walking both trees;  X  removed
Per attempt, end to end: a best-of-4 run, one scripted turn and a files check per attempt, on
the repository, less a plain run of the same turn, divided by 4 (the harness, events, the
attempt's own run, its worktree and clean-up; no model latency, no test suite).
Medians of 5 rounds, in ms.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from _repos import git as _git
from _repos import python_tree as _tree

from checks import FilesCheck
from harness import Harness, ScriptedModelClient, workspace_tools
from strategies import BestOf, Ralph
from strategies._apply_changes import apply_changes
from strategies._attempt_workspaces import AttemptWorkspaces
from termination import TerminationPolicy


def _change(root: Path) -> None:
    for i in range(10):
        (root / "src" / "pkg0" / f"mod_{i}.py").write_text("changed\n")


async def _timed(step: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await step()
    return (time.perf_counter() - start) * 1000


async def _steps(root: Path, run_id: str, isolation: str) -> dict[str, float]:
    times: dict[str, float] = {}
    holder: dict[str, AttemptWorkspaces] = {}

    async def open_() -> None:
        holder["s"] = await AttemptWorkspaces.open(root, run_id, isolation)  # type: ignore[arg-type]

    times["O"] = await _timed(open_)
    spaces = holder["s"]
    made = {}

    async def make() -> None:
        made["a"] = await spaces.make(1)

    times["W"] = await _timed(make)
    attempt = made["a"]
    _change(attempt.path)
    changes = {}

    async def diff() -> None:
        changes["c"] = await spaces.changes(attempt)

    times["C"] = await _timed(diff)
    assert len(changes["c"]) == 10, changes["c"]

    async def apply() -> None:
        applied = await apply_changes(changes["c"], attempt.path, root)
        await anyio.to_thread.run_sync(applied.undo)

    times["A"] = await _timed(apply)
    times["X"] = await _timed(lambda: spaces.remove(attempt))
    await spaces.close()
    return times


def _run(workspace: Path, n: int | None) -> Harness:
    rows = [
        {"attempt": k, "tool_calls": [{"name": "write_file", "arguments": {"path": "done.txt"}}]}
        for k in range(1, (n or 1) + 1)
    ]
    for row in rows:
        row["tool_calls"][0]["arguments"]["content"] = "ok"  # type: ignore[index]
    rows = [r for k, row in enumerate(rows, 1) for r in (row, {"attempt": k, "text": "done"})]
    if n is None:
        rows = [{k: v for k, v in r.items() if k != "attempt"} for r in rows]
    strategy = BestOf(n=n, strategy=Ralph(max_iterations=1), concurrency=1) if n else Ralph()
    return Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=strategy,
        tools=workspace_tools(),
        workspace=workspace,
    )


async def _end_to_end(root: Path) -> float:
    start = time.perf_counter()
    await _run(root, None).run("Write done.txt.")
    plain = time.perf_counter() - start
    (root / "done.txt").unlink()
    start = time.perf_counter()
    result = await _run(root, 4).run("Write done.txt.")
    best = time.perf_counter() - start
    (root / "done.txt").unlink()
    # first_verified: attempt 1 wins, so one attempt ran; the run's own work is in `plain`.
    assert result.verified, result
    return (best - plain) * 1000


async def main(files: int, rounds: int) -> None:
    rows: dict[str, list[dict[str, float]]] = {"git": [], "copy": []}
    ends: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "repo"
        repo.mkdir()
        _tree(repo, files)
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "base")
        plain = Path(folder) / "plain"
        shutil.copytree(repo / "src", plain / "src")
        for index in range(rounds):
            rows["git"].append(await _steps(repo, f"bench{index}", "worktree"))
            rows["copy"].append(await _steps(plain, f"bench{index}", "copy"))
            ends.append(await _end_to_end(repo))
    size = files * 4 // 1000
    print(f"best-of attempt overhead: {files} files ({size} MB), median of {rounds} rounds, ms")
    for kind, steps in rows.items():
        names = ("O", "W", "C", "A", "X") if kind == "git" else ("W", "C", "X")
        cells = "  ".join(f"{n}={statistics.median(r[n] for r in steps):8.1f}" for n in names)
        print(f"  {kind:<5} {cells}")
    print(f"  one attempt end to end (run, worktree, clean-up): {statistics.median(ends):8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 files, 3 rounds")
    args = parser.parse_args()
    anyio.run(main, 500 if args.quick else 5000, 3 if args.quick else 5)
