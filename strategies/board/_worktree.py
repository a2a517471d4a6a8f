"""Parallel agents on one git repository (``[board] isolation = "worktree"``).

Each attempt works in its own ``git worktree`` (``<state>/worktrees/<task>-<attempt>``) on its
own branch ``harness/<task>/<attempt>``, made from the repository's HEAD when the attempt
starts. When the attempt is over its work is committed on that branch; a verified attempt is
then merged into the branch the user has checked out (fast-forward when possible, else a merge
commit). The merge is tried first with ``git merge-tree --write-tree``, which touches neither
the working tree nor the index: a conflict sends the task to review naming the files, and the
user's checkout is only merged into when the trial was clean and it has no uncommitted
changes. The worktree is removed once the attempt is settled; its branch too, unless the task
goes to review (a person may want to look at the work).

Every git command runs through `run_process` with hooks disabled and a fixed identity.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import anyio
import anyio.to_thread
from attrs import evolve, frozen

from harness.extend import private_folder

from .._git import GitError, add_worktree, git, remove_worktree, worktrees_under
from ._attempt import AttemptOutcome
from ._errors import BoardConfigError

__all__ = ["GitError", "Worktree", "Worktrees", "git", "repository_of"]

BRANCH_PREFIX = "harness/"


@frozen
class Worktree:
    """One attempt's checkout: `path` on `branch`, made from commit `base` of `repo`;
    `workspace` is the folder the attempt works in (the task's workspace, inside `path`)."""

    repo: Path
    path: Path
    branch: str
    base: str
    workspace: Path


async def repository_of(workspace: Path) -> Path:
    """The top folder of the git repository holding `workspace`; a `BoardConfigError` when
    there is none (or it has no commit to branch from)."""
    where = f'[board] isolation = "worktree": the workspace {str(workspace)!r}'
    if not await anyio.Path(workspace).is_dir():
        raise BoardConfigError(f"{where} is not an existing folder")
    code, out = await git(workspace, "rev-parse", "--show-toplevel", check=False)
    if code != 0:
        raise BoardConfigError(f"{where} is not inside a git repository ({out.strip()})")
    top = Path(out.strip())
    code, _ = await git(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    if code != 0:
        raise BoardConfigError(f"{where} is in a git repository with no commit yet")
    return top


class Worktrees:
    """The attempts' worktrees of one board run, kept under `folder`. Merges into a
    repository happen one at a time, and so do worktrees being made and removed: git's
    worktree commands are not safe at once on one repository (one reads the half-made record
    of another and fails with ``failed to read .git/worktrees/<name>/commondir``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._merging = anyio.Lock()
        self._adding_or_removing = anyio.Lock()

    async def clean(self, repos: Iterable[Path]) -> None:
        """Remove what a board that died left under `folder`: its worktrees and their
        branches (an interrupted attempt starts again from the repository's HEAD)."""
        for repo in repos:
            for path, branch in await worktrees_under(repo, self.folder):
                await remove_worktree(repo, path, branch)
            await git(repo, "worktree", "prune")
        if await anyio.Path(self.folder).is_dir():
            await anyio.to_thread.run_sync(shutil.rmtree, self.folder, True)
        # Made private, never through a link: a link here would have the attempts' worktrees
        # (the repository's files) written wherever it points.
        await anyio.to_thread.run_sync(private_folder, self.folder)

    async def open(self, workspace: Path, task: str, attempt: int) -> Worktree:
        """A fresh worktree for this attempt, on a new branch from the repository's HEAD."""
        repo = await repository_of(workspace)
        inside = Path(await anyio.Path(workspace).resolve()).relative_to(repo)
        _, base = await git(repo, "rev-parse", "--verify", "HEAD^{commit}")
        path = self.folder / f"{task}-{attempt}"
        branch = f"{BRANCH_PREFIX}{task}/{attempt}"
        if await anyio.Path(path).exists():  # left by a crash: start clean
            await self._remove(repo, path, None)
        async with self._adding_or_removing:
            await add_worktree(repo, path, branch, base.strip())
        return Worktree(repo, path, branch, base.strip(), path / inside)

    async def settle(self, tree: Worktree, outcome: AttemptOutcome) -> AttemptOutcome:
        """Commit the attempt's work on its branch, merge it back when it was verified, and
        remove the worktree (and the branch, unless the task goes to review)."""
        try:
            await self._commit(tree, outcome)
            if outcome.outcome == "complete":
                # Shielded: a merge killed half-way could leave the user's checkout mid-merge.
                with anyio.CancelScope(shield=True):
                    async with self._merging:
                        problem = await self._merge(tree)
                if problem is not None:
                    outcome = evolve(outcome, outcome="review", message=problem)
        except GitError as exc:
            outcome = evolve(
                outcome,
                outcome="review",
                message=f"{outcome.message}; the work could not be merged back: {exc}",
            )
        keep = outcome.outcome == "review"
        await self._remove(tree.repo, tree.path, None if keep else tree.branch)
        return outcome

    async def discard(self, tree: Worktree) -> None:
        """Remove the worktree and its branch (the attempt was cancelled)."""
        await self._remove(tree.repo, tree.path, tree.branch)

    async def _commit(self, tree: Worktree, outcome: AttemptOutcome) -> None:
        await git(tree.path, "add", "-A")
        staged, _ = await git(tree.path, "diff", "--cached", "--quiet", check=False)
        if staged == 1:
            message = f"board: {tree.branch} ({outcome.outcome})\n\n{outcome.message}"
            await git(tree.path, "commit", "-q", "--no-verify", "-m", message)

    async def _merge(self, tree: Worktree) -> str | None:
        """Merge the attempt's branch into the checked-out branch, or say why not."""
        _, tip = await git(tree.repo, "rev-parse", "--verify", f"{tree.branch}^{{commit}}")
        if tip.strip() == tree.base:
            return None  # the check passed with nothing changed: nothing to merge
        kept = f"the work is kept on branch {tree.branch}"
        code, head = await git(tree.repo, "symbolic-ref", "-q", "--short", "HEAD", check=False)
        if code != 0:
            return f"verified, but {tree.repo} has a detached HEAD to merge into; {kept}"
        target = head.strip()
        _, dirty = await git(tree.repo, "status", "--porcelain", "--untracked-files=no")
        if dirty.strip():
            files = ", ".join(line[3:] for line in dirty.splitlines() if line.strip())
            return (
                f"verified, but the checkout of {target} in {tree.repo} has uncommitted "
                f"changes ({files}); it was not merged into, {kept}"
            )
        code, out = await git(
            tree.repo,
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "HEAD",
            tree.branch,
            check=False,
        )
        if code == 1:
            files = ", ".join(sorted({f for f in out.splitlines()[1:] if f.strip()}))
            return (
                f"verified, but merging {tree.branch} into {target} conflicts in: {files}; {kept}"
            )
        if code != 0:
            raise GitError(f"`git merge-tree` in {tree.repo} failed: {out.strip()}")
        code, out = await git(
            tree.repo,
            "merge",
            "--ff",
            "--no-edit",
            "-q",
            "-m",
            f"Merge {tree.branch} (verified by the board)",
            tree.branch,
            check=False,
        )
        if code != 0:
            pending, _ = await git(
                tree.repo, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False
            )
            if pending == 0:
                await git(tree.repo, "merge", "--abort", check=False)
            return f"verified, but merging into {target} failed: {out.strip()}; {kept}"
        return None

    async def _remove(self, repo: Path, path: Path, branch: str | None) -> None:
        async with self._adding_or_removing:
            await remove_worktree(repo, path, branch)
