"""The stop hooks against the real coding agents (issue 29): the pinned binaries in
tests/agents (installed by ``npm ci --prefix tests/agents --no-audit --no-fund``), each with a
temporary HOME, pointed at a scripted provider on loopback (`_agent_servers`) that answers every
request with the same final answer: an endless claim of being done.

For each agent: `harness hook install` (with ``--trust`` where the agent keeps trust) writes a
hook the agent loads and runs; a failing check blocks; the reason is in the next request the
provider receives; the block cap ends the endless claim; a passing check lets the first stop
go; the verdict of each stop is recorded. And each broken install of the issue is shown
broken against the real agent (the stop goes through unchecked, or the agent refuses to
start), and `harness hook doctor` says so.

No request leaves the machine: every agent's provider is the loopback server, with its
telemetry and update checks turned off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _agent_servers import (
    AgentServer,
    agent_argv,
    agent_binary,
    agent_home,
    agent_server,
    say,
    strings,
)
from attrs import frozen

from strategies._cli import main
from strategies._cli._hooks._core import read_verdicts
from strategies._cli._hooks._install import install_hook
from strategies._cli._hooks._trust import codex_hook_hash

CLAIM = "I am done: the report is written."
PROMPT = "Write report.md, then stop."
MAX_BLOCKS = 2
RUN_TIMEOUT = 240.0
SPEC = '[[checks]]\ntype = "files"\npaths = ["report.md"]\n'
# Each agent's proven version is the one pinned in tests/agents (`agent_version`).
HOOKED = ["claude", "codex", "gemini", "qwen", "copilot"]


@frozen
class Setup:
    """One agent's world: its HOME, the project (a git repository), the spec, the state folder
    the hook keeps its verdicts in, and the loopback provider."""

    agent: str
    home: Path
    project: Path
    spec: Path
    state: Path
    server: AgentServer
    base: dict[str, str]  # `agent_home`'s environment, taken once (it writes the config)

    def env(self, path: str = "/usr/bin:/bin") -> dict[str, str]:
        """The agent's environment from `agent_home`, with a minimal PATH (node's folder and
        `path`: never this harness's venv), the hooks' state in the test's folder, and no
        blanket trust of the workspace (the install's own trust is what is tested)."""
        env = dict(self.base)
        env.pop("GEMINI_CLI_TRUST_WORKSPACE", None)
        node = shutil.which("node")
        assert node is not None
        env["PATH"] = f"{Path(node).parent}:{path}"
        env["XDG_STATE_HOME"] = str(self.state.parent.parent)
        env["SHELL"] = "/bin/sh"
        if self.agent == "codex":  # written by agent_home: also the trust's file
            env["CODEX_HOME"] = str(self.home / ".codex")
        return env

    def run(self, path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
        """The agent, headless, in the project, until it stops."""
        return subprocess.run(
            agent_argv(self.agent, PROMPT),
            cwd=self.project,
            env=self.env(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )

    def install(self, **options: Any) -> list[str]:
        """`harness hook install` for this agent in the project (HOME is the agent's)."""
        saved = {k: os.environ.get(k) for k in ("HOME", "CODEX_HOME")}
        os.environ["HOME"] = str(self.home)
        os.environ["CODEX_HOME"] = str(self.home / ".codex")
        try:
            done = install_hook(
                self.agent, self.spec, project=self.project, max_blocks=MAX_BLOCKS, **options
            )
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        return list(done.notes)

    def doctor(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
        monkeypatch.setenv("HOME", str(self.home))
        monkeypatch.setenv("CODEX_HOME", str(self.home / ".codex"))
        monkeypatch.delenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", raising=False)
        capsys.readouterr()
        main(["hook", "doctor", "--agent", self.agent, "--project", str(self.project)])
        return capsys.readouterr().out


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    agent: str = request.param
    agent_binary(agent)
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    spec = tmp_path / "checks.toml"
    spec.write_text(SPEC)
    # every turn claims to be done: an endless claim, which only the block cap ends
    with agent_server(fallback=say(CLAIM)) as server:
        state = tmp_path / "state" / "harness" / "stop-hook"
        base = agent_home(home, agent, server)  # the agent's user configuration: the server
        yield Setup(agent, home, project, spec, state, server, base)


def texts(server: AgentServer) -> list[str]:
    """Each model turn the provider received, as the text it holds."""
    return ["\n".join(strings(turn.body)) for turn in server.turns]


@pytest.mark.parametrize("world", HOOKED, indirect=True)
def test_a_failing_check_blocks_until_the_cap_ends_the_endless_claim(world: Setup) -> None:
    """The installed hook is loaded and run; each stop is blocked with the reason, which is in
    the next request; after --max-blocks blocks the stop is allowed and the agent exits."""
    world.install(record_trust=True)
    ran = world.run()
    assert ran.returncode == 0, ran.stderr[-3000:]
    sent = texts(world.server)
    assert len(sent) == MAX_BLOCKS + 1, sent
    for number in range(1, MAX_BLOCKS + 1):
        assert f"stop blocked {number} of at most {MAX_BLOCKS} times in a row" in sent[number]
        assert "missing 1 of 1: report.md" in sent[number]
    assert "stop blocked" not in sent[0]
    verdicts = read_verdicts(world.state)
    assert [(v.agent, v.blocked, v.blocks) for v in verdicts] == [
        (world.agent, True, 1),
        (world.agent, True, 2),
        (world.agent, False, 2),  # the cap: allowed although the check fails
    ]
    assert len({v.session_id for v in verdicts}) == 1


@pytest.mark.parametrize("world", HOOKED, indirect=True)
def test_a_passing_check_lets_the_first_stop_go(world: Setup) -> None:
    world.install(record_trust=True)
    (world.project / "report.md").write_text("# Report\n")
    ran = world.run()
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(texts(world.server)) == 1
    [verdict] = read_verdicts(world.state)
    assert (verdict.agent, verdict.would_block, verdict.blocked) == (world.agent, False, False)


@pytest.mark.parametrize("world", ["claude"], indirect=True)
def test_a_bare_harness_lets_claude_stop_unchecked_and_doctor_says_so(
    world: Setup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the install wrote before: `harness` alone. Claude Code, started without the venv
    on its PATH, cannot start it (exit 127), stops after one request and exits 0."""
    world.install(executable="harness")
    ran = world.run()
    assert ran.returncode == 0
    assert len(texts(world.server)) == 1
    assert read_verdicts(world.state) == []
    out = world.doctor(capsys, monkeypatch)
    assert "NOT CHECKED: the command cannot start without your shell's PATH (exit 127)" in out


@pytest.mark.parametrize("world", ["codex"], indirect=True)
def test_codex_skips_an_untrusted_hook_and_doctor_says_so(
    world: Setup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = world.install()
    assert "Codex will NOT run it yet" in notes[0]
    ran = world.run()
    assert ran.returncode == 0
    assert len(texts(world.server)) == 1  # the hook never ran
    assert read_verdicts(world.state) == []
    assert "NOT CHECKED" in world.doctor(capsys, monkeypatch)


@pytest.mark.parametrize("world", ["codex"], indirect=True)
def test_codexs_own_hook_list_says_the_recorded_trust_is_its_own(world: Setup) -> None:
    """Codex's app-server lists the installed hook as trusted, at the hash the install
    recorded: the trust is recorded exactly as Codex records it; and still trusted after a
    reinstall with other options."""
    world.install(record_trust=True)
    hooks = json.loads((world.project / ".codex" / "hooks.json").read_text())
    entry = hooks["hooks"]["Stop"][0]["hooks"][0]
    [listed] = codex_hook_list(world)
    assert listed["trustStatus"] == "trusted"
    assert listed["currentHash"] == codex_hook_hash(entry)
    assert listed["key"] == f"{world.project.resolve()}/.codex/hooks.json:stop:0:0"
    # a reinstall with other options changes the hash: the trust is carried over, not lost
    notes = world.install(time_limit=80)
    assert any("carried over" in note for note in notes)
    hooks = json.loads((world.project / ".codex" / "hooks.json").read_text())
    entry = hooks["hooks"]["Stop"][0]["hooks"][0]
    assert entry["timeout"] == 90
    [listed] = codex_hook_list(world)
    assert (listed["trustStatus"], listed["currentHash"]) == ("trusted", codex_hook_hash(entry))


def codex_hook_list(world: Setup) -> list[dict[str, Any]]:
    """The hooks Codex itself lists for the project (``codex app-server``, ``hooks/list``)."""
    requests = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(world.project)]}},
    ]
    with subprocess.Popen(
        [str(agent_binary("codex")), "app-server"],
        cwd=world.project,
        env=world.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        for message in requests:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
        try:
            for line in server.stdout:
                answer = json.loads(line)
                if answer.get("id") == 2:
                    return list(answer["result"]["data"][0]["hooks"])
        finally:
            server.kill()
    raise AssertionError("codex app-server ended without answering hooks/list")


@pytest.mark.parametrize("world", ["gemini"], indirect=True)
def test_gemini_refuses_an_untrusted_folder_and_doctor_says_so(
    world: Setup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headless gemini in an untrusted folder exits 55 before any request."""
    notes = world.install()
    assert "exits 55" in notes[0]
    ran = world.run()
    assert ran.returncode == 55
    assert texts(world.server) == []
    out = world.doctor(capsys, monkeypatch)
    assert "runs a project's hooks only in a trusted folder" in out


@pytest.mark.parametrize("world", ["qwen"], indirect=True)
def test_a_timeout_in_seconds_lets_qwen_stop_unchecked_and_doctor_says_so(
    world: Setup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Claude-shaped entry (timeout 60) in Qwen Code's settings: killed after 60 ms."""
    world.install()
    path = world.project / ".qwen" / "settings.json"
    settings = json.loads(path.read_text())
    settings["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 60
    path.write_text(json.dumps(settings))
    ran = world.run()
    assert ran.returncode == 0
    assert len(texts(world.server)) == 1
    assert "Qwen Code reads milliseconds" in world.doctor(capsys, monkeypatch)


@pytest.mark.parametrize("world", HOOKED, indirect=True)
def test_doctor_says_a_sound_install_checks_a_stop(
    world: Setup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world.install(record_trust=True)
    out = world.doctor(capsys, monkeypatch)
    assert "ok: a stop is checked (the checks fail now" in out
