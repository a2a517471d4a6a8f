"""`open_checkpoints`: the store that fits a workspace, git's or a snapshot store."""

from __future__ import annotations

import os
from pathlib import Path

from .._clock import Clock, SystemClock
from ._base import (
    Backend,
    CheckpointError,
    CheckpointStore,
    NotAWorkspace,
    check_series,
    default_state_dir,
)
from ._git import GitCheckpoints, find_git
from ._snapshot import SnapshotCheckpoints


async def open_checkpoints(
    workspace: str | os.PathLike[str],
    *,
    series: str,
    clock: Clock | None = None,
    backend: Backend = "auto",
    state_dir: str | os.PathLike[str] | None = None,
) -> CheckpointStore:
    """The checkpoint store for `workspace`: git's when it lies in a git work tree (and
    `backend` is ``"auto"`` or ``"git"``), else a snapshot store in `state_dir` (by default
    `default_state_dir(workspace)`, outside the workspace).

    Raises `NotAWorkspace` for a missing folder and `CheckpointError` when ``backend="git"``
    and the folder is not in a git work tree (or git is not installed).
    """
    check_series(series)
    root = await _workspace(workspace)
    clock = clock or SystemClock()
    if backend not in ("auto", "git", "snapshot"):
        raise CheckpointError(f"'backend' must be auto, git or snapshot (got {backend!r})")
    if backend != "snapshot":
        found = await find_git(root, clock)
        if isinstance(found, str):
            if backend == "git":
                raise CheckpointError(f"cannot keep git checkpoints of {str(root)!r}: {found}")
        else:
            return GitCheckpoints(root, found, series=series, clock=clock)
    state = Path(state_dir) if state_dir is not None else default_state_dir(root)
    return SnapshotCheckpoints(root, state, series=series)


async def _workspace(workspace: str | os.PathLike[str]) -> Path:
    import anyio

    path = anyio.Path(os.fspath(workspace))
    if not await path.is_dir():
        what = "does not exist" if not await path.exists() else "is not a folder"
        raise NotAWorkspace(f"workspace {os.fspath(workspace)!r} {what}")
    return Path(await path.resolve())
