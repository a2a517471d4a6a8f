"""`PathGuard`: the protected paths as a run found them, and the means to compare and restore.

`PathGuard.record` keeps, for every path a `ProtectedPaths` rule matches, its kind (file,
link, other), its mode bits, a SHA-256 digest and (for a file) a pristine copy of its bytes.
Links are never followed: a link is recorded as its target's text, and a protected file
replaced by a link, or a protected folder replaced by one, is a change. `PathGuard.changes`
compares the workspace with the record: a path modified, deleted, added under a rule, or
replaced by something of another kind is a `Tampering`, whatever route made it.
`PathGuard.pristine` lays the recorded files over a temporary copy of the workspace, so that
checks judge the agent's work with the verifier as the run found it; the user's workspace is
never rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path, PurePosixPath
from typing import Literal

import anyio
from attrs import define, field, frozen

from .._errors import ConfigurationError
from .._protected import Change, ProtectedPaths, Tampering

Kind = Literal["file", "link", "other"]
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_MANIFEST = "manifest.json"


@frozen
class PathState:
    """One protected path as recorded: its kind, permission bits and content digest."""

    kind: Kind
    mode: int
    digest: str


def _walk(workspace: Path, paths: ProtectedPaths) -> Iterator[tuple[str, os.stat_result]]:
    """Every path under the rules' base folders that a rule covers, with its ``lstat``; a
    link is listed, never followed, and neither is a base folder reached through a link."""
    seen: set[str] = set()
    for base in paths.bases():
        top = workspace
        for part in PurePosixPath(base).parts if base else ():
            top = top / part
            try:
                info = top.lstat()
            except OSError:
                break
            if not stat.S_ISDIR(info.st_mode):  # a file, or a link where a folder should be
                relative = top.relative_to(workspace).as_posix()
                if relative not in seen and paths.rule_for(relative):
                    seen.add(relative)
                    yield relative, info
                break
        else:
            yield from _walk_folder(workspace, top, paths, seen)


def _walk_folder(
    workspace: Path, top: Path, paths: ProtectedPaths, seen: set[str]
) -> Iterator[tuple[str, os.stat_result]]:
    for folder, dirs, files in os.walk(top, followlinks=False):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in paths.ignore]
        for name in sorted([*dirs, *files]):
            path = here / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                continue
            relative = path.relative_to(workspace).as_posix()
            if relative not in seen and paths.rule_for(relative):
                seen.add(relative)
                yield relative, info


def _state(path: Path, info: os.stat_result) -> tuple[PathState, bytes | None]:
    """The path's state, and a file's bytes (None for anything else)."""
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path).encode("utf-8", "surrogateescape")
        return PathState("link", mode, hashlib.sha256(target).hexdigest()), None
    if not stat.S_ISREG(info.st_mode):
        return PathState("other", mode, ""), None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    return PathState("file", mode, hashlib.sha256(data).hexdigest()), data


@define(eq=False)
class PathGuard:
    """The protected paths as the run found them, and the means to compare and restore.

    `max_bytes` caps the pristine copies kept in memory: rules that match more than that are
    a `ConfigurationError` naming the rules, at the run's start.
    """

    paths: ProtectedPaths
    files: dict[str, PathState]
    blobs: dict[str, bytes] = field(repr=False)

    @classmethod
    def record(
        cls, workspace: Path, paths: ProtectedPaths, *, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> PathGuard:
        """Record every protected path of `workspace` (blocking file I/O: run it in a thread)."""
        files: dict[str, PathState] = {}
        blobs: dict[str, bytes] = {}
        total = 0
        for relative, info in _walk(workspace, paths):
            try:
                state, data = _state(workspace / relative, info)
            except OSError as exc:
                raise ConfigurationError(
                    f"protected file {relative} cannot be read: {exc.strerror}"
                ) from None
            files[relative] = state
            if data is not None and state.digest not in blobs:
                total += len(data)
                if total > max_bytes:
                    raise ConfigurationError(
                        f"the protected paths {list(paths.rules)} hold more than {max_bytes} "
                        "bytes; protect the files that judge the work, not the whole project"
                    )
                blobs[state.digest] = data
        return cls(paths, files, blobs)

    def changes(self, workspace: Path) -> tuple[Tampering, ...]:
        """Every protected path that differs from the record, sorted by path."""
        now: dict[str, PathState] = {}
        for relative, info in _walk(workspace, self.paths):
            try:
                now[relative] = _state(workspace / relative, info)[0]
            except OSError:
                now[relative] = PathState("other", 0, "unreadable")
        found: list[Tampering] = []
        for relative in sorted({*self.files, *now}):
            before, after = self.files.get(relative), now.get(relative)
            change: Change | None = None
            if after is None:
                change = "deleted"
            elif before is None:
                change = "added"
            elif before.kind != after.kind:
                change = "replaced"
            elif before != after:
                change = "modified"
            if change is not None:
                rule = self.paths.rule_for(relative) or "?"
                found.append(Tampering(relative, change, rule))
        return tuple(found)

    @asynccontextmanager
    async def pristine(self, workspace: Path, changes: Sequence[Tampering]) -> AsyncIterator[Path]:
        """A temporary copy of `workspace` with every changed protected path as recorded
        (an added one removed), for as long as the block runs; then it is deleted."""
        folder = Path(await anyio.to_thread.run_sync(tempfile.mkdtemp, None, "harness-pristine-"))
        try:
            copy = folder / (workspace.name or "workspace")
            await anyio.to_thread.run_sync(self._lay_over, workspace, copy, tuple(changes))
            yield copy
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(shutil.rmtree, folder, True)

    def _lay_over(self, workspace: Path, copy: Path, changes: tuple[Tampering, ...]) -> None:
        shutil.copytree(workspace, copy, symlinks=True)
        for tampering in changes:
            target = copy / tampering.path
            _remove(target)
            state = self.files.get(tampering.path)
            if state is None:
                continue  # added by the agent: the pristine tree has no such path
            _clear_way(copy, target)
            if state.kind == "file":
                target.write_bytes(self.blobs[state.digest])
                target.chmod(state.mode)

    # Stored for the stop hooks, whose "run" spans many processes ------------------------

    def save(self, folder: Path) -> None:
        """Write the record to `folder` (a manifest and the pristine files by digest)."""
        blobs = folder / "blobs"
        blobs.mkdir(parents=True, exist_ok=True)
        for digest, data in self.blobs.items():
            (blobs / digest).write_bytes(data)
        manifest = {
            "rules": list(self.paths.rules),
            "files": {
                path: {"kind": s.kind, "mode": s.mode, "digest": s.digest}
                for path, s in sorted(self.files.items())
            },
        }
        temporary = folder / f"{_MANIFEST}.tmp"
        temporary.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        temporary.replace(folder / _MANIFEST)

    @classmethod
    def load(cls, folder: Path, paths: ProtectedPaths) -> PathGuard | None:
        """The record `save` wrote for the same rules, or None when there is none (or it was
        written for other rules). Raises `ValueError` for a damaged record."""
        try:
            manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if not isinstance(manifest, dict) or manifest.get("rules") != list(paths.rules):
            return None
        files: dict[str, PathState] = {}
        blobs: dict[str, bytes] = {}
        raw = manifest.get("files")
        if not isinstance(raw, Mapping):
            raise ValueError(f"{folder / _MANIFEST} has no 'files' object")
        for path, item in raw.items():
            try:
                state = PathState(item["kind"], int(item["mode"]), str(item["digest"]))
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{folder / _MANIFEST}: bad entry for {path!r}") from None
            files[str(path)] = state
            if state.kind == "file":
                data = (folder / "blobs" / state.digest).read_bytes()
                if hashlib.sha256(data).hexdigest() != state.digest:
                    raise ValueError(f"the pristine copy of {path} in {folder} is damaged")
                blobs[state.digest] = data
        return cls(paths, files, blobs)


def _remove(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def _clear_way(root: Path, target: Path) -> None:
    """Make `target`'s folders real folders inside `root` (a link or file on the way is
    removed), so that writing `target` cannot land outside the copy."""
    here = root
    for part in target.relative_to(root).parts[:-1]:
        here = here / part
        try:
            info = here.lstat()
        except FileNotFoundError:
            here.mkdir()
            continue
        if not stat.S_ISDIR(info.st_mode):
            here.unlink()
            here.mkdir()
