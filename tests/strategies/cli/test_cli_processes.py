"""`harness run`, `harness hook claude-stop` and `harness check` attacked from outside, as real
processes: the process exits once the run has returned, and SIGTERM or SIGINT ends a run like
a deadline, with a typed halt, the paths printed, a documented exit code and nothing left
running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _processes import running
from attrs import frozen

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60  # seconds a command under test may take before the test calls it hung

BLOCKING_TOOL = '''
import time


def block() -> str:
    """Blocks its thread far longer than any test waits."""
    time.sleep(1000)
    return "woke"
'''


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "strategies", *args]


def _env(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *map(str, paths)])
    return env


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_process_exits_once_the_run_returns_while_a_sync_tool_still_blocks(
    tmp_path: Path, backend: str
) -> None:
    """A sync tool stuck in time.sleep(1000) is abandoned at the 1 s wall time, and the
    command exits then: the tool's thread does not hold the interpreter open (it did on
    asyncio)."""
    (tmp_path / "blocking_tool.py").write_text(BLOCKING_TOOL)
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text(
        json.dumps({"tool_calls": [{"name": "block", "arguments": {}}]}) + "\n"
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "block"\nworkspace = "ws"\ntools = ["blocking_tool:block"]\n'
        '[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        "[budget]\nmax_wall_time = 1\n"
        '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
    )
    done = subprocess.run(
        _harness("run", str(spec), "-q", "--backend", backend),
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=TIMEOUT,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("NOT VERIFIED: budget exceeded: max_wall_time")


# A command that starts a long sleep in its own group and one in a session of its own, writes
# the pids (its own too) and waits: what a CLI agent or a check's test runner might leave.
SPAWNER = """
sleep 1000 &
echo $! > "$PIDS/grandchild.tmp" && mv "$PIDS/grandchild.tmp" "$PIDS/grandchild.pid"
setsid sh -c 'echo $$ > "$PIDS/detached.tmp" && mv "$PIDS/detached.tmp" "$PIDS/detached.pid"
exec sleep 1000' &
echo $$ > "$PIDS/shell.tmp" && mv "$PIDS/shell.tmp" "$PIDS/shell.pid"
wait
"""
PID_NAMES = ("shell", "grandchild", "detached")


@frozen
class Stopped:
    """What a command did after a signal: exit code, output, and the pids it had started."""

    returncode: int
    stdout: str
    stderr: str
    pids: tuple[int, ...]


def _setup(tmp_path: Path) -> Path:
    """A folder for pid files, and the spawner script that fills it."""
    (tmp_path / "pids").mkdir()
    (tmp_path / "spawner.sh").write_text(SPAWNER)
    (tmp_path / "ws").mkdir()
    return tmp_path / "pids"


def _spawner_toml(tmp_path: Path) -> str:
    return f'["sh", "{tmp_path / "spawner.sh"}"]'


def _agent_spec(tmp_path: Path, pids_dir: Path) -> Path:
    """A spec whose CLI agent is the spawner (each turn runs it and waits)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace = "ws"\n'
        f'[model]\ntype = "cli_agent"\nargv = {_spawner_toml(tmp_path)}\n'
        f'env = {{ PIDS = "{pids_dir}" }}\n'
        '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
    )
    return spec


def _wait_for_pids(child: subprocess.Popen[bytes], pids_dir: Path) -> list[int]:
    """The spawner's pids, once it has written them all (polling, bounded)."""
    files = [pids_dir / f"{name}.pid" for name in PID_NAMES]
    deadline = time.monotonic() + TIMEOUT
    while not all(f.exists() for f in files):
        assert child.poll() is None, "the command ended before the spawner had started"
        assert time.monotonic() < deadline, "the spawner never started"
        time.sleep(0.02)  # polling for the files, not waiting for an effect
    return [int(f.read_text()) for f in files]


