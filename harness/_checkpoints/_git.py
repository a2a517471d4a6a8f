"""`GitCheckpoints`: checkpoints as commits on private refs, made without touching the user's
branch, HEAD, index, stash, hooks or config.

Saving uses git's plumbing with an index of the store's own (``GIT_INDEX_FILE`` in a private
temporary folder), started from HEAD's tree so that tracked files stay tracked:
``git add -A`` of the workspace into it (``.gitignore`` honoured), ``write-tree`` of the
workspace's part, ``commit-tree`` with the series' last checkpoint as parent, and
``update-ref refs/harness/checkpoints/<series>``. Every command runs with
``core.hooksPath=/dev/null``, a fixed author and committer, and dates from the run's clock, so
the same work gives the same commits.

Restoring compares the workspace (added to the private index) with the checkpoint's tree,
removes what the checkpoint does not have, and writes what differs with ``checkout-index``
from a second temporary index that holds only those files. HEAD, the branch and the user's
index do not move; files that ``.gitignore`` ignores are left alone.

Not saved: ignored files, and the content of nested repositories and submodules (git records
only which commit they are at; a restore leaves them as they are).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from attrs import frozen

from .._clock import Clock
from .._process._child import ProcessResult, run_process
from .._work_progress import WorkProgress
from ._base import (
    Checkpoint,
    CheckpointDiff,
    CheckpointError,
    CheckpointKind,
    NoSuchCheckpoint,
    check_series,
    match_id,
    one_line,
    remove_files,
)

REF_PREFIX = "refs/harness/checkpoints/"
IDENTITY = ("completion-harness", "checkpoints@completion-harness.invalid")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_META = "harness-checkpoint: "
_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
)
_TIMEOUT = 600.0
_BIG_OUTPUT = 256 * 1024 * 1024
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_GITLINK = "160000"
_RECORD, _UNIT = "\x1e", "\x1f"


@frozen
class GitRepo:
    """Where a workspace sits in a git work tree: the work tree's top and the workspace's
    path below it (``""`` at the top, else ending in ``/``)."""

    top: Path
    prefix: str


async def find_git(workspace: Path, clock: Clock) -> GitRepo | str:
    """The git work tree `workspace` is in, or why it is not in one."""
    if shutil.which("git") is None:
        return "git is not installed"
    result = await run_process(
        ["git", *_CONFIG, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--show-prefix"],
        cwd=workspace,
        env={"GIT_TERMINAL_PROMPT": "0"},
        timeout=_TIMEOUT,
        clock=clock,
    )
    lines = result.output_tail.splitlines()
    if not result.ok or len(lines) < 2 or lines[0] != "true":
        return "it is not inside a git work tree"
    prefix = lines[2] if len(lines) > 2 else ""
    return GitRepo(Path(lines[1]), prefix)


class GitCheckpoints:
    """Checkpoints of `workspace` as commits on ``refs/harness/checkpoints/<series>``."""

    kind: CheckpointKind = "git"

    def __init__(self, workspace: Path, repo: GitRepo, *, series: str, clock: Clock) -> None:
        check_series(series)
        self._workspace = workspace
        self._repo = repo
        self._series = series
        self._clock = clock
        self._lock = anyio.Lock()
        self._folder: str | None = None
        self._seeded = False
        self._last: Checkpoint | None = None
        self._tip_known = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def workspace(self) -> Path:
        return self._workspace

    @property
    def series(self) -> str:
        return self._series

    @property
    def ref(self) -> str:
        """The private ref this store's series lives on."""
        return REF_PREFIX + self._series

    def __repr__(self) -> str:
        return f"GitCheckpoints({str(self._workspace)!r}, series={self._series!r})"

    async def save(
        self, label: str, *, at: float, progress: WorkProgress | None = None
    ) -> Checkpoint:
        label = one_line(label)
        async with self._lock:
            tree = await self._current_tree()
            last = self._last if self._tip_known else await self._tip()
            seq = 0 if last is None else last.seq + 1
            meta: dict[str, Any] = {"seq": seq, "label": label, "at": at}
            if progress is not None:
                meta["progress"] = progress.to_dict()
            message = f"{label}\n\n{_META}{json.dumps(meta, sort_keys=True)}\n"
            date = f"@{max(0, int(at))} +0000"
            parents = [] if last is None else ["-p", last.id]
            made = await self._git(
                "commit-tree",
                tree,
                *parents,
                stdin=message.encode(),
                env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
            )
            commit = _one_sha(made, "commit-tree")
            expected = last.id if last is not None else "0" * len(commit)
            await self._git("update-ref", "-m", f"checkpoint: {label}", self.ref, commit, expected)
            parent = None if last is None else last.id
            saved = Checkpoint(commit, self._series, seq, label, tree, at, "git", parent, progress)
            self._last, self._tip_known = saved, True
        return saved

    async def checkpoints(self, series: str | None = None) -> list[Checkpoint]:
        if series is not None:
            check_series(series)
        pattern = REF_PREFIX + (series if series is not None else "")
        listed = await self._git("for-each-ref", "--format=%(refname)", pattern)
        found: list[Checkpoint] = []
        for ref in sorted(listed.output_tail.split()):
            if ref.startswith(REF_PREFIX) and (series is None or ref == pattern):
                found.extend(await self._log(ref.removeprefix(REF_PREFIX)))
        return found

    async def find(self, ident: str) -> Checkpoint:
        return match_id(ident, await self.checkpoints(), self._workspace)

    async def diff(self, old: Checkpoint, new: Checkpoint | None = None) -> CheckpointDiff:
        async with self._lock:
            after = new.tree if new is not None else await self._current_tree()
            return _as_diff(await self._raw_diff(old.tree, after))

    async def restore(self, checkpoint: Checkpoint) -> CheckpointDiff:
        if checkpoint.kind != "git":
            raise CheckpointError(f"checkpoint {checkpoint.short_id} is not a git checkpoint")
        async with self._lock:
            await self._exists(checkpoint.tree)
            changes = await self._raw_diff(await self._current_tree(), checkpoint.tree)
            gone = [c.path for c in changes if c.status == "D" and c.old_mode != _GITLINK]
            await anyio.to_thread.run_sync(_remove, self._workspace, gone)
            wanted = [c for c in changes if c.status != "D" and c.new_mode != _GITLINK]
            if wanted:
                await self._write(wanted)
        return _as_diff(changes)

    async def aclose(self) -> None:
        """Remove the store's private index (also done when the store is collected)."""
        if self._finalizer is not None:
            self._finalizer()

    # -- plumbing --------------------------------------------------------------------------

    def _index(self, name: str = "index") -> str:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="harness-checkpoints-")
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._folder, True)
        return os.path.join(self._folder, name)

    async def _current_tree(self) -> str:
        """Add the workspace to the private index and write its tree (the workspace's part)."""
        env = {"GIT_INDEX_FILE": self._index()}
        if not self._seeded:
            head = await self._git("rev-parse", "--verify", "-q", "HEAD^{tree}", check=False)
            if head.ok:
                await self._git("read-tree", _one_sha(head, "rev-parse"), env=env)
            self._seeded = True
        await self._git("add", "-A", "--", ".", env=env)
        prefix = self._repo.prefix
        if not prefix:
            return _one_sha(await self._git("write-tree", env=env), "write-tree")
        written = await self._git("write-tree", f"--prefix={prefix}", env=env, check=False)
        if written.ok:
            return _one_sha(written, "write-tree")
        # write-tree refuses a prefix with nothing under it: an empty workspace.
        listed = await self._git("ls-files", "-z", "--", ".", env=env, max_output=_BIG_OUTPUT)
        if listed.ok and not listed.output_tail.strip("\0"):
            return await self._empty_tree()
        await self._git("write-tree", f"--prefix={prefix}", env=env)  # raises, saying why
        raise AssertionError("unreachable")  # pragma: no cover

    async def _empty_tree(self) -> str:
        made = await self._git("hash-object", "-t", "tree", "-w", "--stdin", stdin=b"")
        return _one_sha(made, "hash-object")

    async def _tip(self) -> Checkpoint | None:
        found = await self._git("rev-parse", "--verify", "-q", self.ref + "^{commit}", check=False)
        if not found.ok:
            return None
        logged = await self._log(self._series, limit=1)
        return logged[-1] if logged else None

    async def _log(self, series: str, *, limit: int | None = None) -> list[Checkpoint]:
        fmt = f"--format={_RECORD}%H{_UNIT}%T{_UNIT}%P{_UNIT}%B"
        more = [f"--max-count={limit}"] if limit is not None else []
        logged = await self._git(
            "log", fmt, *more, REF_PREFIX + series, "--", max_output=_BIG_OUTPUT
        )
        found: list[Checkpoint] = []
        for record in logged.output_tail.split(_RECORD)[1:]:
            checkpoint = _parse_commit(record, series)
            if checkpoint is not None:
                found.append(checkpoint)
        found.reverse()  # git log is newest first
        return found

    async def _exists(self, tree: str) -> None:
        found = await self._git("cat-file", "-t", tree, check=False)
        if not found.ok or found.output_tail.strip() != "tree":
            raise NoSuchCheckpoint(f"the checkpoint's tree {tree} is not in the repository")

    async def _raw_diff(self, old_tree: str, new_tree: str) -> list[_Change]:
        raw = await self._git(
            "diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree, max_output=_BIG_OUTPUT
        )
        return _parse_raw(raw.output_tail)

    async def _write(self, wanted: Sequence[_Change]) -> None:
        """Write `wanted` files into the work tree from a temporary index that holds only them."""
        index = self._index("restore-index")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(index)
        prefix = self._repo.prefix
        entries = b"".join(
            f"{c.new_mode} {c.new_sha}\t{prefix}{c.path}".encode("utf-8", "surrogateescape") + b"\0"
            for c in wanted
        )
        env = {"GIT_INDEX_FILE": index}
        await self._git("update-index", "-z", "--index-info", env=env, stdin=entries)
        await self._git("checkout-index", "-a", "-f", env=env, cwd=self._repo.top)

    async def _git(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        check: bool = True,
        cwd: Path | None = None,
        max_output: int = 1024 * 1024,
    ) -> ProcessResult:
        name, email = IDENTITY
        full_env = {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            **(env or {}),
        }
        result = await run_process(
            ["git", *_CONFIG, *args],
            cwd=cwd or self._workspace,
            env=full_env,
            timeout=_TIMEOUT,
            clock=self._clock,
            max_output=max_output,
            stdin=stdin,
        )
        if result.truncated:
            raise CheckpointError(f"git {args[0]} printed more than {max_output} bytes")
        if check and not result.ok:
            said = result.output_tail.strip() or f"exit code {result.exit_code}"
            if result.timed_out:
                said = f"timed out after {_TIMEOUT:g}s"
            raise CheckpointError(f"git {args[0]} failed in {str(self._workspace)!r}: {said}")
        return result


