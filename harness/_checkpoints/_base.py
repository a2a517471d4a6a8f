"""Checkpoints of a workspace: what they are, the store protocol, and `open_checkpoints`.

A checkpoint is the content of every file in the workspace at one moment, saved so that the
workspace can be put back exactly as it was. Two stores keep them:

- `GitCheckpoints`, in a workspace inside a git work tree: each checkpoint is a commit on a
  private ref, ``refs/harness/checkpoints/<series>``, made with git's plumbing and a temporary
  index, so the user's branch, HEAD, index, stash, hooks and config are never touched. What
  ``.gitignore`` ignores is not saved, and not removed by a restore.
- `SnapshotCheckpoints`, anywhere else: a content-addressed store (file contents by sha256,
  one manifest per distinct tree) in a state folder outside the workspace.

Checkpoints come in series: one per run (named by the run id), in order, each the parent of
the next. A checkpoint's `id` is a digest of its content, its place in the series, its label,
its time on the run's clock and its progress, so a replay of a run makes the same ids.

The exception tree::

    HarnessError
    └── CheckpointError                    a checkpoint could not be saved, found or restored
        ├── NoSuchCheckpoint (LookupError) no checkpoint has that id (or the prefix is ambiguous)
        └── NotAWorkspace                  the folder does not exist or is not a folder
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from attrs import frozen

from .._errors import ConfigurationError, HarnessError
from .._work_progress import WorkProgress

CheckpointKind = Literal["git", "snapshot"]
_M = TypeVar("_M", bound="Measured")
Backend = Literal["auto", "git", "snapshot"]

_SERIES = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_MIN_PREFIX = 4


class CheckpointError(HarnessError):
    """A checkpoint could not be saved, found or restored; the message says which and why."""


class NoSuchCheckpoint(CheckpointError, LookupError):
    """No checkpoint matches the id (or more than one matches a short prefix)."""


class NotAWorkspace(CheckpointError):
    """The workspace folder does not exist or is not a folder."""


@frozen
class Checkpoint:
    """One saved state of the workspace.

    `tree` identifies the content alone (a git tree, or the digest of a snapshot manifest):
    two checkpoints of the same files have the same tree. `at` is the time on the run's
    clock (seconds since the run started). `progress` is what the completion check measured
    on this state, when it did.
    """

    id: str
    series: str
    seq: int
    label: str
    tree: str
    at: float
    kind: CheckpointKind
    parent: str | None = None
    progress: WorkProgress | None = None

    @property
    def short_id(self) -> str:
        """The first 12 characters of the id: what the command line shows."""
        return self.id[:12]

    def describe(self) -> str:
        """``"3f2a9c01b2d4 (run-1 #2, iteration 1 ended: 3 of 5 tests)"``."""
        measured = f": {self.progress.describe()}" if self.progress is not None else ""
        return f"{self.short_id} ({self.series} #{self.seq}, {self.label}{measured})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "series": self.series,
            "seq": self.seq,
            "label": self.label,
            "tree": self.tree,
            "at": self.at,
            "kind": self.kind,
            "parent": self.parent,
            "progress": None if self.progress is None else self.progress.to_dict(),
        }


@frozen
class CheckpointDiff:
    """The files (workspace paths, ``/``-separated, sorted) that differ between two states."""

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.modified or self.deleted)

    def lines(self) -> list[str]:
        """One ``A path`` / ``M path`` / ``D path`` line per file, sorted by path."""
        marked = [
            *(("A", p) for p in self.added),
            *(("M", p) for p in self.modified),
            *(("D", p) for p in self.deleted),
        ]
        return [f"{mark} {path}" for mark, path in sorted(marked, key=lambda m: m[1])]


@frozen
class Checkpointing:
    """How a run checkpoints its workspace: `Harness(checkpoints=Checkpointing(...))`, or
    ``checkpoints=True`` for these defaults. `backend` as in `open_checkpoints`; `state_dir`
    is where snapshots live when the workspace is not in git."""

    backend: Backend = "auto"
    state_dir: Path | None = None

    def __attrs_post_init__(self) -> None:
        if self.backend not in ("auto", "git", "snapshot"):
            raise ConfigurationError(
                f"'backend' must be auto, git or snapshot (got {self.backend!r})"
            )

    @classmethod
    def convert(cls, value: object) -> Checkpointing | None:
        """`Harness.checkpoints`: False or None is off, True the defaults, or a Checkpointing."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, cls):
            return value
        raise ConfigurationError(f"'checkpoints' must be a bool or a Checkpointing (got {value!r})")


