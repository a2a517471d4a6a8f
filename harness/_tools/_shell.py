"""`run_command`: the agent runs a shell command in its workspace, under a sandbox.

The tool lives in `harness` and needs something that runs a command; `harness` imports none of
the other packages, so what it needs is a protocol here, `CommandSandbox`, with the same `run`
method as the sandboxes in `checks` (`LocalSandbox`, `BubblewrapSandbox`), which therefore
satisfy it as they are. Without one the command runs locally through `run_process`, its
deadline on the run's clock.

Every call gets a deadline, its whole process tree is killed when the command ends or the
deadline passes (`run_process`'s supervisor), the model sees the head and the tail of the output
with a marker saying how much was cut, and the environment carries no provider keys: it starts
from `minimal_env` (PATH, HOME and LANG), and names that look like secrets (`is_secret_name`)
are refused in the extra variables a program may configure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from .._errors import ConfigurationError
from .._fs._workspace import resolve_in_workspace
from .._process._bytecode import bytecode_env
from .._process._child import ProcessResult, run_process
from .._process._sandbox import CommandSandbox
from .._secrets import is_secret_name
from .._validate import check_positive
from ._base import Tool, ToolContext

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
MAX_OUTPUT = 16_000  # characters of output the model sees at most, head and tail together
# The tool's own deadline lets the process deadline fire first and the tree be stopped cleanly.
_STOP_MARGIN = 10.0


def _check_env(env: Mapping[str, str], pass_env: Sequence[str]) -> None:
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ConfigurationError(f"'env' must map names to strings (got {key!r}: {value!r})")
    if not all(isinstance(n, str) for n in pass_env):
        raise ConfigurationError(f"'pass_env' must be a list of names (got {pass_env!r})")
    for name in [*env, *pass_env]:
        if is_secret_name(name):
            raise ConfigurationError(
                f"run_command: {name!r} looks like a credential and is never given to the "
                "agent's commands (names with KEY, TOKEN, SECRET, PASSWORD, ... are refused)"
            )


def run_command_tool(
    sandbox: CommandSandbox | None = None,
    *,
    timeout: float | None = None,
    max_timeout: float = MAX_TIMEOUT,
    max_output: int = MAX_OUTPUT,
    env: Mapping[str, str] | None = None,
    pass_env: Sequence[str] = (),
) -> Tool:
    """The `run_command` tool: a shell command in the workspace, under `sandbox`.

    `timeout` is a call's deadline unless the model asks for another (default: 60 seconds, or
    `max_timeout` if that is less), at most `max_timeout` seconds. The model sees at most
    `max_output` characters of output, half from its start and half from its end. `env` adds
    variables to the minimal environment (which points Python's bytecode at a cache outside
    the workspace with no image of it, or, under a sandbox that is not the local one, turns
    the cache off: `harness.extend.bytecode_env`) and `pass_env` copies the named ones from
    this process's at call time; a name that looks like a credential (`is_secret_name`) is a
    `ConfigurationError` in either.
    """
    check_positive("timeout", timeout, allow_none=True, owner="run_command")
    check_positive("max_timeout", max_timeout, owner="run_command")
    if timeout is None:
        timeout = min(DEFAULT_TIMEOUT, max_timeout)
    check_positive("max_output", max_output, integer=True, owner="run_command")
    if timeout > max_timeout:
        raise ConfigurationError(
            f"run_command: 'timeout' ({timeout:g}) must not exceed 'max_timeout' ({max_timeout:g})"
        )
    if sandbox is not None and not isinstance(sandbox, CommandSandbox):
        raise ConfigurationError(f"'sandbox' must be a CommandSandbox (got {sandbox!r})")
    if isinstance(pass_env, str):
        raise ConfigurationError(f"'pass_env' must be a list of names (got {pass_env!r})")
    extra = dict(env or {})
    names = tuple(pass_env)
    _check_env(extra, names)
    default_timeout, limit = timeout, max_timeout
    # A command on this machine's paths keeps its bytecode in the user's cache, as a check's
    # does (`bytecode_env`): a test run of the agent's then skips compiling pytest again.
    local = sandbox is None or getattr(sandbox, "name", None) == "local"

    async def run_command(
        command: str,
        ctx: ToolContext,
        timeout: float | None = None,  # noqa: ASYNC109 - the process's own deadline
        cwd: str = ".",
    ) -> str:
        """Run a shell command (/bin/sh -c) in the workspace and return its exit code and
        output (stdout and stderr together; a long output keeps its start and its end). Every
        process it starts is stopped when it ends or times out.

        Args:
            command: the shell command line, e.g. "python -m pytest -q"
            timeout: seconds before the command is stopped
            cwd: the folder to run in, relative to the workspace
        """
        if not command.strip():
            raise ValueError("'command' must not be empty")
        seconds = default_timeout if timeout is None else timeout
        if not 0 < seconds <= limit:
            raise ValueError(f"'timeout' must be in (0, {limit:g}] seconds (got {timeout!r})")
        if ctx.workspace is None:
            raise RuntimeError("this run has no workspace")
        folder = resolve_in_workspace(ctx.workspace, cwd)
        async with bytecode_env(ctx.workspace, local=local) as bytecode:
            variables = {**bytecode, **{n: os.environ[n] for n in names if n in os.environ}}
            variables.update(extra)
            if sandbox is None:
                result = await run_process(
                    command, cwd=folder, env=variables, timeout=seconds, clock=ctx.clock
                )
            else:
                result = await sandbox.run(
                    command, cwd=folder, timeout=seconds, env=variables, workspace=ctx.workspace
                )
        return render_command_result(result, seconds, max_output)

    return Tool.from_function(run_command, timeout=max_timeout + _STOP_MARGIN)


def render_command_result(result: ProcessResult, timeout: float, max_output: int) -> str:
    """What the model sees: how the command ended, then its output, cut in the middle to
    `max_output` characters with a marker giving the bytes cut and the size in all."""
    if result.timed_out:
        status = (
            f"timed out after {timeout:g}s: the command and every process it started were "
            f"stopped (exit code {result.exit_code})"
        )
    else:
        status = f"exit code: {result.exit_code}"
    head, tail = result.output_head, result.output_tail
    cut = result.omitted
    half = max_output // 2
    if not head and len(tail) > max_output:  # all of it kept, but too long to show
        head, tail = tail[:half], tail[-(max_output - half) :]
        cut += len(result.output_tail[half : -(max_output - half)].encode())
    else:
        if len(head) > half:
            cut += len(head[half:].encode())
            head = head[:half]
        if len(tail) > max_output - half:
            cut += len(tail[: -(max_output - half)].encode())
            tail = tail[-(max_output - half) :]
    output = head + tail
    if cut:
        size = len(head.encode()) + cut + len(tail.encode())
        marker = f"\n[... {cut:,} bytes of output cut here ({size:,} bytes in all) ...]\n"
        output = head + marker + tail
    if not output:
        return f"{status}\n(no output)"
    return f"{status}\n--- output (stdout and stderr) ---\n{output}"
