"""`FilesCheck`: required artifacts exist in the workspace (optionally non-empty)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio.to_thread
from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace
from harness.checkpoints import WorkProgress

from ._compose import Combinable
from ._progress import Assessment

_SHOW = 5
_GLOB_CHARS = frozenset("*?[")


def _paths(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, Sequence) or not value:
        raise ConfigurationError(f"'paths' must be a non-empty list of paths (got {value!r})")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigurationError(f"'paths' must hold non-empty strings (got {item!r})")
        if Path(item).is_absolute() or ".." in Path(item).parts:
            raise ConfigurationError(
                f"'paths' entries are relative to the workspace and stay in it (got {item!r})"
            )
    return items


def is_glob(pattern: str) -> bool:
    return any(char in _GLOB_CHARS for char in pattern)


@frozen
class FilesCheck(Combinable):
    """Complete when every path exists in the workspace (and, with `non_empty`, has content).

    An entry may name a file or a folder (non-empty: has an entry); one with ``*``, ``?`` or
    ``[`` is a glob that must match at least one. Every path is resolved inside the
    workspace; a run with no workspace is never complete.
    """

    paths: tuple[str, ...] = field(converter=_paths)
    non_empty: bool = False

    def description(self) -> str:
        what = "exist and are not empty" if self.non_empty else "exist"
        return f"These files {what} in the workspace: {', '.join(self.paths)}."

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """The verdict, and how many of the entries are present (and not empty, if asked)."""
        workspace = state.workspace
        if workspace is None:
            return Assessment("the run has no workspace, so the required files cannot exist")
        return await anyio.to_thread.run_sync(self._inspect, workspace)

    def _inspect(self, workspace: Path) -> Assessment:
        missing: list[str] = []
        empty: list[str] = []
        for entry in self.paths:
            files = _matches(workspace, entry)
            if not files:
                missing.append(f"{entry} (no match)" if is_glob(entry) else entry)
            elif self.non_empty and not any(_has_content(f) for f in files):
                empty.append(entry)
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} of {len(self.paths)}: {_some(missing)}")
        if empty:
            parts.append(f"empty: {_some(empty)}")
        absent = [*missing, *empty]
        progress = WorkProgress(len(self.paths) - len(absent), len(self.paths), "files", absent)
        return Assessment("; ".join(parts) if parts else None, progress)


def _matches(workspace: Path, entry: str) -> list[Path]:
    """The files `entry` names (a path or a glob), only those really inside the workspace."""
    candidates = sorted(workspace.glob(entry)) if is_glob(entry) else [workspace / entry]
    found = []
    for candidate in candidates:
        try:
            path = resolve_in_workspace(workspace, candidate.relative_to(workspace))
        except WorkspaceEscape:
            continue
        if path.is_file() or path.is_dir():
            found.append(path)
    return found


def _has_content(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    return path.stat().st_size > 0


def _some(items: list[str]) -> str:
    more = f" and {len(items) - _SHOW} more" if len(items) > _SHOW else ""
    return ", ".join(items[:_SHOW]) + more
