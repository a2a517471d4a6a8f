"""Recognising each coding agent's usage-limit messages as a typed `UsageLimit` with its reset.

Every sample below is an agent's output as its users reported it; the comment on each says
where the format comes from. Reset times in words are read against a fixed `now`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from harness.extend import USAGE_LIMIT, UsageLimit, UsageLimitError, find_usage_limit

# Thursday 2026-11-26 12:00:00 UTC
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC).timestamp()

# Claude Code (claude -p): the classic message, the reset as a Unix epoch after the pipe; the
# title of anthropics/claude-code issues #6119, #9046 and #11429.
CLAUDE_EPOCH = f"Claude AI usage limit reached|{int(NOW) + 5400}"
# Claude Code, the newer message in words (the task's brief, and anthropics/claude-code #22976:
# "You've hit your limit - resets Feb 7, 11am (Asia/Seoul)").
CLAUDE_FIVE_HOUR = "5-hour limit reached ∙ resets 3pm"
CLAUDE_HIT = "You've hit your limit · resets 2pm (Asia/Shanghai)"
CLAUDE_DATE = "You've hit your limit - resets Feb 7, 11am (Asia/Seoul)"
# Claude Code's older words (anthropics/claude-code #6119).
CLAUDE_WILL_RESET = "Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw)."
# Claude Code --output-format stream-json: the rate_limit_event line (observed in
# paperclipai/paperclip #5776 and desplega-ai/agent-swarm #508; resetsAt is Unix seconds).
CLAUDE_EVENT_REJECTED = json.dumps(
    {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "rejected",
            "resetsAt": int(NOW) + 7200,
            "rateLimitType": "five_hour",
            "overageStatus": "rejected",
            "isUsingOverage": False,
        },
    }
)
# The same event with status "allowed" / "allowed_warning" is informational (openclaw #80528).
CLAUDE_EVENT_ALLOWED = json.dumps(
    {
        "type": "rate_limit_event",
        "rate_limit_info": {"status": "allowed_warning", "resetsAt": int(NOW) + 7200},
    }
)
# Codex (codex exec): openai/codex issues #3124, #3899 and #4095.
CODEX_IN = (
    "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or "
    "try again in 2 days 17 hours 14 minutes."
)
# Codex with an absolute time (openai/codex #26668).
CODEX_AT = (
    "You've hit your usage limit. Upgrade to Plus to continue using Codex "
    "(https://chatgpt.com/explore/plus), or try again at Dec 5th, 2026 8:19 PM."
)
# Codex's error body behind the message (james-6-23/codex2api #9).
CODEX_BODY = json.dumps(
    {
        "error": {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "free",
            "resets_at": int(NOW) + 602705,
            "resets_in_seconds": 602705,
        }
    }
)
# Gemini CLI's quota exhaustion (google-gemini/gemini-cli #1800 and #1848): no reset given.
GEMINI_EXHAUSTED = (
    '✕ [API Error: {"error":{"message":"{\\n  \\"error\\": {\\n    \\"code\\": 429,\\n    '
    '\\"message\\": \\"Resource has been exhausted (e.g. check quota).\\",\\n    \\"status\\": '
    '\\"RESOURCE_EXHAUSTED\\"\\n  }\\n}\\n","code":429,"status":"Too Many Requests"}}]\n'
    "Please wait and try again later. To increase your limits, request a quota increase "
    "through AI Studio, or switch to another /auth method"
)
# Gemini API's quota error with a retry delay (the google.rpc.RetryInfo detail it carries).
GEMINI_RETRY = (
    "[API Error: 429 Quota exceeded for quota metric 'Generate Content API requests per "
    "minute'. Please retry in 41.5s.]\n"
    '"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "41s"}]'
)


def _at(text: str) -> UsageLimit:
    limit = find_usage_limit(text, now=NOW, zone=UTC)
    assert limit is not None, text
    return limit


def test_claudes_epoch_message_carries_its_reset() -> None:
    """The epoch after the pipe is the reset: 90 minutes from now."""
    limit = _at(CLAUDE_EPOCH)
    assert (limit.source, limit.retry_in, limit.resets_at) == ("claude", 5400.0, NOW + 5400)


@pytest.mark.parametrize(
    ("text", "zone", "hours"),
    [
        (CLAUDE_FIVE_HOUR, UTC, 3.0),  # 3pm today, in the machine's zone (UTC here)
        (CLAUDE_FIVE_HOUR, ZoneInfo("Europe/Paris"), 2.0),  # 3pm Paris is 14:00 UTC
        (CLAUDE_HIT, UTC, 18.0),  # 2pm Shanghai is 06:00 UTC: tomorrow's
        (CLAUDE_WILL_RESET, UTC, 4.0),  # 5pm Warsaw is 16:00 UTC
    ],
)
def test_claudes_reset_in_words_is_the_next_such_time(
    text: str, zone: ZoneInfo, hours: float
) -> None:
    """A clock time is the next time it comes round, in the zone it names or the machine's."""
    limit = find_usage_limit(text, now=NOW, zone=zone)
    assert limit is not None
    assert limit.source == "claude"
    assert limit.retry_in == pytest.approx(hours * 3600)


