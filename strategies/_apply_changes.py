"""Carry an attempt's changed files into the user's workspace, undoably, even across a kill.

Only the files the attempt changed are touched: each is first saved (or noted as absent) in an
aside folder, and a journal of what was saved, what will be written and which folders will be
made is written there, fsync'd, before the first write (`strategies._apply_journal`). Then each
file is written from the attempt, through a temporary file and a rename (or deleted): a write
that fails (a full disk) leaves the file as it was. `Applied.undo` puts every one back as it was and
removes the folders the apply made; `Applied.discard` forgets what was saved. A process killed in
between leaves the journal, and the next best-of start undoes the apply from it. A path that
would leave the workspace, or pass through a link on the way, is refused before anything is
written.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import anyio.to_thread
from attrs import define

from ._apply_journal import (
    SAVED,
    Entry,
    Journal,
    copy_entry,
    forget_journal,
    replace_with,
    undo,
    write_journal,
)
from ._attempt_workspaces import Change, failure


class ApplyRefused(Exception):
    """A change could not be applied safely; nothing was written."""


class UndoIncomplete(OSError):
    """Some files could not be put back; the message names them and where their saved copies
    are (kept, with the journal, for the next start to try again)."""


@define(eq=False)
class Applied:
    """The changes written into `workspace`, with what they replaced kept in `aside`."""

    aside: Path
    journal: Journal

    def undo(self) -> None:
        """Put the workspace back as it was before `apply_changes`."""
        problems = undo(self.aside, self.journal)
        if problems:
            raise UndoIncomplete(
                f"{len(problems)} files could not be put back ({'; '.join(problems)}); the "
                f"files as they were are in {self.aside / SAVED}"
            )
        forget_journal(self.aside)

    def discard(self) -> None:
        """Keep the changes: forget what they replaced."""
        forget_journal(self.aside)


async def apply_changes(
    changes: Sequence[Change], source: Path, workspace: Path, aside: Path | None = None
) -> Applied:
    """Write `changes` from `source` (the attempt's workspace) into `workspace`, saving what
    they replace and the journal in `aside` (a new, empty folder; default: a temporary one).
    A file that cannot be saved or written (a full disk) is a `WorkspaceFailed`, the
    workspace put back as it was."""
    try:
        return await anyio.to_thread.run_sync(_apply, tuple(changes), source, workspace, aside)
    except UndoIncomplete as exc:
        raise failure(f"write the winner's changes into {workspace}", exc) from exc
    except OSError as exc:
        doing = f"write the winner's changes into {workspace} (it was put back as it was)"
        raise failure(doing, exc) from exc


def _apply(
    changes: tuple[Change, ...], source: Path, workspace: Path, aside: Path | None
) -> Applied:
    for change in changes:
        _check_path(workspace, change.path)
    if aside is None:
        aside = Path(tempfile.mkdtemp(prefix="harness-best-of-backup-"))
    aside.mkdir(mode=0o700, exist_ok=True)
    entries: list[Entry] = []
    made: dict[str, None] = {}
    try:
        for change in changes:
            target = workspace / change.path
            saved = os.path.lexists(target)
            if saved:
                copy_entry(target, aside / SAVED / change.path)
            entries.append(Entry(change.path, change.deleted, saved))
            if not change.deleted:
                for parent in reversed(PurePosixPath(change.path).parents[:-1]):
                    if not os.path.lexists(workspace / parent):
                        made[parent.as_posix()] = None
        journal = Journal(workspace, tuple(entries), tuple(made))
        write_journal(aside, journal)
    except BaseException:
        forget_journal(aside)  # nothing was written yet
        raise
    applied = Applied(aside, journal)
    try:
        for change in changes:
            target = workspace / change.path
            if not change.deleted:
                replace_with(source / change.path, target)
            elif os.path.lexists(target):
                target.unlink()
    except BaseException:
        applied.undo()
        raise
    return applied


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
