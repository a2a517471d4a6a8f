"""Sandboxes that run a check's command: `LocalSandbox` and `BubblewrapSandbox`.

Both run through `harness.extend.run_process`: the command gets a process group of its own, a
minimal environment and a capped output tail, and on timeout or cancellation the whole group is
killed.
`BubblewrapSandbox` adds real isolation with ``bwrap``: the system folders read-only, no
network (every namespace unshared), a private ``/tmp``, and only the workspace writable.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen

from harness import ConfigurationError
from harness.extend import (
    Clock,
    CommandSandbox,
    ProcessResult,
    SystemClock,
    positive,
    run_process,
)

DEFAULT_MAX_OUTPUT = 64 * 1024
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


# The protocol a check's command runs through: the same one as the `run_command` tool's, so a
# sandbox serves both (defined once, in harness, which checks builds on).
SandboxProvider = CommandSandbox


@frozen
class LocalSandbox:
    """The command runs on this machine as this user, in its own process group.

    No isolation beyond a minimal environment: use it for trusted commands, or where the
    machine has nothing better. `clock` times the deadline (the event loop's by default).
    """

    max_output: int = field(default=DEFAULT_MAX_OUTPUT, validator=positive(integer=True))
    clock: Clock = field(factory=SystemClock, eq=False, repr=False)

    name = "local"

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the deadline is a cancel scope on the clock
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult:
        return await run_process(
            command, cwd=cwd, env=env, timeout=timeout, clock=self.clock, max_output=self.max_output
        )


def _absolute_paths(value: Sequence[str | Path]) -> tuple[Path, ...]:
    if isinstance(value, str | Path):
        value = (value,)
    paths = tuple(Path(item) for item in value)
    for path in paths:
        if not path.is_absolute():
            raise ConfigurationError(f"'read_only' paths must be absolute (got {str(path)!r})")
    return paths


def _find_bwrap(executable: str) -> str:
    found = shutil.which(executable)
    if found is None:
        raise ConfigurationError(
            f"the bubblewrap sandbox needs the {executable!r} program, which is not on PATH "
            "(install the 'bubblewrap' package, e.g. apt-get install bubblewrap, or choose "
            'sandbox = "local")'
        )
    return found


@frozen
class BubblewrapSandbox:
    """The command runs under ``bwrap``: read-only system, no network, the workspace writable.

    The system folders (`SYSTEM_PATHS` that exist) are bound read-only, `read_only` adds more
    (for example a virtualenv outside the workspace), ``/tmp`` is a private tmpfs and HOME
    points at it. Choosing this sandbox where ``bwrap`` is not installed is a
    `ConfigurationError` naming what is missing.
    """

    read_only: tuple[Path, ...] = field(default=(), converter=_absolute_paths)
    executable: str = "bwrap"
    max_output: int = field(default=DEFAULT_MAX_OUTPUT, validator=positive(integer=True))
    clock: Clock = field(factory=SystemClock, eq=False, repr=False)
    _program: str = field(init=False, eq=False, repr=False)

    name = "bubblewrap"

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_program", _find_bwrap(self.executable))

    def argv(self, command: str | Sequence[str], *, cwd: Path, workspace: Path | None) -> list[str]:
        """The full ``bwrap`` command line that runs `command` in `cwd`."""
        writable = (workspace or cwd).resolve()
        args = [self._program, "--unshare-all", "--die-with-parent", "--new-session"]
        for system in SYSTEM_PATHS:
            path = Path(system)
            if path.is_symlink():
                args += ["--symlink", str(path.readlink()), system]
            elif path.is_dir():
                args += ["--ro-bind", system, system]
        for extra in self.read_only:
            args += ["--ro-bind", str(extra), str(extra)]
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        args += ["--bind", str(writable), str(writable), "--chdir", str(cwd.resolve())]
        inner = ["/bin/sh", "-c", command] if isinstance(command, str) else [*command]
        return [*args, "--", *inner]

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the deadline is a cancel scope on the clock
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult:
        return await run_process(
            self.argv(command, cwd=cwd, workspace=workspace),
            cwd=cwd,
            env={"HOME": "/tmp", "TMPDIR": "/tmp", **(env or {})},
            timeout=timeout,
            clock=self.clock,
            max_output=self.max_output,
        )


SANDBOXES = ("local", "bubblewrap")


def sandbox_by_name(name: str, **options: Any) -> SandboxProvider:
    """``"local"`` or ``"bubblewrap"`` (also ``"bwrap"``), built with `options`."""
    if name == "local":
        return LocalSandbox(**options)
    if name in ("bubblewrap", "bwrap"):
        return BubblewrapSandbox(**options)
    raise ConfigurationError(f"unknown sandbox {name!r} (expected one of {list(SANDBOXES)})")
