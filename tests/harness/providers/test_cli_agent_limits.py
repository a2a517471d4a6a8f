"""Command-line agents at their usage limit, and turns that did no work.

A fake agent (a real executable) prints, turn by turn, what the real agents print: each
sample's comment says where its format comes from (see also
``tests/harness/providers/test_usage_limits.py``).
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
from harness.events import RunPaused
from harness.extend import NOT_EXECUTED, Clock
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
    pass_env: tuple[str, ...] = (),
) -> tuple[Harness, ListSink, Path]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(python=sys.executable))
    script.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"TURNS": json.dumps(turns), "COUNTER": str(tmp_path / "counter")}
    client = CliAgentClient([str(script)], env=env, pass_env=pass_env)
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


# The forms the real binaries print (tests/real/test_agent_limits_real.py runs them): Claude Code
# 2.1.197 as a subscriber at its session limit (text and stream-json output), Codex 0.171.0
# (a curly apostrophe; a time with no date when the reset is today), Gemini CLI 0.61.0 (its
# exit code 173) with a window of an hour, and an OpenAI-compatible rate limit as Qwen Code
# 0.15.10 prints it.
CLAUDE_SESSION = {"text": "You've hit your session limit · resets {CLOCK+2h} (UTC)", "code": 1}
CLAUDE_WEEKLY = {"text": "You've hit your weekly limit · resets {CLOCK+2h} (UTC)", "code": 1}
CLAUDE_OPUS = {"text": "You\u2019ve hit your Opus limit · resets {CLOCK+2h}", "code": 1}
CODEX_TODAY = {
    "text": '{"type":"error","message":"You\u2019ve hit your usage limit. Upgrade to Pro '
    "(https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase "
    'more credits or try again at {CLOCK+2h AM/PM}."}',
    "code": 1,
}
GEMINI_WINDOW = {
    "text": "TerminalQuotaError: You exceeded your current quota, please check your plan and "
    "billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/"
    "generate_content_free_tier_requests, limit: 50\nPlease retry in 3600s.\n"
    "Suggested retry after 3600s.",
    "code": 173,
}
QWEN_RATE = {
    "text": "[API Error: 429 Rate limit reached for qwen3-coder in organization org-1 on "
    "requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.]",
    "code": 1,
}


def _clock_in(hours: int, style: str) -> str:
    """The wall-clock time `hours` from now in UTC, as Claude (``3:05pm``) or Codex
    (``3:05 PM``) print it."""
    import datetime as dt

    when = dt.datetime.now(dt.UTC) + dt.timedelta(hours=hours)
    hour = when.hour % 12 or 12
    suffix = "am" if when.hour < 12 else "pm"
    if style == "codex":
        return f"{hour}:{when.minute:02d} {suffix.upper()}"
    return f"{hour}:{when.minute:02d}{suffix}"


def _at_clock(turn: dict[str, Any]) -> dict[str, Any]:
    text = turn["text"].replace("{CLOCK+2h AM/PM}", _clock_in(2, "codex"))
    return {**turn, "text": text.replace("{CLOCK+2h}", _clock_in(2, "claude"))}


@pytest.mark.parametrize(
    ("limit", "source", "retry_in"),
    [
        (CLAUDE_SESSION, "claude", 7200.0),
        (CLAUDE_WEEKLY, "claude", 7200.0),
        (CLAUDE_OPUS, "claude", 7200.0),
        (CODEX_TODAY, "codex", 7200.0),
        (GEMINI_WINDOW, "gemini", 3600.0),
        (QWEN_RATE, "openai", 20.0),
    ],
    ids=["claude-session", "claude-weekly", "claude-opus", "codex-today", "gemini", "qwen"],
)
async def test_the_real_agents_limit_messages_pause_until_their_reset(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    limit: dict[str, Any],
    source: str,
    retry_in: float,
) -> None:
    """Point 5: Claude Code's ``You've hit your session limit · resets 9:46am (UTC)`` was read
    as ModelFailed and Codex's ``You\u2019ve hit your usage limit ... try again at 9:49 AM.`` not
    at all; each now pauses until its reset (read in the agent's time zone: TZ reaches it)."""
    monkeypatch.setenv("TZ", "UTC")
    harness, sink, _ = _run_harness(tmp_path, [WORK, _at_clock(limit), WORK])
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified, result.halt_reason
    (paused,) = sink.of_type(RunPaused)
    assert isinstance(paused, RunPaused)
    assert paused.source == source
    assert paused.retry_in is not None
    assert retry_in - 65 <= paused.retry_in <= retry_in  # minutes are printed, not seconds


@pytest.mark.parametrize(
    ("limit", "source"),
    [
        (
            {
                "text": "TerminalQuotaError: You have exhausted your daily quota on this model."
                "\n  cause: {code: 429, message: 'You exceeded your current quota. "
                "Please retry in 12.5s.'}",
                "code": 173,
            },
            "gemini",
        ),
        ({"text": "Quota exceeded. Check your plan and billing details.", "code": 1}, "codex"),
        ({"text": "You've hit your monthly spend limit.", "code": 1}, "claude"),
        (
            {
                "text": "429 You exceeded your current quota, please check your plan and "
                "billing details. (insufficient_quota)",
                "code": 1,
            },
            "openai",
        ),
    ],
    ids=["gemini-daily", "codex-api-key", "claude-spend", "openai-insufficient-quota"],
)
async def test_a_terminal_quota_halts_the_run_at_once(
    tmp_path: Path, limit: dict[str, Any], source: str
) -> None:
    """Point 7: Gemini CLI's exhausted daily quota (exit 173) says "Please retry in 12.5s":
    the run paused and retried 8 times in 106 s. A quota that is gone halts at once."""
    harness, sink, _ = _run_harness(tmp_path, [limit, WORK, WORK])
    result = await harness.run("Add steps to progress.txt.")
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached), halt
    assert (halt.source, halt.cause) == (source, "terminal")
    assert not sink.of_type(RunPaused)


