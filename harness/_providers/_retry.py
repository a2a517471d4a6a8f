"""Retrying provider calls: rate limits, 5xx and timeouts, with backoff, jitter and a deadline.

Each wait is the larger of the provider's ``Retry-After`` (or, without one, the reset of the
exhausted rate limit in the ``x-ratelimit-*`` and ``anthropic-ratelimit-*`` headers) and
exponential backoff with jitter. The retries stop after `RetryPolicy.max_attempts` attempts,
when the next wait would pass the request's deadline, or when a single wait would exceed
`RetryPolicy.max_wait`; the last error is then raised with a note of why trying stopped. A
rate limit (429) whose reset lies beyond that retry budget (further away than `max_wait`) is
raised as a `UsageLimitError`: the run pauses until the reset instead of failing. Errors that
are not retryable (auth, bad request, malformed responses) are raised at once. Sleeping
happens on the injected clock, so it works on asyncio and trio alike and a `FakeClock` makes
the waits instant and exact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import frozen

from .._clock import Clock
from .._errors import ConfigurationError, ModelError
from .._limits import UsageLimit, UsageLimitError
from .._log import LibraryLogger
from ._tables import RETRY

if TYPE_CHECKING:
    from tenacity import RetryCallState

T = TypeVar("T")

_log = LibraryLogger("harness.providers")


def _number(name: str, value: object, *, minimum: float, strict: bool = False) -> None:
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or (value <= minimum if strict else value < minimum):  # type: ignore[operator]
        op = ">" if strict else ">="
        raise ConfigurationError(f"{name!r} must be a number {op} {minimum:g} (got {value!r})")


@frozen
class RetryPolicy:
    """How a provider client retries: attempts, backoff, jitter and the longest single wait.

    The n-th retry waits ``min(max_backoff, initial_wait * 2**(n-1) + uniform(0, jitter))``
    seconds, or the provider's ``Retry-After`` when that is longer.
    """

    max_attempts: int = 4
    initial_wait: float = 1.0
    max_backoff: float = 30.0
    jitter: float = 1.0
    max_wait: float = 120.0

    def __attrs_post_init__(self) -> None:
        if (
            isinstance(self.max_attempts, bool)
            or not isinstance(self.max_attempts, int)
            or self.max_attempts < 1
        ):
            raise ConfigurationError(
                f"'max_attempts' must be a positive int (got {self.max_attempts!r})"
            )
        _number("initial_wait", self.initial_wait, minimum=0)
        _number("max_backoff", self.max_backoff, minimum=0)
        _number("jitter", self.jitter, minimum=0)
        _number("max_wait", self.max_wait, minimum=0, strict=True)

    @classmethod
    def none(cls) -> RetryPolicy:
        """One attempt, no retries."""
        return cls(max_attempts=1)

    @classmethod
    def from_config(cls, table: Mapping[str, Any], *, where: str) -> RetryPolicy:
        """Build from a spec table ``{max_attempts = 5, initial_wait = 2.0, ...}``."""
        RETRY.validate(table, where)
        try:
            return cls(**table)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for, from ``retry-after-ms`` or ``retry-after``; never raises.

    ``Retry-After`` may be seconds or an HTTP date in any form RFC 9110 allows (IMF-fixdate,
    RFC 850, asctime); a date is measured against the response's own ``Date`` header (never
    this machine's wall clock), and is ignored without one. Anything unreadable is None.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = _seconds(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds = _seconds(raw)
    if seconds is not None:
        return seconds
    until, now = _http_date(raw), _http_date(lowered.get("date"))
    if until is None or now is None:
        return None
    return max((until - now).total_seconds(), 0.0)


_RESET_HEADERS = (
    # (remaining, reset): OpenAI's resets are durations ("1s", "6m0s"), Anthropic's RFC 3339.
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset"),
    ("anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"),
    ("anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset"),
    ("anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset"),
)
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_GO_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def wait_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a rate-limited response asks for: `retry_after_seconds`, else the latest reset
    of a limit the headers show used up (``...-remaining: 0``); None when neither is known.

    OpenAI's ``x-ratelimit-reset-*`` are durations (``6m0s``); Anthropic's
    ``anthropic-ratelimit-*-reset`` are RFC 3339 times, measured against the response's
    ``Date`` header (never this machine's clock). Never raises.
    """
    asked = retry_after_seconds(headers)
    if asked is not None:
        return asked
    lowered = {k.lower(): v for k, v in headers.items()}
    resets = []
    for remaining, reset in _RESET_HEADERS:
        if lowered.get(remaining, "").strip() != "0" or reset not in lowered:
            continue
        seconds = _reset_value(lowered[reset], lowered.get("date"))
        if seconds is not None:
            resets.append(seconds)
    return max(resets) if resets else None


