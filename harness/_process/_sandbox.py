"""`CommandSandbox`: what runs one command for a check or for the agent's shell tool.

The protocol lives here, beside `run_process`, so that what only runs commands (a check's
sandbox) does not load the shell tool to name it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from ._child import ProcessResult


@runtime_checkable
class CommandSandbox(Protocol):
    """Runs one command to completion or its timeout, leaving nothing of it running.

    `workspace` is the folder the command may write (`cwd` lies inside it); a sandbox without
    isolation may ignore it. `checks.LocalSandbox` and `checks.BubblewrapSandbox` are ones.
    """

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the deadline is a cancel scope on the clock
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult: ...
