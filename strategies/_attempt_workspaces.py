"""A private workspace for each attempt of a best-of run, and the leftovers of dead runs swept.

In a git repository an attempt works in a ``git worktree`` on its own branch
(``harness-best-of/<run>/<n>``) checked out from a commit of the user's files as they are
(uncommitted and untracked changes included, ignored files not), made with a private index:
the user's branch, index and stash are never touched. Elsewhere (or with
``isolation = "copy"``) an attempt works in a copy of the workspace.

Attempts live under a state folder (``<git dir>/harness-best-of/`` in a repository, else
``<temp>/harness-best-of-<uid>/``), in ``<run>/<n>``. A run holds an exclusive `flock` on
``<run>.lock`` while it lasts; the kernel drops it when the process dies, SIGKILL included,
so the next run that opens the state folder removes every run's worktrees, branches and
copies whose lock it can take. The state folder is made (or opened) without following a link,
and refused unless it is a private folder of the user's; a run's folder carries the harness's
mark, and a sweep removes only folders that carry it (`harness.extend.private_folder`).

A run's winner is applied with its journal in ``<run>/applying``: a run killed mid-apply leaves
it, and the sweep undoes that apply before it removes anything of the run, or, when some file
cannot be put back, keeps the run's folder and says which (`notes`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Literal

import anyio
import anyio.to_thread
from attrs import define, field, frozen

from harness import ConfigurationError
from harness.extend import NOT_WORK, is_work, owned_folder, private_folder, remove_owned

from ._apply_journal import pending, recover
from ._git import (
    GitError,
    Repository,
    add_worktree,
    git,
    remove_worktree,
    repository_at,
    worktrees_under,
)

Isolation = Literal["auto", "worktree", "copy"]
ISOLATIONS: tuple[Isolation, ...] = ("auto", "worktree", "copy")
STATE = "harness-best-of"
BRANCH_PREFIX = "harness-best-of/"
APPLYING = "applying"


class WorkspaceFailed(Exception):
    """A workspace could not be made, read or written (a full disk, a git command that
    failed): `doing` says what best-of was doing, `reason` what went wrong. Nothing of the
    user's workspace was changed (or, for an apply, it was put back; `reason` says if not)."""

    def __init__(self, doing: str, reason: str) -> None:
        super().__init__(f"could not {doing}: {reason}")
        self.doing = doing
        self.reason = reason


