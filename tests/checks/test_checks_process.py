"""`harness.extend.run_process`: a child's whole process tree is gone when it returns, including
what left its process group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import anyio
import anyio.to_thread
import pytest
from _checks_support import snapshot
from _processes import gone, running

import harness._process._child as process_module
from checks import CommandCheck, LocalSandbox
from harness import ConfigurationError
from harness.extend import Clock, ProcessResult, run_process
from harness.testing import FakeClock

ROOT = Path(__file__).resolve().parents[2]


def _clock(fake: object) -> Clock:
    """`FakeClock` typed as a `Clock` (its deadline scope is a generator context manager)."""
    return cast(Clock, fake)


async def _read_pid(fifo: Path) -> int:
    return int(await anyio.to_thread.run_sync(fifo.read_text))


@pytest.mark.anyio
async def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    """Stdout and stderr are captured together and the exit code is the child's."""
    result = await run_process(
        "echo out; echo err >&2; exit 3",
        cwd=tmp_path,
        env=None,
        timeout=30,
        clock=_clock(FakeClock()),
    )
    assert result.exit_code == 3
    assert result.output_tail == "out\nerr\n"
    assert not result.timed_out
    assert not result.truncated
    assert not result.ok


@pytest.mark.anyio
async def test_argv_runs_without_a_shell(tmp_path: Path) -> None:
    """A sequence is an argv: shell syntax in it is passed through literally."""
    result = await run_process(
        ["echo", "$HOME;", "x"], cwd=tmp_path, env=None, timeout=30, clock=_clock(FakeClock())
    )
    assert result.ok
    assert result.output_tail == "$HOME; x\n"


