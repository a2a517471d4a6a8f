"""`harness hook doctor`: each broken install of issue 29 is found, and a sound one is said to
check a stop (the installed command is really run, as the agent would run it)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from strategies._cli import main
from strategies._cli._hooks._install import install_hook


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", raising=False)
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".git").mkdir()
    (tmp_path / "checks.toml").write_text('[[checks]]\ntype = "files"\npaths = ["report.md"]\n')
    return folder


def doctor(project: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["hook", "doctor", "--agent", agent, "--project", str(project)])
    return code, capsys.readouterr().out


def test_a_sound_install_checks_a_stop(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install_hook("claude", project.parent / "checks.toml", project=project)
    code, out = doctor(project, "claude", capsys)
    assert code == 0, out
    assert "claude   ok: a stop is checked (the checks fail now: a stop would be blocked" in out
    (project / "report.md").write_text("done\n")
    code, out = doctor(project, "claude", capsys)
    assert (code, "the checks pass now" in out) == (0, True)


def test_a_bare_command_not_on_a_minimal_path_is_found(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the install wrote before: `harness` alone, which an agent without the venv on its
    PATH cannot start (exit 127: Claude Code stops unchecked)."""
    install_hook("claude", project.parent / "checks.toml", project=project, executable="harness")
    code, out = doctor(project, "claude", capsys)
    assert code == 1
    assert "NOT CHECKED: the command cannot start without your shell's PATH (exit 127)" in out
    assert "fix: harness hook install --agent claude" in out


def test_a_qwen_timeout_in_seconds_is_found(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Claude-shaped entry (60) in Qwen Code's settings: 60 ms."""
    install_hook("claude", project.parent / "checks.toml", project=project)
    claude = json.loads((project / ".claude" / "settings.json").read_text())
    (project / ".qwen").mkdir()
    (project / ".qwen" / "settings.json").write_text(
        json.dumps(claude).replace("claude-stop", "qwen-stop")
    )
    code, out = doctor(project, "qwen", capsys)
    assert code == 1
    assert "Qwen Code reads milliseconds: it kills the hook after 60 ms" in out
    install_hook("qwen", project.parent / "checks.toml", project=project)
    code, out = doctor(project, "qwen", capsys)
    assert code == 0, out


def test_an_untrusted_codex_hook_is_found(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project.parent / "checks.toml"
    install_hook("codex", spec, project=project)
    code, out = doctor(project, "codex", capsys)
    assert code == 1
    assert "is not trusted" in out
    assert "--trust" in out
    install_hook("codex", spec, project=project, record_trust=True)
    code, out = doctor(project, "codex", capsys)
    assert code == 0, out
    # a hand edit of the trusted entry (here, its timeout) untrusts it in Codex
    path = project / ".codex" / "hooks.json"
    path.write_text(path.read_text().replace('"timeout": 60', '"timeout": 61'))
    code, out = doctor(project, "codex", capsys)
    assert code == 1
    assert "was changed since it was trusted" in out


def test_an_untrusted_gemini_folder_is_found(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project.parent / "checks.toml"
    install_hook("gemini", spec, project=project)
    code, out = doctor(project, "gemini", capsys)
    assert code == 1
    assert "runs a project's hooks only in a trusted folder" in out
    assert "exits 55" in out
    (home / ".gemini").mkdir()
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(project.parent.resolve()): "TRUST_FOLDER"})
    )
    code, out = doctor(project, "gemini", capsys)
    assert code == 0, out


def test_observe_mode_is_said(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install_hook("cursor", project.parent / "checks.toml", project=project, observe=True)
    code, out = doctor(project, "cursor", capsys)
    assert code == 0
    assert "observe mode: the checks run and are recorded, but a stop is never blocked" in out


def test_no_hook_installed_is_said(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = doctor(project, "copilot", capsys)
    assert code == 1
    assert "no harness stop hook is installed" in out
    assert main(["hook", "doctor", "--project", str(project)]) == 1
    assert "no harness stop hook is installed" in capsys.readouterr().out


def test_the_doctors_trial_stop_leaves_no_state_behind(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_hook("claude", project.parent / "checks.toml", project=project)
    doctor(project, "claude", capsys)
    assert not (home / ".local").exists()


def test_a_hook_that_fails_or_is_killed_is_found(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spec gone since the install: each stop is blocked with the error, up to the cap. A
    timeout shorter than the hook's start: the agent kills it."""
    spec = project.parent / "checks.toml"
    install_hook("claude", spec, project=project)
    spec.rename(project.parent / "moved.toml")
    code, out = doctor(project, "claude", capsys)
    assert code == 1
    assert "NOT CHECKED: the hook cannot run the checks: each stop is blocked with the error" in out
    assert "checks.toml" in out  # the hook's own error, shown
    (project.parent / "moved.toml").rename(spec)
    path = project / ".claude" / "settings.json"
    path.write_text(path.read_text().replace('"timeout": 60', '"timeout": 0.01'))
    code, out = doctor(project, "claude", capsys)
    assert code == 1
    assert "the agent kills the hook after its timeout (0.01 s) before it answers" in out


def test_a_removed_entry_point_is_named_not_blamed_on_path(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The absolute entry point the install wrote is gone (a venv removed): the doctor names
    it, instead of asking for the shell's PATH."""
    gone = tmp_path / "venv" / "bin" / "harness"
    install_hook("claude", project.parent / "checks.toml", project=project, executable=str(gone))
    code, out = doctor(project, "claude", capsys)
    assert code == 1
    assert f"the hook's entry point {gone} no longer exists" in out
    assert "PATH" not in out


def test_a_timed_out_hook_leaves_no_process_running(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The doctor kills a timed-out hook's whole process group, as the agent would: nothing
    it started is left running."""
    marker = tmp_path / "pid"
    script = tmp_path / "slow-harness"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {marker}\nwait\n")
    script.chmod(0o755)
    install_hook("claude", project.parent / "checks.toml", project=project, executable=str(script))
    path = project / ".claude" / "settings.json"
    path.write_text(path.read_text().replace('"timeout": 60', '"timeout": 1'))
    code, out = doctor(project, "claude", capsys)
    assert code == 1
    assert "the agent kills the hook after its timeout (1 s)" in out
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")
