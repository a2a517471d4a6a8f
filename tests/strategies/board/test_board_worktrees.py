"""``[board] isolation = "worktree"``: tasks that run at once on one git repository each work
in their own worktree and branch; verified work is merged back, a conflict goes to review
naming the files, and nothing is left behind (real git repositories, scripted agents)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from _board_support import task_toml, writes

from harness.extend import FolderRefused, ModelRequest, ModelResponse
from harness.testing import ScriptedModelClient
from strategies.board import (
    Agent,
    AttemptInfo,
    AttemptOutcome,
    AttemptSpec,
    Board,
    BoardConfigError,
    BoardResult,
    BoardSettings,
    load_config,
    load_tasks,
)

pytestmark = pytest.mark.anyio

_SETTINGS = {"isolation": "worktree", "heartbeat": 0.2, "lease": 1.0, "poll": 0.2}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hello\n")
    (repo / ".gitignore").write_text(".board/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    return repo


def _tasks(root: Path, tasks: Mapping[str, str]) -> Path:
    folder = root / "tasks"
    folder.mkdir()
    for name, text in tasks.items():
        (folder / f"{name}.toml").write_text(text)
    return folder


class _Together:
    """Holds each attempt's first model call until `count` attempts have made one: the
    attempts provably run at the same time, each from the same HEAD."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.arrived = 0
        self.all_in = anyio.Event()


class _Held:
    def __init__(self, inner: ScriptedModelClient, together: _Together | None) -> None:
        self._inner = inner
        self._together = together
        self._first = True

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self._first and self._together is not None:
            self._first = False
            self._together.arrived += 1
            if self._together.arrived >= self._together.count:
                self._together.all_in.set()
            await self._together.all_in.wait()
        return await self._inner.complete(request)


def _agent(
    scripts: Mapping[str, Sequence[Mapping[str, Any]]], together: _Together | None = None
) -> Agent:
    def model(info: AttemptInfo) -> _Held:
        rows = scripts.get(f"{info.task}.{info.attempt}", scripts.get(info.task, ()))
        return _Held(ScriptedModelClient.from_responses(rows), together)

    return Agent(role="w", model=model)


class _Where:
    """Notes the workspace each attempt was given."""

    def __init__(self) -> None:
        self.workspaces: dict[str, Path] = {}

    def started(self, spec: AttemptSpec) -> Sequence[Any]:
        assert spec.workspace is not None
        self.workspaces[spec.info.task] = spec.workspace
        return ()

    def finished(self, spec: AttemptSpec, outcome: AttemptOutcome | None) -> None:
        pass


def _board(
    tmp_path: Path,
    repo: Path,
    tasks: Mapping[str, str],
    agent: Agent,
    *,
    size: int = 2,
    watchers: Sequence[_Where] = (),
) -> Board:
    folder = tmp_path / "tasks"
    if not folder.exists():
        _tasks(tmp_path, tasks)
    return Board(
        tasks=load_tasks(folder),
        agents=[agent],
        state=tmp_path / "state",
        size=size,
        settings=BoardSettings(workspace=repo, **_SETTINGS),  # type: ignore[arg-type]
        watchers=watchers,
    )


def _leftovers(repo: Path) -> tuple[list[str], list[str]]:
    """The repository's extra worktrees and the board's branches."""
    trees = [
        line
        for line in _git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]
    branches = _git(repo, "branch", "--list", "harness/*", "--format=%(refname:short)")
    return trees[1:], branches.split()


