"""`harness hook claude-stop`: real Stop-hook payloads in, a block decision or silence out."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import attrs
import pytest

from harness import ConfigurationError
from harness.testing import FakeClock
from strategies._cli import main
from strategies._cli._hooks._claude_transcript import TAIL_BYTES, TranscriptError, last_answer
from strategies._cli._hooks._stop import DEFAULT_TIME_LIMIT, claude_stop, register
from strategies._spec import load_spec

PAYLOADS = Path(__file__).resolve().parents[3] / "fixtures" / "hooks"

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
    (tmp_path / "subagents").mkdir()
    (tmp_path / SUBAGENT).write_text((PAYLOADS / SUBAGENT).read_text())
    return tmp_path


SUBAGENT = "subagents/agent-a1b2c3d4.jsonl"


def payload(root: Path, name: str = "stop.json", **changes: Any) -> dict[str, Any]:
    """A fixture payload with its relative paths made absolute under `root`."""
    data: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    for key in ("cwd", "transcript_path", "agent_transcript_path"):
        if key in data:
            data[key] = str(root / data[key])
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
    state = next((setup / "state").glob("*.json"))
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


def test_a_subagent_stop_reads_the_subagents_own_transcript(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subagent's answer is read from agent_transcript_path: transcript_path is the main
    session's, whose DONE must not pass the subagent's stop (and the other way round)."""
    (setup / "workspace" / "report.md").write_text("# Report\n")
    code, answer, _ = hook(setup, payload(setup, "subagent_stop.json"), capsys, monkeypatch)
    assert code == 0
    assert answer is not None
    assert "does not contain the completion signal DONE" in answer["reason"]
    (setup / SUBAGENT).write_text(
        json.dumps({"message": {"role": "assistant", "content": "Report written.\nDONE"}}) + "\n"
    )
    (setup / "transcript.jsonl").write_text("")
    code, answer, _ = hook(setup, payload(setup, "subagent_stop.json"), capsys, monkeypatch)
    assert (code, answer) == (0, None)
    # A main-session Stop still reads transcript_path, now empty: no answer, so blocked.
    _, answer, _ = hook(setup, payload(setup), capsys, monkeypatch)
    assert answer is not None
    # A SubagentStop without agent_transcript_path has no answer (the main one is not it).
    bare = payload(setup, "subagent_stop.json")
    del bare["agent_transcript_path"]
    (setup / "transcript.jsonl").write_text((PAYLOADS / "transcript.jsonl").read_text())
    _, answer, _ = hook(setup, bare, capsys, monkeypatch)
    assert answer is not None
    assert "your final message is empty" in answer["reason"]