@frozen
class _Change:
    old_mode: str
    new_mode: str
    new_sha: str
    status: str
    path: str


def _parse_raw(text: str) -> list[_Change]:
    """``diff-tree -r -z`` raw output: ``:old new oldsha newsha S\\0path\\0`` per file."""
    parts = text.split("\0")
    changes: list[_Change] = []
    index = 0
    while index + 1 < len(parts):
        head, path = parts[index], parts[index + 1]
        index += 2
        if not head.startswith(":"):
            raise CheckpointError(f"git diff-tree printed something unexpected: {head[:80]!r}")
        old_mode, new_mode, _, new_sha, status = head[1:].split(" ")
        changes.append(_Change(old_mode, new_mode, new_sha, status[:1], path))
    return changes


def _as_diff(changes: Sequence[_Change]) -> CheckpointDiff:
    added = sorted(c.path for c in changes if c.status == "A")
    deleted = sorted(c.path for c in changes if c.status == "D")
    modified = sorted(c.path for c in changes if c.status not in ("A", "D"))
    return CheckpointDiff(tuple(added), tuple(modified), tuple(deleted))


def _parse_commit(record: str, series: str) -> Checkpoint | None:
    """A checkpoint from one ``git log`` record, or None for a commit the harness did not make."""
    try:
        commit, tree, parents, body = record.split(_UNIT, 3)
    except ValueError:
        return None
    meta_line = next((ln for ln in body.splitlines() if ln.startswith(_META)), None)
    if meta_line is None:
        return None
    try:
        meta = json.loads(meta_line.removeprefix(_META))
        progress = meta.get("progress")
        return Checkpoint(
            commit.strip(),
            series,
            int(meta["seq"]),
            str(meta["label"]),
            tree,
            float(meta["at"]),
            "git",
            parents.split()[0] if parents.split() else None,
            None if progress is None else WorkProgress.from_dict(progress),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _one_sha(result: ProcessResult, what: str) -> str:
    text = result.output_tail.strip()
    if not _SHA.match(text):
        raise CheckpointError(f"git {what} printed {text[:200]!r}, not an object id")
    return text


def _remove(workspace: Path, paths: Sequence[str]) -> None:
    """Remove files (never following a link) and then the folders they leave empty."""

    remove_files(workspace, paths)
