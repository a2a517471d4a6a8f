"""Sandboxes: chosen by name; bubblewrap really isolates (read-only system, no network)."""

from __future__ import annotations

import os
import select
import shutil
import socket
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from _checks_support import as_clock, snapshot

from checks import (
    BubblewrapSandbox,
    LocalSandbox,
    SandboxProvider,
    TestSuiteCheck,
    sandbox_by_name,
)
from harness import ConfigurationError
from harness.testing import FakeClock

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bwrap is not installed (apt-get install bubblewrap); the isolation cannot be tested",
)


def test_sandboxes_by_name() -> None:
    """'local' and 'bubblewrap' name the two sandboxes; anything else is refused."""
    assert sandbox_by_name("local") == LocalSandbox()
    assert isinstance(sandbox_by_name("local"), SandboxProvider)
    with pytest.raises(ConfigurationError, match=r"unknown sandbox 'docker' \(expected one of"):
        sandbox_by_name("docker")


def test_bubblewrap_missing_is_a_configuration_error() -> None:
    """Choosing bubblewrap where bwrap is not installed says what is missing and how to fix it."""
    with pytest.raises(ConfigurationError) as info:
        BubblewrapSandbox(executable="no-such-bwrap-program")
    message = str(info.value)
    assert "needs the 'no-such-bwrap-program' program, which is not on PATH" in message
    assert "apt-get install bubblewrap" in message


def test_bubblewrap_read_only_paths_must_be_absolute() -> None:
    """Extra read-only binds are absolute paths; a relative one is refused up front."""
    with pytest.raises(ConfigurationError, match="'read_only' paths must be absolute"):
        BubblewrapSandbox(read_only=("venv",), executable=sys.executable)


@needs_bwrap
@pytest.mark.anyio
async def test_bubblewrap_workspace_is_writable_and_the_system_is_not(tmp_path: Path) -> None:
    """Inside bwrap the workspace takes writes; /etc and folders outside the workspace do not."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    sandbox = sandbox_by_name("bubblewrap")
    script = f"echo ok > made.txt; touch /etc/bwrap-probe; touch {outside}; echo end"
    result = await sandbox.run(script, cwd=workspace, timeout=60, workspace=workspace)
    assert (workspace / "made.txt").read_text() == "ok\n"
    assert not await anyio.Path("/etc/bwrap-probe").exists()
    assert not outside.exists()
    assert "Read-only file system" in result.output_tail


@needs_bwrap
@pytest.mark.anyio
async def test_bubblewrap_has_no_network(tmp_path: Path) -> None:
    """A server listening on this machine's loopback cannot be reached from inside bwrap."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    probe = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        "    print('REACHED')\n"
        "except OSError as exc:\n"
        "    print('BLOCKED', type(exc).__name__)\n"
    )
    try:
        result = await BubblewrapSandbox().run(
            ["/usr/bin/python3", "-c", probe], cwd=tmp_path, timeout=60, workspace=tmp_path
        )
    finally:
        server.close()
    assert result.exit_code == 0, result.output_tail
    assert result.output_tail.startswith("BLOCKED")


def _live_pids(command: str) -> list[int]:
    """Processes (not zombies) whose command line is exactly `command`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline == f"{command} " and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _wait_exit(pid: int) -> bool:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], 5.0)[0])
    finally:
        os.close(fd)


@needs_bwrap
@pytest.mark.anyio
async def test_bubblewrap_timeout_leaves_nothing_running(tmp_path: Path) -> None:
    """A timed-out command inside bwrap is killed with everything it started."""
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    clock = FakeClock()
    sandbox = BubblewrapSandbox(clock=as_clock(clock))
    marker = "1234.5678"
    results = []

    async def run() -> None:
        script = (
            f"sleep {marker} & a=$!; sleep {marker} & b=$!; "
            "until grep -q ^sleep /proc/$a/cmdline && grep -q ^sleep /proc/$b/cmdline; do :; done; "
            f"echo up > {fifo.name}; wait"
        )
        results.append(await sandbox.run(script, cwd=tmp_path, timeout=10, workspace=tmp_path))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(fifo.read_text)
        assert len(_live_pids(f"sleep {marker}")) == 2
        clock.advance(10)
    assert results[0].timed_out
    for pid in _live_pids(f"sleep {marker}"):
        assert await anyio.to_thread.run_sync(_wait_exit, pid)
    assert _live_pids(f"sleep {marker}") == []


@needs_bwrap
@pytest.mark.anyio
async def test_test_suite_check_runs_inside_bubblewrap(tmp_path: Path) -> None:
    """TestSuiteCheck runs through the sandbox it is given and reports the failure from inside."""
    (tmp_path / "check.sh").write_text("test -w . && ! touch /usr/probe 2>/dev/null && exit 3\n")
    check = TestSuiteCheck("sh check.sh", sandbox=BubblewrapSandbox())
    assert await check.check(snapshot(tmp_path)) == "`sh check.sh` exited with code 3 (no output)"
