"""Where a command's Python keeps bytecode: outside the workspace, nothing of the workspace.

Python trusts a module's cached bytecode while the source's mtime, in whole seconds, and its
size are unchanged. That rule misses a fix written within the second of the last run
(``a - b`` -> ``a + b``), and a bytecode cache is a place where an agent could plant code that
stands in for a test. So a command run for a check, or for the agent's own shell tool, never
uses the workspace's own ``__pycache__`` folders: Python is pointed at a prefix folder
(``PYTHONPYCACHEPREFIX``) in the user's cache, and the prefix's image of the workspace is
removed before and after every command. What stays is the bytecode of files outside the
workspace (the standard library, the packages of an environment kept outside it), which each
command would otherwise compile again: a second or more for pytest, at every run of the tests.
A virtual environment inside the workspace is compiled afresh at each command, as the agent's
own files are: it is where the agent writes.

Only a command run on this machine's paths uses the prefix (``local``). Another sees other
paths (a container) or must not write outside the workspace (bubblewrap), so its commands
neither read nor write bytecode (`FRESH_BYTECODE`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

CACHE_ENV = "COMPLETION_HARNESS_CACHE"
"""The environment variable that names another cache folder than the platform's."""

FRESH_BYTECODE = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONPYCACHEPREFIX": "/nonexistent/harness-check-pycache",
}
"""The environment of a command that neither reads nor writes any bytecode cache."""


def default_cache_dir() -> Path:
    """``$COMPLETION_HARNESS_CACHE`` when set, else the platform's cache folder (``$XDG_CACHE_HOME``
    or ``~/.cache``; ``~/Library/Caches`` on macOS; ``%LOCALAPPDATA%`` on Windows), under
    ``completion-harness/baselines``. A `RuntimeError` when there is no home folder to put it
    in (no ``HOME`` and no user entry), which callers take as no cache."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    home = Path.home()
    if sys.platform == "darwin":
        base = home / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache")
    return base / "completion-harness" / "baselines"


def bytecode_prefix() -> Path:
    """The folder a local command's bytecode is cached in: ``bytecode`` in the baselines'
    cache folder (`default_cache_dir`)."""
    return default_cache_dir() / "bytecode"


@asynccontextmanager
async def bytecode_env(workspace: Path | None, *, local: bool) -> AsyncIterator[Mapping[str, str]]:
    """The environment that points a command at its bytecode, for as long as the block runs:
    with `local` (the command sees this machine's paths) and a `workspace`, the prefix, whose
    image of the workspace is removed on entry and on exit; else `FRESH_BYTECODE`."""
    try:
        prefix = bytecode_prefix() if local else None
    except RuntimeError:  # no home folder for a cache: as another sandbox's
        prefix = None
    if prefix is None or workspace is None:
        yield FRESH_BYTECODE
        return
    await anyio.to_thread.run_sync(forget_workspace, prefix, workspace)
    try:
        yield {"PYTHONPYCACHEPREFIX": str(prefix)}
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(forget_workspace, prefix, workspace)


def forget_workspace(prefix: Path, workspace: Path) -> None:
    """Remove the bytecode Python would find in `prefix` for any file under `workspace`
    (by its path as given and as resolved: Python names a file by the path it imported it
    from, and a command's working folder is the resolved one)."""
    for path in {os.path.abspath(workspace), os.path.realpath(workspace)}:
        image = prefix.joinpath(*Path(path).parts[1:])  # Python's rule: the anchor dropped
        shutil.rmtree(image, ignore_errors=True)
