"""`harness hook claude-stop`: real Stop-hook payloads in, a block decision or silence out."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from strategies._cli._hook import claude_stop, register
from strategies._cli._spec import load_spec

PAYLOADS = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"

SPEC = """\
prompt = "Write report.md, then end your answer with a line DONE."

[model]
type = "fixture"
path = "unused.jsonl"

[[checks]]
type = "files"
paths = ["report.md"]

[[checks]]
type = "signal"
token = "DONE"
"""


@pytest.fixture
def setup(tmp_path: Path) -> Path:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "transcript.jsonl").write_text((PAYLOADS / "transcript.jsonl").read_text())
    return tmp_path


def payload(root: Path, name: str = "stop.json", **changes: Any) -> dict[str, Any]:
    """A fixture payload with its relative paths made absolute under `root`."""
    data: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    data["cwd"] = str(root / data["cwd"])
    data["transcript_path"] = str(root / data["transcript_path"])
    data.update(changes)
    return data


def hook(
    root: Path,
    stdin: str | dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *extra: str,
) -> tuple[int, dict[str, Any] | None, str]:
    """Run the command line as the agent would; return exit code, JSON answer, stderr."""
    parser = argparse.ArgumentParser(prog="harness")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "hook",
            "claude-stop",
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
    return code, (json.loads(out) if out.strip() else None), err


def test_a_stop_with_failing_checks_is_blocked_with_the_reason(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent gets a block decision naming what is missing, and the hook exits 0."""
    code, answer, _ = hook(setup, payload(setup), capsys, monkeypatch)
    assert code == 0
    assert answer is not None
    assert answer["decision"] == "block"
    assert "stop blocked 1 of at most 5 times in a row" in answer["reason"]
    assert "report.md" in answer["reason"]
    assert set(answer) == {"decision", "reason"}


