"""Folders the harness owns: made or opened without following a link, swept only by its mark.

A folder at a name anyone can predict (``$TMPDIR/harness-best-of-<uid>``, ``.git/harness-best-of``)
may be there before the harness: a link another user of a shared ``/tmp`` planted to a folder
of theirs (the attempts' copies of the user's code would be written into it), or a link to a
folder elsewhere (a sweep would delete what it holds). So:

- `private_folder` makes such a folder (mode 0700) or opens the one there without following a
  link, and refuses, with `FolderRefused` (one line naming it), a link, anything but a folder,
  or a folder another user owns; a folder of ours with looser permissions is made private.
- `owned_folder` makes a sub-folder and marks it (`MARKER`) as one the harness made;
  `remove_owned` removes a folder only when it is a real folder of ours carrying that mark, so
  a sweep never removes what it did not make, and never through a link.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from .._errors import ConfigurationError

MARKER = ".harness-owned"
"""The file in each folder the harness made and may remove."""

_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class FolderRefused(ConfigurationError):
    """A folder the harness means to own is not one it can trust: a link, not a folder, or
    another user's. The message is one line naming the folder and what is wrong."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; the harness keeps its own files only in a private folder "
            "of yours (remove it, or set TMPDIR elsewhere)"
        )
        self.path = path
        self.problem = problem


def private_folder(path: Path) -> Path:
    """Make `path` (mode 0700; its parent must exist) or open the folder there, without
    following a link; raises `FolderRefused` when it is a link, not a folder, or owned by
    another user. Returns `path`."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        fd = os.open(path, _OPEN)
    except OSError as exc:
        raise FolderRefused(path, _what_is(path) or exc.strerror or str(exc)) from None
    try:
        status = os.fstat(fd)
        if status.st_uid != os.geteuid():
            raise FolderRefused(path, f"owned by another user (uid {status.st_uid})")
        if stat.S_IMODE(status.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def owned_folder(path: Path) -> Path:
    """Make `path` inside a private folder, mode 0700, and mark it as the harness's; an
    existing folder is accepted only when it already carries the mark. Returns `path`."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if is_owned(path):
            return path
        raise FolderRefused(path, "exists and was not made by the harness") from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    os.close(os.open(path / MARKER, flags, 0o600))
    return path


def is_owned(path: Path) -> bool:
    """Whether `path` is a real folder (not a link) of this user's carrying `MARKER`."""
    try:
        folder, mark = os.lstat(path), os.lstat(path / MARKER)
    except OSError:
        return False
    return (
        stat.S_ISDIR(folder.st_mode)
        and folder.st_uid == os.geteuid()
        and stat.S_ISREG(mark.st_mode)
    )


def remove_owned(path: Path) -> bool:
    """Remove the folder `path` and what it holds if the harness made it (`is_owned`), never
    following a link inside it; whether it was removed (or was already gone)."""
    if not os.path.lexists(path):
        return True
    if not is_owned(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


def _what_is(path: Path) -> str | None:
    try:
        status = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(status.st_mode):
        return f"is a symbolic link (to {os.readlink(path)}), not a folder"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a folder"
    return None
