"""Git worktrees for work done apart from the user's checkout (the board's attempts, best-of's).

A worktree is made on its own branch from a commit; removing it removes its folder, prunes
git's record of it and (when asked) deletes its branch. Every git command runs through
`run_process` with hooks disabled and a fixed identity, so a user's hooks, signing setup or
missing ``user.name`` never change what happens.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import anyio
import anyio.to_thread
from attrs import frozen

from harness.extend import SystemClock, run_process

IDENTITY = {
    "GIT_AUTHOR_NAME": "harness board",
    "GIT_AUTHOR_EMAIL": "board@harness.invalid",
    "GIT_COMMITTER_NAME": "harness board",
    "GIT_COMMITTER_EMAIL": "board@harness.invalid",
    "GIT_TERMINAL_PROMPT": "0",
}
_GIT = ("git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false")
_TIMEOUT = 300.0


class GitError(Exception):
    """A git command failed; the message names the command and its output."""


async def git(
    cwd: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Run ``git args`` in `cwd`: its exit code and output (an error when `check` and not 0).
    `env` adds to the fixed identity (``GIT_INDEX_FILE``, say)."""
    result = await run_process(
        [*_GIT, *args],
        cwd=cwd,
        env={**IDENTITY, **(env or {})},
        timeout=_TIMEOUT,
        clock=SystemClock(),
    )
    code = -1 if result.timed_out else result.exit_code
    if check and code != 0:
        raise GitError(f"`git {' '.join(args)}` in {cwd} failed: {result.output_tail.strip()}")
    return code, result.output_tail


@frozen
class Repository:
    """Where a folder's git repository is: its `top` folder, its common git folder (shared
    by every worktree) and the index file of the checkout, all absolute."""

    top: Path
    common: Path
    index: Path


async def repository_at(folder: Path) -> Repository | None:
    """The git repository holding `folder` when it has a commit to branch from; None
    otherwise (no repository, or one with no commit yet). One git command."""
    code, out = await git(
        folder,
        "rev-parse",
        "--show-toplevel",
        "--git-common-dir",
        "--git-path",
        "index",
        "HEAD",
        check=False,
    )
    lines = out.splitlines()
    if code != 0 or len(lines) != 4:
        return None
    top, common, index = (folder / line.strip() for line in lines[:3])
    return Repository(await _resolve(top), await _resolve(common), await _resolve(index))


async def _resolve(path: Path) -> Path:
    return Path(await anyio.Path(path).resolve())


async def add_worktree(repo: Path, path: Path, branch: str, base: str) -> None:
    """Check out commit `base` at `path` on branch `branch` (reset to `base` if it exists)."""
    await anyio.Path(path.parent).mkdir(parents=True, exist_ok=True)
    await git(repo, "worktree", "add", "-q", "-B", branch, str(path), base)


async def remove_worktree(repo: Path, path: Path, branch: str | None) -> None:
    """Remove the worktree at `path` (its folder too, whatever git says) and `branch`."""
    code, _ = await git(repo, "worktree", "remove", "--force", str(path), check=False)
    if code != 0 or await anyio.Path(path).exists():  # half made, or locked: by hand
        await anyio.to_thread.run_sync(shutil.rmtree, path, True)
        await git(repo, "worktree", "prune", check=False)
    if branch is not None:
        await git(repo, "branch", "-q", "-D", branch, check=False)


async def worktrees_under(repo: Path, folder: Path) -> list[tuple[Path, str | None]]:
    """The worktrees of `repo` whose folder is under `folder`, with their branches."""
    _, listing = await git(repo, "worktree", "list", "--porcelain")
    found: list[tuple[Path, str | None]] = []
    path: Path | None = None
    inside = await anyio.Path(folder).resolve()
    for line in [*listing.splitlines(), ""]:
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif not line:
            path = None
        elif path is not None and (await anyio.Path(path).resolve()).is_relative_to(inside):
            if line.startswith("branch "):
                found.append((path, line.removeprefix("branch refs/heads/")))
                path = None
            elif line == "detached":
                found.append((path, None))
                path = None
    return found
