"""Protected paths: the files that judge the work, recorded when a run starts.

`ProtectedPaths` holds glob rules relative to the workspace, matched against each path
written with ``/``:

- ``*`` and ``?`` match within one folder name, ``[...]`` is a character class;
- ``**`` as a whole part matches any number of folders, none included (``tests/**``,
  ``**/conftest.py``);
- a rule without wildcards names a file or a folder, and a folder covers everything in it
  (``feature_list.json``, ``tests``); a trailing ``/`` says the same as ``/**``;
- ``*.py`` matches at the top of the workspace only: write ``**/*.py`` for every folder.

Folders named in `ProtectedPaths.ignore` (``__pycache__`` and ``.pytest_cache`` by default:
caches an agent's own test run writes beside the tests) are skipped.

`PathGuard.record` keeps, for every path a rule matches, its kind (file, link, other), its
mode bits, a SHA-256 digest and (for a file) a pristine copy of its bytes. Links are never
followed: a link is recorded as its target's text, and a protected file replaced by a link,
or a protected folder replaced by one, is a change. `PathGuard.changes` compares the
workspace with the record: a path modified, deleted, added under a rule, or replaced by
something of another kind is a `Tampering`, whatever route made it. `PathGuard.pristine`
lays the recorded files over a temporary copy of the workspace, so that checks judge the
agent's work with the verifier as the run found it; the user's workspace is never rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path, PurePosixPath
from typing import Literal

import anyio
from attrs import define, field, frozen

from ._errors import ConfigurationError

Kind = Literal["file", "link", "other"]
Change = Literal["modified", "deleted", "added", "replaced"]
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# Caches a test run writes beside the tests: never compared. The checks' commands neither read
# nor write Python bytecode caches (`checks` sets PYTHONPYCACHEPREFIX), so nothing planted
# there can stand in for a test.
DEFAULT_IGNORE = ("__pycache__", ".pytest_cache")
_WILD = re.compile(r"[*?\[]")
_MANIFEST = "manifest.json"


def _rules(value: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    rules = tuple(value)
    for rule in rules:
        if not isinstance(rule, str) or not rule.strip("/ "):
            raise ConfigurationError(f"'protected' rules must be non-empty strings (got {rule!r})")
        parts = PurePosixPath(rule).parts
        if rule.startswith("/") or ".." in parts or "\\" in rule:
            raise ConfigurationError(
                f"'protected' rules are relative to the workspace and may not leave it "
                f"(got {rule!r})"
            )
    return rules


def _segment(part: str) -> str:
    """One folder name's glob as a regular expression that never crosses ``/``."""
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := part.find("]", i + 2)) != -1:
            body = part[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = re.escape(body[1:] if negate else body).replace(r"\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _compile(rule: str) -> tuple[re.Pattern[str], str]:
    """The rule's pattern (matched against a path with ``/`` appended) and the folder below
    which every match lies (the parts before the first wildcard)."""
    parts = [p for p in rule.split("/") if p not in ("", ".")]
    if rule.endswith("/") or not any(_WILD.search(p) for p in parts):
        parts.append("**")
    regex = "".join("(?:[^/]+/)*" if p == "**" else f"{_segment(p)}/" for p in parts)
    base: list[str] = []
    for part in parts:
        if part == "**" or _WILD.search(part):
            break
        base.append(part)
    return re.compile(regex), "/".join(base)


@frozen
class ProtectedPaths:
    """Glob rules naming the files the agent may not change (see the module's rules)."""

    rules: tuple[str, ...] = field(default=(), converter=_rules)
    ignore: tuple[str, ...] = field(default=DEFAULT_IGNORE, converter=tuple)
    """Folder names whose contents are never recorded or compared (caches)."""
    _compiled: tuple[tuple[str, re.Pattern[str], str], ...] = field(
        init=False, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        compiled = tuple((rule, *_compile(rule)) for rule in self.rules)
        object.__setattr__(self, "_compiled", compiled)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, relative: str | PurePosixPath) -> str | None:
        """The first rule that covers `relative` (a workspace path with ``/``), or None."""
        text = str(relative).strip("/")
        if text in ("", "."):
            return None
        for rule, pattern, _ in self._compiled:
            if pattern.fullmatch(f"{text}/"):
                return rule
        return None

    def bases(self) -> tuple[str, ...]:
        """The folders (relative, ``""`` for the root) under which the rules can match."""
        return tuple(dict.fromkeys(base for _, _, base in self._compiled))


@frozen
class PathState:
    """One protected path as recorded: its kind, permission bits and content digest."""

    kind: Kind
    mode: int
    digest: str


@frozen
class Tampering:
    """A protected path changed since the run started, and the rule that protects it."""

    path: str
    change: Change
    rule: str

    def __str__(self) -> str:
        return f"{self.path} ({self.change}; protected by {self.rule!r})"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "change": self.change, "rule": self.rule}


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
