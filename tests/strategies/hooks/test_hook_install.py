"""`harness hook install --agent NAME`: the agent's documented hook configuration, merged with
what is there, never clobbered, and idempotent."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import ConfigurationError
from strategies._cli import main
from strategies._cli._hooks._install import hook_command, install_hook

ROOT = Path(__file__).resolve().parents[3]
PAYLOADS = ROOT / "fixtures" / "hooks"
FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
    "qwen": ".qwen/settings.json",
    "copilot": ".github/hooks/harness.json",
}
EVENTS = {"gemini": "AfterAgent", "cursor": "stop", "copilot": "agentStop"}
COMMAND = {"copilot": "bash"}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: the agents' user files (and Codex's and Gemini CLI's trust)
    are never the machine's."""
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
    (tmp_path / "checks.toml").write_text('[[checks]]\ntype = "files"\npaths = ["report.md"]\n')
    return folder


def the_hooks(agent: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The command hooks on the agent's stop event, read the way the agent documents them."""
    if agent in ("cursor", "copilot"):
        assert config["version"] == 1
        entries = list(config["hooks"][EVENTS[agent]])
        return [{**e, "command": e["bash"]} if agent == "copilot" else e for e in entries]
    event = EVENTS.get(agent, "Stop")
    return [hook for group in config["hooks"][event] for hook in group["hooks"]]


@pytest.mark.parametrize("agent", list(FILES))
def test_install_writes_the_agents_documented_shape_once(agent: str, project: Path) -> None:
    """A fresh project gets one stop hook in the agent's file; a second install changes nothing."""
    spec = project.parent / "checks.toml"
    done = install_hook(agent, spec, project=project)
    path = project / FILES[agent]
    assert (done.path, done.changed) == (path, True)
    [entry] = the_hooks(agent, json.loads(path.read_text()))
    assert entry["command"] == hook_command(agent, spec)
    words = shlex.split(entry["command"])
    assert words[0].startswith("h=/")  # no PATH needed to start it
    assert words[words.index("exec") + 1 : words.index("exec") + 4] == [
        "$h",
        "hook",
        f"{agent}-stop",
    ]
    assert str(spec.resolve()) in shlex.split(entry["command"])
    if agent == "cursor":
        assert entry == {"command": entry["command"], "loop_limit": 5, "timeout": 60}
    elif agent in ("gemini", "qwen"):
        assert entry["type"] == "command"
        assert entry["timeout"] == 60000  # milliseconds: 10 s above the hook's own 50 s
    elif agent == "copilot":
        assert (entry["type"], entry["timeoutSec"]) == ("command", 60)
    else:
        assert (entry["type"], entry["timeout"]) == ("command", 60)
    before = path.read_bytes()
    again = install_hook(agent, spec, project=project)
    assert not again.changed
    assert path.read_bytes() == before


@pytest.mark.parametrize("agent", list(FILES))
def test_a_reinstall_with_other_options_updates_the_one_entry(agent: str, project: Path) -> None:
    """The same hook on the same spec is never listed twice: new options replace the old."""
    spec = project.parent / "checks.toml"
    install_hook(agent, spec, project=project)
    done = install_hook(agent, spec, project=project, max_blocks=3, time_limit=100)
    assert done.changed
    [entry] = the_hooks(agent, json.loads(done.path.read_text()))
    assert entry["command"] == hook_command(agent, spec, max_blocks=3, time_limit=100)
    timeout = entry["timeoutSec"] if agent == "copilot" else entry["timeout"]
    assert timeout == (110_000 if agent in ("gemini", "qwen") else 110)
    other = project.parent / "other.toml"
    other.write_text(spec.read_text())
    assert len(the_hooks(agent, install_hook(agent, other, project=project).content)) == 2


EXISTING: dict[str, dict[str, Any]] = {
    "claude": {
        "permissions": {"allow": ["Bash(pytest:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
    },
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "log-stop"}]}]}},
    "gemini": {
        "model": {"name": "gemini-2.5-pro"},
        "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": []}]},
    },
    "cursor": {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}},
    "qwen": {
        "model": {"name": "qwen3-coder"},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "log", "timeout": 5000}]}]},
    },
    "copilot": {
        "version": 1,
        "hooks": {"agentStop": [{"type": "command", "bash": "./notify.sh", "timeoutSec": 5}]},
    },
}