async def test_two_tasks_at_once_each_work_in_their_own_worktree_and_both_merge(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "pre-merge-commit", "commit-msg", "post-checkout"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{repo}/{hook}-ran'\nexit 1\n")
        (hooks / hook).chmod(0o755)
    where = _Where()
    board = _board(
        tmp_path,
        repo,
        {"a": task_toml("a"), "b": task_toml("b")},
        _agent({"a": writes("a.txt", "from a"), "b": writes("b.txt", "from b")}, _Together(2)),
        watchers=[where],
    )
    result = await board.run()
    assert result.counts["complete"] == 2, result.tasks
    assert where.workspaces["a"] != where.workspaces["b"]
    for workspace in where.workspaces.values():
        assert workspace.is_relative_to(tmp_path / "state" / "worktrees")
        assert not workspace.exists()  # removed once the task was settled
    assert (repo / "a.txt").read_text() == "from a"
    assert (repo / "b.txt").read_text() == "from b"
    assert _git(repo, "status", "--porcelain") == ""
    assert _git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"
    log = _git(repo, "log", "--format=%an|%s", "main")
    assert "Merge harness/" in log  # the second one could not fast-forward
    assert {line.split("|")[0] for line in log.splitlines()} == {"t", "harness board"}
    assert _leftovers(repo) == ([], [])
    assert not list(repo.glob("*-ran"))  # the repository's hooks never ran


async def test_a_conflicting_pair_merges_one_and_sends_the_other_to_review(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    check = '[[checks]]\ntype = "files"\npaths = ["shared.txt"]'
    board = _board(
        tmp_path,
        repo,
        {"a": task_toml("a", check=check), "b": task_toml("b", check=check)},
        _agent(
            {"a": writes("shared.txt", "a's line"), "b": writes("shared.txt", "b's line")},
            _Together(2),
        ),
    )
    result = await board.run()
    statuses = sorted(result.status_of(t) for t in ("a", "b"))
    assert statuses == ["complete", "review"]
    merged = "a" if result.status_of("a") == "complete" else "b"
    other = "b" if merged == "a" else "a"
    review = next(t for t in result.tasks if t.id == other)
    assert "conflicts in: shared.txt" in (review.reason or "")
    assert f"harness/{other}/1" in (review.reason or "")
    # The user's checkout holds the merged task's work, whole: no conflict markers, no
    # half-merged index, no merge in progress.
    assert (repo / "shared.txt").read_text() == f"{merged}'s line"
    assert _git(repo, "status", "--porcelain") == ""
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    # The reviewed work is kept on its branch; its worktree is gone.
    assert _leftovers(repo) == ([], [f"harness/{other}/1"])
    assert _git(repo, "show", f"harness/{other}/1:shared.txt") == f"{other}'s line"


async def test_verified_work_is_not_merged_into_a_checkout_with_uncommitted_changes(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    (repo / "README").write_text("edited by the user\n")
    board = _board(tmp_path, repo, {"a": task_toml("a")}, _agent({"a": writes("a.txt")}), size=1)
    result = await board.run()
    assert result.status_of("a") == "review"
    reason = next(t.reason for t in result.tasks if t.id == "a") or ""
    assert "uncommitted changes (README)" in reason
    assert (repo / "README").read_text() == "edited by the user\n"
    assert not (repo / "a.txt").exists()
    assert _leftovers(repo) == ([], ["harness/a/1"])


async def test_a_failed_attempt_leaves_nothing_behind(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    error = {"error": {"message": "invalid api key", "kind": "auth"}}
    board = _board(
        tmp_path,
        repo,
        {"a": task_toml("a")},
        _agent({"a": [*writes("a.txt")[:1], error]}),
        size=1,
    )
    result = await board.run()
    assert result.status_of("a") == "failed"
    assert not (repo / "a.txt").exists()
    assert _git(repo, "status", "--porcelain") == ""
    assert _leftovers(repo) == ([], [])
    assert list((tmp_path / "state" / "worktrees").iterdir()) == []


async def test_a_link_where_the_worktrees_folder_belongs_is_refused(tmp_path: Path) -> None:
    """``<state>/worktrees`` is a link to a folder elsewhere: the board refuses it in one line
    before any worktree (a checkout of the repository's files) is written through it."""
    repo = _repo(tmp_path)
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "worktrees").symlink_to(outside)
    board = _board(tmp_path, repo, {"a": task_toml("a")}, _agent({"a": writes("a.txt")}), size=1)
    with pytest.raises(FolderRefused, match="worktrees: is a symbolic link") as refused:
        await board.run()
    assert "\n" not in str(refused.value)
    assert [p.name for p in outside.iterdir()] == ["keep"]
    assert _leftovers(repo) == ([], [])


async def test_a_stopped_board_cleans_its_worktree_and_the_task_starts_again(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    started = anyio.Event()

    class _Stuck:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            started.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    stuck = Agent(role="w", model=lambda info: _Stuck())
    tasks = {"a": task_toml("a")}
    first = _board(tmp_path, repo, tasks, stuck, size=1)
    async with anyio.create_task_group() as group:
        group.start_soon(first.run)
        await started.wait()
        assert (tmp_path / "state" / "worktrees" / "a-1").is_dir()
        group.cancel_scope.cancel()
    assert _leftovers(repo)[1] == ["harness/a/1"]  # what the stopped board left

    second = _board(tmp_path, repo, tasks, _agent({"a": writes("a.txt")}), size=1)
    result: BoardResult = await second.run()
    assert result.status_of("a") == "complete"
    assert (repo / "a.txt").read_text() == "done"
    assert _leftovers(repo) == ([], [])
    assert list((tmp_path / "state" / "worktrees").iterdir()) == []


async def test_isolation_needs_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    board = _board(tmp_path, plain, {"a": task_toml("a")}, _agent({"a": writes("a.txt")}))
    with pytest.raises(BoardConfigError, match="is not inside a git repository"):
        await board.run()


def test_isolation_is_read_from_board_toml_and_checked(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    model = '[[agents]]\nrole = "w"\nmodel = { type = "fixture", path = "x.jsonl" }\n'
    (tmp_path / "board.toml").write_text(
        f'[board]\nworkspace = "work"\nisolation = "worktree"\n{model}'
    )
    assert load_config(tmp_path).settings.isolation == "worktree"
    (tmp_path / "board.toml").write_text(f'[board]\nisolation = "copies"\n{model}')
    with pytest.raises(BoardConfigError, match="'isolation' must be 'shared' or 'worktree'"):
        load_config(tmp_path)
    (tmp_path / "board.toml").write_text(
        f'[board]\nworkspace_template = "work"\nisolation = "worktree"\n{model}'
    )
    with pytest.raises(BoardConfigError, match="not 'workspace_template'"):
        load_config(tmp_path)
    assert BoardSettings().isolation == "shared"


async def test_many_attempts_open_and_remove_worktrees_at_once(tmp_path: Path) -> None:
    """git's worktree commands are not safe to run at once on one repository (one reads the
    half-made record of another and fails): sixteen attempts starting and ending together
    each get their worktree, and nothing is left behind."""
    from strategies.board._worktree import Worktrees

    repo = _repo(tmp_path)
    worktrees = Worktrees(tmp_path / "state" / "worktrees")
    opened = []

    async def open_one(number: int) -> None:
        opened.append(await worktrees.open(repo, f"t{number:02d}", 1))

    async with anyio.create_task_group() as group:
        for number in range(16):
            group.start_soon(open_one, number)
    assert sorted((tree.path / "README").read_text() for tree in opened) == ["hello\n"] * 16
    async with anyio.create_task_group() as group:
        for tree in opened:
            group.start_soon(worktrees.discard, tree)
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert _git(repo, "branch", "--list", "harness/*") == ""
