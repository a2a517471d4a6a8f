"""Where a check's Python commands keep bytecode: outside the workspace, nothing of the workspace.

The rule is the harness's (`harness.extend.bytecode_env`, which the agent's own shell tool
follows too): a prefix folder in the user's cache, beside the baselines, whose image of the
workspace is removed before and after every command. Only the local sandbox uses the prefix.
Another sees other paths (a container) or must not write outside the workspace (bubblewrap),
so its commands neither read nor write bytecode (`FRESH_BYTECODE`). A check's own `env` that
sets ``PYTHONPYCACHEPREFIX`` or ``PYTHONDONTWRITEBYTECODE`` is used as it says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from harness.extend import FRESH_BYTECODE, bytecode_prefix
from harness.extend import bytecode_env as _bytecode_env

from ._sandbox import LocalSandbox, SandboxProvider

__all__ = ["FRESH_BYTECODE", "bytecode_env", "bytecode_prefix"]


@asynccontextmanager
async def bytecode_env(
    sandbox: SandboxProvider, workspace: Path | None
) -> AsyncIterator[Mapping[str, str]]:
    """The environment that points a command run by `sandbox` at its bytecode, for as long
    as the block runs (the prefix for the local sandbox, see `harness.extend.bytecode_env`)."""
    async with _bytecode_env(workspace, local=isinstance(sandbox, LocalSandbox)) as env:
        yield env
