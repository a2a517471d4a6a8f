"""The readers that recognise each supported coding agent's usage-limit messages, as a
`UsageLimit` (see `_limits`).

What is recognised, and where each format comes from (the samples are in
``tests/harness/providers/test_usage_limits.py`` and
``tests/harness/providers/test_cli_agent_limits.py``; the real binaries' own forms are proven
by ``tests/real/test_agent_limits_real.py``):

- Claude Code (2.1.197, read from its binary and its output against a scripted provider):
  ``You've hit your session limit · resets 1:17pm (UTC)`` (also ``weekly``, ``Opus``,
  ``Sonnet`` limits; the reset in the agent's time zone, named in brackets, with a date when
  it is not today: ``resets Feb 7, 11am (Asia/Seoul)``), the older ``Claude AI usage limit
  reached|1755615600`` and ``5-hour limit reached ∙ resets 3pm``; its ``rate_limit_event``
  lines in ``--output-format stream-json`` whose ``rate_limit_info.status`` is ``rejected``
  (``resetsAt`` in Unix seconds; ``allowed`` and ``allowed_warning`` are informational);
  terminal: ``You've hit your monthly spend limit``, ``Credit balance is too low``; a Team
  or Enterprise login's ``You've hit your org's monthly spend limit · run /usage-credits ...``
  and ``Your org is out of usage · ...`` are terminal too, while ``You've hit your org's
  monthly usage limit · resets ...`` and ``You're out of usage credits · resets ...`` wait
  for their reset (terminal when they name none);
- Codex (0.171.0, whose binary spells ``You've`` with a curly apostrophe, U+2019):
  ``You've hit your usage limit. ... try again at 9:49 AM.`` (a time alone is today, or
  tomorrow once past, in the agent's time zone), ``... try again at Nov 30th, 2026 7:51 PM.``,
  ``... try again in 2 days 17 hours``, ``Try again later.`` (no reset), its
  ``usage_limit_reached`` error body (``resets_in_seconds``, ``resets_at``); terminal:
  ``Quota exceeded. Check your plan and billing details.`` (an API key's ``insufficient_quota``);
- Gemini CLI (0.61.0): quota exhaustion (``RESOURCE_EXHAUSTED``, ``Quota exceeded``,
  ``Resource has been exhausted``, ``TerminalQuotaError``) with ``Please retry in 41.2s``,
  ``Suggested retry after 3600s.`` or ``"retryDelay": "41s"``; terminal: ``You have
  exhausted your daily quota on this model.`` (its exit code 173), a quota whose ``limit: 0``,
  ``INSUFFICIENT_G1_CREDITS_BALANCE``;
- an OpenAI-compatible provider's words as Qwen Code prints them: ``Rate limit reached for ...
  Please try again in 20s.``; terminal: ``insufficient_quota`` / ``You exceeded your current
  quota`` without a time to retry.

A reset printed to the minute (``resets 8:51pm``, ``try again at 8:55 PM.``: the seconds cut
off) names that minute: when the minute is now, or ended a moment ago, the reset is read as
now plus a margin (`_MARGIN`), never as the same time tomorrow; a reset under a minute away
and a retry that wakes a few seconds early both meet this.

A reset that cannot be read leaves `UsageLimit.retry_in` None: the run then waits the
documented default (`PauseSettings.default_wait`), never crashes. A terminal limit
(`UsageLimit.terminal`) halts the run at once.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .._limits import UsageLimit

_APOSTROPHE = "['\u2019]"  # Codex 0.171.0 prints a right single quotation mark
_CLAUDE_EPOCH = re.compile(r"Claude AI usage limit reached\|(\d{9,13})(?!\d)")
_CLAUDE_WORDS = re.compile(
    rf"(?i)(?:usage limit reached|you{_APOSTROPHE}?ve hit your (?:[\w-]+ ){{0,3}}limit|"
    r"\b(?:5-hour|five[- ]hour|weekly|session|daily|opus|sonnet|usage|rate) limit reached"
    r"(?! for)|"
    r"limit will reset)"
)
_CLAUDE_TERMINAL = re.compile(
    rf"(?i)you{_APOSTROPHE}?ve hit your (?:org{_APOSTROPHE}s )?monthly spend limit|"
    r"credit balance is too low|your org is out of usage\b"
)
# Extra usage (credits) spent, or an organisation's monthly cap: a pause until the reset the
# line names, terminal when it names none.
_CLAUDE_CREDITS = re.compile(
    rf"(?i)you{_APOSTROPHE}?ve hit your org{_APOSTROPHE}s monthly usage limit|"
    rf"you{_APOSTROPHE}?re out of usage credits"
)
_RESETS = re.compile(
    r"(?i)\breset(?:s|ting)?(?:\s+at)?\s+"
    r"(?:(?P<month>[A-Za-z]{3,9})\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)"
    r"(?:\s*\((?P<zone>[A-Za-z0-9_+\-/]+)\))?"
)
_RESETS_WORD = re.compile(r"(?i)\breset")
_CODEX = re.compile(rf"(?i)you{_APOSTROPHE}?ve hit your usage limit|usage_limit_reached")
_CODEX_TERMINAL = re.compile(r"Quota exceeded\. Check your plan and billing details")
_TRY_IN = re.compile(r"(?i)try again in\s+((?:\d+(?:\.\d+)?\s*[a-z]+[\s,]*(?:and\s+)?)+)")
_TRY_AT = re.compile(
    r"(?i)try again at\s+(?:(?P<month>[A-Za-z]{3,9})\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+"
    r"(?P<year>\d{4}),?\s+)?(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<ampm>[AP]M)?"
)
_GEMINI = re.compile(
    r"RESOURCE_EXHAUSTED|TerminalQuotaError|RetryableQuotaError|"
    r"(?i:quota exceeded|resource has been exhausted|exhausted your daily quota)"
)
_GEMINI_TERMINAL = re.compile(
    r"(?i)exhausted your daily quota|INSUFFICIENT_G1_CREDITS_BALANCE|\blimit:\s*0(?![\d.])"
)
_RETRY_DELAY = re.compile(
    r"(?i)(?:retry in|retry after|\"retryDelay\"\s*:\s*\")\s*(\d+(?:\.\d+)?)\s*(ms|s)\b"
)
_OPENAI = re.compile(r"(?i)rate limit reached for|insufficient_quota|exceeded your current quota")
_OPENAI_TERMINAL = re.compile(r"(?i)insufficient_quota|exceeded your current quota")
_UNITS = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hr": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
    "week": 604800,
}
_AMOUNT = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_MARGIN = timedelta(seconds=60)
"""How long after now a reset printed as the current minute is: past that minute's end."""
_LATE = timedelta(minutes=5)
"""How long after a printed minute a reset is still read as that minute rather than
tomorrow's: the minute itself, and a line read a few minutes after it was printed."""
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}


