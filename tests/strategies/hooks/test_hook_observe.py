"""The stop hooks' block reason carries no escape sequence (issue 29, point 8), and observe mode
runs the checks and records the verdict without ever blocking a stop."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from strategies._cli import main
from strategies._cli._hooks._core import VERDICTS, read_verdicts
from strategies._cli._hooks._stop import register

AGENTS = ("claude", "codex", "gemini", "cursor", "qwen", "copilot")
# A check whose output is a test runner's coloured report, a title change and a bell.
NOISY = (
    "[[checks]]\n"
    'type = "command"\n'
    'command = ["sh", "-c", "printf \'\\\\033[31mFAILED\\\\033[0m test_x\\\\033]0;owned\\\\007'
    "\\\\n\\\\033[2Kdone\\\\a'; exit 1\"]\n"
    'what = "the suite"\n'
)


def payload(agent: str, workspace: Path) -> dict[str, object]:
    cwd = str(workspace)
    if agent == "cursor":
        return {
            "conversation_id": "s1",
            "hook_event_name": "stop",
            "workspace_roots": [cwd],
            "status": "completed",
            "loop_count": 0,
        }
    if agent == "copilot":
        return {"sessionId": "s1", "cwd": cwd, "stopReason": "end_turn"}
    event = "AfterAgent" if agent == "gemini" else "Stop"
    return {"session_id": "s1", "cwd": cwd, "hook_event_name": event}


def run_hook(
    agent: str,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
) -> tuple[int, str, str]:
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
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload(agent, root / "ws"))))
    code = args.handler(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "spec.toml").write_text(NOISY)
    return tmp_path


@pytest.mark.parametrize("agent", AGENTS)
def test_the_block_reason_has_no_escape_sequence_for_any_agent(
    agent: str, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check's colours and title sequence are removed whole; the bell is shown, not sent."""
    code, out, _ = run_hook(agent, root, monkeypatch, capsys)
    assert code == 0
    answer = json.loads(out)
    reason = answer.get("reason") or answer.get("followup_message")
    assert isinstance(reason, str)
    output = reason.split("the end of its output:\n", 1)[1].splitlines()
    # the colours and the title sequence (its text with it) removed whole; the bell shown
    assert [line.strip() for line in output[:2]] == ["FAILED test_x", "done\\x07"]
    assert "\x1b" not in reason
    assert "\x07" not in reason


@pytest.mark.parametrize("agent", AGENTS)
def test_observe_mode_records_the_verdict_and_never_blocks(
    agent: str, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        code, out, err = run_hook(agent, root, monkeypatch, capsys, "--observe")
        assert code == 0
        assert out.strip() in ("", "{}")  # each agent's "let it stop"
        assert "observe mode" in err
        assert "would have been blocked" in err
    verdicts = read_verdicts(root / "state")
    assert [(v.agent, v.mode, v.would_block, v.blocked) for v in verdicts] == [
        (agent, "observe", True, False)
    ] * 2
    assert verdicts[0].failed[0][0].startswith("the suite")
    assert "\x1b" not in verdicts[0].failed[0][1]
    assert not list((root / "state").glob("*.json"))  # no block was ever counted


def test_enforced_stops_are_recorded_too_and_listed(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_hook("claude", root, monkeypatch, capsys)
    run_hook("gemini", root, monkeypatch, capsys, "--observe")
    assert main(["hook", "verdicts", "--state-dir", str(root / "state")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert "claude" in out[0]
    assert "enforce" in out[0]
    assert "BLOCKED (1)" in out[0]
    assert "gemini" in out[1]
    assert "observe" in out[1]
    assert "would block" in out[1]
    assert "the suite" in out[1]
    assert main(["hook", "verdicts", "--state-dir", str(root / "state"), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["mode"] for line in lines] == ["enforce", "observe"]


def test_a_broken_verdict_line_is_named(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "state").mkdir()
    (root / "state" / VERDICTS).write_text('{"at": 1}\n')
    assert main(["hook", "verdicts", "--state-dir", str(root / "state")]) == 2
    assert f"{VERDICTS}:1" in capsys.readouterr().err


def test_install_observe_writes_an_observing_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "spec.toml").write_text(NOISY)
    project = tmp_path / "p"
    project.mkdir()
    argv = ["hook", "install", "--agent", "claude", "--spec", str(tmp_path / "spec.toml")]
    assert main([*argv, "--project", str(project), "--observe"]) == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"].endswith(" --observe")


def test_the_viewer_shows_the_verdicts_escaped(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness view STATE_DIR`: a row per checked stop, observed ones marked; the check's text
    is escaped, never markup."""
    (root / "spec.toml").write_text(
        '[[checks]]\ntype = "command"\ncommand = ["sh", "-c", "echo \'<b>x</b>\'; exit 1"]\n'
        'what = "<script>alert(1)</script>"\n'
    )
    run_hook("claude", root, monkeypatch, capsys)
    run_hook("qwen", root, monkeypatch, capsys, "--observe")
    assert main(["view", str(root / "state")]) == 0
    page = (root / "state" / "verdicts.html").read_text()
    assert page.count('<tr data-mode="') == 2
    assert 'data-mode="enforce" data-verdict="blocked"' in page
    assert 'data-mode="observe" data-verdict="would-block"' in page
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "script-src &#x27;none&#x27;" in page  # the policy, in its attribute
