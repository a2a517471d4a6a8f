"""`CommandCheck`: a verify command must exit 0, run through a sandbox with a timeout.

`run_in_workspace` is shared with `TestSuiteCheck`: it resolves the working folder inside the
workspace (never outside it), runs the command (its Python bytecode cached outside the
workspace, `checks._bytecode`) and returns the `ProcessResult`, or a reason when the command
could not even be run. Nothing here raises for the agent's doing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace
from harness.extend import ProcessResult, positive

from ._bytecode import bytecode_env
from ._cannot_run import CheckCannotRun, cannot_start, preflight_command
from ._compose import Combinable
from ._sandbox import LocalSandbox, SandboxProvider

TAIL_CHARS = 1500


def command_text(command: str | Sequence[str]) -> str:
    return command if isinstance(command, str) else " ".join(command)


def convert_command(value: object) -> str | tuple[str, ...]:
    if isinstance(value, str):
        if not value.strip():
            raise ConfigurationError("'command' must not be empty")
        return value
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        return tuple(str(v) for v in value)
    raise ConfigurationError(
        f"'command' must be a shell string or a non-empty list of strings (got {value!r})"
    )


def convert_env(value: Mapping[str, str]) -> dict[str, str]:
    env = dict(value)
    for key, item in env.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ConfigurationError(f"'env' must map names to strings (got {key!r}: {item!r})")
    return env


def validate_sandbox(instance: object, attribute: Any, value: object) -> None:
    if not isinstance(value, SandboxProvider):
        raise ConfigurationError(f"'sandbox' must be a SandboxProvider (got {value!r})")


async def run_in_workspace(
    state: SessionStateSnapshot,
    command: str | Sequence[str],
    *,
    working_dir: str,
    timeout: float | None,  # noqa: ASYNC109 - handed to the sandbox, which owns the deadline
    sandbox: SandboxProvider,
    env: Mapping[str, str],
) -> ProcessResult | str:
    """The command's result, or why it could not run (no workspace, a folder outside it).

    A command that could not start at all (`cannot_start`: not found, not executable, its
    runner's module missing) raises `CheckCannotRun`, whose message is the claim's reason."""
    if state.workspace is None:
        return f"`{command_text(command)}` cannot run: the run has no workspace"
    try:
        cwd = resolve_in_workspace(state.workspace, working_dir)
    except WorkspaceEscape as exc:
        return f"`{command_text(command)}` cannot run: {exc}"
    async with bytecode_env(sandbox, state.workspace) as bytecode:
        result = await sandbox.run(
            command, cwd=cwd, timeout=timeout, env={**bytecode, **env}, workspace=state.workspace
        )
    why = cannot_start(command, result, state.workspace, working_dir)
    if why is not None:
        raise CheckCannotRun(with_output(f"`{command_text(command)}` {why}", result))
    return result


def preflight_of(
    command: str | Sequence[str],
    working_dir: str,
    env: Mapping[str, str],
    sandbox: SandboxProvider,
    workspace: Path | None,
    what: str,
) -> None:
    """`preflight_command` for a command run by the local sandbox (a sandbox of another kind
    sees other paths: it is left to say so at the claim)."""
    if isinstance(sandbox, LocalSandbox):
        preflight_command(command, working_dir=working_dir, env=env, workspace=workspace, what=what)


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The end of `text`, cut at a line start, at most `limit` characters."""
    text = text.rstrip()
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    newline = cut.find("\n")
    return "..." + (cut[newline:] if 0 <= newline < limit // 2 else cut)


def failure_headline(
    command: str | Sequence[str], result: ProcessResult, timeout: float | None
) -> str:
    """One line saying how the command failed: timed out, killed, or its exit code."""
    shown = command_text(command)
    if result.timed_out:
        return f"`{shown}` did not finish within {timeout:g}s and was stopped"
    if result.exit_code < 0:
        return f"`{shown}` was killed by signal {-result.exit_code}"
    return f"`{shown}` exited with code {result.exit_code}"


def with_output(headline: str, result: ProcessResult) -> str:
    """`headline`, then the end of the output; "(no output)" ends the headline's first line
    when there is none, so it is never read as part of what follows (a list of names)."""
    output = tail(result.output_tail)
    if not output:
        first, newline, rest = headline.partition("\n")
        return f"{first} (no output){newline}{rest}"
    return f"{headline}\nthe end of its output:\n{output}"


@frozen
class CommandCheck(Combinable):
    """Complete when `command` exits 0 in `working_dir` (inside the workspace) within `timeout`.

    `what` says in words what the command verifies; it becomes the description the agent
    reads up front.
    """

    command: str | tuple[str, ...] = field(converter=convert_command)
    working_dir: str = "."
    timeout: float | None = field(default=120.0, validator=positive(allow_none=True))
    sandbox: SandboxProvider = field(factory=LocalSandbox, validator=validate_sandbox)
    what: str | None = None
    env: Mapping[str, str] = field(factory=dict, converter=convert_env, hash=False)

    def description(self) -> str:
        where = "" if self.working_dir in (".", "") else f" in {self.working_dir}"
        run = f"`{command_text(self.command)}`{where} exits with code 0"
        return f"{self.what}: {run}." if self.what else f"The command {run}."

    def preflight(self, workspace: Path | None) -> None:
        """Before the first model call: the command's program can be found (see
        `preflight_command`), else a `ConfigurationError`."""
        preflight_of(
            self.command, self.working_dir, self.env, self.sandbox, workspace, "CommandCheck"
        )

    async def check(self, state: SessionStateSnapshot) -> str | None:
        result = await run_in_workspace(
            state,
            self.command,
            working_dir=self.working_dir,
            timeout=self.timeout,
            sandbox=self.sandbox,
            env=self.env,
        )
        if isinstance(result, str):
            return result
        if result.ok:
            return None
        return with_output(failure_headline(self.command, result, self.timeout), result)
