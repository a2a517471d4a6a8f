"""Baselines kept across runs, keyed by what they depend on: a baseline taken once.

A suite's baseline depends on the command (with its folder, environment, timeout and
report), the sandbox it runs in, and the content of the workspace. The key is a digest of
them all; the workspace's content is

- in a git checkout, its commit's tree (``HEAD^{tree}``) and, when ``git status`` lists
  changes (changed, staged, deleted or untracked paths; ignored files are not part of it), a
  digest of those paths as they are in the folder; git's index spares reading the rest (by
  git's own rules: a file marked ``assume-unchanged`` is taken as unchanged);
- else a content digest of every file under it (path, executable bit, SHA-256 of the bytes; a
  link by its target's text).

The folders of `SKIPPED` are left out of both. A key cannot see everything a suite reads, so
`TestSuiteCheck` runs an entry's failing tests on their own before they excuse anything, and
takes the baseline again when one passes now. So every run, board attempt and stop-hook
session on the same content reuses one baseline, and any changed file makes a new key.
Computing the files' digest reads each file once: a stat index beside the entries (size,
mtime, ctime, inode, per file) lets the next digest of the same folder read only the files
whose stat changed (ctime cannot be set by a program, so a file rewritten and re-dated is read
again; a file changed within a second of being indexed is never trusted to the index).

Entries live in the user's cache folder (`default_cache_dir`), one JSON file per key, written
to a temporary file and renamed. An entry is used only when it parses, has this format, holds
its own key and a digest of its baseline that matches: anything else (also a FIFO, a device,
a link, a file that is not UTF-8, read through the bounded reader so none of them waits or
fills memory) is ignored with a ``baseline_cache.ignored`` warning, and the baseline is taken
again. The entries are as
trustworthy as the cache folder: an agent whose commands run as the user, outside a sandbox,
can write there as it can write anywhere the user can.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from attrs import frozen

from harness.extend import CACHE_ENV as CACHE_ENV  # where tests and benches set the folder
from harness.extend import NOT_WORK, FileRefused, get_logger, parse_json, read_text_file
from harness.extend import default_cache_dir as default_cache_dir  # as it was, for its users

from ._baseline import SuiteBaseline
from ._watchman import clock_of, unchanged_since, watch_of

FORMAT = 1
SKIPPED = NOT_WORK
"""Folders left out of a workspace's content digest: the folders that are not work
(`harness.extend.NOT_WORK`: caches, environments, dependencies, build output)."""
ENTRY_LIMIT = 64 << 20
"""The largest entry read (a baseline lists its failing tests: far below this); a larger file,
like one that is not a regular file, is ignored."""
INDEX_LIMIT = 512 << 20
"""The largest stat index read: about 100 bytes a file, so room for millions of files."""
_RACY_NS = 1_000_000_000
_CHUNK = 1 << 20
_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)  # O_BINARY: Windows only
_log = get_logger("checks.baseline_cache")


@frozen
class BaselineCache:
    """One folder of cached baselines."""

    folder: Path

    @classmethod
    def default(cls) -> BaselineCache:
        return cls(default_cache_dir())

    async def key(self, inputs: Mapping[str, object], workspace: Path) -> str:
        """The key of a baseline taken with `inputs` (command, sandbox, ...) on `workspace`
        as it is now."""
        content = await workspace_content(workspace, self.folder)
        whole = {"format": FORMAT, "inputs": inputs, "content": content}
        return hashlib.sha256(_canonical(whole)).hexdigest()

    def load(self, key: str) -> SuiteBaseline | None:
        """The baseline stored under `key`, or None (missing; or unusable, with a warning)."""
        path = self._path(key)
        try:
            text = read_text_file(path, limit=ENTRY_LIMIT, follow_links=False)
        except FileNotFoundError:
            return None
        except FileRefused as exc:  # a FIFO, a device, a link, too large, not UTF-8
            return _ignored(path, f"it {exc.reason}")
        except OSError as exc:
            return _ignored(path, f"it cannot be read: {exc.strerror}")
        try:
            entry = parse_json(text)
        except ValueError:
            return _ignored(path, "it is not JSON")
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return _ignored(path, f"it is not a baseline entry of format {FORMAT}")
        if entry.get("key") != key:
            return _ignored(path, "it holds another key")
        body = entry.get("baseline")
        if entry.get("digest") != hashlib.sha256(_canonical(body)).hexdigest():
            return _ignored(path, "its baseline does not match its digest")
        try:
            return SuiteBaseline.from_json(body)
        except ValueError as exc:
            return _ignored(path, str(exc))

    def store(self, key: str, baseline: SuiteBaseline) -> None:
        """Keep `baseline` under `key` (atomically: a reader sees the old entry or the new).
        A folder that cannot be written (full, read-only, not a folder) keeps nothing, with a
        ``baseline_cache.not_written`` warning: the run goes on with the baseline it took."""
        body = baseline.to_json()
        entry = {
            "format": FORMAT,
            "key": key,
            "baseline": body,
            "digest": hashlib.sha256(_canonical(body)).hexdigest(),
        }
        try:
            _write_atomically(self._path(key), json.dumps(entry, sort_keys=True))
        except OSError as exc:
            _log.warning("baseline_cache.not_written", path=str(self._path(key)), why=str(exc))

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"


@asynccontextmanager
async def locked(path: Path) -> AsyncIterator[None]:
    """Hold the lock file `path` (waiting, cancellably, while another process or task holds
    it), so that runs starting together on the same content take one baseline, not one each.
    Where locks are not available (Windows), or the folder cannot be written, nothing waits."""
    try:
        import fcntl
    except ImportError:  # Windows: each run may take its own, as without a cache
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+b")  # noqa: SIM115, ASYNC230 - a local file, held while locked
    except OSError as exc:
        _log.warning("baseline_cache.unlocked", path=str(path), why=str(exc))
        yield
        return
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await anyio.sleep(0.05)
        yield
    finally:
        handle.close()  # closing the file releases the lock


def _ignored(path: Path, why: str) -> SuiteBaseline | None:
    """None, after a warning that the entry at `path` is not used, and why."""
    _log.warning("baseline_cache.ignored", path=str(path), why=why)
    return None


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


async def workspace_content(workspace: Path, index_folder: Path | None = None) -> str:
    """``git-tree:<hash>`` for a clean git checkout, ``git-tree:<hash>+changes:<digest>`` for
    one with changes, else ``files:<digest>`` (see the module's docstring). `index_folder`
    keeps the stat index that spares re-reading unchanged files and, where watchman watches
    the workspace, the content with watchman's clock, so that the next key asks watchman what
    changed instead of looking at each file (`checks._watchman`)."""
    watch = await watch_of(workspace, SKIPPED) if index_folder is not None else None
    remembered, clock = None, None
    if watch is not None and index_folder is not None:
        remembered = index_folder / "watched" / f"{_folder_id(workspace)}.json"
        known = _read_watched(remembered, workspace)
        if known is not None and await unchanged_since(watch, known[0], SKIPPED):
            return known[1]
        clock = await clock_of(watch)  # before the content: a change made meanwhile is seen
    content = await _git_content(workspace)
    if content is None:
        digest = await anyio.to_thread.run_sync(files_digest, workspace, index_folder)
        content = f"files:{digest}"
    if remembered is not None and clock is not None:
        _remember_watched(remembered, workspace, clock, content)
    return content


def _remember_watched(path: Path, workspace: Path, clock: str, content: str) -> None:
    entry = {"workspace": os.path.realpath(workspace), "clock": clock, "content": content}
    try:
        _write_atomically(path, json.dumps(entry))
    except OSError as exc:
        _log.warning("baseline_cache.index_not_written", path=str(path), why=str(exc))


def _folder_id(folder: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(folder))).hexdigest()[:32]


def _read_watched(path: Path, workspace: Path) -> tuple[str, str] | None:
    """(watchman's clock, the content then) remembered for `workspace`, or None."""
    try:
        entry = parse_json(read_text_file(path, follow_links=False))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # FileRefused is a ValueError: a FIFO, a link, not UTF-8
        _log.warning("baseline_cache.ignored", path=str(path), why="it is not readable JSON")
        return None
    if (
        not isinstance(entry, dict)
        or entry.get("workspace") != os.path.realpath(workspace)
        or not isinstance(entry.get("clock"), str)
        or not isinstance(entry.get("content"), str)
    ):
        _log.warning("baseline_cache.ignored", path=str(path), why="it is not this folder's")
        return None
    return entry["clock"], entry["content"]


async def _git_content(workspace: Path) -> str | None:
    """The content of a git checkout by its tree and its changes, or None where git cannot
    say (no git, no repository, no commit yet, a changed submodule)."""
    git = ["git", "--no-optional-locks", "-C", str(workspace)]
    try:
        found = await anyio.run_process(
            [*git, "rev-parse", "--show-toplevel", "HEAD^{tree}"], check=False
        )
        if found.returncode != 0:
            return None
        listing = ["status", "--porcelain=v1", "-z", "--untracked-files=all"]
        status = await anyio.run_process([*git, *listing, "--ignore-submodules=none"], check=False)
    except OSError:  # no git
        return None
    lines = found.stdout.decode(errors="surrogateescape").splitlines()
    if status.returncode != 0 or len(lines) != 2:
        return None
    top, tree = lines
    if not status.stdout:
        return f"git-tree:{tree}"
    paths = _changed_paths(status.stdout)
    digest = await anyio.to_thread.run_sync(_paths_digest, Path(top), paths)
    return None if digest is None else f"git-tree:{tree}+changes:{digest}"


def _changed_paths(porcelain: bytes) -> list[str]:
    """The paths ``git status --porcelain=v1 -z`` lists (both sides of a rename), relative
    to the repository's top, sorted, those inside `SKIPPED` folders left out."""
    fields = porcelain.split(b"\0")
    paths: set[str] = set()
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        paths.add(os.fsdecode(entry[3:]))
        if b"R" in entry[:2] or b"C" in entry[:2]:  # a rename or copy: its source comes next
            paths.add(os.fsdecode(fields[i]))
            i += 1
    return sorted(p for p in paths if not SKIPPED.intersection(p.split("/")[:-1]))


def _paths_digest(top: Path, paths: list[str]) -> str | None:
    """A digest of each path's state under `top` (gone, a link's target, or the executable
    bit and content of a file); None when one is a folder (a submodule)."""
    whole = hashlib.sha256()
    for relative in paths:
        path = os.path.join(top, relative)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            state = "gone"
        else:
            if stat.S_ISDIR(info.st_mode):
                return None
            if stat.S_ISLNK(info.st_mode):
                state = "link\0" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
            else:
                kind = "exec" if info.st_mode & 0o111 else "file"
                state = f"{kind}\0{_file_sha256(path)}"
        whole.update(f"{relative}\0{state}\n".encode(errors="surrogateescape"))
    return whole.hexdigest()


def files_digest(root: Path, index_folder: Path | None = None) -> str:
    """A digest of every file's path, executable bit and content under `root`."""
    index_path = None
    index: dict[str, list[Any]] = {}
    if index_folder is not None:
        index_path = index_folder / "index" / f"{_folder_id(root)}.json"
        index = _read_index(index_path)
    started = time.time_ns()
    fresh: dict[str, list[Any]] = {}
    whole = hashlib.sha256()
    for relative, path, info in _walk(root):
        if stat.S_ISLNK(info.st_mode):
            kind, digest = "link", hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        else:
            kind = "exec" if info.st_mode & 0o111 else "file"
            seen = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
            known = index.get(relative)
            unchanged = known is not None and known[:4] == seen
            digest = known[4] if known is not None and unchanged else _file_sha256(path)
            if started - max(info.st_mtime_ns, info.st_ctime_ns) > _RACY_NS:
                fresh[relative] = [*seen, digest]
        whole.update(f"{relative}\0{kind}\0{digest}\n".encode(errors="surrogateescape"))
    if index_path is not None and fresh != index:
        try:
            _write_atomically(index_path, json.dumps(fresh, separators=(",", ":")))
        except OSError as exc:
            _log.warning("baseline_cache.index_not_written", path=str(index_path), why=str(exc))
    return whole.hexdigest()


def _read_index(path: Path) -> dict[str, list[Any]]:
    try:
        data = parse_json(read_text_file(path, limit=INDEX_LIMIT, follow_links=False))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        _log.warning("baseline_cache.ignored", path=str(path), why="the stat index is unreadable")
        return {}
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and len(v) == 5 for v in data.values()
    ):
        _log.warning("baseline_cache.ignored", path=str(path), why="the stat index is malformed")
        return {}
    return data


def _walk(root: Path) -> Iterator[tuple[str, str, os.stat_result]]:
    """(path relative to `root` with ``/``, full path, lstat) of every file and link, in a
    stable order, the `SKIPPED` folders left out."""
    stack = [""]
    while stack:
        relative_dir = stack.pop()
        folder = os.path.join(root, relative_dir) if relative_dir else os.fspath(root)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        below = []
        for entry in entries:
            relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED:
                    below.append(relative)
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                yield relative, entry.path, info
        stack.extend(reversed(below))


def _file_sha256(path: str) -> str:
    # os.open and os.read, not open(): most files of a workspace are small, and a buffered
    # file object costs more to make than such a file to read (0.5 against 1.3 s for 100,000).
    digest = hashlib.sha256()
    try:
        descriptor = os.open(path, _READ)
        try:
            while chunk := os.read(descriptor, _CHUNK):
                digest.update(chunk)
        finally:
            os.close(descriptor)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    return digest.hexdigest()