@pytest.mark.parametrize("agent", list(FILES))
def test_install_keeps_everything_already_there(agent: str, project: Path) -> None:
    """Other settings, events and hooks stay exactly as they were; ours is added after them."""
    path = project / FILES[agent]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(EXISTING[agent]))
    install_hook(agent, project.parent / "checks.toml", project=project)
    merged = json.loads(path.read_text())
    for key, value in EXISTING[agent].items():
        if key != "hooks":
            assert merged[key] == value
    for event, groups in EXISTING[agent]["hooks"].items():
        assert merged["hooks"][event][: len(groups)] == groups
    assert "hook" in the_hooks(agent, merged)[-1]["command"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{ not json", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object (got list)"),
        ('{"hooks": []}', "'hooks' must be an object"),
        ('{"hooks": {"Stop": {"command": "x"}}}', "hooks.Stop must be a list"),
    ],
)
def test_a_file_that_cannot_be_merged_is_an_error_and_is_left_alone(
    content: str, message: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error names the file and what is wrong with it; its bytes are unchanged."""
    path = project / FILES["codex"]
    path.parent.mkdir()
    path.write_text(content)
    spec = str(project.parent / "checks.toml")
    code = main(["hook", "install", "--agent", "codex", "--spec", spec, "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(path) in err
    assert message in err
    assert path.read_text() == content
    cursor = project / FILES["cursor"]
    cursor.parent.mkdir()
    cursor.write_text('{"version": 2}')
    with pytest.raises(ConfigurationError, match="'version' must be 1"):
        install_hook("cursor", Path(spec), project=project)


def test_dry_run_prints_the_merged_file_and_writes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--dry-run shows where and what would be written; the project is untouched."""
    spec = str(project.parent / "checks.toml")
    argv = ["hook", "install", "--agent", "cursor", "--spec", spec, "--project", str(project)]
    assert main([*argv, "--dry-run", "--max-blocks", "3"]) == 0
    out = capsys.readouterr().out
    header, _, body = out.partition("\n")
    assert header == f"# {project / FILES['cursor']} (would change)"
    assert json.loads(body)["hooks"]["stop"][0]["loop_limit"] == 3
    assert not (project / ".cursor").exists()
    assert main(argv) == 0
    assert "added the cursor stop hook" in capsys.readouterr().out
    assert main([*argv, "--dry-run"]) == 0
    assert "already has the hook; unchanged" in capsys.readouterr().out


def test_user_scope_writes_under_home(project: Path, home: Path) -> None:
    """--scope user writes the agent's file in the home folder, not in the project."""
    done = install_hook("gemini", project.parent / "checks.toml", scope="user", project=project)
    assert done.path == home / ".gemini" / "settings.json"
    assert done.path.is_file()
    assert not (project / ".gemini").exists()


def test_a_spec_that_does_not_load_is_refused_before_anything_is_written(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hook on a broken spec would only fail at every stop; install says so at once."""
    bad = project.parent / "bad.toml"
    bad.write_text("[[checks]]\ntype = 'no-such-check'\n")
    argv = ["hook", "install", "--agent", "claude", "--spec", str(bad), "--project", str(project)]
    assert main(argv) == 2
    assert "bad.toml" in capsys.readouterr().err
    assert not (project / ".claude").exists()


@pytest.mark.parametrize("agent", list(FILES))
def test_the_installed_command_runs_as_the_agents_stop_hook(agent: str, project: Path) -> None:
    """The command written into the file, run through a shell as the agent runs it, answers
    the agent's fixture payload with a block in the agent's format."""
    spec = project.parent / "checks.toml"
    executable = shlex.join([sys.executable, "-m", "strategies"])
    done = install_hook(agent, spec, project=project, executable=executable, time_limit=30)
    command = the_hooks(agent, done.content)[-1]["command"]
    data = json.loads(
        (
            PAYLOADS
            / {
                "claude": "stop.json",
                "codex": "codex_stop.json",
                "gemini": "gemini_after_agent.json",
                "cursor": "cursor_stop.json",
                "qwen": "qwen_stop.json",
                "copilot": "copilot_agent_stop.json",
            }[agent]
        ).read_text()
    )
    data.pop("transcript_path", None)
    data.pop("transcriptPath", None)
    data["cwd"] = str(project)
    if agent == "cursor":
        data["workspace_roots"] = [str(project)]
    ran = subprocess.run(
        ["sh", "-c", f"{command} --state-dir {shlex.quote(str(project.parent / 'state'))}"],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "report.md" in ran.stdout
