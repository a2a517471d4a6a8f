"""Cheap change detection for a workspace: stat every file, hash only what the stat says moved.

A scan walks the tree with `os.scandir` (symlinks are not followed) and keys each file by
``(size, mtime_ns, ctime_ns, inode)``. A file whose key is unchanged keeps its old digest;
a file whose key moved is hashed again, so rewriting a file with the same bytes is not a
change. Files larger than `max_hash_bytes` are judged by their stat key alone.

`update(paths)` does the same for the paths a file watcher reported, and nothing else: a
folder among them is walked (its files may have arrived before the watcher saw the folder),
and a path that is gone takes every file below it along. Both return `WorkspaceChanges`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable

from attrs import frozen

from ._ignore import DEFAULT_IGNORE

_Key = tuple[int, int, int, int]
_Entry = tuple[_Key, bytes]


@frozen
class WorkspaceChanges:
    """What a scan found, as paths relative to the workspace: files that appeared, files whose
    bytes changed, and files that vanished."""

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.removed)


NO_CHANGES = WorkspaceChanges()


class WorkspaceScanner:
    """Remembers a workspace's files between scans; `scan()` says whether contents changed."""

    __slots__ = (
        "_entries",
        "_folders",
        "_ignore",
        "_max_hash_bytes",
        "_prefix",
        "_root",
        "hashed",
        "scans",
    )

    def __init__(
        self,
        root: os.PathLike[str] | str,
        *,
        ignore: Iterable[str] = DEFAULT_IGNORE,
        max_hash_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        self._root = os.fspath(root)
        self._prefix = len(self._root) + 1
        self._ignore = frozenset(ignore)
        self._max_hash_bytes = max_hash_bytes
        self._entries: dict[str, _Entry] | None = None
        self._folders: set[str] = set()
        self.scans = 0
        self.hashed = 0

    def scan(self) -> bool:
        """Walk the workspace; True when a file appeared, vanished or changed its bytes.

        The first scan records the baseline and returns False.
        """
        first = self._entries is None
        return bool(self.scan_changes()) and not first

    def scan_changes(self) -> WorkspaceChanges:
        """Walk the whole workspace and say what changed since the last scan (the first scan
        records the baseline and reports no changes)."""
        first = self._entries is None
        old = self._entries if self._entries is not None else {}
        new: dict[str, _Entry] = {}
        added: list[str] = []
        modified: list[str] = []
        self._folders = set()
        self._walk(self._root, old, new, added, modified)
        survivors = len(new) - len(added)
        removed = [path for path in old if path not in new] if survivors < len(old) else []
        self._entries = new
        self.scans += 1
        if first:
            return NO_CHANGES
        return self._relative(added, modified, removed)

    def update(self, paths: Iterable[str]) -> WorkspaceChanges:
        """Look again at `paths` (absolute, as a watcher reports them) and nothing else.

        A folder seen for the first time is walked: files may have arrived in it before a
        watcher could watch it, and a folder moved in brings its files without an event each.
        """
        if self._entries is None:
            return self.scan_changes()
        entries = self._entries
        folders = self._folders
        added: list[str] = []
        modified: list[str] = []
        removed: list[str] = []
        for path in paths:
            if self.ignored(path):
                continue
            try:
                info = os.lstat(path)
            except OSError:
                info = None
            if info is None:
                if entries.pop(path, None) is not None:
                    removed.append(path)
                elif path in folders:  # a folder went away, and every file below it
                    below = path + os.sep
                    gone = [known for known in entries if known.startswith(below)]
                    for known in gone:
                        del entries[known]
                    removed.extend(gone)
                    folders.difference_update(
                        [f for f in folders if f == path or f.startswith(below)]
                    )
            elif stat.S_ISDIR(info.st_mode):
                if path not in folders:
                    found: dict[str, _Entry] = {}
                    self._walk(path, entries, found, added, modified)
                    entries.update(found)
            else:
                self._examine(path, info, entries, entries, added, modified)
        self.scans += 1
        return self._relative(added, modified, removed)

    def ignored(self, path: str) -> bool:
        """Whether `path` (absolute, inside the workspace) lies under an ignored name."""
        relative = path[self._prefix :]
        return not self._ignore.isdisjoint(relative.split(os.sep))

    def _walk(
        self,
        folder: str,
        old: dict[str, _Entry],
        new: dict[str, _Entry],
        added: list[str],
        modified: list[str],
    ) -> None:
        ignore = self._ignore
        folders = self._folders
        stack = [folder]
        while stack:
            here = stack.pop()
            folders.add(here)
            try:
                with os.scandir(here) as entries:
                    items = list(entries)
            except OSError:
                continue
            for entry in items:
                if entry.name in ignore:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                self._examine(entry.path, info, old, new, added, modified)

    def _examine(
        self,
        path: str,
        info: os.stat_result,
        old: dict[str, _Entry],
        new: dict[str, _Entry],
        added: list[str],
        modified: list[str],
    ) -> None:
        """Record `path` in `new`, hashing it only when its stat key moved since `old`."""
        key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        before = old.get(path)
        if before is not None and before[0] == key:
            new[path] = before
            return
        digest = self._digest(path, info)
        new[path] = (key, digest)
        if before is None:
            added.append(path)
        elif before[1] != digest:
            modified.append(path)

    def _relative(
        self, added: list[str], modified: list[str], removed: list[str]
    ) -> WorkspaceChanges:
        if not (added or modified or removed):
            return NO_CHANGES
        cut = self._prefix
        return WorkspaceChanges(
            tuple(p[cut:] for p in added),
            tuple(p[cut:] for p in modified),
            tuple(p[cut:] for p in removed),
        )

    def _digest(self, path: str, info: os.stat_result) -> bytes:
        if stat.S_ISLNK(info.st_mode):
            try:
                return b"link:" + os.fsencode(os.readlink(path))
            except OSError:
                return b"link?"
        if not stat.S_ISREG(info.st_mode) or info.st_size > self._max_hash_bytes:
            return f"stat:{info.st_size}:{info.st_mtime_ns}".encode()
        self.hashed += 1
        digest = hashlib.blake2b(digest_size=16)
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            return f"unreadable:{info.st_size}:{info.st_mtime_ns}".encode()
        return digest.digest()

    @property
    def files(self) -> int:
        """How many files the last scan saw."""
        return 0 if self._entries is None else len(self._entries)