def find_usage_limit(
    text: str, *, now: float | None = None, zone: tzinfo | None = None, words: bool = True
) -> UsageLimit | None:
    """The usage limit `text` reports (an agent's output), or None when it reports none.

    `now` is the Unix time the text was read at (default: now), against which reset times are
    turned into seconds; `zone` is the time zone of a reset time that names none (default:
    this machine's). Without `words` only structured lines (JSON events) are read, not
    messages in words, which an agent's own answer might quote. Never raises: a reset that
    cannot be read gives ``retry_in=None``.
    """
    read_at = datetime.now(UTC) if now is None else datetime.fromtimestamp(now, UTC)
    local = zone if zone is not None else datetime.now().astimezone().tzinfo or UTC
    readers = (_stream_json, _claude, _codex, _gemini, _openai) if words else (_stream_json,)
    for reader in readers:
        limit = reader(text, read_at, local)
        if limit is not None:
            return limit
    return None


def _limit(
    source: str,
    message: str,
    read_at: datetime,
    reset: datetime | float | None,
    *,
    terminal: bool = False,
) -> UsageLimit:
    message = " ".join(message.split())[:500]
    if reset is None:
        return UsageLimit(source, message, terminal=terminal)
    if isinstance(reset, datetime):
        at = reset.timestamp()
        return UsageLimit(source, message, max(at - read_at.timestamp(), 0.0), at, terminal)
    seconds = max(float(reset), 0.0)
    return UsageLimit(source, message, seconds, read_at.timestamp() + seconds, terminal)