def _reset_value(raw: str, date: str | None) -> float | None:
    raw = raw.strip()
    seconds = _seconds(raw)
    if seconds is not None:
        return seconds
    parts = _GO_DURATION.findall(raw)
    if parts and "".join(a + u for a, u in parts) == raw:
        return sum(float(amount) * _GO_UNITS[unit] for amount, unit in parts)
    now = _http_date(date)
    if now is None:
        return None
    try:
        until = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    return max((until - now).total_seconds(), 0.0)


def _seconds(raw: str | None) -> float | None:
    """A number of seconds (negative is zero); None for anything else, inf and nan too."""
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return max(value, 0.0) if math.isfinite(value) else None


def _http_date(raw: str | None) -> datetime | None:
    """An HTTP date as an aware UTC datetime; None when it is not one.

    HTTP dates are always GMT (RFC 9110 5.6.7), so a date that names no zone, or the
    "unknown zone" ``-0000``, is read as UTC rather than left naive.
    """
    if raw is None:
        return None
    # The email package loads with the first dated Retry-After, not with the `RETRY` schema
    # that checking a spec's [model] table needs.
    import email.utils

    try:
        parsed = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed


async def call_with_retry(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    clock: Clock,
    deadline: float | None,
    what: str = "model call",
) -> T:
    """Await `attempt()` until it succeeds or `policy` says to stop; raise the last error."""
    from tenacity import AsyncRetrying, retry_if_exception, wait_exponential_jitter

    backoff = wait_exponential_jitter(
        multiplier=policy.initial_wait, max=policy.max_backoff, jitter=policy.jitter
    )

    def wait(state: RetryCallState) -> float:
        error = _error_of(state)
        asked = error.retry_after if error.retry_after is not None else 0.0
        return max(asked, float(backoff(state)))

    def why_stop(state: RetryCallState) -> str | None:
        if state.attempt_number >= policy.max_attempts:
            return f"gave up after {state.attempt_number} attempt(s)"
        upcoming = state.upcoming_sleep
        if upcoming > policy.max_wait:
            return f"the next wait of {upcoming:g}s is longer than max_wait {policy.max_wait:g}s"
        if deadline is not None and clock.now() + upcoming >= deadline:
            return f"the next wait of {upcoming:g}s would pass the run's deadline"
        return None

    def give_up(state: RetryCallState) -> Any:
        error = _error_of(state)
        reset = error.retry_after
        if error.kind == "rate_limit" and reset is not None and reset > policy.max_wait:
            raise UsageLimitError(UsageLimit(what, str(error), reset)) from None
        raise ModelError(
            f"{error} ({why_stop(state)})",
            kind=error.kind,
            retryable=error.retryable,
            status_code=error.status_code,
            retry_after=error.retry_after,
        ) from None

    async def before_sleep(state: RetryCallState) -> None:
        error = _error_of(state)
        _log.warning(
            "model.retry",
            what=what,
            attempt=state.attempt_number,
            wait=state.upcoming_sleep,
            kind=error.kind,
            status_code=error.status_code,
        )

    retrying = AsyncRetrying(
        sleep=clock.sleep,
        stop=lambda state: why_stop(state) is not None,
        wait=wait,
        retry=retry_if_exception(lambda exc: isinstance(exc, ModelError) and exc.retryable),
        before_sleep=before_sleep,
        retry_error_callback=give_up,
        reraise=True,
    )
    result: T = await retrying(attempt)
    return result


def _error_of(state: RetryCallState) -> ModelError:
    assert state.outcome is not None
    error = state.outcome.exception()
    assert isinstance(error, ModelError)
    return error
