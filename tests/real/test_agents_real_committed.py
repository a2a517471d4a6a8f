"""The gate wherever a team runs it (issue 37), against the real coding agents: a hook installed
with ``--committed``, the repository copied to another path (a clone) and the first removed,
still blocks a false stop; an agent started in a subfolder is checked on the project root; a
broken spec, a hook the agent kills at its timeout and a hook that cannot start (the clone's
venv removed) each leave a record.

As in test_agents_real_hooks.py: the pinned binaries, a temporary HOME, a scripted provider on
loopback that claims to be done at every turn, and harness started from the project's own venv
(a wrapper script in ``.venv/bin``) with a minimal PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _agent_servers import AgentServer, agent_argv, agent_binary, agent_home, agent_server, say
from _agent_servers import strings as _strings
from attrs import frozen

from strategies._cli import main
from strategies._cli._hooks import _install
from strategies._cli._hooks._core import read_verdicts

CLAIM = "I am done: the report is written."
PROMPT = "Write report.md, then stop."
SPEC = '[[checks]]\ntype = "files"\npaths = ["report.md"]\n'
RUN_TIMEOUT = 240.0
HOOKED = ["claude", "codex", "gemini", "qwen", "copilot"]


@frozen
class Team:
    """One agent's world: HOME, the first checkout, the state folder and the provider."""

    agent: str
    home: Path
    first: Path
    state: Path
    server: AgentServer
    base: dict[str, str]

    def env(self) -> dict[str, str]:
        env = dict(self.base)
        env.pop("GEMINI_CLI_TRUST_WORKSPACE", None)  # the install's own trust is tested
        node = shutil.which("node")
        assert node is not None
        env["PATH"] = f"{Path(node).parent}:/usr/bin:/bin"
        env["XDG_STATE_HOME"] = str(self.state.parent.parent)
        env["SHELL"] = "/bin/sh"
        if self.agent == "codex":
            env["CODEX_HOME"] = str(self.home / ".codex")
        return env

    def run(self, folder: Path) -> subprocess.CompletedProcess[str]:
        argv = [a for a in agent_argv(self.agent, PROMPT) if a != "--trust-folder"]
        return subprocess.run(
            argv,
            cwd=folder,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )

    def install(self, project: Path, **options: Any) -> list[str]:
        """`harness hook install --committed` run from the project's own harness, with the
        agent's HOME (where Codex, Gemini CLI and Copilot CLI keep trust)."""
        saved = {k: os.environ.get(k) for k in ("HOME", "CODEX_HOME", "COPILOT_HOME")}
        os.environ["HOME"] = str(self.home)
        os.environ["CODEX_HOME"] = str(self.home / ".codex")
        os.environ.pop("COPILOT_HOME", None)
        original = _install.default_executable
        _install.default_executable = lambda: str(project / ".venv" / "bin" / "harness")
        try:
            done = _install.install_hook(
                self.agent,
                Path(options.pop("spec", "checks.toml")),
                project=project,
                committed=True,
                max_blocks=options.pop("max_blocks", 1),
                **options,
            )
        finally:
            _install.default_executable = original
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        return list(done.notes)


def make_project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "checks.toml").write_text(SPEC)
    script = folder / ".venv" / "bin" / "harness"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m strategies "$@"\n')
    script.chmod(0o755)
    (script.parent / Path(sys.executable).name).symlink_to(sys.executable)  # as in a venv
    return folder


def clone(first: Path, to: Path) -> Path:
    """The repository at another path, the first checkout gone."""
    shutil.copytree(first, to, symlinks=True)
    shutil.rmtree(first)
    return to


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    agent: str = request.param
    agent_binary(agent)
    with agent_server(fallback=say(CLAIM)) as server:
        home = tmp_path / "home"
        base = agent_home(home, agent, server)
        state = tmp_path / "state" / "harness" / "stop-hook"
        yield Team(agent, home, make_project(tmp_path / "first" / "repo"), state, server, base)


def texts(server: AgentServer) -> list[str]:
    return ["\n".join(_strings(turn.body)) for turn in server.turns]


@pytest.mark.parametrize("team", HOOKED, indirect=True)
def test_a_committed_hook_cloned_to_another_path_blocks_a_false_stop(
    team: Team, tmp_path: Path
) -> None:
    team.install(team.first)
    committed = next(
        p for p in (team.first / ".github", team.first / f".{team.agent}") if p.exists()
    )
    assert str(tmp_path) not in "".join(p.read_text() for p in committed.rglob("*.json"))
    repo = clone(team.first, tmp_path / "elsewhere" / "repo")
    if team.agent in ("codex", "gemini", "copilot"):  # each user trusts their own clone
        team.install(repo, record_trust=True)
    ran = team.run(repo)
    assert ran.returncode == 0, ran.stderr[-3000:]
    sent = texts(team.server)
    assert len(sent) == 2, sent
    assert "stop blocked 1 of at most 1 times in a row" in sent[1]
    assert "missing 1 of 1: report.md" in sent[1]
    verdicts = read_verdicts(team.state)
    assert [(v.outcome, v.blocked, v.root) for v in verdicts] == [
        ("checked", True, str(repo)),
        ("checked", False, str(repo)),
    ]


