"""A hook that cannot start leaves a trace (issue 37, point 4): the installed command, run by the
agent's shell exactly as written, records a stop whose entry point is gone (a removed venv, a
moved checkout, a venv whose interpreter is gone) in the verdicts file, says so on stderr and
exits 1 (a non-blocking error: the stop goes through); `harness hook verdicts` lists it and
`harness hook doctor` names the fix. Nothing of the payload reaches the shell or the record."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strategies._cli import main
from strategies._cli._hooks import _install
from strategies._cli._hooks._core import read_verdicts
from strategies._cli._hooks._install import install_hook

SPEC = '[[checks]]\ntype = "files"\npaths = ["report.md"]\n'
SLOW = '[[checks]]\ntype = "command"\ncommand = ["sleep", "60"]\n'
# How each agent runs a hook command: through a shell, the command as one string (the doctor's
# `SHELLS`; Codex runs `$SHELL -lc`, here a POSIX sh).
SHELLS = {
    "claude": ["/bin/sh", "-c"],
    "codex": ["/bin/sh", "-lc"],
    "gemini": ["bash", "-c"],
    "cursor": ["/bin/sh", "-c"],
    "qwen": ["bash", "-c"],
    "copilot": ["bash", "-c"],
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("CODEX_HOME", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "COPILOT_HOME"):
        monkeypatch.delenv(name, raising=False)
    return folder


def make_project(folder: Path, spec: str = SPEC) -> Path:
    """A git repository with the spec and harness in its own venv: a console script and the
    interpreter beside it, as a venv has them."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "checks.toml").write_text(spec)
    script = folder / ".venv" / "bin" / "harness"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m strategies "$@"\n')
    script.chmod(0o755)
    (script.parent / Path(sys.executable).name).symlink_to(sys.executable)
    return folder


def committed_command(
    agent: str, project: Path, monkeypatch: pytest.MonkeyPatch, *, trust: bool = False
) -> str:
    monkeypatch.setattr(
        _install, "default_executable", lambda: shlex.quote(str(project / ".venv/bin/harness"))
    )
    done = install_hook(
        agent, Path("checks.toml"), project=project, committed=True, record_trust=trust
    )
    [(_, _, entry)] = _install.find_hooks(agent, done.content)
    command = _install.entry_command(agent, entry)
    assert command is not None
    return command


def payload(agent: str, cwd: Path, session: str = "s1") -> str:
    if agent == "cursor":
        data: dict[str, object] = {"conversation_id": session, "hook_event_name": "stop"}
        data |= {"status": "completed", "loop_count": 0, "workspace_roots": [str(cwd)]}
    elif agent == "gemini":
        data = {"session_id": session, "cwd": str(cwd), "hook_event_name": "AfterAgent"}
    elif agent == "copilot":
        data = {"sessionId": session, "cwd": str(cwd), "stop_hook_active": False}
    else:
        data = {"session_id": session, "cwd": str(cwd), "hook_event_name": "Stop"}
    return json.dumps(data | {"last_assistant_message": "done"})


def run_as_agent(
    agent: str, command: str, cwd: Path, state: Path, stdin: str
) -> subprocess.CompletedProcess[str]:
    """The command run the way `agent` runs it: its shell, a PATH holding no venv, the
    agent's project variables set to `cwd`."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ["HOME"],
        "XDG_STATE_HOME": str(state),
        "CLAUDE_PROJECT_DIR": str(cwd),
        "GEMINI_PROJECT_DIR": str(cwd),
        "QWEN_PROJECT_DIR": str(cwd),
    }
    return subprocess.run(
        [*SHELLS[agent], command],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("agent", list(SHELLS))
def test_a_clone_whose_venv_was_removed_records_the_unchecked_stop(
    agent: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = make_project(tmp_path / "project")
    command = committed_command(agent, project, monkeypatch)
    state = tmp_path / "state"
    checked = run_as_agent(agent, command, project, state, payload(agent, project))
    assert checked.returncode == 0, checked.stderr  # the venv is there: the checks run
    assert [v.outcome for v in read_verdicts(state / "harness" / "stop-hook")] == ["checked"]
    shutil.rmtree(project / ".venv")
    ran = run_as_agent(agent, command, project, state, payload(agent, project))
    assert ran.returncode == 1  # a non-blocking error to every agent: the stop goes through
    assert ran.stdout == ""
    entry = project / ".venv" / "bin" / "harness"
    assert f"harness hook: the hook could not start: {entry} cannot be run" in ran.stderr
    verdicts = read_verdicts(state / "harness" / "stop-hook")
    assert [v.outcome for v in verdicts] == ["checked", "error"]
    unstarted = verdicts[-1]
    assert (unstarted.agent, unstarted.blocked, unstarted.mode) == (agent, False, "enforce")
    assert unstarted.error is not None
    assert unstarted.error.startswith(f"the hook could not start: {entry} cannot be run")
    assert abs(unstarted.at - time.time()) < 60
    capsys.readouterr()
    code = main(["hook", "verdicts", "--state-dir", str(state / "harness" / "stop-hook")])
    listed = capsys.readouterr().out
    assert code == 0
    assert "ERROR, let through" in listed
    assert "the hook could not start" in listed
    page = tmp_path / "verdicts.html"
    assert main(["view", str(state / "harness" / "stop-hook"), "--output", str(page)]) == 0
    html = page.read_text()
    assert "error, let through" in html
    assert "the hook could not start" in html


def test_a_venv_whose_interpreter_is_gone_records_the_unchecked_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script is still there, but the interpreter its first line names is not
    (the Python the venv was made from was removed): the shell sees it before it starts it."""
    project = make_project(tmp_path / "project")
    command = committed_command("claude", project, monkeypatch)
    (project / ".venv" / "bin" / Path(sys.executable).name).unlink()
    state = tmp_path / "state"
    ran = run_as_agent("claude", command, project, state, payload("claude", project))
    assert ran.returncode == 1
    assert "the hook could not start" in ran.stderr
    [verdict] = read_verdicts(state / "harness" / "stop-hook")
    assert verdict.outcome == "error"


