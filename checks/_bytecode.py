"""Where a check's Python commands keep bytecode: outside the workspace, nothing of the workspace.

Python trusts a module's cached bytecode while the source's mtime, in whole seconds, and its
size are unchanged. That rule misses a fix written within the second of the last run
(``a - b`` -> ``a + b``), and a bytecode cache is a place where an agent could plant code that
stands in for a test. So a check's command never uses the workspace's own ``__pycache__``
folders: Python is pointed at a prefix folder (``PYTHONPYCACHEPREFIX``) in the user's cache,
beside the baselines, and the prefix's image of the workspace is removed before and after every
command. What stays is the bytecode of files outside the workspace (the standard library, the
packages of an environment kept outside it), which each command would otherwise compile again:
a second or more for pytest, at every claim. A virtual environment inside the workspace is
compiled afresh at each command, as the agent's own files are: it is where the agent writes.

Only the local sandbox uses the prefix. Another sees other paths (a container) or must not
write outside the workspace (bubblewrap), so its commands neither read nor write bytecode
(`FRESH_BYTECODE`). A check's own `env` that sets ``PYTHONPYCACHEPREFIX`` or
``PYTHONDONTWRITEBYTECODE`` is used as it says.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from ._baseline_cache import default_cache_dir
from ._sandbox import LocalSandbox, SandboxProvider

FRESH_BYTECODE = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONPYCACHEPREFIX": "/nonexistent/harness-check-pycache",
}
"""The environment of a command that neither reads nor writes any bytecode cache."""


def bytecode_prefix() -> Path:
    """The folder a local command's bytecode is cached in: ``bytecode`` in the baselines'
    cache folder (`default_cache_dir`)."""
    return default_cache_dir() / "bytecode"


@asynccontextmanager
async def bytecode_env(
    sandbox: SandboxProvider, workspace: Path | None
) -> AsyncIterator[Mapping[str, str]]:
    """The environment that points a command run by `sandbox` at its bytecode, for as long
    as the block runs; with the prefix, the workspace's image in it is removed on entry and
    on exit (see the module's docstring)."""
    try:
        prefix = bytecode_prefix() if isinstance(sandbox, LocalSandbox) else None
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
