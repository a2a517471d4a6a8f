"""`SnapshotCheckpoints`: content-addressed snapshots of a workspace that is not in git.

Layout of the state folder (outside the workspace by default)::

    blobs/ab/cdef...        every distinct file content once, named by its sha256
    trees/<sha256>.json     one manifest per distinct tree: path -> kind, mode, content
    series/<series>.jsonl   the checkpoints of one series, one JSON line each, oldest first

A file's content is read once per change: the store remembers each file's size, mtime and
inode from its last walk. Symbolic links are kept as links (never followed); sockets, pipes
and devices are skipped; so are the folders named in `EXCLUDED` (caches and environments a
restore should leave alone). A restore writes each differing file through a temporary file
and a rename, replaces a link or a file on the way to it with a real folder, removes files
the checkpoint does not have, and then the folders that leaves empty.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from attrs import frozen

from .._fs._not_work import NOT_WORK
from .._work_progress import WorkProgress
from ._base import (
    Checkpoint,
    CheckpointDiff,
    CheckpointError,
    CheckpointKind,
    NoSuchCheckpoint,
    check_series,
    match_id,
    one_line,
    remove_files,
)

T = TypeVar("T")

EXCLUDED = NOT_WORK
"""Folder names a snapshot skips wherever they are (and a restore leaves alone): the folders
that are not work (`harness.extend.NOT_WORK`)."""

_CHUNK = 1024 * 1024


@frozen
class _Entry:
    """One file of a tree: ``"file"`` with its content's sha256, or ``"link"`` with its target."""

    kind: str
    mode: int
    value: str

    def to_list(self) -> list[Any]:
        return [self.kind, self.mode, self.value]


Tree = dict[str, _Entry]
_StatKey = tuple[int, int, int, int]


