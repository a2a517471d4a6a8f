"""Command-line agents at their usage limit, and turns that did no work.

A fake agent (a real executable) prints, turn by turn, what the real agents print: each
sample's comment says where its format comes from (see also ``tests/test_usage_limits.py``).
The run waits on a FakeClock, so the pauses are instant; the agent's processes are real.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from harness import (
    CliAgentClient,
    Harness,
    ModelFailed,
    PauseSettings,
    TurnFinished,
    UsageLimitReached,
)
from harness.extend import NOT_EXECUTED, Clock, RunPaused
from harness.testing import FakeClock, ListSink
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio

# Each turn the agent prints the next entry of TURNS (a JSON list in the environment), then
# exits with its code; an entry with "work" also appends a line to progress.txt.
AGENT = """\
#!{python}
import json, os, pathlib, sys, time

sys.stdin.read()
turns = json.loads(os.environ["TURNS"])
counter = pathlib.Path(os.environ["COUNTER"])
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
turn = turns[min(n, len(turns) - 1)]
text = turn.get("text", "").replace("{{EPOCH+3600}}", str(int(time.time()) + 3600))
if turn.get("work"):
    with open("progress.txt", "a") as f:
        f.write("step\\n")
stream = sys.stderr if turn.get("stderr") else sys.stdout
stream.write(text)
sys.exit(turn.get("code", 0))
"""

WORK = {"text": "did a step", "work": True}
# Claude Code (claude -p) at its limit: the epoch form (anthropics/claude-code #6119, #9046).
CLAUDE = {"text": "Claude AI usage limit reached|{EPOCH+3600}", "code": 1}
# Claude Code's stream-json output with a rejected rate_limit_event (paperclipai/paperclip
# #5776): the event line, then the result line whose text is the limit in words.
CLAUDE_STREAM = {
    "text": "\n".join(
        [
            json.dumps({"type": "system", "subtype": "init"}),
            json.dumps(
                {
                    "type": "rate_limit_event",
                    "rate_limit_info": {
                        "status": "rejected",
                        "resetsAt": "{EPOCH+3600}",
                        "rateLimitType": "five_hour",
                    },
                }
            ),
            json.dumps(
                {
                    "type": "result",
                    "is_error": True,
                    "result": "You've hit your limit · resets 2pm (Asia/Shanghai)",
                }
            ),
        ]
    ),
    "code": 1,
}
# Codex (codex exec) on stderr (openai/codex #3124).
CODEX = {
    "text": "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
    "or try again in 1 hour 30 minutes.",
    "code": 1,
    "stderr": True,
}
# Gemini CLI's quota exhaustion, no reset given (google-gemini/gemini-cli #1800).
GEMINI = {
    "text": '[API Error: {"error":{"code":429,"message":"Resource has been exhausted (e.g. '
    'check quota).","status":"RESOURCE_EXHAUSTED"}}]\nPlease wait and try again later.',
    "code": 1,
}


class Steps:
    """Done when progress.txt has `needed` lines."""

    def __init__(self, needed: int) -> None:
        self.needed = needed

    async def check(self, state: Any) -> str | None:
        path = state.workspace / "progress.txt"
        have = len(path.read_text().splitlines()) if path.exists() else 0
        return None if have >= self.needed else f"progress.txt has {have} of {self.needed} steps"

    def description(self) -> str:
        return f"progress.txt must have {self.needed} steps"


def _run_harness(
    tmp_path: Path,
    turns: list[dict[str, Any]],
    *,
    needed: int = 2,
    pause: PauseSettings | None = None,
    max_turns: int = 10,
) -> tuple[Harness, ListSink, Path]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(python=sys.executable))
    script.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"TURNS": json.dumps(turns), "COUNTER": str(tmp_path / "counter")}
    client = CliAgentClient([str(script)], env=env)
    sink = ListSink()
    harness = Harness(
        model=client,
        policy=TerminationPolicy(
            budget=Budget(max_turns=max_turns), completion_check=Steps(needed)
        ),
        workspace=workspace,
        clock=cast(Clock, FakeClock()),
        pause=pause or PauseSettings(jitter=0),
        sinks=[sink],
    )
    return harness, sink, workspace


@pytest.mark.parametrize(
    ("limit", "source", "retry_in"),
    [
        (CLAUDE, "claude", 3600.0),
        (CLAUDE_STREAM, "claude", 3600.0),
        (CODEX, "codex", 5400.0),
        (GEMINI, "gemini", None),
    ],
    ids=["claude", "claude-stream-json", "codex", "gemini"],
)
async def test_each_agents_limit_pauses_the_run_and_the_turn_runs_again(
    tmp_path: Path, limit: dict[str, Any], source: str, retry_in: float | None
) -> None:
    """The limit is not a failure: the run pauses, then the same turn runs again and the work
    completes; the cut-off turn is charged to no budget."""
    harness, sink, workspace = _run_harness(tmp_path, [WORK, limit, WORK])
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified, result.halt_reason
    assert result.turns == 2
    (paused,) = sink.of_type(RunPaused)
    assert isinstance(paused, RunPaused)
    assert paused.source == source
    assert paused.turn == 2
    if retry_in is None:
        assert paused.retry_in is None
        assert paused.wait == PauseSettings().default_wait
    else:  # read against the wall clock a moment after the agent printed it
        assert paused.retry_in is not None
        assert retry_in - 5 <= paused.retry_in <= retry_in
    assert (workspace / "progress.txt").read_text() == "step\nstep\n"


async def test_a_limit_beyond_max_pause_halts_typed(tmp_path: Path) -> None:
    harness, _, _ = _run_harness(tmp_path, [CODEX], pause=PauseSettings(max_pause=60))
    result = await harness.run("Add steps to progress.txt.")
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached)
    assert halt.source == "codex"
    assert result.turns == 0


@pytest.mark.parametrize(
    "idle",
    [
        {"text": ""},
        {"text": "   \n"},
        # Claude Code's API error printed in place of an answer (anthropics/claude-code #6119).
        {"text": 'API Error: 500 {"type":"error","error":{"type":"api_error"}}'},
        # Gemini CLI's error marker (google-gemini/gemini-cli #1848).
        {"text": "✕ [API Error: fetch failed]"},
    ],
    ids=["nothing", "blank", "claude-api-error", "gemini-api-error"],
)
async def test_a_turn_that_did_no_work_is_not_a_claim_of_done(
    tmp_path: Path, idle: dict[str, Any]
) -> None:
    """A turn that printed nothing, or only an error, is marked not executed: the check does
    not run after it (no rejection is recorded), and the next turn is told so."""
    harness, sink, _ = _run_harness(tmp_path, [idle, WORK, WORK])
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified
    finished = [cast(TurnFinished, e).response for e in sink.of_type(TurnFinished)]
    assert [r.stop_reason for r in finished] == [NOT_EXECUTED, "exit", "exit"]
    checks = [n for n in sink.names() if n.startswith("check.")]
    assert checks == ["check.failed", "check.passed"]  # after turns 2 and 3 only
    feedback = [e for e in sink.events if e.name == "feedback.injected"]
    assert "did no work" in feedback[0].text  # type: ignore[attr-defined]


async def test_a_long_answer_quoting_a_limit_is_work_not_a_limit(tmp_path: Path) -> None:
    """An agent's own long answer that mentions a limit message is not read as one."""
    essay = {"text": "I handled the case " + "x" * 2500 + " 5-hour limit reached ∙ resets 3pm"}
    harness, sink, _ = _run_harness(tmp_path, [{**essay, "work": True}, WORK])
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified
    assert not sink.of_type(RunPaused)


async def test_a_failing_command_without_a_limit_still_fails(tmp_path: Path) -> None:
    harness, _, _ = _run_harness(tmp_path, [{"text": "cannot log in", "code": 3}])
    result = await harness.run("Add steps to progress.txt.")
    assert isinstance(result.halt_reason, ModelFailed)
    assert "exited with code 3" in result.halt_reason.message