async def test_a_settings_value_is_not_redacted_from_the_limit_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 6: every pass_env value, even ``1``, was replaced in the agent's output before
    the limit scan: a rate_limit_event's digits were mangled and the pause became
    ModelFailed. Only values of secret-looking names are redacted, and after the scan."""
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789")
    harness, sink, _ = _run_harness(
        tmp_path,
        [CLAUDE_STREAM, WORK, WORK],
        pass_env=("CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_API_KEY"),
    )
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified, result.halt_reason
    (paused,) = sink.of_type(RunPaused)
    assert isinstance(paused, RunPaused)
    assert paused.retry_in is not None
    assert 3595 <= paused.retry_in <= 3600


async def test_the_answer_keeps_ordinary_values_and_loses_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer and the transcript were corrupted the same way: ``1`` became
    ``[redacted]`` in every number. A secret is still redacted from the answer, and from the
    message of a limit that quotes it."""
    monkeypatch.setenv("MAX_THREADS", "1")
    monkeypatch.setenv("SERVICE_TOKEN", "tok-0123456789")
    answer = {"text": "wrote 1 file in 10 s with tok-0123456789", "work": True}
    harness, sink, _ = _run_harness(
        tmp_path, [answer, WORK], pass_env=("MAX_THREADS", "SERVICE_TOKEN")
    )
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified
    first = cast(TurnFinished, sink.of_type(TurnFinished)[0]).response
    assert first.text == "wrote 1 file in 10 s with [redacted]"