class SnapshotCheckpoints:
    """Checkpoints of `workspace` kept in `state_dir` (see the module's docstring)."""

    kind: CheckpointKind = "snapshot"

    def __init__(self, workspace: Path, state_dir: Path, *, series: str) -> None:
        check_series(series)
        self._workspace = workspace
        self._state = Path(os.path.realpath(state_dir))
        self._series = series
        self._lock = anyio.Lock()
        self._seen: dict[str, tuple[_StatKey, str]] = {}

    @property
    def workspace(self) -> Path:
        return self._workspace

    @property
    def series(self) -> str:
        return self._series

    @property
    def state_dir(self) -> Path:
        return self._state

    def __repr__(self) -> str:
        return (
            f"SnapshotCheckpoints({str(self._workspace)!r}, state_dir={str(self._state)!r}, "
            f"series={self._series!r})"
        )

    async def save(
        self, label: str, *, at: float, progress: WorkProgress | None = None
    ) -> Checkpoint:
        label = one_line(label)
        async with self._lock:
            return await self._work("save a checkpoint", self._save, label, at, progress)

    async def checkpoints(self, series: str | None = None) -> list[Checkpoint]:
        if series is not None:
            check_series(series)
        return await self._work("list the checkpoints", self._list, series)

    async def find(self, ident: str) -> Checkpoint:
        return match_id(ident, await self.checkpoints(), self._workspace)

    async def diff(self, old: Checkpoint, new: Checkpoint | None = None) -> CheckpointDiff:
        async with self._lock:
            return await self._work("compare checkpoints", self._diff, old, new)

    async def restore(self, checkpoint: Checkpoint) -> CheckpointDiff:
        if checkpoint.kind != "snapshot":
            raise CheckpointError(f"checkpoint {checkpoint.short_id} is not a snapshot")
        async with self._lock:
            return await self._work("restore a checkpoint", self._restore, checkpoint)

    async def aclose(self) -> None:
        """Nothing to release (the snapshots stay in the state folder)."""

    async def _work(self, what: str, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` in a worker thread; an OSError (a full disk, a folder that cannot be
        written) becomes the `CheckpointError` the API promises, naming what failed."""
        try:
            return await anyio.to_thread.run_sync(work, *args)
        except OSError as exc:
            raise CheckpointError(
                f"could not {what} of {str(self._workspace)!r} (snapshots in "
                f"{str(self._state)!r}): {exc}"
            ) from exc

    # -- the work, in a worker thread ------------------------------------------------------

    def _save(self, label: str, at: float, progress: WorkProgress | None) -> Checkpoint:
        tree = self._walk(store=True)
        tree_id = self._write_tree(tree)
        found = self._list(self._series)
        last = found[-1] if found else None
        seq = 0 if last is None else last.seq + 1
        record: dict[str, Any] = {
            "seq": seq,
            "label": label,
            "tree": tree_id,
            "at": at,
            "parent": None if last is None else last.id,
            "progress": None if progress is None else progress.to_dict(),
        }
        ident = hashlib.sha256(_canonical(record)).hexdigest()
        line = json.dumps({"id": ident, **record}, sort_keys=True, ensure_ascii=True) + "\n"
        path = self._state / "series" / f"{self._series}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as file:
            file.write(line)
            file.flush()
            os.fsync(file.fileno())
        return Checkpoint(
            ident, self._series, seq, label, tree_id, at, "snapshot", record["parent"], progress
        )

    def _list(self, series: str | None) -> list[Checkpoint]:
        folder = self._state / "series"
        if series is not None:
            names = [f"{series}.jsonl"]
        else:
            try:
                names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
            except FileNotFoundError:
                return []
        found: list[Checkpoint] = []
        for name in names:
            found.extend(_read_series(folder / name, name.removesuffix(".jsonl")))
        return found

    def _diff(self, old: Checkpoint, new: Checkpoint | None) -> CheckpointDiff:
        before = self._read_tree(old.tree)
        after = self._read_tree(new.tree) if new is not None else self._walk(store=False)
        return _compare(before, after)

    def _restore(self, checkpoint: Checkpoint) -> CheckpointDiff:
        target = self._read_tree(checkpoint.tree)
        for entry in target.values():
            if entry.kind == "file" and not self._blob(entry.value).is_file():
                raise NoSuchCheckpoint(
                    f"checkpoint {checkpoint.short_id} is incomplete: the content "
                    f"{entry.value[:12]} is missing from {str(self._state)!r}"
                )
        current = self._walk(store=False)
        changes = _compare(current, target)
        # Content-addressed: a blob must still hash to its name, checked before any file of
        # the workspace changes (an altered store never half-restores a workspace).
        for path in (*changes.added, *changes.modified):
            entry = target[path]
            if entry.kind == "file" and _hash_file(str(self._blob(entry.value))) != entry.value:
                raise CheckpointError(
                    f"checkpoint {checkpoint.short_id} is corrupt: the content of {path!r} in "
                    f"{str(self._blob(entry.value))!r} no longer matches its sha256"
                )
        remove_files(self._workspace, changes.deleted)
        for path in (*changes.added, *changes.modified):
            self._put(path, target[path])
        self._seen.clear()  # the files written have new stat keys; read them afresh
        return changes

    # -- helpers ---------------------------------------------------------------------------

    def _walk(self, *, store: bool) -> Tree:
        """The workspace as a tree; with `store`, every content not yet in the store is added."""
        tree: Tree = {}
        skip = self._state
        for relative, full, info in _files(self._workspace, skip):
            if stat.S_ISLNK(info.st_mode):
                tree[relative] = _Entry("link", 0, os.readlink(full))
                continue
            key = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
            mode = 0o755 if info.st_mode & 0o111 else 0o644
            seen = self._seen.get(relative)
            if seen is not None and seen[0] == key and (not store or self._blob(seen[1]).exists()):
                digest = seen[1]
            else:
                try:
                    digest = self._add_blob(full) if store else _hash_file(full)
                except FileNotFoundError:
                    continue  # removed while we walked
                self._seen[relative] = (key, digest)
            tree[relative] = _Entry("file", mode, digest)
        return tree

    def _blob(self, digest: str) -> Path:
        return self._state / "blobs" / digest[:2] / digest[2:]

    def _add_blob(self, path: str) -> str:
        """Copy the file into the store (once per content); its sha256."""
        folder = self._state / "blobs"
        folder.mkdir(parents=True, exist_ok=True)
        digest = _hash_file(path)
        target = self._blob(digest)
        if target.exists():
            return digest
        target.parent.mkdir(exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".incoming-")
        copied = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb", buffering=0) as source:
                while chunk := source.read(_CHUNK):
                    copied.update(chunk)
                    out.write(chunk)
            # The file may have changed since it was hashed: name the blob by what was copied.
            digest = copied.hexdigest()
            target = self._blob(digest)
            target.parent.mkdir(exist_ok=True)
            os.replace(temporary, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        return digest

    def _write_tree(self, tree: Tree) -> str:
        data = _canonical({path: entry.to_list() for path, entry in sorted(tree.items())})
        digest = hashlib.sha256(data).hexdigest()
        path = self._state / "trees" / f"{digest}.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        return digest

    def _read_tree(self, digest: str) -> Tree:
        path = self._state / "trees" / f"{digest}.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise NoSuchCheckpoint(f"the snapshot tree {digest[:12]} is missing") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise CheckpointError(f"the snapshot tree {str(path)!r} is corrupt")
        raw = json.loads(data)
        return {path: _Entry(str(e[0]), int(e[1]), str(e[2])) for path, e in raw.items()}

    def _put(self, relative: str, entry: _Entry) -> None:
        full = _make_parents(self._workspace, relative)
        _clear(full)
        if entry.kind == "link":
            os.symlink(entry.value, full)
            return
        blob = self._blob(entry.value)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".harness-restore-")
        try:
            with os.fdopen(fd, "wb") as out, open(blob, "rb") as source:
                shutil.copyfileobj(source, out, _CHUNK)
            os.chmod(temporary, entry.mode)
            os.replace(temporary, full)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def _make_parents(workspace: Path, relative: str) -> str:
    """The full path of `relative`, each folder on the way made a real folder: a link or a
    file in the way is removed first, so nothing is written outside the workspace."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise CheckpointError(f"a snapshot names an unsafe path: {relative!r}")
    here = str(workspace)
    for part in parts[:-1]:
        here = os.path.join(here, part)
        try:
            info = os.lstat(here)
        except FileNotFoundError:
            os.mkdir(here)
            continue
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(here)
            os.mkdir(here)
    return os.path.join(here, parts[-1])


def _clear(full: str) -> None:
    """Make room for a file at `full`: a folder there is removed whole (without following
    links); a file or a link is replaced by the rename that follows."""
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(full)
    elif stat.S_ISLNK(info.st_mode):
        os.unlink(full)


def _files(root: Path, skip: Path) -> Iterable[tuple[str, str, os.stat_result]]:
    """Every file and link under `root` as (relative path, full path, lstat), sorted, without
    entering links, the folders in `EXCLUDED`, or `skip`."""
    pending = [("", str(root))]
    while pending:
        prefix, folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        folders = []
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                if entry.name not in EXCLUDED and os.path.abspath(entry.path) != str(skip):
                    folders.append((f"{relative}/", entry.path))
            elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                yield relative, entry.path, info
        pending.extend(reversed(folders))


def _hash_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _compare(before: Mapping[str, _Entry], after: Mapping[str, _Entry]) -> CheckpointDiff:
    added = sorted(p for p in after if p not in before)
    deleted = sorted(p for p in before if p not in after)
    modified = sorted(p for p in after if p in before and before[p] != after[p])
    return CheckpointDiff(tuple(added), tuple(modified), tuple(deleted))


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def _read_series(path: Path, series: str) -> list[Checkpoint]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found: list[Checkpoint] = []
    lines = text.splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        torn = lineno == len(lines) and not text.endswith("\n")  # a save cut short
        try:
            row = json.loads(line)
            progress = row.get("progress")
            found.append(
                Checkpoint(
                    str(row["id"]),
                    series,
                    int(row["seq"]),
                    str(row["label"]),
                    str(row["tree"]),
                    float(row["at"]),
                    "snapshot",
                    row.get("parent"),
                    None if progress is None else WorkProgress.from_dict(progress),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if torn:
                break
            raise CheckpointError(f"{path}:{lineno}: not a checkpoint record ({exc})") from None
    return found
