"""Paths inside a workspace: nothing the agent names may resolve outside it.

A path is never handed to the kernel whole. It is walked one component at a time from a file
descriptor of the workspace folder, each component opened relative to the folder before it with
``O_NOFOLLOW`` (``O_DIRECTORY`` too for a folder on the way), so the kernel never follows a
symbolic link for us. A link met on the way is read and its target walked again the same way
from the workspace root: a link that stays inside works, one that leads outside is refused, and
swapping a component for a link while a walk runs cannot take the walk outside (it opens what
it finds without following it). ``..`` is applied to the path's text before the walk.

This needs ``os.open`` and ``os.mkdir`` with ``dir_fd``, ``O_NOFOLLOW`` and ``O_DIRECTORY``:
Linux (the target), macOS and the BSDs have them; elsewhere (Windows) every workspace file
access fails with an error saying so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")

_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
SUPPORTED = (
    bool(_O_NOFOLLOW and _O_DIRECTORY)
    and {os.open, os.mkdir, os.readlink, os.stat} <= os.supports_dir_fd
)
_MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup
# Errors `open` gives for a link under O_NOFOLLOW (FreeBSD says EMLINK), and for a file where
# a folder was expected under O_DIRECTORY (which some systems also give for a link).
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


class WorkspaceEscape(ValueError):
    """A path would resolve outside the workspace."""


def resolve_in_workspace(workspace: Path, relative: str | Path) -> Path:
    """Resolve `relative` against `workspace`, refusing anything that leaves it.

    Absolute paths outside the workspace, ``..`` beyond its root and links that point outside
    are all refused; links inside are followed. Components that do not exist yet are kept as
    written. The path is only as safe as the moment it was resolved: to open a file the agent
    may be changing concurrently, use `open_in_workspace`.
    """
    walk = _Walk(workspace, relative)
    with walk:
        for _ in walk.attempts():
            try:
                found = walk.run(_probe)
            except (FileNotFoundError, NotADirectoryError):
                return walk.path()  # the rest does not exist, so it holds no link
            if found is None:
                return walk.path()
            walk.follow(found)
    raise AssertionError("unreachable")  # pragma: no cover - attempts() raises at its end


def open_in_workspace(
    workspace: Path,
    relative: str | Path,
    flags: int,
    *,
    mode: int = 0o666,
    make_parents: bool = False,
) -> tuple[int, Path]:
    """Open `relative` inside `workspace` with `os.open` `flags` (``O_NOFOLLOW`` and
    ``O_CLOEXEC`` are added): the descriptor, and the real path it names. With `make_parents`,
    missing folders on the way are created (each inside the one before it, by descriptor).

    Raises `WorkspaceEscape` for a path or a link that leads outside, and the `OSError` of the
    failing step (naming `relative`) otherwise. The caller closes the descriptor.
    """
    walk = _Walk(workspace, relative)
    flags |= _O_NOFOLLOW | _O_CLOEXEC

    def last(dir_fd: int, name: str) -> int | str:
        return _step(dir_fd, name, flags, mode)

    with walk:
        for _ in walk.attempts():
            found = walk.run(last, make_parents=make_parents)
            if isinstance(found, int):
                return found, walk.path()
            walk.follow(found)
    raise AssertionError("unreachable")  # pragma: no cover - attempts() raises at its end


class _Walk:
    """One lookup of `relative` under `workspace`: the root's descriptor, the components still
    to walk (links met so far replaced by their targets) and how many links were followed."""

    def __init__(self, workspace: Path, relative: str | Path) -> None:
        if not SUPPORTED:
            raise OSError(
                errno.ENOSYS,
                "workspace files need os.open and os.mkdir with dir_fd, O_NOFOLLOW and "
                f"O_DIRECTORY (Linux, macOS, BSD), which this platform ({sys.platform}) lacks",
            )
        self.relative = os.fspath(relative)
        self.root = workspace.resolve()
        self.parts = _inside(self.root, workspace, self.relative)
        self.root_fd = -1
        self.link_at = -1  # the index in `parts` of the link being followed

    def __enter__(self) -> _Walk:
        self.root_fd = os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.root_fd)

    def attempts(self) -> Iterator[int]:
        yield from range(_MAX_LINKS + 1)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), self.relative)

    def path(self) -> Path:
        return self.root.joinpath(*self.parts)

    def run(self, last: Callable[[int, str], _T], *, make_parents: bool = False) -> _T | str:
        """Walk the folders, then `last` on the final component: what `last` returns, or a
        link's target (with `link_at` set) when a folder on the way is a link."""
        if not self.parts:
            return last(self.root_fd, ".")
        fd = self.root_fd
        try:
            for index, name in enumerate(self.parts[:-1]):
                try:
                    opened = _step(fd, name, _FOLDER, 0)
                except FileNotFoundError:
                    if not make_parents:
                        raise
                    with contextlib.suppress(FileExistsError):  # made meanwhile: judged below
                        os.mkdir(name, dir_fd=fd)
                    opened = _step(fd, name, _FOLDER, 0)
                if isinstance(opened, str):
                    self.link_at = index
                    return opened
                if fd != self.root_fd:
                    os.close(fd)
                fd = opened
            self.link_at = len(self.parts) - 1
            return last(fd, self.parts[-1])
        except OSError as exc:
            if exc.filename is None:
                raise
            raise OSError(exc.errno, exc.strerror, self.relative) from None
        finally:
            if fd != self.root_fd:
                os.close(fd)

    def follow(self, target: str) -> None:
        """Replace the link at `link_at` by `target`, refusing a target outside the root."""
        at = self.link_at
        link = "/".join(self.parts[: at + 1])
        where = f"link {link!r} -> {target!r}"
        if os.path.isabs(target):
            base = _inside(self.root, self.root, target, where)
        else:
            base = [*self.parts[:at], target]
        self.parts = _normal([*base, *self.parts[at + 1 :]], self.relative, self.root, where)


