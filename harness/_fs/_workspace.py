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
from functools import partial
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
# How deep the workspace tools make folders: far below what a project needs, and a bound on
# what an agent can pile up (a tree thousands of folders deep outlasts most tools that walk
# it, `shutil.rmtree` among them).
MAX_DEPTH = 64
# Errors `open` gives for a link under O_NOFOLLOW (FreeBSD says EMLINK), and for a file where
# a folder was expected under O_DIRECTORY (which some systems also give for a link).
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


class WorkspaceEscape(ValueError):
    """A path would resolve outside the workspace."""


class WorkspaceTooDeep(ValueError):
    """Making a path would put a folder more than `MAX_DEPTH` folders below the workspace."""


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
    missing folders on the way are created (each inside the one before it, by descriptor),
    at most `MAX_DEPTH` folders below the workspace (`WorkspaceTooDeep` past that).

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
    """One lookup of `relative` under `workspace`: the root's descriptor, the components to walk
    from the root (each link met so far replaced by its target), and after a walk, the real
    folders it went through (`real`) and the index in `parts` where it stopped (`at`)."""

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
        self.real: list[str] = []
        self.at = 0
        self.via: str | None = None  # the last link followed, for an error message
        self.root_fd = -1

    def __enter__(self) -> _Walk:
        self.root_fd = os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.root_fd)

    def attempts(self) -> Iterator[int]:
        yield from range(_MAX_LINKS + 1)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), self.relative)

    def path(self) -> Path:
        """Where the walk got to, with what it did not reach taken as written."""
        return self.root.joinpath(*self._lexical([*self.real, *self.parts[self.at :]]))

    def run(self, last: Callable[[int, str], _T], *, make_parents: bool = False) -> _T | str:
        """Walk the folders, then `last` on the final component: what `last` returns, or a
        link's target when a folder on the way is a link (`at` is then its index).

        ``..`` goes back to the folder walked before, whose descriptor is still open: it is
        never looked up, so it cannot lead anywhere the walk has not been."""
        self.real = []
        self.at = 0
        folders: list[int] = []  # descriptors of `real`, innermost last
        final = len(self.parts) - 1
        try:
            for index, name in enumerate(self.parts):
                self.at = index
                if name == "..":
                    if not folders:
                        raise _escape(self.relative, self.root, self.via)
                    os.close(folders.pop())
                    self.real.pop()
                    continue
                fd = folders[-1] if folders else self.root_fd
                if self.at == final:
                    return last(fd, name)
                opened = self._folder(fd, name, make_parents)
                if isinstance(opened, str):
                    return opened
                folders.append(opened)
                self.real.append(name)
            self.at = len(self.parts)  # empty, or it ended in "..": the folder itself
            return last(folders[-1] if folders else self.root_fd, ".")
        except OSError as exc:
            if exc.filename is None:
                raise
            raise OSError(exc.errno, exc.strerror, self.relative) from None
        finally:
            for fd in folders:
                os.close(fd)

    def _folder(self, dir_fd: int, name: str, make: bool) -> int | str:
        try:
            return _step(dir_fd, name, _FOLDER, 0)
        except FileNotFoundError:
            if not make:
                raise
        if len(self.real) >= MAX_DEPTH:
            raise WorkspaceTooDeep(
                f"path {self.relative!r} would make a folder {len(self.real) + 1} levels deep; "
                f"the workspace allows at most {MAX_DEPTH}"
            )
        with contextlib.suppress(FileExistsError):  # made meanwhile: the open below judges it
            os.mkdir(name, dir_fd=dir_fd)
        return _step(dir_fd, name, _FOLDER, 0)

    def follow(self, target: str) -> None:
        """Put the link at `at` in place of its `target`, refusing a target outside the root."""
        link = "/".join([*self.real, self.parts[self.at]])
        where = self.via = f"link {link!r} -> {target!r}"
        if os.path.isabs(target):
            base = _inside(self.root, self.root, target, where)
        else:
            base = [*self.real, *_components(target)]
        self.parts = [*base, *self.parts[self.at + 1 :]]

    def _lexical(self, parts: list[str]) -> list[str]:
        stack: list[str] = []
        for part in parts:
            if part != "..":
                stack.append(part)
            elif stack:
                stack.pop()
            else:
                raise _escape(self.relative, self.root, self.via)
        return stack


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


