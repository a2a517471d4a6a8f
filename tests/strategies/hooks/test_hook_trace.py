"""No stop unchecked without a trace (issue 37, point 4): each hook run as a process, as the
agent runs it, leaves a record before it reads the spec or runs a check, and completes it after;
a broken spec blocks with the reason within the cap; a hook killed mid-check is reported as
killed by `harness hook verdicts`, `harness hook doctor` and the verdicts page."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strategies._cli._hooks._core import read_verdicts

SLOW = '[[checks]]\ntype = "command"\ncommand = ["sleep", "60"]\nwhat = "a slow suite"\n'
FILES = '[[checks]]\ntype = "files"\npaths = ["report.md"]\n'


def stop_payload(cwd: Path, session: str = "s1") -> str:
    return json.dumps(
        {"session_id": session, "cwd": str(cwd), "hook_event_name": "Stop"}
        | {"last_assistant_message": "done"}
    )


def harness(
    *argv: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "strategies", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def hook(project: Path, state: Path, spec: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = ["hook", "claude-stop", "--spec", spec, "--state-dir", str(state), *extra]
    return harness(*argv, cwd=project, stdin=stop_payload(project))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".git").mkdir()
    return folder


def test_a_spec_that_became_invalid_blocks_within_the_cap_and_is_recorded(
    project: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    (project / "checks.toml").write_text("[[checks]\n")  # invalid TOML
    first = hook(project, state, "checks.toml", "--max-blocks", "1")
    assert first.returncode == 0, first.stderr
    answer = json.loads(first.stdout)
    assert answer["decision"] == "block"
    assert "The completion checks could not run" in answer["reason"]
    assert "checks.toml" in first.stderr
    second = hook(project, state, "checks.toml", "--max-blocks", "1")
    assert (second.returncode, second.stdout) == (0, "")
    assert "stop allowed" in second.stderr
    verdicts = read_verdicts(state)
    assert [(v.outcome, v.blocked) for v in verdicts] == [("error", True), ("error", False)]
    assert verdicts[0].error is not None
    assert "checks.toml" in verdicts[0].error
    listed = harness("hook", "verdicts", "--state-dir", str(state), cwd=project)
    assert listed.stdout.count("ERROR") == 2
    assert "let through" in listed.stdout


@pytest.mark.parametrize("sent", [signal.SIGKILL, signal.SIGTERM])
def test_a_hook_killed_at_the_agents_timeout_is_reported_as_killed(
    project: Path, tmp_path: Path, sent: signal.Signals
) -> None:
    """The agent kills its hook at the hook's timeout (SIGKILL: the record started before the
    checks is never completed; SIGTERM: the hook completes it as killed), and every reader
    says the stop went through unchecked."""
    state = tmp_path / "state"
    (project / "checks.toml").write_text(SLOW)
    argv = ["hook", "claude-stop", "--spec", "checks.toml", "--state-dir", str(state)]
    with subprocess.Popen(
        [sys.executable, "-m", "strategies", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=project,
        start_new_session=True,
    ) as running:
        assert running.stdin is not None
        running.stdin.write(stop_payload(project))
        running.stdin.close()
        deadline = time.monotonic() + 60
        while not (state / "verdicts.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # into the checks
        os.killpg(running.pid, sent)
    [verdict] = read_verdicts(state)
    assert (verdict.outcome, verdict.agent, verdict.session_id) == ("killed", "claude", "s1")
    listed = harness("hook", "verdicts", "--state-dir", str(state), cwd=project)
    assert "KILLED unchecked" in listed.stdout
    page = harness("view", str(state), "--output", str(tmp_path / "v.html"), cwd=project)
    assert page.returncode == 0, page.stderr
    assert "killed, unchecked" in (tmp_path / "v.html").read_text()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    (tmp_path / "harness").mkdir()
    state.rename(tmp_path / "harness" / "stop-hook")
    doctor = harness("hook", "doctor", "--project", str(project), cwd=project, env=env)
    assert "recorded: 1 of the last 1 stops were not checked (1 killed, 0 errors)" in (
        doctor.stdout
    )


def test_an_unreadable_transcript_lets_the_stop_go_and_is_recorded(
    project: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    (project / "checks.toml").write_text(FILES)
    payload = {
        "session_id": "s2",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "transcript_path": str(project / "missing.jsonl"),
    }
    argv = ["hook", "claude-stop", "--spec", "checks.toml", "--state-dir", str(state)]
    ran = harness(*argv, cwd=project, stdin=json.dumps(payload))
    assert ran.returncode == 1
    [verdict] = read_verdicts(state)
    assert (verdict.outcome, verdict.session_id, verdict.blocked) == ("error", "s2", False)
    assert verdict.error is not None
    assert "transcript" in verdict.error


def test_a_relative_spec_is_found_from_a_subfolder_and_the_root_is_judged(
    project: Path, tmp_path: Path
) -> None:
    """The agent in a subfolder: the spec is the root's, the checks judge the root, and the
    verdict says so."""
    state = tmp_path / "state"
    (project / "checks.toml").write_text(FILES)
    (project / "report.md").write_text("# Report\n")
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    argv = ["hook", "claude-stop", "--spec", "checks.toml", "--state-dir", str(state)]
    ran = harness(*argv, cwd=sub, stdin=stop_payload(sub))
    assert (ran.returncode, ran.stdout) == (0, "")
    assert f"the checks ran on the project root {project}" in ran.stderr
    [verdict] = read_verdicts(state)
    assert (verdict.outcome, verdict.would_block) == ("checked", False)
    assert (verdict.root, verdict.cwd) == (str(project), str(sub))


def test_a_relative_spec_that_climbs_is_read_from_the_agents_folder_and_the_root_judged(
    project: Path, tmp_path: Path
) -> None:
    """``--spec ../checks.toml`` typed from a subfolder names the spec as any command-line
    path does, from the working folder; the checks still judge the repository's root, not the
    subfolder the ``..`` was written from."""
    state = tmp_path / "state"
    (project / "checks.toml").write_text(FILES)
    (project / "report.md").write_text("# Report\n")
    sub = project / "src"
    sub.mkdir()
    argv = ["hook", "claude-stop", "--spec", "../checks.toml", "--state-dir", str(state)]
    ran = harness(*argv, cwd=sub, stdin=stop_payload(sub))
    assert (ran.returncode, ran.stdout) == (0, "")
    [verdict] = read_verdicts(state)
    assert (verdict.outcome, verdict.root) == ("checked", str(project))


def test_a_spec_missing_in_this_checkout_blocks_with_the_reason(
    project: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    ran = hook(project, state, "checks.toml")
    assert ran.returncode == 0
    assert "no spec 'checks.toml'" in json.loads(ran.stdout)["reason"]
    [verdict] = read_verdicts(state)
    assert (verdict.outcome, verdict.blocked) == ("error", True)
