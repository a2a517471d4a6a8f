"""One verify-before-stop for every agent: each agent's documented payload in, its documented
answer out, with the same block cap, re-entry and deadline rules."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from harness.testing import FakeClock
from strategies._cli._hooks._stop import agent_stop, register
from strategies._spec import load_spec

PAYLOADS = Path(__file__).resolve().parents[3] / "fixtures" / "hooks"
ROOT = Path(__file__).resolve().parents[3]

SPEC = """\
[[checks]]
type = "files"
paths = ["report.md"]
"""
SIGNAL_SPEC = SPEC + '\n[[checks]]\ntype = "signal"\ntoken = "DONE"\n'

FIXTURE = {
    "claude": "stop.json",
    "codex": "codex_stop.json",
    "gemini": "gemini_after_agent.json",
    "cursor": "cursor_stop.json",
    "qwen": "qwen_stop.json",
    "copilot": "copilot_agent_stop.json",
}
AGENTS = list(FIXTURE)


def reentered(agent: str) -> dict[str, Any]:
    """The payload field each agent sets when it is going on because the hook sent it back."""
    return {"loop_count": 1} if agent == "cursor" else {"stop_hook_active": True}


@pytest.fixture
def setup(tmp_path: Path) -> Path:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "transcript.jsonl").write_text((PAYLOADS / "transcript.jsonl").read_text())
    return tmp_path


def payload(root: Path, agent: str, **changes: Any) -> dict[str, Any]:
    """The agent's fixture payload with its relative paths made absolute under `root`."""
    data: dict[str, Any] = json.loads((PAYLOADS / FIXTURE[agent]).read_text())
    for key in ("cwd", "transcript_path"):
        if isinstance(data.get(key), str):
            data[key] = str(root / data[key])
    if "workspace_roots" in data:
        data["workspace_roots"] = [str(root / r) for r in data["workspace_roots"]]
    data.update(changes)
    return data


def hook(
    root: Path,
    agent: str,
    stdin: str | dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *extra: str,
) -> tuple[int, str, str]:
    """Run `harness hook AGENT-stop` as the agent would; return exit code, stdout, stderr."""
    parser = argparse.ArgumentParser(prog="harness")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "hook",
            f"{agent}-stop",
            "--spec",
            str(root / "spec.toml"),
            "--state-dir",
            str(root / "state"),
            *extra,
        ]
    )
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = args.handler(args)
    out, err = capsys.readouterr()
    return code, out, err


