"""The record of an apply in progress, so that a process killed mid-apply is undone later.

Before the first file of a winner is written into the user's workspace, every file it will
replace is saved aside (in ``<aside>/saved/``) and `write_journal` records, fsync'd, what was
saved, what will be written or deleted and which folders the apply will make. The journal is
removed only once the apply is kept or undone. A process killed in between (SIGKILL, a power
cut) leaves it behind, and the next best-of start finds it: `recover` puts every file back as
it was and removes the folders the apply made, or says exactly which it could not (and keeps
the saved files where they are).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from attrs import frozen

from harness.extend import FileRefused, read_json_file

JOURNAL = "journal.json"
SAVED = "saved"
_LIMIT = 64 << 20


@frozen
class Entry:
    """One file of the apply: `path` relative to the workspace, `deleted` when the apply
    removes it, `saved` when the workspace held something there (kept in ``saved/``)."""

    path: str
    deleted: bool
    saved: bool


@frozen
class Journal:
    workspace: Path
    entries: tuple[Entry, ...]
    made: tuple[str, ...]
    """The folders the apply makes, parents first (relative to the workspace)."""


def write_journal(aside: Path, journal: Journal) -> None:
    """Write `journal` into `aside` atomically and durably (the saved files are synced first)."""
    for entry in journal.entries:
        if entry.saved:
            _sync(aside / SAVED / entry.path)
    data = {
        "workspace": str(journal.workspace),
        "entries": [[e.path, e.deleted, e.saved] for e in journal.entries],
        "made": list(journal.made),
    }
    temporary = aside / f".{JOURNAL}.tmp"
    with temporary.open("w", encoding="utf-8") as out:
        json.dump(data, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, aside / JOURNAL)
    _sync_folder(aside)


def forget_journal(aside: Path) -> None:
    """The apply is settled (kept, or undone): the journal goes first, then what was saved."""
    (aside / JOURNAL).unlink(missing_ok=True)
    _sync_folder(aside)
    shutil.rmtree(aside, ignore_errors=True)


def pending(aside: Path) -> bool:
    return os.path.lexists(aside / JOURNAL)


def read_journal(aside: Path) -> Journal:
    """The journal in `aside`; `ValueError` naming it when it cannot be read."""
    path = aside / JOURNAL
    try:
        data: Any = read_json_file(path, limit=_LIMIT, what="apply journal", follow_links=False)
        entries = tuple(Entry(str(p), bool(d), bool(s)) for p, d, s in data["entries"])
        return Journal(Path(data["workspace"]), entries, tuple(map(str, data["made"])))
    except FileRefused as exc:  # a FIFO, a link, not UTF-8, not JSON: its message names it
        raise ValueError(str(exc)) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: cannot be read ({exc})") from None


def undo(aside: Path, journal: Journal) -> list[str]:
    """Put back every file `journal` names as it was saved, and remove the folders the apply
    made (those still empty); the problems met, one line each (none: all put back)."""
    problems: list[str] = []
    workspace = journal.workspace
    for entry in journal.entries:
        target = workspace / entry.path
        try:
            if entry.saved:
                replace_with(aside / SAVED / entry.path, target)
            elif os.path.islink(target) or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
        except OSError as exc:
            problems.append(f"{entry.path}: {exc.strerror or exc}")
    for folder in reversed(journal.made):
        try:
            (workspace / folder).rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            pass  # not empty: something else was put there since
    return problems


def recover(aside: Path) -> str:
    """Undo the apply whose journal `aside` holds, left by a process that died mid-apply:
    one line saying what was put back, or exactly what could not be (the saved files are
    then kept in `aside`)."""
    try:
        journal = read_journal(aside)
    except ValueError as exc:
        return f"an interrupted apply could not be undone: {exc}; its saved files are in {aside}"
    problems = undo(aside, journal)
    if problems:
        return (
            f"an apply into {journal.workspace} was interrupted and {len(problems)} of "
            f"{len(journal.entries)} files could not be put back ({'; '.join(problems)}); "
            f"the files as they were are in {aside / SAVED}"
        )
    forget_journal(aside)
    return (
        f"an apply into {journal.workspace} was interrupted (the process was killed): its "
        f"{len(journal.entries)} files were put back as they were before it"
    )


def replace_with(source: Path, target: Path) -> None:
    """Replace `target` with a copy of `source` in one rename: a copy that fails (a full
    disk) leaves whatever was there, never nothing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    temporary = target.with_name(f".{target.name}.harness-undo")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    try:
        copy_entry(source, temporary)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def copy_entry(source: Path, target: Path) -> None:
    """Copy a file (content, mode, times) or a link (as a link) from `source` to `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    else:
        shutil.copy2(source, target)


def _sync(path: Path) -> None:
    if path.is_symlink():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
