"""Cheap change detection for a workspace: stat every file, hash only what the stat says moved.

A scan walks the tree with `os.scandir` (symlinks are not followed) and keys each file by
``(size, mtime_ns, ctime_ns, inode)``. A file whose key is unchanged keeps its old digest;
a file whose key moved is hashed again, so rewriting a file with the same bytes is not a
change. Files larger than `max_hash_bytes` are judged by their stat key alone.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

DEFAULT_IGNORE: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".venv",
    "node_modules",
)

_Key = tuple[int, int, int, int]


class WorkspaceScanner:
    """Remembers a workspace's files between scans; `scan()` says whether contents changed."""

    __slots__ = ("_entries", "_ignore", "_max_hash_bytes", "_root", "hashed", "scans")

    def __init__(
        self,
        root: Path,
        *,
        ignore: Iterable[str] = DEFAULT_IGNORE,
        max_hash_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        self._root = str(root)
        self._ignore = frozenset(ignore)
        self._max_hash_bytes = max_hash_bytes
        self._entries: dict[str, tuple[_Key, bytes]] | None = None
        self.scans = 0
        self.hashed = 0

    def scan(self) -> bool:
        """Walk the workspace; True when a file appeared, vanished or changed its bytes.

        The first scan records the baseline and returns False.
        """
        old = self._entries if self._entries is not None else {}
        new: dict[str, tuple[_Key, bytes]] = {}
        ignore = self._ignore
        changed = False
        stack = [self._root]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder) as entries:
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
                path = entry.path
                key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
                before = old.get(path)
                if before is not None and before[0] == key:
                    new[path] = before
                    continue
                digest = self._digest(path, info)
                new[path] = (key, digest)
                if before is None or before[1] != digest:
                    changed = True
        if not changed and len(new) != len(old):
            changed = True  # only deletions: every surviving file matched, some are gone
        first = self._entries is None
        self._entries = new
        self.scans += 1
        return changed and not first

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
