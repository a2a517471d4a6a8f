"""Usage limits: the typed outcome of an agent (or a provider) that is out of quota for now.

A usage limit is a pause, not a failure (see `harness.PauseSettings`): a client that meets one
raises `UsageLimitError` carrying a `UsageLimit`, the session waits on the run's clock until
the reset and runs the same turn again. The readers that recognise each coding agent's limit
messages are in `_limit_messages` (loaded by the clients that read agents' output), so the
loop, which only catches the error, does not import regular expressions and time zones.
"""

from __future__ import annotations

import math

from attrs import field, frozen

from ._errors import ModelError

# The defaults of `PauseSettings`, here so that the schema of a spec's pause table shows them
# without importing the settings it builds.
DEFAULT_MAX_PAUSE = 6 * 3600.0
"""Six hours: the longest window of the coding agents' subscription limits but the weekly one."""
DEFAULT_WAIT = 900.0
"""Fifteen minutes: the wait when a limit's reset time cannot be read."""
DEFAULT_MAX_TOTAL_PAUSE = 24 * 3600.0
"""A day: the longest a run waits for usage limits in all (four five-hour windows)."""
DEFAULT_MAX_PAUSES = 20
"""The most usage-limit pauses in one run: an agent that reports a limit at every turn after
each short wait (a quota it misreads as a window) halts after this many."""

RECHECK_STEP = 60.0
"""A minute: the least wait for a limit met again by the very turn that woke from a pause (the
reset was printed to the minute, or came a little late); it doubles at each such rejection in
a row, up to `PauseSettings.default_wait`."""

USAGE_LIMIT = "usage_limit"
"""The `ModelError.kind` of a `UsageLimitError`."""


def _finite(value: object) -> float | None:
    """`value`, or None when it is not a finite number (a NaN from a provider is no reset)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


@frozen
class UsageLimit:
    """An agent or provider out of quota until a reset.

    `source` names who said so (``claude``, ``codex``, ``gemini``, a provider); `message` is
    the line that said it (text the agent controls: data, never markup); `retry_in` is the
    number of seconds from when it was read until the reset, or None when the reset could not
    be read; `resets_at` is the reset as Unix time when the message gave one (a figure that is
    not a finite number, NaN or infinite, is no reading: None). `terminal` marks
    a quota that is gone rather than a window that resets (a daily quota exhausted, credits
    spent): waiting does not help, and the run halts at once.
    """

    source: str
    message: str
    retry_in: float | None = field(default=None, converter=_finite)
    resets_at: float | None = field(default=None, converter=_finite)
    terminal: bool = False

    def describe(self) -> str:
        if self.terminal:
            return f"{self.source} quota exhausted: {self.message}"
        when = "an unknown time" if self.retry_in is None else f"{self.retry_in:g}s"
        return f"{self.source} usage limit (resets in {when}): {self.message}"


class UsageLimitError(ModelError):
    """A model client met a usage or rate limit that retrying soon cannot get past.

    The session pauses the run until `limit`'s reset (bounded by `PauseSettings`) and runs the
    same turn again; the turn is charged to no budget. A terminal limit halts the run at once.
    """

    def __init__(self, limit: UsageLimit) -> None:
        super().__init__(
            limit.describe(), kind=USAGE_LIMIT, retryable=False, retry_after=limit.retry_in
        )
        self.limit = limit