def _epoch(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if number > 1e12:  # milliseconds
        number /= 1000
    try:
        return datetime.fromtimestamp(number, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _stream_json(text: str, read_at: datetime, local: tzinfo) -> UsageLimit | None:
    """Claude Code's ``rate_limit_event`` (rejected) and Codex's ``usage_limit_reached``."""
    if "rate_limit_event" not in text and "usage_limit_reached" not in text:
        return None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # nested deeper than the parser goes: not an event
            continue
        if not isinstance(data, dict):
            continue
        info = data.get("rate_limit_info")
        if data.get("type") == "rate_limit_event" and isinstance(info, dict):
            if info.get("status") not in ("rejected", "denied"):
                continue  # "allowed", "allowed_warning": the request was served
            window = info.get("rateLimitType") or "usage"
            message = f"{window} limit reached (rate_limit_event)"
            return _limit("claude", message, read_at, _epoch(info.get("resetsAt")))
        error = data.get("error")
        if isinstance(error, dict) and error.get("type") == "usage_limit_reached":
            message = str(error.get("message") or "usage limit reached")
            seconds = error.get("resets_in_seconds")
            if isinstance(seconds, int | float) and not isinstance(seconds, bool):
                return _limit("codex", message, read_at, float(seconds))
            return _limit("codex", message, read_at, _epoch(error.get("resets_at")))
    return None


def _claude(text: str, read_at: datetime, local: tzinfo) -> UsageLimit | None:
    match = _CLAUDE_EPOCH.search(text)
    if match is not None:
        return _limit("claude", match.group(0), read_at, _epoch(match.group(1)))
    terminal = _CLAUDE_TERMINAL.search(text)
    if terminal is not None:
        return _limit("claude", _line_at(text, terminal.start()), read_at, None, terminal=True)
    credits = _CLAUDE_CREDITS.search(text)
    if credits is not None:
        line = _line_at(text, credits.start())
        resets = _RESETS.search(line)
        reset = None if resets is None else _clock_time(resets, read_at, local)
        gone = reset is None and _RESETS_WORD.search(line) is None
        return _limit("claude", line, read_at, reset, terminal=gone)
    match = _CLAUDE_WORDS.search(text)
    if match is None or _CODEX.search(text) is not None:
        return None
    line = _line_at(text, match.start())
    resets = _RESETS.search(line)
    reset = None if resets is None else _clock_time(resets, read_at, local)
    return _limit("claude", line, read_at, reset)


def _codex(text: str, read_at: datetime, local: tzinfo) -> UsageLimit | None:
    match = _CODEX.search(text)
    if match is None:
        terminal = _CODEX_TERMINAL.search(text)
        if terminal is None:
            return None
        return _limit("codex", _line_at(text, terminal.start()), read_at, None, terminal=True)
    line = _line_at(text, match.start())
    rest = text[match.start() : match.start() + 400]
    within = _TRY_IN.search(rest)
    if within is not None:
        return _limit("codex", line, read_at, _duration(within.group(1)))
    at = _TRY_AT.search(rest)
    if at is not None:
        return _limit("codex", line, read_at, _date_time(at, read_at, local))
    return _limit("codex", line, read_at, None)


def _gemini(text: str, read_at: datetime, local: tzinfo) -> UsageLimit | None:
    match = _GEMINI.search(text)
    if match is None:
        return None
    terminal = _GEMINI_TERMINAL.search(text)
    if terminal is not None:
        line = _line_at(text, terminal.start())
        return _limit("gemini", line, read_at, _retry_delay(text), terminal=True)
    return _limit("gemini", _line_at(text, match.start()), read_at, _retry_delay(text))


def _openai(text: str, read_at: datetime, local: tzinfo) -> UsageLimit | None:
    """An OpenAI-compatible provider's 429 as an agent prints it (Qwen Code, OpenCode)."""
    match = _OPENAI.search(text)
    if match is None:
        return None
    line = _line_at(text, match.start())
    within = _TRY_IN.search(text, match.start())
    seconds = None if within is None else _duration(within.group(1))
    terminal = seconds is None and _OPENAI_TERMINAL.search(text) is not None
    return _limit("openai", line, read_at, seconds, terminal=terminal)


def _retry_delay(text: str) -> float | None:
    delay = _RETRY_DELAY.search(text)
    if delay is None:
        return None
    return float(delay.group(1)) * (0.001 if delay.group(2).lower() == "ms" else 1)


def _line_at(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return text[start : end if end >= 0 else len(text)].strip()


def _duration(words: str) -> float | None:
    """``2 days 17 hours 14 minutes`` (or ``1h30m``) in seconds; None if a unit is unknown."""
    total = 0.0
    found = False
    for amount, unit in _AMOUNT.findall(words.lower()):
        name = unit.rstrip("s") if unit not in ("s", "ms") else unit
        if name not in _UNITS:
            if unit in ("and",):
                continue
            return None if not found else total
        total += float(amount) * _UNITS[name]
        found = True
    return total if found else None


def _zone(name: str | None, local: tzinfo) -> tzinfo:
    if not name:
        return local
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return local


def _hour(match: re.Match[str]) -> tuple[int, int] | None:
    hour, minute = int(match.group("hour")), int(match.group("minute") or 0)
    ampm = (match.group("ampm") or "").lower().replace(".", "")
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    if not (0 <= hour < 24 and 0 <= minute < 60):
        return None
    return hour, minute


def _clock_time(match: re.Match[str], read_at: datetime, local: tzinfo) -> datetime | None:
    """``3pm``, ``Feb 7, 11am (Asia/Seoul)``: the next such moment after `read_at`."""
    zone = _zone(match.group("zone"), local)
    hm = _hour(match)
    if hm is None:
        return None
    now = read_at.astimezone(zone)
    month_name = match.group("month")
    if month_name:
        month = _MONTHS.get(month_name[:3].lower())
        if month is None:
            return None
        try:
            day = int(match.group("day"))
            when = now.replace(
                month=month, day=day, hour=hm[0], minute=hm[1], second=0, microsecond=0
            )
        except ValueError:
            return None
        if when < now - timedelta(days=1):  # "Jan 2" read on Dec 30
            when = when.replace(year=when.year + 1)
        return _minute(when, now, dated=True)
    return _minute(now.replace(hour=hm[0], minute=hm[1], second=0, microsecond=0), now)


def _date_time(match: re.Match[str], read_at: datetime, local: tzinfo) -> datetime | None:
    """``Jul 5th, 2026 8:19 PM`` in the agent's time zone; ``9:49 AM`` alone is the next such
    moment after `read_at` (Codex leaves the date out when the reset is today)."""
    hm = _hour(match)
    if hm is None:
        return None
    now = read_at.astimezone(local)
    if match.group("month") is None:
        return _minute(now.replace(hour=hm[0], minute=hm[1], second=0, microsecond=0), now)
    month = _MONTHS.get(match.group("month")[:3].lower())
    if month is None:
        return None
    try:
        year, day = int(match.group("year")), int(match.group("day"))
        when = datetime(year, month, day, hm[0], hm[1], tzinfo=local)
    except ValueError:
        return None
    return _minute(when, now, dated=True)


def _minute(when: datetime, now: datetime, *, dated: bool = False) -> datetime:
    """The reset to wait for, from a time printed to the minute (`when`, its seconds cut off:
    the reset is somewhere in that minute). A minute still ahead is its start; the current
    minute, or one that ended under `_LATE` ago (the line was printed a moment before it was
    read), is now plus `_MARGIN`, past the end of the minute; an older time alone is
    tomorrow's (an older date stays in the past: the reset is due, and the wait is 0)."""
    if when > now:
        return when
    if now - when < _LATE:
        return now + _MARGIN
    return when if dated else when + timedelta(days=1)
