"""Run a child process so that nothing it starts outlives it.

`run_process` starts the child in a session (and so a process group) of its own, with a minimal
environment, merges stdout and stderr and keeps only the tail. When the child exits, anything it
left running is killed; on timeout or cancellation all of it gets SIGTERM, a short grace, then
SIGKILL.

"All of it" is more than the process group: a descendant can leave the group (``setsid``, a
daemon's double fork). On Linux the command therefore runs under a small supervisor,
`harness._process._reaper`, a child subreaper to which every such orphan is reparented, so it
stays in the supervisor's tree and is killed with the rest. Elsewhere (macOS, the BSDs) there is no
subreaper and the process group is the limit: a descendant that starts a session of its own
escapes.

The deadline is a cancel scope from the injected clock. The grace and the final drain wait for
the operating system, so they run on the event loop's own clock under a shielded scope: a
simulated clock that never moves cannot leave a process behind.

The output pipe doubles as a barrier: every process of the group inherits its write end, so
reading it to end-of-file means every one of them has exited.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process
from attrs import define, field, frozen

from .._clock import Clock
from .._errors import ConfigurationError
from .._validate import check_positive

DEFAULT_MAX_OUTPUT = 64 * 1024
KILL_GRACE = 2.0
REAPER = Path(__file__).with_name("_reaper.py")
# The supervisor's own grace is KILL_GRACE; then it needs a moment to kill and reap the rest.
_REAPER_MARGIN = 1.0
_BASE_ENV = ("PATH", "HOME", "LANG")


@frozen
class ProcessResult:
    """What a finished (or killed) child left: its exit code and the tail of its output.

    `exit_code` follows `subprocess`: negative means the child was ended by that signal, 127
    that it could not be started at all (the output then says why).
    """

    exit_code: int
    output_tail: str
    timed_out: bool
    truncated: bool
    duration: float
    output_head: str = ""
    """When the output was cut: its first bytes (as many as the tail keeps at most), never
    overlapping the tail; empty otherwise."""
    omitted: int = 0
    """How many bytes of output lay between `output_head` and `output_tail` and were dropped."""

    @property
    def ok(self) -> bool:
        """True when the child exited 0 within its time."""
        return self.exit_code == 0 and not self.timed_out


def minimal_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """PATH, HOME and LANG from this process (nothing else it holds), then `extra` on top."""
    env = {name: os.environ[name] for name in _BASE_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    return env


@define
class _Tail:
    """The first and the last `limit` bytes of a stream, and how much lay between them."""

    limit: int
    data: bytearray = field(factory=bytearray)
    head: bytearray = field(factory=bytearray)
    size: int = 0
    truncated: bool = False

    def feed(self, chunk: bytes) -> None:
        if len(self.head) < self.limit:
            self.head += chunk[: self.limit - len(self.head)]
        self.size += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.limit:
            self._trim()

    def _trim(self) -> None:
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]
            self.truncated = True

    def text(self) -> str:
        self._trim()
        return self.data.decode("utf-8", errors="replace")

    def head_text(self) -> str:
        """The bytes before the tail (the head, less what the tail also holds), when cut."""
        self._trim()
        if not self.truncated:
            return ""
        before_tail = self.size - len(self.data)
        return bytes(self.head[:before_tail]).decode("utf-8", errors="replace")

    def omitted(self) -> int:
        self._trim()
        return max(self.size - len(self.data) - len(self.head), 0)


async def run_process(
    argv_or_shell: str | Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str] | None,
    timeout: float | None,  # noqa: ASYNC109 - the deadline is a cancel scope on `clock`
    clock: Clock,
    max_output: int = DEFAULT_MAX_OUTPUT,
    stdin: bytes | None = None,
) -> ProcessResult:
    """Run a command to completion or to its deadline, leaving nothing of it running.

    A string runs through ``/bin/sh -c``; a sequence is an argv. `env` is added to a minimal
    environment (see `minimal_env`), never to this process's own. Cancellation from outside
    kills the process group and then propagates.
    """
    check_positive("timeout", timeout, allow_none=True)
    check_positive("max_output", max_output, integer=True)
    argv = ["/bin/sh", "-c", argv_or_shell] if isinstance(argv_or_shell, str) else [*argv_or_shell]
    if not argv:
        raise ConfigurationError("the command to run is empty")
    started = clock.now()
    workdir = Path(cwd)
    if not await anyio.Path(workdir).is_dir():
        return _not_started(f"working directory {str(workdir)!r} does not exist", clock, started)
    launch = _contained(argv)
    try:
        # Shielded: a cancel landing after the fork but before the handle exists would leak it.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                launch,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=minimal_env(env),
                start_new_session=True,
            )
    except OSError as exc:
        return _not_started(f"{launch[0]}: {exc.strerror or exc}", clock, started)
    tail = _Tail(max_output)
    deadline = math.inf if timeout is None else started + timeout
    try:
        with clock.deadline_scope(deadline) as scope:
            await _supervise(process, tail, stdin)
    finally:
        with anyio.CancelScope(shield=True):
            await _stop_group(process, tail)
    assert process.returncode is not None
    return ProcessResult(
        exit_code=process.returncode,
        output_tail=tail.text(),
        timed_out=scope.cancelled_caught,
        truncated=tail.truncated,
        duration=clock.now() - started,
        output_head=tail.head_text(),
        omitted=tail.omitted(),
    )


def _contained(argv: list[str]) -> list[str]:
    """`argv` under the supervisor that no descendant escapes, where there is one (Linux)."""
    # A frozen application's executable is not a Python interpreter that could run the script.
    if sys.platform.startswith("linux") and sys.executable and not getattr(sys, "frozen", False):
        parent = str(os.getpid())  # passed in: this process may die before the reaper asks
        return [sys.executable, "-I", "-S", str(REAPER), f"{KILL_GRACE:g}", parent, *argv]
    return argv


def _not_started(why: str, clock: Clock, started: float) -> ProcessResult:
    return ProcessResult(127, why, timed_out=False, truncated=False, duration=clock.now() - started)


async def _supervise(process: Process, tail: _Tail, stdin: bytes | None) -> None:
    """Feed stdin, pump output, and once the child exits, kill what it left in its group."""
    assert process.stdout is not None
    pumped = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, process.stdout, tail, pumped)
        if stdin is not None:
            tg.start_soon(_feed, process, stdin)
        await process.wait()
        _signal_group(process.pid, signal.SIGKILL)
        with anyio.move_on_after(KILL_GRACE):
            await pumped.wait()
        tg.cancel_scope.cancel()


async def _pump(stream: ByteReceiveStream, tail: _Tail, done: anyio.Event) -> None:
    try:
        async for chunk in stream:
            tail.feed(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    done.set()


async def _feed(process: Process, data: bytes) -> None:
    assert process.stdin is not None
    try:
        await process.stdin.send(data)
        await process.stdin.aclose()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the child stopped reading; its exit code says the rest


async def _stop_group(process: Process, tail: _Tail) -> None:
    """SIGTERM the group, wait a grace, SIGKILL it, reap the child and drain the pipe.

    The supervisor, if there is one, gets the SIGTERM too and stops its whole tree within its
    own grace; the group's SIGKILL is then for whatever a broken supervisor left behind.
    """
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE + _REAPER_MARGIN):
            await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()
    assert process.stdout is not None
    with anyio.move_on_after(KILL_GRACE):
        await _pump(process.stdout, tail, anyio.Event())
    await process.aclose()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is empty
        os.killpg(pgid, signum)