def failure(doing: str, exc: BaseException) -> WorkspaceFailed:
    """`exc` (an `OSError` or `GitError`) as a `WorkspaceFailed` of `doing`."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list):
        first = exc.args[0][0]  # copytree goes on past a failure and lists them all
        return WorkspaceFailed(doing, str(first[-1]) if isinstance(first, tuple) else str(first))
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return WorkspaceFailed(doing, f"{where}{exc.strerror}")
    return WorkspaceFailed(doing, str(exc) or type(exc).__name__)


@frozen
class Change:
    """A file of the workspace an attempt changed: written (added or modified) or deleted.
    `path` is relative to the workspace, with ``/`` separators."""

    path: str
    deleted: bool = False


@frozen
class AttemptWorkspace:
    """Where attempt `number` works (`path`), inside `root`: a worktree on `branch`, or a
    copy (`branch` is None)."""

    number: int
    path: Path
    root: Path
    kind: Literal["worktree", "copy"]
    branch: str | None = None


@define(eq=False)
class AttemptWorkspaces:
    """The attempts' workspaces of one run: made from `workspace` as it was when the run
    opened this, and removed by `close` (or, after a crash, by the next run's `open`)."""

    workspace: Path
    run_id: str
    kind: Literal["worktree", "copy"]
    state: Path
    repo: Path | None = None
    base: str | None = None
    inside: Path = Path()
    notes: list[str] = field(factory=list)
    """What the sweep at `open` found to say: an interrupted apply undone, or not."""
    _lock: IO[str] | None = field(default=None, repr=False)
    _open: dict[int, AttemptWorkspace] = field(factory=dict, repr=False)
    _git_lock: anyio.Lock = field(factory=anyio.Lock, repr=False)
    """``git worktree add`` and ``remove`` one at a time: git's own records of worktrees
    are not safe to change from two commands at once."""

    @property
    def folder(self) -> Path:
        return self.state / self.run_id

    @property
    def aside(self) -> Path:
        """Where applying the winner saves what it replaces, and its journal."""
        return self.folder / APPLYING

    @classmethod
    async def open(
        cls, workspace: Path, run_id: str, isolation: Isolation = "auto"
    ) -> AttemptWorkspaces:
        """Sweep what dead runs left, take this run's lock and (in a repository) commit the
        user's files as they are, for the attempts to start from."""
        found = None if isolation == "copy" else await repository_at(workspace)
        if found is None and isolation == "worktree":
            raise ConfigurationError(
                f"isolation = 'worktree' needs a git repository with a commit; {workspace} is "
                "not in one"
            )
        repo = found.top if found is not None else None
        if found is None:
            state = Path(tempfile.gettempdir()) / f"{STATE}-{os.getuid()}"
            spaces = cls(workspace, run_id, "copy", state)
        else:
            state = found.common / STATE
            inside = Path(await anyio.Path(workspace).resolve()).relative_to(found.top)
            spaces = cls(workspace, run_id, "worktree", state, found.top, inside=inside)
        try:
            await anyio.to_thread.run_sync(private_folder, state)
            spaces.notes = await sweep(state, repo)
            spaces._lock = await anyio.to_thread.run_sync(_take, state / f"{run_id}.lock")
        except (OSError, GitError) as exc:
            raise failure(f"open best-of's state folder {state}", exc) from exc
        try:
            await anyio.to_thread.run_sync(owned_folder, spaces.folder)
            if found is not None:
                spaces.base = await _snapshot(found, state / f"{run_id}.index")
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await spaces.close()
            if isinstance(exc, OSError | GitError):
                raise failure("record the workspace's files for the attempts", exc) from exc
            raise
        return spaces

    async def make(self, number: int) -> AttemptWorkspace:
        """A fresh workspace for attempt `number`, holding the user's files as they were."""
        root = self.folder / str(number)
        try:
            if self.repo is not None and self.base is not None:
                branch = f"{BRANCH_PREFIX}{self.run_id}/{number}"
                made = AttemptWorkspace(number, root / self.inside, root, "worktree", branch)
                self._open[number] = made
                async with self._git_lock:
                    await add_worktree(self.repo, root, branch, self.base)
            else:
                made = AttemptWorkspace(number, root, root, "copy")
                self._open[number] = made
                await anyio.to_thread.run_sync(_copy, self.workspace, root)
        except (OSError, GitError) as exc:
            raise failure(f"make attempt {number}'s {self.kind}", exc) from exc
        return made

    async def changes(self, attempt: AttemptWorkspace) -> list[Change]:
        """What `attempt` changed of the workspace, in path order; never a file in a folder
        that is not work (`harness.extend.NOT_WORK`: caches, environments, build output)."""
        try:
            return await self._changes(attempt)
        except (OSError, GitError) as exc:
            raise failure(f"find what attempt {attempt.number} changed", exc) from exc

    async def _changes(self, attempt: AttemptWorkspace) -> list[Change]:
        if attempt.kind == "copy":
            return await anyio.to_thread.run_sync(_compare, self.workspace, attempt.path)
        assert self.repo is not None
        assert self.base is not None
        await git(attempt.root, "add", "-A")
        _, out = await git(
            attempt.root, "diff", "--cached", "--no-renames", "--name-status", "-z", self.base
        )
        fields = out.split("\0")
        prefix = "" if self.inside == Path() else f"{self.inside.as_posix()}/"
        found: list[Change] = []
        for status, path in zip(fields[::2], fields[1::2], strict=False):
            if path.startswith(prefix) and status.strip() and is_work(path):
                found.append(Change(path.removeprefix(prefix), deleted=status.strip() == "D"))
        return sorted(found, key=lambda c: c.path)

    async def drifted(self, changes: Sequence[Change]) -> list[str]:
        """Of the files `changes` names, those the user's workspace no longer holds as the
        attempts started from them (changed by someone else during the run). Known in a
        repository, where the attempts' starting commit says what each was; a copy keeps no
        such record, and finds none."""
        if self.repo is None or self.base is None or not changes:
            return []
        prefix = "" if self.inside == Path() else f"{self.inside.as_posix()}/"
        paths = [f"{prefix}{c.path}" for c in changes]
        _, listing = await git(self.repo, "ls-tree", "-r", "-z", self.base, "--", *paths)
        then: dict[str, str] = {}
        for entry in filter(None, listing.split("\0")):
            meta, _, path = entry.partition("\t")
            then[path] = meta.split()[2]
        files = [p for p in paths if await anyio.Path(self.repo / p).is_file()]
        now: dict[str, str] = {}
        if files:
            _, out = await git(self.repo, "hash-object", "--", *files)
            now = dict(zip(files, out.split(), strict=True))
        return [p.removeprefix(prefix) for p in paths if then.get(p) != now.get(p)]

    async def remove(self, attempt: AttemptWorkspace) -> None:
        """Remove `attempt`'s workspace (and its branch). Runs to its end even when cancelled."""
        with anyio.CancelScope(shield=True):
            if attempt.kind == "worktree" and self.repo is not None:
                async with self._git_lock:
                    await remove_worktree(self.repo, attempt.root, attempt.branch)
            elif await anyio.Path(attempt.root).exists():
                await anyio.to_thread.run_sync(shutil.rmtree, attempt.root, True)
            self._open.pop(attempt.number, None)

    async def close(self) -> None:
        """Remove every attempt's workspace and this run's state, and drop the lock. An
        apply whose undo could not finish keeps its journal for the next start."""
        with anyio.CancelScope(shield=True):
            for attempt in list(self._open.values()):
                await self.remove(attempt)
            if not await anyio.to_thread.run_sync(pending, self.aside):
                await anyio.to_thread.run_sync(_forget, self.state, self.run_id)
            if self._lock is not None:
                self._lock.close()
                self._lock = None


async def sweep(state: Path, repo: Path | None) -> list[str]:
    """Remove the worktrees, branches and copies of every run under `state` that is no longer
    alive (its lock is free), after undoing an apply one of them was killed in; what there
    is to say of such applies, one line each."""
    notes: list[str] = []
    runs = await anyio.to_thread.run_sync(_runs_in, state)
    if repo is not None:
        _, refs = await git(
            repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{BRANCH_PREFIX}"
        )
        runs |= {ref.split("/")[1] for ref in refs.split() if ref.count("/") >= 2}
    for run_id in sorted(runs):
        lock = await anyio.to_thread.run_sync(_try_take, state / f"{run_id}.lock")
        if lock is None:
            continue  # a live run holds it
        try:
            aside = state / run_id / APPLYING
            if await anyio.to_thread.run_sync(pending, aside):
                notes.append(await anyio.to_thread.run_sync(recover, aside))
            if repo is not None:
                for path, branch in await worktrees_under(repo, state / run_id):
                    await remove_worktree(repo, path, branch)
                _, refs = await git(
                    repo,
                    "for-each-ref",
                    "--format=%(refname:short)",
                    f"refs/heads/{BRANCH_PREFIX}{run_id}/",
                )
                for branch in refs.split():
                    await git(repo, "branch", "-q", "-D", branch, check=False)
            if not await anyio.to_thread.run_sync(pending, aside):
                await anyio.to_thread.run_sync(_forget, state, run_id)
        finally:
            lock.close()
    return notes


async def _snapshot(repo: Repository, index: Path) -> str:
    """A commit of the repository's files as they are now (tracked changes and untracked
    files, not ignored ones), made with a private copy of the index: nothing of the user's
    changes, and ``git add`` rehashes only the files whose stat the index does not match."""
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        if await anyio.Path(repo.index).exists():
            await anyio.to_thread.run_sync(shutil.copyfile, repo.index, index)
        await git(repo.top, "add", "-A", env=env)
        _, tree = await git(repo.top, "write-tree", env=env)
        _, commit = await git(
            repo.top, "commit-tree", tree.strip(), "-p", "HEAD", "-m", "best-of: the workspace"
        )
    finally:
        await anyio.Path(index).unlink(missing_ok=True)
    return commit.strip()


def _take(path: Path) -> IO[str]:
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh run id: never held
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
    except BaseException:  # a full disk: no lock file of this run is left behind
        with contextlib.suppress(OSError):
            handle.close()  # flushes again, and fails again on a full disk
        path.unlink(missing_ok=True)
        raise
    return handle


def _try_take(path: Path) -> IO[str] | None:
    try:
        handle = path.open("a+", encoding="utf-8")
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _runs_in(state: Path) -> set[str]:
    if not state.is_dir():
        return set()
    # ``<run>``, ``<run>.lock``, ``<run>.index``: a run id is hex, without a dot.
    return {entry.name.partition(".")[0] for entry in state.iterdir()}


def _forget(state: Path, run_id: str) -> None:
    remove_owned(state / run_id)  # only a folder this harness made, never through a link
    (state / f"{run_id}.index").unlink(missing_ok=True)
    (state / f"{run_id}.lock").unlink(missing_ok=True)


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, symlinks=True)