def reason_of(agent: str, out: str) -> str | None:
    """The reason in the agent's own answer format, None if it lets the agent stop; the
    answer must be exactly what the agent documents."""
    if agent in ("claude", "codex", "qwen", "copilot"):
        if not out.strip():
            return None
        answer = json.loads(out)
        assert set(answer) == {"decision", "reason"}
        assert answer["decision"] == "block"
        return str(answer["reason"])
    answer = json.loads(out)  # Gemini and Cursor read stdout as JSON: it is never empty
    if answer == {}:
        return None
    if agent == "gemini":
        assert set(answer) == {"decision", "reason"}
        assert answer["decision"] == "deny"
        return str(answer["reason"])
    assert set(answer) == {"followup_message"}
    return str(answer["followup_message"])


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_is_sent_back_in_its_own_format_until_the_checks_pass(
    agent: str, setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing check blocks with the reason in the agent's answer; once the work is done the
    agent is let go in its format, and the block count is back to zero."""
    code, out, _ = hook(setup, agent, payload(setup, agent), capsys, monkeypatch)
    reason = reason_of(agent, out)
    assert code == 0
    assert reason is not None
    assert "stop blocked 1 of at most 5 times in a row" in reason
    assert "report.md" in reason
    (setup / "workspace" / "report.md").write_text("# Report\n")
    code, out, err = hook(
        setup, agent, payload(setup, agent, **reentered(agent)), capsys, monkeypatch
    )
    assert (code, reason_of(agent, out)) == (0, None)
    assert "checks pass" in err
    [state] = (setup / "state").glob("*.json")
    assert json.loads(state.read_text()) == {"blocks": 0}


@pytest.mark.parametrize("agent", AGENTS)
def test_the_same_block_cap_ends_every_agents_chain(
    agent: str, setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --max-blocks 2 the third stop in a row is let go, and the next chain starts over."""
    first, again = payload(setup, agent), payload(setup, agent, **reentered(agent))
    outcomes = [
        hook(setup, agent, p, capsys, monkeypatch, "--max-blocks", "2")
        for p in (first, again, again, first)
    ]
    assert [code for code, _, _ in outcomes] == [0, 0, 0, 0]
    reasons = [reason_of(agent, out) for _, out, _ in outcomes]
    assert [r is not None for r in reasons] == [True, True, False, True]
    assert "blocked 2 time(s) in a row (--max-blocks 2)" in outcomes[2][2]
    assert "stop blocked 1 of at most 2" in str(reasons[3])


@pytest.mark.parametrize("agent", AGENTS)
def test_reentry_allow_lets_a_reentered_stop_go_for_every_agent(
    agent: str, setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--reentry allow reads each agent's own re-entry flag (Cursor's is loop_count > 0)."""
    code, out, err = hook(
        setup,
        agent,
        payload(setup, agent, **reentered(agent)),
        capsys,
        monkeypatch,
        "--reentry",
        "allow",
    )
    assert (code, reason_of(agent, out)) == (0, None)
    assert "--reentry allow" in err


@pytest.mark.parametrize(
    ("agent", "field"), [("codex", "last_assistant_message"), ("gemini", "prompt_response")]
)
def test_the_final_answer_comes_from_each_agents_payload(
    agent: str,
    field: str,
    setup: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check that reads the agent's answer (`signal`) reads the field the agent documents."""
    (setup / "spec.toml").write_text(SIGNAL_SPEC)
    (setup / "workspace" / "report.md").write_text("# Report\n")
    _, out, _ = hook(setup, agent, payload(setup, agent), capsys, monkeypatch)
    assert "DONE" in str(reason_of(agent, out))
    changed = payload(setup, agent, **{field: "The report is written.\nDONE"})
    _, out, _ = hook(setup, agent, changed, capsys, monkeypatch)
    assert reason_of(agent, out) is None


@pytest.mark.parametrize("status", ["aborted", "error"])
def test_a_cursor_loop_that_was_aborted_or_failed_is_not_sent_back(
    status: str, setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person stopped it, or the agent could not go on: no follow-up, and the note says so."""
    code, out, err = hook(
        setup, "cursor", payload(setup, "cursor", status=status), capsys, monkeypatch
    )
    assert (code, json.loads(out)) == (0, {})
    assert f"ended {status}: not checked" in err


def test_block_counts_of_two_agents_never_mix(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same session id under Codex and Gemini keeps two counts."""
    for agent in ("codex", "gemini"):
        _, out, _ = hook(
            setup, agent, payload(setup, agent, session_id="same"), capsys, monkeypatch
        )
        assert "stop blocked 1 of" in str(reason_of(agent, out))
    assert len(list((setup / "state").glob("*.json"))) == 2


@pytest.mark.parametrize(
    ("agent", "changes", "message"),
    [
        ("codex", {"session_id": ""}, "'session_id' must be a non-empty string"),
        ("codex", {"hook_event_name": "PreToolUse"}, "'hook_event_name' must be 'Stop'"),
        ("gemini", {"hook_event_name": "BeforeAgent"}, "must be 'AfterAgent'"),
        ("gemini", {"stop_hook_active": "true"}, "'stop_hook_active' must be true or false"),
        ("cursor", {"status": None}, "'status' must be one of"),
        ("cursor", {"loop_count": -1}, "'loop_count' must be a whole number"),
        ("cursor", {"conversation_id": None}, "'conversation_id' must be a non-empty string"),
        ("cursor", {"workspace_roots": "/tmp"}, "'workspace_roots' must be a list"),
    ],
)
def test_a_payload_off_the_agents_documentation_is_a_non_blocking_error(
    agent: str,
    changes: dict[str, Any],
    message: str,
    setup: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exit 1 with the field named on stderr and nothing on stdout: the agent may stop."""
    code, out, err = hook(setup, agent, payload(setup, agent, **changes), capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert message in err


@pytest.mark.parametrize("agent", AGENTS)
def test_a_byte_order_mark_before_the_payload_is_accepted(
    agent: str, setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some agents start the payload with a UTF-8 byte-order mark; it is not part of the JSON."""
    text = "\ufeff" + json.dumps(payload(setup, agent))
    code, out, _ = hook(setup, agent, text, capsys, monkeypatch)
    assert code == 0
    assert reason_of(agent, out) is not None


class Sleeper:
    """A check that takes `seconds` on the fake clock."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds

    async def check(self, state: Any) -> str | None:
        await self.clock.sleep(self.seconds)
        return None

    def description(self) -> str:
        return f"a check that takes {self.seconds:g}s"


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.anyio
async def test_every_agent_gets_the_same_deadline(agent: str, setup: Path) -> None:
    """All checks together get time_limit whichever agent asks: the one running is cut off."""
    clock = FakeClock()
    spec = attrs.evolve(
        load_spec(setup / "spec.toml", purpose="checks"), checks=(Sleeper(clock, 1000),)
    )
    decision = await agent_stop(
        agent, payload(setup, agent), spec, state_dir=setup / "state", time_limit=50, clock=clock
    )
    assert clock.now() == 50
    assert decision.block
    assert "did not finish within the checks' 50s deadline" in str(decision.reason)


@pytest.mark.parametrize("agent", AGENTS)
def test_the_command_line_answers_each_agent_through_a_real_process(
    agent: str, setup: Path
) -> None:
    """`python -m strategies hook AGENT-stop` with the payload piped in, as the agent runs it."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "strategies",
            "hook",
            f"{agent}-stop",
            "--spec",
            str(setup / "spec.toml"),
            "--state-dir",
            str(setup / "state"),
        ],
        input=json.dumps(payload(setup, agent)),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "report.md" in str(reason_of(agent, done.stdout))