def test_the_record_stays_one_json_line_whatever_the_path_and_the_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout under a folder whose name holds a quote, a backslash and shell syntax, and
    a payload made to be run: the record is one readable line, and nothing is executed."""
    project = make_project(tmp_path / 'we"ird\\ $(touch NAMED) dir' / "project")
    command = committed_command("claude", project, monkeypatch)
    shutil.rmtree(project / ".venv")
    state = tmp_path / "state"
    hostile = json.dumps(
        {"session_id": "$(touch PWNED)", "cwd": "`touch PWNED`", "hook_event_name": "Stop"}
    )
    ran = run_as_agent("claude", command, project, state, hostile)
    assert ran.returncode == 1
    [verdict] = read_verdicts(state / "harness" / "stop-hook")
    assert verdict.session_id == "unknown"  # the payload is never read by the shell
    assert verdict.error is not None
    assert "ird $(touch NAMED) dir/project/.venv/bin/harness" in verdict.error
    assert not list(tmp_path.rglob("PWNED"))
    assert not list(tmp_path.rglob("NAMED"))


def test_doctor_names_the_fix_for_a_recorded_hook_that_could_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "project")
    command = committed_command("claude", project, monkeypatch)
    shutil.rmtree(project / ".venv")
    run_as_agent("claude", command, project, tmp_path / "state", payload("claude", project))
    capsys.readouterr()
    main(["hook", "doctor", "--agent", "claude", "--project", str(project)])
    out = capsys.readouterr().out
    assert "recorded: 1 of the last 1 stops were not checked" in out
    assert "the hook could not start for claude" in out
    assert "recreate the venv" in out
    assert "no longer exists" in out  # and the installed entry's own finding


def test_the_hook_replaces_its_shell_so_the_agents_signal_reaches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard ends in ``exec``: the process the agent started is the hook itself, so the
    agent's SIGTERM at its timeout reaches the hook, which records the kill."""
    project = make_project(tmp_path / "project", SLOW)
    command = committed_command("claude", project, monkeypatch)
    state = tmp_path / "state"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ["HOME"],
        "XDG_STATE_HOME": str(state),
        "CLAUDE_PROJECT_DIR": str(project),
    }
    with subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=project,
        env=env,
        text=True,
    ) as process:
        assert process.stdin is not None
        process.stdin.write(payload("claude", project))
        process.stdin.close()
        record = state / "harness" / "stop-hook" / "verdicts.jsonl"
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    [verdict] = read_verdicts(state / "harness" / "stop-hook")
    assert verdict.outcome == "killed"


def test_a_reinstall_guards_an_entry_written_before_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file committed with the unguarded command of an older release: installing again
    replaces that entry with the guarded one, never adding a second."""
    project = make_project(tmp_path / "project")
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = '"$CLAUDE_PROJECT_DIR"/.venv/bin/harness hook claude-stop --spec checks.toml'
    old += " --max-blocks 5 --timeout 50"
    entry = {"type": "command", "command": old, "timeout": 60}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [entry]}]}}))
    command = committed_command("claude", project, monkeypatch)
    [group] = json.loads(settings.read_text())["hooks"]["Stop"]
    assert [e["command"] for e in group["hooks"]] == [command]
    assert command.startswith('h="$CLAUDE_PROJECT_DIR"/')


@pytest.mark.parametrize("agent", ["codex", "qwen", "copilot"])
def test_doctor_names_the_fix_when_git_names_the_root_and_the_venv_is_gone(
    agent: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The root named by git at run time: the doctor cannot tell the path in advance, so it
    reads the guard's own sentence and names the fix."""
    project = make_project(tmp_path / "project")
    committed_command(agent, project, monkeypatch, trust=True)
    shutil.rmtree(project / ".venv")
    capsys.readouterr()
    main(["hook", "doctor", "--agent", agent, "--project", str(project)])
    out = capsys.readouterr().out
    assert "entry point cannot be run here" in out
    assert "recreate the venv" in out


def test_claudes_session_start_self_test_warns_only_when_the_hook_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed with the stop hook, once: at session start it prints nothing while the hook
    can start, and a warning naming the entry point (to the model, as context) when not."""
    project = make_project(tmp_path / "project")
    committed_command("claude", project, monkeypatch)
    again = install_hook("claude", Path("checks.toml"), project=project, committed=True)
    assert not again.changed
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["SessionStart"]
    [entry] = group["hooks"]
    assert entry["timeout"] == 10
    state = tmp_path / "state"
    quiet = run_as_agent("claude", entry["command"], project, state, "{}")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    shutil.rmtree(project / ".venv")
    warned = run_as_agent("claude", entry["command"], project, state, "{}")
    assert warned.returncode == 0
    harness = project / ".venv" / "bin" / "harness"
    assert f"the harness stop hook cannot start here ({harness} cannot be run" in warned.stdout
    assert not state.exists()  # a warning, not a stop: nothing recorded