def test_claudes_reset_with_a_date_is_that_day() -> None:
    """``Feb 7, 11am (Asia/Seoul)`` read in November is next February's."""
    limit = _at(CLAUDE_DATE)
    expected = datetime(2027, 2, 7, 11, 0, tzinfo=ZoneInfo("Asia/Seoul")).timestamp()
    assert limit.resets_at == pytest.approx(expected)


def test_a_rejected_rate_limit_event_is_a_limit_and_an_allowed_one_is_not() -> None:
    """Only ``status: rejected`` stops the agent; ``allowed_warning`` is information."""
    assert find_usage_limit(CLAUDE_EVENT_ALLOWED, now=NOW) is None
    stream = "\n".join(
        ['{"type":"system","subtype":"init"}', CLAUDE_EVENT_REJECTED, '{"type":"result"}']
    )
    limit = find_usage_limit(stream, now=NOW, words=False)
    assert limit is not None
    assert (limit.source, limit.retry_in) == ("claude", 7200.0)
    assert "five_hour" in limit.message


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (CODEX_IN, 2 * 86400 + 17 * 3600 + 14 * 60),
        (CODEX_AT, datetime(2026, 12, 5, 20, 19, tzinfo=UTC).timestamp() - NOW),
        (CODEX_BODY, 602705.0),
    ],
)
def test_codex_usage_limits_carry_their_reset(text: str, seconds: float) -> None:
    limit = _at(text)
    assert limit.source == "codex"
    assert limit.retry_in == pytest.approx(seconds)


def test_gemini_quota_exhaustion_without_a_delay_has_no_reset() -> None:
    """An unreadable reset is None (the run waits its default), never an error."""
    limit = _at(GEMINI_EXHAUSTED)
    assert (limit.source, limit.retry_in, limit.resets_at) == ("gemini", None, None)


def test_gemini_quota_with_a_retry_delay_carries_it() -> None:
    assert _at(GEMINI_RETRY).retry_in == pytest.approx(41.5)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "All tests pass. I wrote limits.py, which parses reset times.",
        "recursion limit reached in parser.py; fixed by iterating instead",
        '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}',
        "Claude AI usage limit reached|not-a-number",
    ],
)
def test_ordinary_output_is_no_limit(text: str) -> None:
    """Work that merely mentions limits is not a limit; a garbled epoch is read in words."""
    limit = find_usage_limit(text, now=NOW)
    if "Claude AI usage limit reached" in text:
        assert limit is not None
        assert limit.retry_in is None
    else:
        assert limit is None


@pytest.mark.parametrize(
    "text",
    [
        "You've hit your limit · resets 25pm",
        "5-hour limit reached ∙ resets 3pm (Not/AZone)",
        "You've hit your limit - resets Smarch 7, 11am",
        "You've hit your usage limit. try again in many moons",
        "Claude AI usage limit reached|99999999999999999999",
    ],
)
def test_an_unreadable_reset_is_none_never_a_crash(text: str) -> None:
    limit = find_usage_limit(text, now=NOW, zone=UTC)
    assert limit is not None
    if "Not/AZone" in text:  # an unknown zone falls back to the machine's
        assert limit.retry_in == pytest.approx(3 * 3600)
    else:
        assert limit.retry_in is None


