"""The readers that recognise each supported coding agent's usage-limit messages, as a
`UsageLimit` (see `_limits`).

What is recognised, and where each format comes from (the samples are in
``tests/test_usage_limits.py``):

- Claude Code's limit message with its reset time as a Unix epoch
  (``Claude AI usage limit reached|1755615600``) and in words (``5-hour limit reached ∙
  resets 3pm``, ``You've hit your limit · resets Feb 7, 11am (Asia/Seoul)``, ``Your limit will
  reset at 5pm (Europe/Warsaw)``), as its users report them in its issue tracker;
- Claude Code's ``rate_limit_event`` lines in ``--output-format stream-json`` whose
  ``rate_limit_info.status`` is ``rejected`` (``resetsAt`` in Unix seconds); ``allowed`` and
  ``allowed_warning`` are informational and ignored;
- Codex's ``You've hit your usage limit ... try again in 2 days 17 hours 14 minutes`` (or
  ``try again at Jul 5th, 2026 8:19 PM``) and its ``usage_limit_reached`` error body
  (``resets_in_seconds``, ``resets_at``);
- Gemini CLI's quota exhaustion (``RESOURCE_EXHAUSTED``, ``Quota exceeded``, ``Resource has
  been exhausted``), with ``Please retry in 41.2s`` or ``"retryDelay": "41s"`` when given.

A reset that cannot be read leaves `UsageLimit.retry_in` None: the run then waits the
documented default (`PauseSettings.default_wait`), never crashes.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .._limits import UsageLimit

_CLAUDE_EPOCH = re.compile(r"Claude AI usage limit reached\|(\d{9,13})(?!\d)")
_CLAUDE_WORDS = re.compile(
    r"(?i)(?:usage limit reached|you'?ve hit your (?:usage )?limit|"
    r"\b(?:5-hour|five[- ]hour|weekly|session|daily|opus|sonnet|usage|rate) limit reached|"
    r"limit will reset)"
)
_RESETS = re.compile(
    r"(?i)\breset(?:s|ting)?(?:\s+at)?\s+"
    r"(?:(?P<month>[A-Za-z]{3,9})\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)"
    r"(?:\s*\((?P<zone>[A-Za-z0-9_+\-/]+)\))?"
)
_CODEX = re.compile(r"(?i)you'?ve hit your usage limit|usage_limit_reached")
_TRY_IN = re.compile(r"(?i)try again in\s+((?:\d+(?:\.\d+)?\s*[a-z]+[\s,]*(?:and\s+)?)+)")
_TRY_AT = re.compile(
    r"(?i)try again at\s+(?P<month>[A-Za-z]{3,9})\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+"
    r"(?P<year>\d{4}),?\s+(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<ampm>[AP]M)?"
)
_GEMINI = re.compile(r"RESOURCE_EXHAUSTED|(?i:quota exceeded|resource has been exhausted)")
_RETRY_DELAY = re.compile(r"(?i)(?:retry in|\"retryDelay\"\s*:\s*\")\s*(\d+(?:\.\d+)?)\s*(ms|s)\b")
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
    readers = (_stream_json, _claude, _codex, _gemini) if words else (_stream_json,)
    for reader in readers:
        limit = reader(text, read_at, local)
        if limit is not None:
            return limit
    return None


def _limit(
    source: str, message: str, read_at: datetime, reset: datetime | float | None
) -> UsageLimit:
    message = " ".join(message.split())[:500]
    if reset is None:
        return UsageLimit(source, message)
    if isinstance(reset, datetime):
        at = reset.timestamp()
        return UsageLimit(source, message, max(at - read_at.timestamp(), 0.0), at)
    return UsageLimit(source, message, max(float(reset), 0.0), read_at.timestamp() + reset)


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
        except ValueError:
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
        return None
    line = _line_at(text, match.start())
    rest = text[match.start() : match.start() + 400]
    within = _TRY_IN.search(rest)
    if within is not None:
        return _limit("codex", line, read_at, _duration(within.group(1)))
    at = _TRY_AT.search(rest)
    if at is not None:
        return _limit("codex", line, read_at, _date_time(at, local))
    return _limit("codex", line, read_at, None)


def _gemini(text: str, read_at: datetime, local: tzinfo) -> UsageLimit | None:
    match = _GEMINI.search(text)
    if match is None:
        return None
    delay = _RETRY_DELAY.search(text)
    seconds = None
    if delay is not None:
        seconds = float(delay.group(1)) * (0.001 if delay.group(2).lower() == "ms" else 1)
    return _limit("gemini", _line_at(text, match.start()), read_at, seconds)


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
        return when
    when = now.replace(hour=hm[0], minute=hm[1], second=0, microsecond=0)
    return when if when > now else when + timedelta(days=1)


def _date_time(match: re.Match[str], local: tzinfo) -> datetime | None:
    """``Jul 5th, 2026 8:19 PM`` in the machine's time zone."""
    month = _MONTHS.get(match.group("month")[:3].lower())
    hm = _hour(match)
    if month is None or hm is None:
        return None
    try:
        year, day = int(match.group("year")), int(match.group("day"))
        return datetime(year, month, day, hm[0], hm[1], tzinfo=local)
    except ValueError:
        return None