@pytest.mark.anyio
async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    """A timed-out `sleep 100 & sleep 100` leaves neither sleep running."""
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    clock = FakeClock()
    results: list[ProcessResult] = []

    async def run() -> None:
        results.append(
            await run_process(
                f"sleep 100 & echo $! > {fifo}; sleep 100",
                cwd=tmp_path,
                env=None,
                timeout=5,
                clock=_clock(clock),
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        grandchild = await _read_pid(fifo)
        assert running(grandchild)
        clock.advance(5)
    [result] = results
    assert result.timed_out
    assert result.exit_code < 0
    assert result.duration == 5
    assert await gone(grandchild)


@pytest.mark.anyio
async def test_cancellation_kills_the_whole_group(tmp_path: Path) -> None:
    """Cancelling the caller kills the group and then propagates."""
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    finished: list[ProcessResult] = []

    async def run() -> None:
        finished.append(
            await run_process(
                f"sleep 100 & echo $! > {fifo}; sleep 100",
                cwd=tmp_path,
                env=None,
                timeout=None,
                clock=_clock(FakeClock()),
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        grandchild = await _read_pid(fifo)
        tg.cancel_scope.cancel()
    assert finished == []
    assert await gone(grandchild)


@pytest.mark.anyio
async def test_stragglers_are_killed_after_a_normal_exit(tmp_path: Path) -> None:
    """A background process the command leaves behind does not outlive it."""
    result = await run_process(
        "sleep 100 & echo $!", cwd=tmp_path, env=None, timeout=30, clock=_clock(FakeClock())
    )
    assert result.ok
    assert await gone(int(result.output_tail))


@pytest.mark.anyio
async def test_a_child_ignoring_sigterm_gets_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM is followed by SIGKILL after the grace, so trapping TERM does not help."""
    monkeypatch.setattr(process_module, "KILL_GRACE", 0.05)
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    clock = FakeClock()
    results: list[ProcessResult] = []

    async def run() -> None:
        script = f"trap '' TERM; echo $$ > {fifo}; while :; do sleep 0.01; done"
        results.append(
            await run_process(script, cwd=tmp_path, env=None, timeout=1, clock=_clock(clock))
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        shell = await _read_pid(fifo)
        clock.advance(1)
    assert results[0].timed_out
    assert results[0].exit_code == -9
    assert await gone(shell)


@pytest.mark.anyio
async def test_output_keeps_the_tail(tmp_path: Path) -> None:
    """Only the last `max_output` bytes are kept, and the result says it was cut."""
    result = await run_process(
        "seq 1 10000", cwd=tmp_path, env=None, timeout=30, clock=_clock(FakeClock()), max_output=11
    )
    assert result.truncated
    assert result.output_tail == "9999\n10000\n"


@pytest.mark.anyio
async def test_environment_is_minimal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child sees PATH, HOME, LANG and what the caller passes, never this process's secrets."""
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    result = await run_process(
        "env", cwd=tmp_path, env={"EXTRA": "1"}, timeout=30, clock=_clock(FakeClock())
    )
    names = {line.split("=", 1)[0] for line in result.output_tail.splitlines()}
    assert "SECRET_TOKEN" not in names
    assert {"PATH", "LANG", "EXTRA"} <= names
    assert names <= {"PATH", "HOME", "LANG", "EXTRA", "PWD", "SHLVL", "_", "OLDPWD"}


@pytest.mark.anyio
async def test_stdin_is_fed_and_closed(tmp_path: Path) -> None:
    """Bytes passed as stdin reach the child, which then sees end-of-file."""
    result = await run_process(
        "tr a-z A-Z", cwd=tmp_path, env=None, timeout=30, clock=_clock(FakeClock()), stdin=b"hello"
    )
    assert result.output_tail == "HELLO"


@pytest.mark.anyio
async def test_without_stdin_the_child_reads_nothing(tmp_path: Path) -> None:
    """With no stdin the child reads end-of-file at once instead of hanging."""
    result = await run_process("cat", cwd=tmp_path, env=None, timeout=30, clock=_clock(FakeClock()))
    assert result.ok
    assert result.output_tail == ""


@pytest.mark.anyio
async def test_missing_program_or_directory_is_a_result(tmp_path: Path) -> None:
    """A program or working directory that does not exist is exit 127 with the cause."""
    clock = FakeClock()
    missing = await run_process(
        ["no-such-program-xyz"], cwd=tmp_path, env=None, timeout=30, clock=_clock(clock)
    )
    assert missing.exit_code == 127
    assert "no-such-program-xyz" in missing.output_tail
    nowhere = await run_process(
        "true", cwd=tmp_path / "gone", env=None, timeout=30, clock=_clock(clock)
    )
    assert nowhere.exit_code == 127
    assert "does not exist" in nowhere.output_tail


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": 0}, "'timeout' must be a positive number (got 0)"),
        ({"max_output": 0}, "'max_output' must be a positive int (got 0)"),
    ],
)
async def test_bad_arguments_are_configuration_errors(
    tmp_path: Path, kwargs: dict[str, int], message: str
) -> None:
    """A non-positive timeout or output cap is a programmer error naming the argument."""
    arguments: dict[str, object] = {"timeout": 30, **kwargs}
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await run_process(
            "true",
            cwd=tmp_path,
            env=None,
            clock=_clock(FakeClock()),
            **arguments,  # type: ignore[arg-type]
        )


def _kill_leftovers(pids: list[int]) -> None:
    """After a failed assertion, end what the test started so it cannot outlive the suite."""
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


# Each escapes the command's process group, writes its pid to a file and sleeps; the command
# waits until every pid file is written, then exits 0 (or, for the timeout, keeps running).
ESCAPES = {
    "setsid": "setsid sh -c 'echo $$ > {dir}/setsid.pid; exec sleep 1000' &",
    "double fork": (
        "setsid sh -c '(exec sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > {dir}/daemon.pid)' &"
    ),
    "nested sessions": (
        "setsid sh -c 'setsid sh -c \"echo \\$\\$ > {dir}/nested.pid; exec sleep 1000\" & wait' &"
    ),
}


def _escaping_command(folder: Path, then: str = "exit 0") -> str:
    spawn = " ".join(template.format(dir=folder) for template in ESCAPES.values())
    files = " ".join(f"{folder}/{name}.pid" for name in ("setsid", "daemon", "nested"))
    return f"{spawn} for f in {files}; do while [ ! -s $f ]; do sleep 0.01; done; done; {then}"


def _pids(folder: Path) -> list[int]:
    return [int((folder / f"{name}.pid").read_text()) for name in ("setsid", "daemon", "nested")]


@pytest.mark.anyio
async def test_a_setsid_or_double_forked_descendant_does_not_outlive_the_command(
    tmp_path: Path,
) -> None:
    """Descendants that left the process group (setsid, a daemon's double fork, a session
    inside a session) are killed when the command exits: the supervisor adopted them."""
    result = await run_process(
        _escaping_command(tmp_path), cwd=tmp_path, env=None, timeout=60, clock=_clock(FakeClock())
    )
    pids = _pids(tmp_path)
    try:
        assert result.ok, result.output_tail
        for pid in pids:
            assert await gone(pid), f"process {pid} outlived the command"
    finally:
        _kill_leftovers(pids)


@pytest.mark.anyio
async def test_a_timeout_kills_descendants_that_left_the_group(tmp_path: Path) -> None:
    """At the deadline, the escaped descendants get the same SIGTERM as the group."""
    clock = FakeClock()
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    results: list[ProcessResult] = []

    async def run() -> None:
        command = _escaping_command(tmp_path, then=f"echo up > {fifo}; sleep 1000")
        results.append(
            await run_process(command, cwd=tmp_path, env=None, timeout=5, clock=_clock(clock))
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(fifo.read_text)
        pids = _pids(tmp_path)
        assert all(running(pid) for pid in pids)
        clock.advance(5)
    try:
        assert results[0].timed_out
        for pid in pids:
            assert await gone(pid), f"process {pid} outlived the timeout"
    finally:
        _kill_leftovers(pids)


@pytest.mark.anyio
async def test_a_check_commands_escaped_descendants_do_not_outlive_the_check(
    tmp_path: Path,
) -> None:
    """A `CommandCheck` on the `LocalSandbox` leaves nothing running, even what left its group."""
    check = CommandCheck(_escaping_command(tmp_path), sandbox=LocalSandbox())
    reason = await check.check(snapshot(tmp_path))
    pids = _pids(tmp_path)
    try:
        assert reason is None
        for pid in pids:
            assert await gone(pid), f"process {pid} outlived the check"
    finally:
        _kill_leftovers(pids)


# A caller of `run_process` that is SIGKILLed `DELAY` seconds after the supervisor was spawned,
# while that interpreter may still be starting: the supervisor must learn it is gone.
KILLED_CALLER = """
import os, signal, sys, time
from pathlib import Path

import anyio

from harness.extend import SystemClock, run_process

folder, delay = Path(sys.argv[1]), float(sys.argv[2])
spawn = anyio.open_process


async def spawn_then_die(*args, **kwargs):
    process = await spawn(*args, **kwargs)
    (folder / "supervisor.pid").write_text(str(process.pid))
    time.sleep(delay)
    os.kill(os.getpid(), signal.SIGKILL)


anyio.open_process = spawn_then_die
command = f"echo $$ > {folder}/tool.tmp && mv {folder}/tool.tmp {folder}/tool.pid; exec sleep 1000"
anyio.run(lambda: run_process(command, cwd=folder, env=None, timeout=None, clock=SystemClock()))
"""


@pytest.mark.parametrize(
    "delay", [0.0, 0.001, 0.002, 0.005, 0.01, 0.02], ids=lambda d: f"{d * 1000:g}ms"
)
def test_a_caller_killed_as_the_supervisor_starts_leaves_nothing_running(
    tmp_path: Path, delay: float
) -> None:
    """SIGKILL of the process running a command, at once or a few ms after the supervisor was
    spawned (before or while its interpreter starts): the supervisor still notices that its
    parent is gone and stops the command's tree within about a second, whichever died first."""
    script = tmp_path / "caller.py"
    script.write_text(KILLED_CALLER)
    caller = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(delay)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert caller.returncode == -signal.SIGKILL, caller.stderr
    supervisor = int((tmp_path / "supervisor.pid").read_text())
    tool_pid = tmp_path / "tool.pid"
    try:
        deadline = time.monotonic() + 10
        while running(supervisor) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the supervisor's cleanup, bounded
        assert not running(supervisor), "the supervisor outlived its killed parent"
        if tool_pid.exists():  # the command may be stopped before it wrote its pid
            assert not running(int(tool_pid.read_text())), "the tool outlived the supervisor"
    finally:
        leftovers = [supervisor, *([int(tool_pid.read_text())] if tool_pid.exists() else [])]
        _kill_leftovers(leftovers)