def test_the_secret_rule_is_the_one_run_command_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule: the client redacts the values of exactly the names run_command refuses, and
    never a value too short to be a credential."""
    from harness.extend import is_secret_name

    env = {"OPENAI_API_KEY": "sk-0123456789", "CI": "1", "GH_TOKEN": "short", "MODE": "x" * 20}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = CliAgentClient(["true"], pass_env=list(env))
    assert client.redact(" ".join(env.values())) == f"[redacted] 1 short {'x' * 20}"
    assert [n for n in env if is_secret_name(n)] == ["OPENAI_API_KEY", "GH_TOKEN"]


def _this_minute(style: str) -> str:
    """The current minute in UTC as the agents print it, seconds cut off."""
    import datetime as dt

    now = dt.datetime.now(dt.UTC)
    hour = now.hour % 12 or 12
    suffix = "am" if now.hour < 12 else "pm"
    if style == "codex":
        return f"{hour}:{now.minute:02d} {suffix.upper()}"
    return f"{hour}:{now.minute:02d}{suffix}"


@pytest.mark.parametrize("style", ["claude", "codex"])
async def test_a_reset_printed_as_this_minute_pauses_a_short_step_never_a_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, style: str
) -> None:
    """Issue 37 point 5: ``resets 8:51pm`` read at 8:51:12 (a reset under a minute away, or the
    retry after a pause woke a few seconds early) was taken as tomorrow, a wait of 86398.7s
    past max_pause: a halt. Twice in a row here, the run waits about a minute each time on
    its clock, then the turn runs again and the work completes."""
    monkeypatch.setenv("TZ", "UTC")
    if style == "claude":
        text = f"You've hit your session limit · resets {_this_minute(style)} (UTC)"
    else:
        at = _this_minute(style)
        text = f"You\u2019ve hit your usage limit. Upgrade to Pro or try again at {at}."
    limit = {"text": text, "code": 1}
    harness, sink, _ = _run_harness(tmp_path, [WORK, limit, limit, WORK])
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified, result.halt_reason
    paused = [cast(RunPaused, e) for e in sink.of_type(RunPaused)]
    assert len(paused) == 2
    for each in paused:
        assert each.retry_in is not None
        assert 55 <= each.retry_in <= 61
        assert 55 <= each.wait <= 61


@pytest.mark.parametrize(
    ("text", "terminal"),
    [
        (
            "You've hit your org's monthly spend limit · run /usage-credits to ask your admin "
            "for a higher limit",
            True,
        ),
        ("You're out of usage credits", True),
        ("You've hit your org's monthly usage limit · resets {CLOCK+2h} (UTC)", False),
        ("You're out of usage credits · resets {CLOCK+2h} (UTC)", False),
    ],
    ids=["org-spend", "credits", "org-usage-resets", "credits-resets"],
)
async def test_an_orgs_limit_and_spent_credits_are_usage_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, terminal: bool
) -> None:
    """Issue 37 point 6: a Team login's ``You've hit your org's monthly spend limit`` ended
    ``ModelFailed`` (a board did not pause the account's other agents). Each is a usage limit:
    a typed halt when no reset is named, a pause until the reset when one is."""
    monkeypatch.setenv("TZ", "UTC")
    turn = _at_clock({"text": text, "code": 1})
    harness, sink, _ = _run_harness(tmp_path, [WORK, turn, WORK])
    result = await harness.run("Add steps to progress.txt.")
    if terminal:
        halt = result.halt_reason
        assert isinstance(halt, UsageLimitReached), halt
        assert (halt.source, halt.cause) == ("claude", "terminal")
        assert not sink.of_type(RunPaused)
    else:
        assert result.verified, result.halt_reason
        (paused,) = sink.of_type(RunPaused)
        assert isinstance(paused, RunPaused)
        assert paused.retry_in is not None
        assert 7200 - 65 <= paused.retry_in <= 7200


async def test_an_agents_line_nested_too_deeply_is_its_answer_not_a_crash(tmp_path: Path) -> None:
    """Issue 41 item 9: a structured line nested deeper than the JSON parser goes (the agent's
    own output can hold one) raised RecursionError out of the limit reader; it is the turn's
    answer, and the run goes on."""
    deep = '{"type": "rate_limit_event", "x": ' + "[" * 20_000 + "]" * 20_000 + "}"
    harness, sink, _ = _run_harness(tmp_path, [{"text": deep, "work": True}, WORK])
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified, result.halt_reason
    assert not sink.of_type(RunPaused)