@runtime_checkable
class CheckpointStore(Protocol):
    """Saves, lists, compares and restores checkpoints of one workspace.

    `save` appends to this store's `series`; the other methods see every series.
    """

    @property
    def kind(self) -> CheckpointKind: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def series(self) -> str: ...

    async def save(
        self, label: str, *, at: float, progress: WorkProgress | None = None
    ) -> Checkpoint:
        """Checkpoint the workspace as it is now."""
        ...

    async def checkpoints(self, series: str | None = None) -> list[Checkpoint]:
        """Every checkpoint (of one series), by series, oldest first within a series."""
        ...

    async def find(self, ident: str) -> Checkpoint:
        """The checkpoint whose id is `ident` or starts with it (4 characters at least)."""
        ...

    async def diff(self, old: Checkpoint, new: Checkpoint | None = None) -> CheckpointDiff:
        """What changed from `old` to `new` (by default, to the workspace as it is now)."""
        ...

    async def restore(self, checkpoint: Checkpoint) -> CheckpointDiff:
        """Put the workspace back to `checkpoint`: write what differs and remove files made
        since (not ignored ones). Returns what it changed, seen from the state it replaced."""
        ...

    async def aclose(self) -> None:
        """Release what the store holds open (temporary files); the checkpoints stay."""
        ...


class Measured(Protocol):
    """Anything that carries a measured progress: a `Checkpoint`, a ``checkpoint.saved`` event."""

    @property
    def progress(self) -> WorkProgress | None: ...


def improves_on(candidate: Measured, best: Measured | None) -> bool:
    """Whether `candidate` (a later checkpoint) takes `best`'s place as the best so far.

    The score is the progress's `done`: a later checkpoint that did no worse is the new best
    (it holds more of the work). One without progress, after one with progress, is not: the
    check could not show that nothing broke. Without any progress, the latest is the best."""
    if best is None or best.progress is None:
        return True
    if candidate.progress is None:
        return False
    return not candidate.progress.ranks_below(best.progress)


def best_checkpoint(checkpoints: Sequence[_M]) -> _M | None:
    """The best of `checkpoints` (oldest first) by `improves_on`: what a rollback restores."""
    best: _M | None = None
    for checkpoint in checkpoints:
        if improves_on(checkpoint, best):
            best = checkpoint
    return best


def default_state_dir(workspace: str | os.PathLike[str]) -> Path:
    """Where snapshots of `workspace` live by default: under ``$XDG_STATE_HOME`` (else
    ``~/.local/state``), ``completion-harness/checkpoints/<digest of the folder's path>``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    real = os.path.realpath(os.fspath(workspace))
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
    return Path(base) / "completion-harness" / "checkpoints" / digest


def check_series(series: str) -> None:
    if not isinstance(series, str) or not _SERIES.match(series):
        raise CheckpointError(
            "a checkpoint series is 1-64 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit (got {series!r})"
        )


def one_line(label: str) -> str:
    """A label as one line of plain text (control characters become spaces)."""
    text = "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in str(label))
    return " ".join(text.split()) or "checkpoint"


def match_id(ident: str, found: Sequence[Checkpoint], where: Path) -> Checkpoint:
    """The one checkpoint of `found` whose id is `ident` or starts with it."""
    text = ident.strip().lower()
    if len(text) < _MIN_PREFIX or not re.fullmatch(r"[0-9a-f]+", text):
        raise NoSuchCheckpoint(
            f"{ident!r} is not a checkpoint id (give {_MIN_PREFIX} or more hex digits, as "
            "`harness checkpoints list` shows them)"
        )
    matches = {c.id: c for c in found if c.id.startswith(text)}
    if not matches:
        raise NoSuchCheckpoint(f"no checkpoint {ident!r} in {str(where)!r}")
    if len(matches) > 1:
        some = ", ".join(sorted(c.short_id for c in matches.values()))
        raise NoSuchCheckpoint(f"checkpoint id {ident!r} is ambiguous in {str(where)!r}: {some}")
    return next(iter(matches.values()))


def remove_files(workspace: Path, paths: Iterable[str]) -> None:
    """Remove each workspace path that is a file or a link (a path that goes through a link
    is left alone), then every folder this left empty, up to the workspace."""
    emptied: set[str] = set()
    for relative in paths:
        parts = relative.split("/")
        if not real_folders(workspace, parts[:-1]):
            continue
        full = os.path.join(workspace, *parts)
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            continue
        os.unlink(full)
        for depth in range(len(parts) - 1, 0, -1):
            emptied.add("/".join(parts[:depth]))
    for folder in sorted(emptied, key=lambda p: -p.count("/")):
        with contextlib.suppress(OSError):  # not empty, or gone: leave it
            os.rmdir(os.path.join(workspace, *folder.split("/")))


def real_folders(workspace: Path, parts: Sequence[str]) -> bool:
    """True when every folder on the way is a real folder (not a link) inside `workspace`."""
    here = str(workspace)
    for part in parts:
        if part in ("", ".", ".."):
            return False
        here = os.path.join(here, part)
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except FileNotFoundError:
            return False
    return True
