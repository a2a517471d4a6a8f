"""`harness hook install`: installs that work or say why not (issue 29, points 1 to 4).

Codex runs only hooks the user trusted (a ``trusted_hash`` in its config) in a trusted project;
Gemini CLI runs a project's hooks only in a trusted folder; Qwen Code reads a hook's timeout in
milliseconds; an agent started without the venv on its PATH cannot start a bare ``harness``.
The real binaries' side of each point is proven in tests/real/test_agents_real_hooks.py.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from harness import ConfigurationError
from strategies._cli import main
from strategies._cli._hooks._install import install_hook
from strategies._cli._hooks._trust import codex_hook_hash

# Codex 0.171.0's own `hooks/list` (app-server) reported this currentHash for a Stop hook
# {"type": "command", "command": "/usr/bin/true hook codex-stop", "timeout": 60} in a project's
# .codex/hooks.json: the hash is Codex's, not ours.
CODEX_VECTOR = (
    {"type": "command", "command": "/usr/bin/true hook codex-stop", "timeout": 60},
    "sha256:43a69137ba06d6e2fb6d65f5a618edc3ca9930f7feb8772ece749219d46367d9",
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", raising=False)
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (tmp_path / "checks.toml").write_text('[[checks]]\ntype = "files"\npaths = ["report.md"]\n')
    return folder


def codex_state(home: Path) -> dict[str, object]:
    return tomllib.loads((home / ".codex" / "config.toml").read_text())


def the_key(project: Path) -> str:
    return f"{project.resolve()}/.codex/hooks.json:stop:0:0"


def test_codex_hash_is_codexs_own() -> None:
    """The hash recorded is the one Codex computes for the same entry (its own hooks/list)."""
    entry, expected = CODEX_VECTOR
    assert codex_hook_hash(entry) == expected
    assert codex_hook_hash({**entry, "timeout": 61}) != expected


def test_codex_install_without_trust_says_codex_will_not_run_it(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --trust nothing is recorded, and the install ends with the one thing to run."""
    spec = str(project.parent / "checks.toml")
    argv = ["hook", "install", "--agent", "codex", "--spec", spec, "--project", str(project)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Codex will NOT run it yet" in out
    assert "--trust" in out
    assert not (home / ".codex" / "config.toml").exists()


def test_codex_trust_is_recorded_the_way_codex_records_it(project: Path, home: Path) -> None:
    """--trust writes hooks.state."<file>:stop:0:0".trusted_hash = the entry's hash, and
    trusts the project (the git root), keeping what the config already held."""
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "gpt-5-codex"\n\n[tui]\nnotifications = true\n')
    done = install_hook("codex", project.parent / "checks.toml", project=project, record_trust=True)
    [group] = json.loads(done.path.read_text())["hooks"]["Stop"]
    state = codex_state(home)
    assert state["model"] == "gpt-5-codex"
    assert state["tui"] == {"notifications": True}
    assert state["projects"] == {str(project.resolve()): {"trust_level": "trusted"}}
    hooks = state["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["state"] == {
        the_key(project): {"trusted_hash": codex_hook_hash(group["hooks"][0])}
    }
    assert any("recorded Codex's trust" in note for note in done.notes)
    again = install_hook("codex", project.parent / "checks.toml", project=project)
    assert not again.changed
    assert again.notes == (f"Codex trusts this hook ({config})",)


def test_a_reinstall_with_other_options_keeps_codexs_trust(project: Path, home: Path) -> None:
    """The trusted hook changed by a reinstall (its hash with it) is trusted again, and the
    note says so; it is never untrusted silently."""
    spec = project.parent / "checks.toml"
    install_hook("codex", spec, project=project, record_trust=True)
    done = install_hook("codex", spec, project=project, max_blocks=2, time_limit=80)
    [group] = json.loads(done.path.read_text())["hooks"]["Stop"]
    hooks = codex_state(home)["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["state"][the_key(project)]["trusted_hash"] == codex_hook_hash(group["hooks"][0])
    assert group["hooks"][0]["timeout"] == 90
    assert any("carried over" in note for note in done.notes)


def test_a_hook_never_trusted_is_not_trusted_by_a_reinstall(project: Path, home: Path) -> None:
    spec = project.parent / "checks.toml"
    install_hook("codex", spec, project=project)
    done = install_hook("codex", spec, project=project, max_blocks=2)
    assert not (home / ".codex" / "config.toml").exists()
    assert "Codex will NOT run it yet" in done.notes[0]


def test_a_codex_config_in_a_form_not_edited_is_an_error_left_alone(
    project: Path, home: Path
) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    text = 'hooks = { state = { "x" = { trusted_hash = "sha256:0" } } }\n'
    config.write_text(text)
    with pytest.raises(ConfigurationError, match=str(config)):
        install_hook("codex", project.parent / "checks.toml", project=project, record_trust=True)
    assert config.read_text() == text


def test_gemini_install_says_the_folder_must_be_trusted_and_trusts_it_when_asked(
    project: Path, home: Path
) -> None:
    spec = project.parent / "checks.toml"
    done = install_hook("gemini", spec, project=project)
    [note] = done.notes
    assert "Gemini CLI will NOT run it yet" in note
    assert "exits 55" in note
    assert not (home / ".gemini" / "trustedFolders.json").exists()
    done = install_hook("gemini", spec, project=project, record_trust=True)
    rules = json.loads((home / ".gemini" / "trustedFolders.json").read_text())
    assert rules == {str(project.resolve()): "TRUST_FOLDER"}
    assert (
        install_hook("gemini", spec, project=project)
        .notes[0]
        .startswith("Gemini CLI trusts the folder")
    )


def test_qwen_gets_its_timeout_in_milliseconds(project: Path) -> None:
    """A Claude-shaped 60 would be 60 ms to Qwen Code: every stop would go through unchecked."""
    done = install_hook("qwen", project.parent / "checks.toml", project=project, time_limit=30)
    [group] = json.loads((project / ".qwen" / "settings.json").read_text())["hooks"]["Stop"]
    assert group["hooks"][0]["timeout"] == 40_000
    assert done.path == project / ".qwen" / "settings.json"


def test_the_installed_command_starts_without_the_users_path(project: Path) -> None:
    """The command written out runs under a PATH holding no venv (as an agent started from a
    desktop or a service has); a bare `harness` would exit 127 there."""
    done = install_hook("claude", project.parent / "checks.toml", project=project)
    [group] = done.content["hooks"]["Stop"]
    command = group["hooks"][0]["command"]
    ran = subprocess.run(
        ["/bin/sh", "-c", f"{command} --help"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "claude-stop" in ran.stdout or "--spec" in ran.stdout


def test_an_executable_is_written_as_given_for_a_committed_file(project: Path) -> None:
    """'"$CLAUDE_PROJECT_DIR"/.venv/bin/harness' stays a shell word the agent's shell expands,
    and the spec is written relative to the project root (issue 37: the absolute spec broke
    every clone); a spec outside the project cannot be committed and is refused."""
    start = '"$CLAUDE_PROJECT_DIR"/.venv/bin/harness'
    (project / "checks.toml").write_text((project.parent / "checks.toml").read_text())
    done = install_hook("claude", project / "checks.toml", project=project, executable=start)
    [group] = done.content["hooks"]["Stop"]
    assert group["hooks"][0]["command"].startswith(f"h={start}; ")
    assert 'exec "$h" hook claude-stop ' in group["hooks"][0]["command"]
    words = shlex.split(group["hooks"][0]["command"])
    assert words[0] == "h=$CLAUDE_PROJECT_DIR/.venv/bin/harness;"
    assert words[words.index("--spec") + 1] == "checks.toml"
    with pytest.raises(ConfigurationError, match="outside the project"):
        install_hook("claude", project.parent / "checks.toml", project=project, executable=start)


def test_a_user_hook_is_trusted_in_codex_home(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--scope user: the hook is in $CODEX_HOME/hooks.json, its trust beside it, and no
    project is trusted (a user hook runs in every project)."""
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    done = install_hook(
        "codex", project.parent / "checks.toml", scope="user", project=project, record_trust=True
    )
    assert done.path == codex_home / "hooks.json"
    state = tomllib.loads((codex_home / "config.toml").read_text())
    [group] = json.loads(done.path.read_text())["hooks"]["Stop"]
    key = f"{codex_home}/hooks.json:stop:0:0"
    assert state == {
        "hooks": {"state": {key: {"trusted_hash": codex_hook_hash(group["hooks"][0])}}}
    }