def _inside(root: Path, workspace: Path, path: str, link: str | None = None) -> list[str]:
    """`path` as components below `root`. An absolute path must lie under the workspace (as
    given, or resolved); the root's own folders are real, so ``..`` among them is read as text."""
    if not os.path.isabs(path):
        return _components(path)
    for absolute in (path, os.path.normpath(path)):
        for base in (str(root), os.path.abspath(workspace)):
            prefix = base.rstrip("/") + "/"
            if absolute.rstrip("/") == base:
                return []
            if absolute.startswith(prefix):
                return _components(absolute[len(prefix) :])
    raise _escape(path, root, link)


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _escape(relative: str, root: Path, link: str | None) -> WorkspaceEscape:
    through = f" (through the {link})" if link else ""
    return WorkspaceEscape(f"path {relative!r} is outside the workspace {str(root)!r}{through}")


def remove_tree(path: str | os.PathLike[str]) -> list[str]:
    """Remove the folder `path` and everything in it (a temporary workspace); never raises.

    Returns what could not be removed, one line each (empty when all of it went). Unlike
    `shutil.rmtree` it does not recurse, so no depth of folders makes it fail, and it works
    by descriptor, so no path length does either; a folder without write or read permission
    is made writable and readable first; an entry that vanishes meanwhile (the agent's
    process still at work) is simply gone. Going back up, it checks that the parent is the
    folder it came down from, and stops (saying so) if the tree was moved meanwhile: it never
    removes anything outside `path`.
    """
    root = Path(path)
    problems: list[str] = []
    try:
        if not root.is_dir() or root.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                root.unlink()
            return problems
        fd = _open_folder(os.open(root.parent, _FOLDER), root.name, close_parent=True)
    except OSError as exc:
        return [f"{root}: {exc.strerror or exc}"]
    trail: list[tuple[str, tuple[int, int]]] = []  # (name, (dev, ino) of its parent)
    try:
        while True:
            child = _empty_but_folders(fd, problems, root, trail)
            if child is not None:
                status = os.fstat(fd)
                below = _open_folder(fd, child)
                trail.append((child, (status.st_dev, status.st_ino)))
                os.close(fd)
                fd = below
                continue
            # Empty (or all its problems noted): go up and remove it there.
            parent = os.open("..", _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = parent
            if not trail:
                break
            name, expected = trail.pop()
            status = os.fstat(fd)
            if (status.st_dev, status.st_ino) != expected:
                problems.append(f"{root}: the tree was moved while it was removed; left as it is")
                return problems
            _remove(os.rmdir, name, fd, problems, partial(_shown, root, trail, name))
        _remove(os.rmdir, root.name, fd, problems, lambda: str(root))
    except OSError as exc:
        problems.append(f"{root}: {exc.strerror or exc}")
    finally:
        os.close(fd)
    return problems


def _open_folder(dir_fd: int, name: str, *, close_parent: bool = False) -> int:
    """`name` in `dir_fd` opened as a folder (made readable first if it was not)."""
    try:
        try:
            return os.open(name, _FOLDER, dir_fd=dir_fd)
        except PermissionError:
            os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
            return os.open(name, _FOLDER, dir_fd=dir_fd)
    finally:
        if close_parent:
            os.close(dir_fd)


def _empty_but_folders(
    fd: int, problems: list[str], root: Path, trail: list[tuple[str, tuple[int, int]]]
) -> str | None:
    """Remove every entry of the folder `fd` but its subfolders; the first subfolder left,
    or None when there is none (the folder is empty, but for what could not be removed)."""
    with os.scandir(fd) as entries:
        listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_folder in listed:
        if is_folder:
            if not _already_failed(problems, root, trail, name):
                return name
            continue
        _remove(os.unlink, name, fd, problems, partial(_shown, root, trail, name))
    return None


def _remove(
    action: Callable[..., None],
    name: str,
    fd: int,
    problems: list[str],
    shown: Callable[[], str],
) -> None:
    """`action(name, dir_fd=fd)` (`os.unlink` or `os.rmdir`); a folder without write
    permission is given it and the action tried again; what still fails is noted."""
    try:
        try:
            action(name, dir_fd=fd)
        except PermissionError:
            os.chmod(fd, 0o700)
            action(name, dir_fd=fd)
    except FileNotFoundError:
        pass  # gone meanwhile
    except OSError as exc:
        problems.append(f"{shown()}: {exc.strerror or exc}")


def _already_failed(
    problems: list[str], root: Path, trail: list[tuple[str, tuple[int, int]]], name: str
) -> bool:
    shown = _shown(root, trail, name)
    return any(p.startswith(f"{shown}:") for p in problems)


def _shown(root: Path, trail: list[tuple[str, tuple[int, int]]], name: str) -> str:
    parts = [part for part, _ in trail]
    if len(parts) > 8:  # a deep tree: its path would fill the screen
        parts = [*parts[:3], f"... ({len(parts) - 6} more) ...", *parts[-3:]]
    return str(root.joinpath(*parts, name)) if name else str(root.joinpath(*parts))
