"""A check whose command cannot run is not the agent's unfinished work.

Before the first model call, `preflight_command` resolves a command's executable: a bare name
not on ``PATH``, or a path outside the workspace that does not exist, is a
`ConfigurationError` (a path inside the workspace may be the agent's to create); for
``python -m module``, that interpreter is asked whether it finds the module. At a claim,
`cannot_start` reads a finished command's result: exit 126 or 127 (not executable, not
found), or ``python -m runner`` answering that the runner's own module is missing. The check
then raises `CheckCannotRun`: the claim is "not complete" as ever, and the run counts it
(`harness.extend.CheckError`), halting `CheckBroken` after a few claims in a row.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import ConfigurationError

from ._run_check import CheckCannotRun

if TYPE_CHECKING:
    from harness.extend import ProcessResult

__all__ = ["CheckCannotRun", "cannot_start", "executable_of", "preflight_command"]

# Shell words that are not the program a command starts (builtins, keywords, wrappers).
_NOT_PROGRAMS = frozenset(
    {
        "cd",
        "export",
        "set",
        "unset",
        "exec",
        "source",
        ".",
        "eval",
        "if",
        "for",
        "while",
        "until",
        "case",
        "!",
        "{",
        "(",
        "[",
        "[[",
        "test",
        "true",
        "false",
        ":",
        "time",
        "env",
        "command",
        "builtin",
    }
)


def executable_of(command: str | Sequence[str]) -> str | None:
    """The program a command starts, when it can be told without running a shell: the first
    word of a list, or of a shell string that starts with a plain program name."""
    if not isinstance(command, str):
        return command[0] if command else None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words:
        return None
    first = words[0]
    if "=" in first or first in _NOT_PROGRAMS or any(c in first for c in "$`;&|<>(){}*?~"):
        return None
    return first


def _within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def preflight_command(
    command: str | Sequence[str],
    *,
    working_dir: str,
    env: Mapping[str, str],
    workspace: Path | None,
    what: str,
) -> None:
    """Raise `ConfigurationError` when `command`'s executable cannot be found (see module)."""
    program = executable_of(command)
    if program is None:
        return
    shown = command if isinstance(command, str) else " ".join(command)
    if "/" not in program:
        search = env.get("PATH", os.environ.get("PATH", os.defpath))
        found = shutil.which(program, path=search)
        if found is None:
            raise ConfigurationError(
                f"{what}: the command `{shown}` cannot run: {program!r} is not on PATH "
                "(install it, or name it by its path)"
            )
        _preflight_module(command, found, shown, env, workspace, working_dir, what)
        return
    base = (workspace / working_dir) if workspace is not None else Path.cwd()
    path = Path(program) if Path(program).is_absolute() else base / program
    if workspace is not None and _within(path, workspace):
        return  # the agent's to create
    if not path.exists():
        raise ConfigurationError(f"{what}: the command `{shown}` cannot run: {path} does not exist")
    _preflight_module(command, str(path), shown, env, workspace, working_dir, what)


# Exit 3 when the module is missing: any other failure of the probe (an interpreter too old
# for importlib.util, a crash) says nothing about the module, and the claim will tell.
_FIND_MODULE = (
    "import importlib.util, sys\n"
    "try:\n"
    "    found = importlib.util.find_spec(sys.argv[1]) is not None\n"
    "except ImportError:\n"
    "    found = False\n"
    "sys.exit(0 if found else 3)\n"
)


def _preflight_module(
    command: str | Sequence[str],
    program: str,
    shown: str,
    env: Mapping[str, str],
    workspace: Path | None,
    working_dir: str,
    what: str,
) -> None:
    """For ``python -m module``: a `ConfigurationError` when that interpreter, with the check's
    environment and folder, does not find the module (`python` resolves, `pytest` is not
    installed for it: the claim would fail as "cannot start" after the model's turns)."""
    module = _module_of(command)
    if module is None or not Path(program).name.startswith("python"):
        return
    cwd = (workspace / working_dir) if workspace is not None else Path.cwd()
    if not cwd.is_dir():
        return  # the agent's to create: the claim says so
    import subprocess

    try:
        probe = subprocess.run(
            [program, "-c", _FIND_MODULE, module],
            cwd=cwd,
            env={**os.environ, **env},
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return
    if probe.returncode == 3:
        raise ConfigurationError(
            f"{what}: the command `{shown}` cannot run: {program} finds no module {module!r} "
            f"(install it for that interpreter: {program} -m pip install {module.split('.')[0]})"
        )


def _module_of(command: str | Sequence[str]) -> str | None:
    """The module of ``python -m module ...``, when the command is one."""
    words: Sequence[str]
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return None
    else:
        words = command
    for index, word in enumerate(words[:-1]):
        if word == "-m":
            return words[index + 1]
    return None


def cannot_start(
    command: str | Sequence[str], result: ProcessResult, workspace: Path | None, working_dir: str
) -> str | None:
    """Why the finished `command` could not start at all, or None when it ran."""
    if result.timed_out or result.exit_code < 0:
        return None
    program = executable_of(command)
    if result.exit_code in (126, 127):
        if program is not None and "/" in program and workspace is not None:
            path = Path(program)
            path = path if path.is_absolute() else workspace / working_dir / path
            if _within(path, workspace):
                return None  # a script of the workspace's: the agent's to write or fix
        what = "was not found" if result.exit_code == 127 else "is not executable"
        return f"exited with code {result.exit_code}: the program it starts {what}"
    module = _module_of(command)
    if module is not None and result.exit_code != 0:
        root = module.split(".")[0]
        output = result.output_head + result.output_tail
        if f"No module named {module}" in output or f"No module named '{root}'" in output:
            return f"cannot start: the module it runs, {module}, is not installed"
    return None