def test_the_error_a_client_raises_is_a_typed_model_error() -> None:
    limit = UsageLimit("codex", "You've hit your usage limit.", 60.0)
    error = UsageLimitError(limit)
    assert error.kind == USAGE_LIMIT
    assert error.limit is limit
    assert error.retry_after == 60.0
    assert "codex usage limit (resets in 60s)" in str(error)


# Issue 37 point 5: Claude Code prints ``resets 8:51pm`` and Codex ``try again at 8:55 PM.``,
# their seconds cut off. Read within that minute (a reset under a minute away, or a retry that
# woke a few seconds before the reset), the time was taken as tomorrow's: a wait of 86398.7s.
@pytest.mark.parametrize(
    "text",
    [
        "You've hit your session limit · resets 12pm (UTC)",
        "You\u2019ve hit your usage limit. Upgrade to Pro or try again at 12:00 PM.",
        "You've hit your limit - resets Nov 26, 12pm (UTC)",
        "You've hit your usage limit. ... or try again at Nov 26th, 2026 12:00 PM.",
    ],
    ids=["claude", "codex", "claude-dated", "codex-dated"],
)
@pytest.mark.parametrize("late", [0.0, 30.0, 59.5, 150.0])
def test_a_reset_printed_as_the_current_minute_is_now_plus_a_margin(text: str, late: float) -> None:
    """A time with no seconds names a minute: read during it (or a moment after it, the line
    printed before it was read), the reset is a minute from now, past the minute's end."""
    limit = find_usage_limit(text, now=NOW + late, zone=UTC)
    assert limit is not None
    assert limit.retry_in == pytest.approx(60.0)
    assert limit.resets_at == pytest.approx(NOW + late + 60.0)


def test_a_minute_still_ahead_is_its_start_and_one_long_past_is_tomorrow() -> None:
    """Only the current minute and the few after it change: a reset ahead is read as before,
    and a time alone that passed long ago is still the next day's."""
    ahead = find_usage_limit("You've hit your session limit · resets 12:01pm", now=NOW, zone=UTC)
    assert ahead is not None
    assert ahead.retry_in == pytest.approx(60.0)
    text = "You've hit your session limit · resets 11:50am"
    passed = find_usage_limit(text, now=NOW, zone=UTC)
    assert passed is not None
    assert passed.retry_in == pytest.approx(86400 - 600)


# Issue 37 point 6: the words Claude Code 2.1.197 prints for a Team or Enterprise login whose
# organisation's cap is reached, and for spent extra usage (read from its binary: the strings
# after "You've hit your " and "You're out of usage credits").
@pytest.mark.parametrize(
    "text",
    [
        "You've hit your org's monthly spend limit · run /usage-credits to ask your admin for "
        "a higher limit",
        "You've hit your org's monthly spend limit · ask your admin to raise it at "
        "claude.ai/settings/usage",
        "Your org is out of usage · contact your admin",
        "You're out of usage credits. Run /usage-credits to keep using Fable 5 or /model to "
        "switch models.",
        "You're out of usage credits",
    ],
)
def test_an_orgs_spend_limit_and_spent_credits_are_terminal(text: str) -> None:
    """No reset: waiting does not help, the run halts typed (not ``ModelFailed``)."""
    limit = _at(text)
    assert (limit.source, limit.terminal, limit.retry_in) == ("claude", True, None)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("You've hit your org's monthly usage limit · resets 3pm (UTC)", 3 * 3600),
        ("You're out of usage credits · resets Dec 1, 12am (UTC)", 4.5 * 86400),
    ],
)
def test_an_orgs_usage_limit_and_credits_with_a_reset_wait_for_it(
    text: str, seconds: float
) -> None:
    limit = _at(text)
    assert (limit.source, limit.terminal) == ("claude", False)
    assert limit.retry_in == pytest.approx(seconds)


def test_credits_with_an_unreadable_reset_wait_the_default_rather_than_halt() -> None:
    limit = _at("You're out of usage credits · resets someday")
    assert (limit.terminal, limit.retry_in) == (False, None)