def _files(root: Path) -> dict[str, os.stat_result]:
    """Every file and link under `root` (not folders; nothing in the folders that are not
    work, `NOT_WORK`), by relative path."""
    found: dict[str, os.stat_result] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in NOT_WORK)
        base = Path(folder)
        for name in [*names, *(d for d in dirs if (base / d).is_symlink())]:
            path = base / name
            found[path.relative_to(root).as_posix()] = path.lstat()
    return found


def _compare(user: Path, attempt: Path) -> list[Change]:
    """What differs in `attempt` from `user`: written files, then deleted ones by path."""
    theirs, ours = _files(attempt), _files(user)
    changes = [
        Change(path) for path, info in theirs.items() if _differs(path, info, ours, user, attempt)
    ]
    changes += [Change(path, deleted=True) for path in ours if path not in theirs]
    return sorted(changes, key=lambda c: c.path)


def _differs(
    path: str, info: os.stat_result, ours: dict[str, os.stat_result], user: Path, attempt: Path
) -> bool:
    mine = ours.get(path)
    if mine is None or (mine.st_mode & 0o170100) != (info.st_mode & 0o170100):
        return True  # new, or another kind of file, or the executable bit changed
    if os.path.islink(attempt / path):
        return os.readlink(attempt / path) != os.readlink(user / path)
    if mine.st_size != info.st_size:
        return True
    if mine.st_mtime_ns == info.st_mtime_ns:
        return False  # copied with its times and not written since
    return (user / path).read_bytes() != (attempt / path).read_bytes()


def changed_paths(changes: Sequence[Change]) -> tuple[str, ...]:
    return tuple(c.path for c in changes)


__all__ = [
    "ISOLATIONS",
    "AttemptWorkspace",
    "AttemptWorkspaces",
    "Change",
    "GitError",
    "Isolation",
    "WorkspaceFailed",
    "sweep",
]
