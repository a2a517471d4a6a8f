"""A hook that is safe to commit (issue 37, points 1 and 2): installed with ``--committed``, every
path in it is relative to the project root or named the agent's way at run time, so a clone at
another path checks its stops; `hook doctor` says when an entry names a path outside the
repository, and when an agent started in a subfolder would run no hook (and the fix)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from strategies._cli import main
from strategies._cli._hooks import _install
from strategies._cli._hooks._install import install_hook

SPEC = '[[checks]]\ntype = "files"\npaths = ["report.md"]\n'
AGENTS = ("claude", "codex", "gemini", "cursor", "qwen", "copilot")


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


def make_project(folder: Path) -> Path:
    """A git repository with the spec and harness in its own venv (a wrapper script)."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "checks.toml").write_text(SPEC)
    script = folder / ".venv" / "bin" / "harness"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m strategies "$@"\n')
    script.chmod(0o755)
    (script.parent / Path(sys.executable).name).symlink_to(sys.executable)  # as in a venv
    return folder


def install_here(
    agent: str, project: Path, monkeypatch: pytest.MonkeyPatch, **options: object
) -> _install.Installed:
    """`harness hook install --committed` run from the project's own harness."""
    monkeypatch.setattr(
        _install, "default_executable", lambda: str(project / ".venv" / "bin" / "harness")
    )
    return install_hook(agent, Path("checks.toml"), project=project, committed=True, **options)  # type: ignore[arg-type]


def doctor(project: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["hook", "doctor", "--agent", agent, "--project", str(project)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("agent", AGENTS)
def test_a_committed_hook_checks_stops_in_a_clone_at_another_path(
    agent: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = make_project(tmp_path / "first" / "project")
    done = install_here(agent, first, monkeypatch)
    text = done.path.read_text()
    assert str(tmp_path) not in text  # no path of this machine in the committed file
    clone = tmp_path / "elsewhere" / "clone"
    shutil.copytree(first, clone, symlinks=True)
    shutil.rmtree(first)
    if agent in ("codex", "gemini", "copilot"):  # each user trusts their own clone
        install_here(agent, clone, monkeypatch, record_trust=True)
    code, out = doctor(clone, agent, capsys)
    assert code == 0, out
    assert "ok: a stop is checked (the checks fail now: a stop would be blocked" in out
    assert "outside the repository" not in out


def test_doctor_says_when_an_entry_names_a_path_outside_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default install (this machine's absolute entry point and spec) works here, but a
    clone elsewhere would stop unchecked: the doctor says so, with the fix."""
    project = make_project(tmp_path / "project")
    (tmp_path / "outside.toml").write_text(SPEC)
    install_hook("cursor", tmp_path / "outside.toml", project=project)
    code, out = doctor(project, "cursor", capsys)
    assert code == 0, out
    assert "warning: the entry names" in out
    assert f"{tmp_path / 'outside.toml'}" in out
    assert "--committed" in out


def test_a_subfolder_start_is_named_and_a_walk_up_user_hook_covers_it(
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Claude Code reads only the working folder's settings: the doctor names the gap and the
    one command that closes it; that user hook checks a subfolder's stop on the root, lets a
    folder of no gated project stop quietly, and leaves the root to the project's own hook."""
    project = make_project(tmp_path / "project")
    install_here("claude", project, monkeypatch)
    _, out = doctor(project, "claude", capsys)
    assert "reads .claude/settings.json only in the folder it starts in" in out
    assert "--scope user --walk-up" in out
    argv = ["hook", "install", "--agent", "claude", "--scope", "user", "--walk-up"]
    code = main([*argv, "--spec", "checks.toml", "--project", str(project)])
    assert code == 0
    _, out = doctor(project, "claude", capsys)
    assert "only in the folder it starts in" not in out
    [group] = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["Stop"]
    command = group["hooks"][0]["command"]
    sub = project / "src"
    sub.mkdir()
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    state = tmp_path / "hook-state"
    blocked = run_as_claude(command, sub, state)
    assert json.loads(blocked.stdout)["decision"] == "block"
    assert f"the checks ran on the project root {project}" in blocked.stdout
    assert run_as_claude(command, nowhere, state).stdout == ""
    assert run_as_claude(command, project, state).stdout == ""  # the project's own hook's


def run_as_claude(command: str, folder: Path, state: Path) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": f"s-{folder.name}", "cwd": str(folder), "hook_event_name": "Stop"}
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload | {"last_assistant_message": "done"}),
        capture_output=True,
        text=True,
        cwd=folder,
        env={
            "PATH": "/usr/bin:/bin",
            "CLAUDE_PROJECT_DIR": str(folder),
            "HOME": str(state),
            "XDG_STATE_HOME": str(state),
        },
        timeout=120,
        check=True,
    )


def test_copilot_folder_trust_is_found_and_recorded_as_copilot_records_it(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Copilot CLI skips the hook in a folder it does not trust: the doctor says so; --trust
    adds the folder to trustedFolders in Copilot's own config.json, keeping its other keys and
    its comment lines."""
    project = make_project(tmp_path / "project")
    config = home / ".copilot" / "config.json"
    config.parent.mkdir()
    config.write_text(
        '// managed\n{\n  "firstLaunchAt": "x",\n  "trusted_folders": ["/elsewhere"]\n}\n'
    )
    install_hook("copilot", project / "checks.toml", project=project)
    code, out = doctor(project, "copilot", capsys)
    assert code == 1
    assert "loads a repository's hooks only in a trusted folder" in out
    assert "harness hook install --agent copilot --trust" in out
    done = install_hook("copilot", project / "checks.toml", project=project, record_trust=True)
    assert any("recorded GitHub Copilot CLI's trust" in note for note in done.notes)
    text = config.read_text()
    assert text.startswith("// ")
    data = json.loads("\n".join(line for line in text.splitlines() if not line.startswith("//")))
    assert data == {"firstLaunchAt": "x", "trustedFolders": ["/elsewhere", str(project)]}
    code, out = doctor(project, "copilot", capsys)
    assert code == 0, out