@pytest.mark.parametrize("team", ["codex"], indirect=True)
def test_codex_started_in_a_subfolder_is_checked_on_the_root(team: Team) -> None:
    """Codex finds the root's .codex/hooks.json through .git; the hook judges the root, where
    the report is, not the subfolder the agent started in."""
    team.install(team.first, record_trust=True)
    (team.first / "report.md").write_text("# Report\n")
    sub = team.first / "src"
    sub.mkdir()
    ran = team.run(sub)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(team.server.turns) == 1  # the first stop passes: the root holds the report
    [verdict] = read_verdicts(team.state)
    assert (verdict.outcome, verdict.would_block) == ("checked", False)
    assert (verdict.root, verdict.cwd) == (str(team.first), str(sub))


@pytest.mark.parametrize("team", ["claude"], indirect=True)
def test_claude_started_in_a_subfolder_is_checked_by_the_walk_up_user_hook(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code reads only the working folder's settings: the project's hook does not run
    in a subfolder (nothing recorded); the user-scope --walk-up hook checks it on the root."""
    team.install(team.first)
    sub = team.first / "src"
    sub.mkdir()
    ran = team.run(sub)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(team.server.turns) == 1
    assert read_verdicts(team.state) == []
    team.install(team.first, scope="user", walk_up=True)
    ran = team.run(sub)
    assert ran.returncode == 0, ran.stderr[-3000:]
    sent = texts(team.server)
    assert len(sent) == 3, sent  # the unchecked run's one turn, then a block and the cap
    assert "missing 1 of 1: report.md" in sent[2]
    assert f"the checks ran on the project root {team.first}" in sent[2]
    first = read_verdicts(team.state)[0]
    assert (first.outcome, first.root, first.cwd) == ("checked", str(team.first), str(sub))


@pytest.mark.parametrize("team", ["claude"], indirect=True)
def test_a_broken_spec_blocks_with_the_reason_and_is_recorded(team: Team) -> None:
    team.install(team.first)
    (team.first / "checks.toml").write_text("[[checks]\n")
    ran = team.run(team.first)
    assert ran.returncode == 0, ran.stderr[-3000:]
    sent = texts(team.server)
    assert len(sent) == 2, sent
    assert "The completion checks could not run" in sent[1]
    assert [(v.outcome, v.blocked) for v in read_verdicts(team.state)] == [
        ("error", True),
        ("error", False),
    ]


@pytest.mark.parametrize("team", ["claude"], indirect=True)
def test_a_hook_killed_at_the_agents_timeout_is_recorded_as_killed(team: Team) -> None:
    """A check slower than the entry's timeout: Claude Code stops the hook (SIGTERM) and
    stops; the record the hook started says the stop went through unchecked."""
    (team.first / "checks.toml").write_text(
        '[[checks]]\ntype = "command"\ncommand = ["sleep", "60"]\nwhat = "a slow suite"\n'
    )
    team.install(team.first)
    path = team.first / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    settings["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 5
    path.write_text(json.dumps(settings))
    ran = team.run(team.first)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(team.server.turns) == 1
    [verdict] = read_verdicts(team.state)
    assert (verdict.outcome, verdict.agent) == ("killed", "claude")


@pytest.mark.parametrize("team", HOOKED, indirect=True)
def test_a_clone_whose_venv_was_removed_leaves_a_record(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent cannot start the committed hook (the clone's .venv is gone): the installed
    command's shell records the unchecked stop, and `harness hook verdicts` shows it."""
    team.install(team.first)
    repo = clone(team.first, tmp_path / "elsewhere" / "repo")
    if team.agent in ("codex", "gemini", "copilot"):  # each user trusts their own clone
        team.install(repo, record_trust=True)
    shutil.rmtree(repo / ".venv")
    ran = team.run(repo)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(team.server.turns) == 1  # the stop went through: nothing could check it
    if team.agent == "claude":  # its SessionStart self-test told the model at once
        assert "the harness stop hook cannot start here" in texts(team.server)[0]
    [verdict] = read_verdicts(team.state)
    assert (verdict.agent, verdict.outcome, verdict.blocked) == (team.agent, "error", False)
    entry = repo / ".venv" / "bin" / "harness"
    assert verdict.error is not None
    assert verdict.error.startswith(f"the hook could not start: {entry} cannot be run")
    capsys.readouterr()
    assert main(["hook", "verdicts", "--state-dir", str(team.state)]) == 0
    listed = capsys.readouterr().out
    assert "ERROR, let through" in listed
    assert "the hook could not start" in listed