def test_block_counts_are_kept_per_session(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another session starts its own count; an odd session id stays inside the state dir."""
    hook(setup, payload(setup), capsys, monkeypatch, "--max-blocks", "1")
    odd = payload(setup, session_id="../../etc/passwd")
    _, answer, _ = hook(setup, odd, capsys, monkeypatch, "--max-blocks", "1")
    assert answer is not None
    assert all(p.parent == setup / "state" for p in (setup / "state").glob("*.json"))
    assert len(list((setup / "state").glob("*.json"))) == 2


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


def test_a_spec_that_does_not_load_blocks_with_the_reason_within_the_cap(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec that does not load never lets a stop through silently: the stop is blocked with
    the reason (the spec is the person's to fix), and the cap still ends the chain."""
    (setup / "spec.toml").write_text("prompt = \n")
    code, answer, err = hook(setup, payload(setup), capsys, monkeypatch, "--max-blocks", "1")
    assert code == 0
    assert answer is not None
    assert answer["decision"] == "block"
    assert "The completion checks could not run (stop blocked 1 of at most 1" in answer["reason"]
    assert "spec.toml" in answer["reason"]
    assert "do not create or edit it" in answer["reason"]
    assert "spec.toml" in err
    code, answer, err = hook(setup, payload(setup), capsys, monkeypatch, "--max-blocks", "1")
    assert (code, answer) == (0, None)
    assert "stop allowed" in err


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
async def test_a_stop_reads_its_block_count_once(
    setup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count decides the stop and words its answer from one read of the file (no second
    read that another stop's write could make disagree with the first)."""
    from strategies._cli._hooks._core import BlockCount

    reads: list[Path] = []
    load = BlockCount.load

    def counted(self: BlockCount) -> int:
        reads.append(self.path)
        return load(self)

    monkeypatch.setattr(BlockCount, "load", counted)
    spec = attrs.evolve(load_spec(setup / "spec.toml"), checks=(Exploding(),))
    for blocks in (1, 2):
        decision = await claude_stop(payload(setup), spec, state_dir=setup / "state")
        assert (decision.block, decision.blocks) == (True, blocks)
    assert len(reads) == 2


@pytest.mark.anyio
async def test_max_blocks_must_be_positive(setup: Path) -> None:
    """A cap of zero would never block; it is refused by name."""
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
        ("", False),
    ],
)
@pytest.mark.anyio
async def test_the_last_answer_is_read_from_whatever_the_transcript_holds(
    setup: Path, transcript: str, passes: bool
) -> None:
    """Skips lines that are not answers; no answer in the transcript, or no transcript named
    in the payload, means no answer (not done)."""
    (setup / "workspace" / "report.md").write_text("# Report\n")
    (setup / "transcript.jsonl").write_text(transcript)
    spec = load_spec(setup / "spec.toml")
    decision = await claude_stop(payload(setup), spec, state_dir=setup / "state")
    assert decision.block is not passes
    bare = payload(setup)
    del bare["transcript_path"]
    unanswered = await claude_stop(bare, spec, state_dir=setup / "state")
    assert unanswered.block


def test_a_tilde_in_the_transcript_path_means_home(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code may send ``~/.claude/projects/...``: the hook reads it under HOME."""
    monkeypatch.setenv("HOME", str(setup))
    (setup / "workspace" / "report.md").write_text("# Report\n")
    stop = payload(setup, transcript_path="~/transcript.jsonl")
    assert hook(setup, stop, capsys, monkeypatch)[:2] == (0, None)
    subagent = payload(setup, "subagent_stop.json", agent_transcript_path=f"~/{SUBAGENT}")
    _, answer, _ = hook(setup, subagent, capsys, monkeypatch)
    assert answer is not None
    assert "does not contain the completion signal DONE" in answer["reason"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.jsonl", "cannot read the transcript {path!r}: No such file or directory"),
        ("workspace", "the transcript {path!r} is not a regular file"),
    ],
)
def test_a_transcript_that_cannot_be_read_is_an_error_not_an_empty_answer(
    setup: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    message: str,
) -> None:
    """A transcript named but unreadable is reported (exit 1, non-blocking), never checked as
    if the agent's final message were empty."""
    path = str(setup / name)
    code, answer, err = hook(setup, payload(setup, transcript_path=path), capsys, monkeypatch)
    assert (code, answer) == (1, None)
    assert err == f"harness hook: transcript_path: {message.format(path=path)}\n"
    subagent = payload(setup, "subagent_stop.json", agent_transcript_path=path)
    code, _, err = hook(setup, subagent, capsys, monkeypatch)
    assert code == 1
    assert err.startswith("harness hook: agent_transcript_path: ")


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_as_the_transcript_neither_hangs_nor_fills_memory(
    setup: Path, kind: str
) -> None:
    """The real command, as the agent runs it: a FIFO with no writer or /dev/zero as the
    transcript is refused at once (opened without blocking, and not a regular file)."""
    if kind == "fifo":
        path = setup / "fifo"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    argv = [sys.executable, "-m", "strategies", "hook", "claude-stop"]
    argv += ["--spec", str(setup / "spec.toml"), "--state-dir", str(setup / "state")]
    done = subprocess.run(
        argv,
        input=json.dumps(payload(setup, transcript_path=str(path))),
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limit_memory,  # a regression fails with MemoryError, not the machine
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"harness hook: transcript_path: the transcript {str(path)!r} is not a regular file\n"
    )


def test_only_the_tail_of_a_long_transcript_is_read(tmp_path: Path) -> None:
    """The answer is found in the last TAIL_BYTES; memory stays near that bound however long
    the transcript; an answer that does not fit in the tail is an error, not an older answer."""
    path = tmp_path / "long.jsonl"
    early = json.dumps({"message": {"role": "assistant", "content": "EARLY DONE"}})
    late = json.dumps({"message": {"role": "assistant", "content": "late " * 40}})
    with path.open("w") as handle:
        handle.write(early + "\n" + "x" * (4 * TAIL_BYTES) + "\n" + late + "\n")
    tracemalloc.start()
    try:
        assert last_answer(path) == ("late " * 40)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * TAIL_BYTES  # the whole file is 4 times the tail
    with pytest.raises(TranscriptError, match="no assistant answer in its last 100 bytes"):
        last_answer(path, limit=100)
    assert last_answer(path, limit=len(late) + 2) == "late " * 40


CHECKS_ONLY = """\
[[checks]]
type = "files"
paths = ["report.md"]
"""


def test_a_spec_with_only_checks_serves_the_hook(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No prompt, no [model]: the hook runs the checks all the same."""
    (setup / "spec.toml").write_text(CHECKS_ONLY)
    code, answer, _ = hook(setup, payload(setup), capsys, monkeypatch)
    assert code == 0
    assert answer is not None
    assert "report.md" in answer["reason"]
    (setup / "workspace" / "report.md").write_text("# Report\n")
    assert hook(setup, payload(setup), capsys, monkeypatch)[:2] == (0, None)


class Sleeper:
    """A check that takes `seconds` on the clock (a slow test suite)."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds

    async def check(self, state: Any) -> str | None:
        await self.clock.sleep(self.seconds)
        return None

    def description(self) -> str:
        return f"a check that takes {self.seconds:g}s"


@pytest.mark.anyio
async def test_the_checks_end_within_the_hooks_own_deadline(setup: Path) -> None:
    """All checks together get time_limit: the one running then is cancelled and the rest are
    not started; both count as not done, and the note says which two settings to raise."""
    clock = FakeClock()
    checks = (Sleeper(clock, 20), Sleeper(clock, 1000), Sleeper(clock, 1))
    spec = attrs.evolve(load_spec(setup / "spec.toml"), checks=checks)
    decision = await claude_stop(
        payload(setup), spec, state_dir=setup / "state", time_limit=50, clock=clock
    )
    assert clock.now() == 50
    assert decision.block
    assert decision.reason is not None
    lines = decision.reason.splitlines()
    assert lines[1:5] == [
        "- a check that takes 1000s",
        "  did not finish within the checks' 50s deadline",
        "- a check that takes 1s",
        "  was not started within the checks' 50s deadline",
    ]
    assert decision.note == (
        "the checks were cut off by the hook's 50s deadline (--timeout): raise it together "
        "with the hook's \"timeout\" in the agent's settings"
    )
    with pytest.raises(ConfigurationError, match="'time_limit' must be a positive number"):
        await claude_stop(payload(setup), spec, state_dir=setup / "state", time_limit=0)


def test_the_default_deadline_leaves_a_margin_under_the_agents_hook_timeout(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default a slow check is cut at 50 s, 10 s before the 60 s after which Claude Code
    (before it raised its default) kills a command hook; --timeout gives more time."""
    assert DEFAULT_TIME_LIMIT == 50
    parser = argparse.ArgumentParser(prog="harness")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["hook", "claude-stop", "--spec", "s.toml"])
    assert args.timeout == DEFAULT_TIME_LIMIT
    (setup / "spec.toml").write_text(
        '[[checks]]\ntype = "command"\ncommand = ["sleep", "30"]\nwhat = "the suite"\n'
    )
    code, answer, err = hook(setup, payload(setup), capsys, monkeypatch, "--timeout", "0.5")
    assert code == 0
    assert answer is not None
    assert "did not finish within the checks' 0.5s deadline" in answer["reason"]
    assert "(--timeout): raise it together" in err


@pytest.mark.parametrize(
    "extra",
    [["--max-blocks", "many"], ["--bogus"], ["--timeout"], []],
)
def test_a_bad_hook_command_line_is_a_non_blocking_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """argparse exits 2 on a bad command line, which the agent takes as "block the stop":
    for the hook it is exit 1, so a typo in settings.json cannot wedge every session."""
    argv = ["hook", "claude-stop", *(["--spec", str(tmp_path / "s.toml")] if extra else [])]
    assert main([*argv, *extra]) == 1
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main(["run"])
    assert caught.value.code == 2  # other commands keep argparse's usage error


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Parse `argv` as `main` does: unknown arguments are the chosen command's usage error."""
    from strategies._cli import chosen_parser

    args, unknown = parser.parse_known_args(argv)
    chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")


@pytest.mark.parametrize("subcommand", ["claude-stop", "copilot-stop"])
def test_a_stop_parses_its_command_line_with_its_own_grammar_alone(
    subcommand: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stop builds the parser of its own subcommand and no other hook command's: its help
    and its usage errors are the whole parser's, word for word."""
    from strategies._cli import build_parser

    alone = build_parser("hook", subcommand)
    whole = build_parser("hook")
    kinds = [a for a in alone._actions if isinstance(a, argparse._SubParsersAction)]
    (hook,) = kinds[0].choices.values()
    stops = [a for a in hook._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(stops[0].choices) == [subcommand]
    said = []
    for parser in (alone, whole):
        for argv in (["--help"], ["--spec"], ["--spec", "s.toml", "--bogus", "x"]):
            with pytest.raises(SystemExit):
                _parse(parser, ["hook", subcommand, *argv])
            said.append(capsys.readouterr())
    assert said[:3] == said[3:]
    assert "--walk-up" in said[0].out


def test_each_subagent_has_its_own_block_cap_apart_from_the_main_session(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three blocked stops of subagents (two of one, one of another) leave the main session's
    cap of 2 untouched: its own first two stops are still blocked; each subagent counts apart."""
    cap = ("--max-blocks", "2")
    first = payload(setup, "subagent_stop.json")
    other = payload(setup, "subagent_stop.json", agent_id="e5f6a7b8")
    answers = [
        hook(setup, p, capsys, monkeypatch, *cap)[1]
        for p in (first, first, other, payload(setup), payload(setup, "stop_reentry.json"))
    ]
    assert all(a is not None for a in answers)
    reasons = [a["reason"].split("\n", 1)[0] for a in answers if a is not None]
    assert [r.split("stop blocked ")[1][:1] for r in reasons] == ["1", "2", "1", "1", "2"]
    # The first subagent's third stop is allowed: its own cap is used up.
    code, answer, err = hook(setup, first, capsys, monkeypatch, *cap)
    assert (code, answer) == (0, None)
    assert "blocked 2 time(s) in a row" in err
    # A subagent with no agent_id is told apart by its own transcript.
    bare = payload(setup, "subagent_stop.json")
    del bare["agent_id"]
    _, answer, _ = hook(setup, bare, capsys, monkeypatch, *cap)
    assert answer is not None
    assert "stop blocked 1 of at most 2" in answer["reason"]


def test_a_bad_agent_id_is_a_non_blocking_error(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, answer, err = hook(
        setup, payload(setup, "subagent_stop.json", agent_id=7), capsys, monkeypatch
    )
    assert (code, answer) == (1, None)
    assert "'agent_id' must be a non-empty string (got 7)" in err


@pytest.mark.anyio
async def test_a_blocked_stop_checkpoints_the_workspace_when_the_spec_asks(setup: Path) -> None:
    """With ``checkpoints = true`` each blocked stop is a checkpoint of the workspace (a
    series per agent session), measured by the checks; the note names it, the agent's reason
    does not change."""
    from harness.checkpoints import open_checkpoints

    (setup / "spec.toml").write_text(
        SPEC.replace("[model]", 'checkpoints = true\ncheckpoint_dir = "snapshots"\n\n[model]')
    )
    spec = load_spec(setup / "spec.toml")
    (setup / "workspace" / "draft.md").write_text("half done")
    decision = await claude_stop(payload(setup), spec, state_dir=setup / "state")
    assert decision.block
    assert decision.note is not None
    assert "checkpoint " in decision.note
    store = await open_checkpoints(setup / "workspace", series="x", state_dir=setup / "snapshots")
    (saved,) = await store.checkpoints()
    assert saved.label == "stop blocked (1)"
    assert saved.series.startswith("hook-")
    assert saved.progress is not None
    assert (saved.progress.done, saved.progress.total) == (0, 1)  # report.md: 0 of 1 files
    assert (await store.diff(saved)).empty
    assert "checkpoint" not in (decision.reason or "")