def test_once_the_work_is_done_the_stop_is_allowed_silently(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-entered after a block, with report.md written and DONE said, the hook allows it."""
    hook(setup, payload(setup), capsys, monkeypatch)
    (setup / "workspace" / "report.md").write_text("# Report\n")
    code, answer, err = hook(setup, payload(setup, "stop_reentry.json"), capsys, monkeypatch)
    assert (code, answer) == (0, None)
    assert "checks pass" in err
    state = next((setup / "state").iterdir())
    assert json.loads(state.read_text()) == {"blocks": 0}


def test_the_block_cap_lets_the_session_stop_and_then_starts_over(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --max-blocks 2 the third stop in a row is allowed; the next chain is blocked again."""
    answers = [
        hook(setup, payload(setup, name), capsys, monkeypatch, "--max-blocks", "2")
        for name in ("stop.json", "stop_reentry.json", "stop_reentry.json", "stop.json")
    ]
    assert [code for code, _, _ in answers] == [0, 0, 0, 0]
    assert [a is not None for _, a, _ in answers] == [True, True, False, True]
    assert "blocked 2 time(s) in a row (--max-blocks 2)" in answers[2][2]
    first = answers[3][1]
    assert first is not None
    assert "stop blocked 1 of at most 2" in first["reason"]


def test_reentry_allow_never_blocks_twice_in_a_chain(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --reentry allow, a stop with stop_hook_active true passes without checking."""
    _, blocked, _ = hook(setup, payload(setup), capsys, monkeypatch, "--reentry", "allow")
    assert blocked is not None
    code, answer, err = hook(
        setup, payload(setup, "stop_reentry.json"), capsys, monkeypatch, "--reentry", "allow"
    )
    assert (code, answer) == (0, None)
    assert "--reentry allow" in err


def test_the_final_answer_comes_from_the_payload_or_the_transcript(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal check reads the transcript's last answer, or last_assistant_message."""
    (setup / "workspace" / "report.md").write_text("# Report\n")
    code, answer, _ = hook(setup, payload(setup), capsys, monkeypatch)
    assert (code, answer) == (0, None)
    code, answer, _ = hook(
        setup,
        payload(setup, last_assistant_message="Still writing the report."),
        capsys,
        monkeypatch,
    )
    assert answer is not None
    assert "completion signal DONE" in answer["reason"]
    assert "report.md" not in answer["reason"].split("\n", 2)[1]


def test_a_subagent_stop_is_checked_like_a_stop(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SubagentStop payloads have the same fields and get the same treatment."""
    code, answer, _ = hook(setup, payload(setup, "subagent_stop.json"), capsys, monkeypatch)
    assert code == 0
    assert answer is not None
    assert answer["decision"] == "block"


def test_block_counts_are_kept_per_session(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another session starts its own count; an odd session id stays inside the state dir."""
    hook(setup, payload(setup), capsys, monkeypatch, "--max-blocks", "1")
    odd = payload(setup, session_id="../../etc/passwd")
    _, answer, _ = hook(setup, odd, capsys, monkeypatch, "--max-blocks", "1")
    assert answer is not None
    assert all(p.parent == setup / "state" for p in (setup / "state").iterdir())
    assert len(list((setup / "state").iterdir())) == 2


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("this is not json", "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"hook_event_name": "Stop"}, "'session_id'"),
        ({"session_id": "s", "hook_event_name": "PreToolUse"}, "'hook_event_name'"),
        ({"session_id": "s", "stop_hook_active": "yes"}, "'stop_hook_active'"),
        ({"session_id": "s", "cwd": "/no/such/folder/xyz"}, "not an existing folder"),
    ],
)
def test_a_broken_payload_is_a_non_blocking_error(
    setup: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str | dict[str, Any],
    message: str,
) -> None:
    """Exit code 1 with the problem on stderr and no block: a broken setup never traps."""
    code, answer, err = hook(setup, stdin, capsys, monkeypatch)
    assert (code, answer) == (1, None)
    assert message in err


def test_an_unreadable_spec_is_a_non_blocking_error(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec that does not load lets the agent stop and says why."""
    (setup / "spec.toml").write_text("prompt = \n")
    code, answer, err = hook(setup, payload(setup), capsys, monkeypatch)
    assert (code, answer) == (1, None)
    assert "spec.toml" in err


class Exploding:
    """A check that raises: the bridge must count it as not done."""

    async def check(self, state: Any) -> str | None:
        raise RuntimeError("the test runner crashed")

    def description(self) -> str:
        return "a check that crashes"


@pytest.mark.anyio
async def test_a_check_that_raises_blocks_fail_closed(setup: Path) -> None:
    """An exception in a check is a reason to keep working, never a pass."""
    spec = attrs.evolve(load_spec(setup / "spec.toml"), checks=(Exploding(),))
    decision = await claude_stop(payload(setup), spec, state_dir=setup / "state")
    assert decision.block
    assert decision.reason is not None
    assert "the test runner crashed" in decision.reason
    assert decision.answer() == {"decision": "block", "reason": decision.reason}


@pytest.mark.anyio
async def test_max_blocks_must_be_positive(setup: Path) -> None:
    """A cap of zero would never block; it is refused by name."""
    from harness import ConfigurationError

    with pytest.raises(ConfigurationError, match="'max_blocks'"):
        await claude_stop(
            payload(setup), load_spec(setup / "spec.toml"), state_dir=setup, max_blocks=0
        )


@pytest.mark.parametrize(
    ("transcript", "passes"),
    [
        (
            'not json\n{"message": {"role": "assistant", "content": "All set.\\nDONE"}}\n'
            '{"type": "summary"}\n{"message": {"role": "user", "content": "thanks"}}\n',
            True,
        ),
        (
            '{"message": {"role": "assistant", "content": [{"type": "text", "text": "DONE"}]}}\n'
            '{"message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}}\n',
            True,
        ),
        ('{"message": {"role": "assistant", "content": "no signal here"}}\n', False),
        (None, False),
    ],
)
@pytest.mark.anyio
async def test_the_last_answer_is_read_from_whatever_the_transcript_holds(
    setup: Path, transcript: str | None, passes: bool
) -> None:
    """Skips lines that are not answers; a missing transcript means no answer (not done)."""
    (setup / "workspace" / "report.md").write_text("# Report\n")
    path = setup / "transcript.jsonl"
    if transcript is None:
        path.unlink()
    else:
        path.write_text(transcript)
    spec = load_spec(setup / "spec.toml")
    decision = await claude_stop(payload(setup), spec, state_dir=setup / "state")
    assert decision.block is not passes
    bare = payload(setup)
    del bare["transcript_path"]
    unanswered = await claude_stop(bare, spec, state_dir=setup / "state")
    assert unanswered.block