def _step(dir_fd: int, name: str, flags: int, mode: int) -> int | str:
    """Open `name` in `dir_fd` without following a link: the descriptor, or the link's target."""
    try:
        return os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in _LINK_ERRNOS:
            raise
        try:
            return os.readlink(name, dir_fd=dir_fd)
        except OSError:  # not a link: a file where a folder was expected, say so
            raise exc from None


def _probe(dir_fd: int, name: str) -> str | None:
    """The target when `name` is a link, None when it is anything else (FileNotFoundError
    when it does not exist)."""
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if (st.st_mode & 0o170000) == 0o120000:  # S_IFLNK
        return os.readlink(name, dir_fd=dir_fd)
    return None


def _inside(root: Path, workspace: Path, relative: str, link: str | None = None) -> list[str]:
    """`relative` as components under `root`; an absolute path must lie under the workspace
    (as given, or resolved)."""
    if os.path.isabs(relative):
        absolute = os.path.normpath(relative)
        for base in (str(root), os.path.abspath(workspace)):
            if absolute == base:
                return []
            prefix = base.rstrip("/") + "/"
            if absolute.startswith(prefix):
                return _normal([absolute[len(prefix) :]], relative, root, link)
        raise _escape(relative, root, link)
    return _normal([relative], relative, root, link)


def _normal(parts: list[str], relative: str, root: Path, link: str | None) -> list[str]:
    """Components with ``.`` and empty ones dropped and ``..`` applied; one that climbs above
    the root escapes."""
    stack: list[str] = []
    for part in "/".join(parts).split("/"):  # a link's target may hold several
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                raise _escape(relative, root, link)
            stack.pop()
        else:
            stack.append(part)
    return stack


def _escape(relative: str, root: Path, link: str | None) -> WorkspaceEscape:
    through = f" (through the {link})" if link else ""
    return WorkspaceEscape(f"path {relative!r} is outside the workspace {str(root)!r}{through}")