def _signal_when_started(
    command: list[str], pids_dir: Path, signum: int, stdin: str = ""
) -> Stopped:
    """Start `command`, wait (polling, bounded) until the spawner has written every pid, send
    `signum`, and collect what the command did. Fails if any of the pids outlived it."""
    (pids_dir / "stdin").write_text(stdin)
    with (pids_dir / "stdin").open() as feed:
        child = subprocess.Popen(
            command, stdin=feed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()
        )
    pids: list[int] = []
    try:
        pids = _wait_for_pids(child, pids_dir)
        child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        leftover = [pid for pid in pids if running(pid)]
        for pid in leftover:  # the test must not leak them, whatever it asserts
            os.kill(pid, signal.SIGKILL)
    assert leftover == [], "processes outlived the command"
    return Stopped(child.returncode, stdout.decode(), stderr.decode(), tuple(pids))


def _last_event(transcript: Path) -> dict[str, object]:
    lines = transcript.read_text().splitlines()
    event: dict[str, object] = json.loads(lines[-1])
    return event


SIGNALS = [signal.SIGTERM, signal.SIGINT]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_signal_cancels_a_run_and_the_cli_agents_process_tree(
    tmp_path: Path, backend: str, signum: signal.Signals
) -> None:
    """SIGTERM or SIGINT while the CLI agent runs: its whole tree is killed (what left its
    group too), the transcript ends with run.halted carrying Cancelled, the outcome names
    the workspace and transcript, the exit code is 128 + the signal, and no traceback."""
    pids_dir = _setup(tmp_path)
    spec = _agent_spec(tmp_path, pids_dir)
    transcript = tmp_path / "run.jsonl"
    command = _harness("run", str(spec), "--transcript", str(transcript), "--backend", backend)
    stopped = _signal_when_started(command, pids_dir, signum)
    assert stopped.returncode == 128 + signum, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert stopped.stdout.startswith(f"NOT VERIFIED: cancelled by {signum.name}\n")
    assert f"workspace: {tmp_path / 'ws'}\n" in stopped.stdout
    assert f"transcript: {transcript}\n" in stopped.stdout
    halted = _last_event(transcript)
    assert halted["event"] == "run.halted"
    assert halted["reason"] == {"type": "Cancelled", "by": signum.name}
    assert not any(running(pid) for pid in stopped.pids)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_signal_cancels_a_run_and_the_checks_process_tree(tmp_path: Path, backend: str) -> None:
    """SIGTERM while the completion check's command runs: the check's tree is killed, and the
    run ends Cancelled with exit 143, its fixture's unreached lines no error, its temporary
    workspace removed (JSON outcome)."""
    pids_dir = _setup(tmp_path)
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n{"text": "never reached"}\n')
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace_template = "ws"\n'
        '[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        f'[[checks]]\ntype = "command"\ncommand = {_spawner_toml(tmp_path)}\n'
        f'env = {{ PIDS = "{pids_dir}" }}\n'
    )
    transcript = tmp_path / "run.jsonl"
    command = _harness(
        "run", str(spec), "--json", "--transcript", str(transcript), "--backend", backend
    )
    stopped = _signal_when_started(command, pids_dir, signal.SIGTERM)
    assert stopped.returncode == 143, stopped.stderr
    assert "Traceback" not in stopped.stderr
    outcome = json.loads(stopped.stdout)
    assert outcome["exit_code"] == 143
    assert outcome["halt"]["type"] == "Cancelled"
    assert outcome["halt"]["description"] == "cancelled by SIGTERM"
    assert outcome["transcript"] == str(transcript)
    assert outcome["workspace_removed"] is True
    assert not Path(outcome["workspace"]).exists()
    assert _last_event(transcript)["reason"] == {"type": "Cancelled", "by": "SIGTERM"}
    assert not any(running(pid) for pid in stopped.pids)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_signal_stops_the_hooks_checks_and_their_process_tree(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """SIGTERM or SIGINT to `harness hook claude-stop` while a check runs: the check's tree is
    killed, nothing is decided (no block, the count untouched), the hook's record says the stop
    went through unchecked, and the hook exits 128 + the signal, a non-blocking error to the
    agent, with a one-line note and no traceback."""
    pids_dir = _setup(tmp_path)
    spec = tmp_path / "checks.toml"
    spec.write_text(
        f'[[checks]]\ntype = "command"\ncommand = {_spawner_toml(tmp_path)}\n'
        f'env = {{ PIDS = "{pids_dir}" }}\n'
    )
    state = tmp_path / "state"
    payload = {"session_id": "s1", "cwd": str(tmp_path / "ws"), "last_assistant_message": "done"}
    command = _harness("hook", "claude-stop", "--spec", str(spec), "--state-dir", str(state))
    stopped = _signal_when_started(command, pids_dir, signum, stdin=json.dumps(payload))
    assert stopped.returncode == 128 + signum
    assert stopped.stdout == ""
    assert stopped.stderr == (
        f"harness hook: cancelled by {signum.name}: the checks were stopped and nothing "
        "was decided\n"
    )
    # Nothing decided: no block and no count, only the record that the stop went unchecked.
    assert sorted(p.name for p in state.rglob("*") if p.is_file()) == ["verdicts.jsonl"]
    started, ended = (
        json.loads(line) for line in (state / "verdicts.jsonl").read_text().split("\n")[:2]
    )
    assert started["event"] == "started"
    assert (ended["id"], ended["outcome"], ended["blocked"], ended["blocks"]) == (
        started["id"],
        "killed",
        False,
        0,
    )
    assert f"stopped by {signum.name}" in ended["error"]
    assert not any(running(pid) for pid in stopped.pids)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_signal_stops_harness_check_and_its_process_tree(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """`harness check` stops the same way: the check's tree killed, 128 + the signal, a
    one-line note, no verdicts printed and no traceback."""
    pids_dir = _setup(tmp_path)
    spec = tmp_path / "checks.toml"
    spec.write_text(
        f'workspace = "ws"\n[[checks]]\ntype = "command"\ncommand = {_spawner_toml(tmp_path)}\n'
        f'env = {{ PIDS = "{pids_dir}" }}\n'
    )
    stopped = _signal_when_started(_harness("check", str(spec)), pids_dir, signum)
    assert stopped.returncode == 128 + signum
    assert stopped.stdout == ""
    assert stopped.stderr == f"harness: cancelled by {signum.name}: the checks were stopped\n"
    assert not any(running(pid) for pid in stopped.pids)


def test_a_killed_harness_leaves_nothing_of_its_commands_running(tmp_path: Path) -> None:
    """Even SIGKILL, which the harness cannot handle, leaves no process of the CLI agent's
    tree behind: the supervisor notices that the harness is gone and stops the tree."""
    pids_dir = _setup(tmp_path)
    spec = _agent_spec(tmp_path, pids_dir)
    command = _harness("run", str(spec), "-q")
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=_env()
    )
    pids = _wait_for_pids(child, pids_dir)
    child.kill()
    child.wait(timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    try:
        while any(running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the supervisor's cleanup, bounded
        assert [pid for pid in pids if running(pid)] == []
    finally:
        for pid in pids:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


# An agent that ignores SIGTERM and SIGINT, so that stopping it takes the whole grace.
STUBBORN = """
trap '' TERM INT
sleep 1000 &
echo $! > "$PIDS/sleep.tmp" && mv "$PIDS/sleep.tmp" "$PIDS/sleep.pid"
wait
"""


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_second_signal_while_the_run_stops_kills_the_command(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """The first signal stops the run gracefully; a second one, 20 ms later while the agent's
    tree is still being stopped, kills the command by that signal instead of being ignored
    until the outcome is printed."""
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "stubborn.sh").write_text(STUBBORN)
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace = "ws"\n'
        f'[model]\ntype = "cli_agent"\nargv = ["sh", "{tmp_path / "stubborn.sh"}"]\n'
        f'env = {{ PIDS = "{pids_dir}" }}\n'
        '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
    )
    child = subprocess.Popen(
        _harness("run", str(spec), "-q"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    sleeper = pids_dir / "sleep.pid"
    try:
        deadline = time.monotonic() + TIMEOUT
        while not sleeper.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.02)  # polling for the file, not waiting for an effect
        child.send_signal(signum)
        time.sleep(0.02)  # the second signal, as an impatient user sends it
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        if sleeper.exists() and running(pid := int(sleeper.read_text())):
            os.kill(pid, signal.SIGKILL)
    assert child.returncode == -signum, stderr.decode()
