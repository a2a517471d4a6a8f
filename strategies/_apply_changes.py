"""Carry an attempt's changed files into the user's workspace, undoably.

Only the files the attempt changed are touched: each is first saved (or noted as absent) in a
backup folder, then written from the attempt (or deleted). `Applied.undo` puts every one back
as it was and removes the folders the apply made. A path that would leave the workspace, or
pass through a link on the way, is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import anyio.to_thread
from attrs import define, field

from ._attempt_workspaces import Change


class ApplyRefused(Exception):
    """A change could not be applied safely; nothing was written."""


@define(eq=False)
class Applied:
    """The changes written into `workspace`, with what they replaced kept in `backup`."""

    workspace: Path
    changes: tuple[Change, ...]
    backup: Path
    _absent: set[str] = field(factory=set)
    _made: list[Path] = field(factory=list)

    def undo(self) -> None:
        """Put the workspace back as it was before `apply_changes`."""
        for change in self.changes:
            target = self.workspace / change.path
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            if change.path not in self._absent:
                _copy_entry(self.backup / change.path, target)
        for folder in reversed(self._made):
            with contextlib.suppress(OSError):  # not empty: something else was put there
                folder.rmdir()
        self.discard()

    def discard(self) -> None:
        """Forget the backup (the changes stay)."""
        shutil.rmtree(self.backup, ignore_errors=True)


async def apply_changes(changes: Sequence[Change], source: Path, workspace: Path) -> Applied:
    """Write `changes` from `source` (the attempt's workspace) into `workspace`."""
    return await anyio.to_thread.run_sync(_apply, tuple(changes), source, workspace)


def _apply(changes: tuple[Change, ...], source: Path, workspace: Path) -> Applied:
    for change in changes:
        _check_path(workspace, change.path)
    backup = Path(tempfile.mkdtemp(prefix="harness-best-of-backup-"))
    applied = Applied(workspace, changes, backup)
    for change in changes:
        target = workspace / change.path
        if os.path.lexists(target):
            _copy_entry(target, backup / change.path)
        else:
            applied._absent.add(change.path)
    try:
        for change in changes:
            target = workspace / change.path
            if change.deleted:
                if os.path.lexists(target):
                    target.unlink()
                continue
            for parent in reversed(PurePosixPath(change.path).parents[:-1]):
                folder = workspace / parent
                if not folder.exists():
                    folder.mkdir()
                    applied._made.append(folder)
            if os.path.lexists(target):
                target.unlink()
            _copy_entry(source / change.path, target)
    except BaseException:
        applied.undo()
        raise
    return applied


def _copy_entry(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    else:
        shutil.copy2(source, target)


def _check_path(workspace: Path, relative: str) -> None:
    """Refuse a path that is absolute, climbs out, or meets a link or a non-folder on the way."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise ApplyRefused(f"{relative!r} is not a path inside the workspace")
    folder = workspace
    for part in parts[:-1]:
        folder = folder / part
        try:
            mode = folder.lstat().st_mode
        except FileNotFoundError:
            return  # made by the apply, as a plain folder
        if not stat.S_ISDIR(mode):
            raise ApplyRefused(f"{relative!r} passes through {folder}, which is not a folder")
