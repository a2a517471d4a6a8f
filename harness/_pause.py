"""How a run waits out a usage limit: `PauseSettings`.

When a model client raises `UsageLimitError`, the session pauses: it waits on the run's clock
until the limit's reset plus jitter (or `default_wait` when the reset could not be read), then
runs the same turn again. When that turn meets a limit again at once (the reset was printed to
the minute, or came a little late), it waits a short step (`RECHECK_STEP`, a minute, doubled at
each such rejection in a row, up to `default_wait`), never 0 and never a day. The turn is
charged to no budget: not to turns, iterations, rejections or a board's attempts. The run
halts at once with `UsageLimitReached` instead of waiting when the limit is terminal (a quota
that is gone, not a window: waiting does not help), when the wait is longer than
`max_pause`, when it would take the run's pauses past `max_total_pause` seconds in all, or
when the run has paused `max_pauses` times already. The `CancelToken` stops a pause like
anything else in the run.

Whether the pause counts toward wall time is `counts_toward_wall_time` (default: it does not:
the run's and the session's wall-time deadlines move back by the time spent paused). The
jitter is drawn from a generator seeded by the task, the agent, the iteration, the turn and
the reported reset, so a recorded run with a pause replays identically on a `FakeClock`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from ._errors import ConfigurationError
from ._limits import (
    DEFAULT_MAX_PAUSE,
    DEFAULT_MAX_PAUSES,
    DEFAULT_MAX_TOTAL_PAUSE,
    DEFAULT_WAIT,
    RECHECK_STEP,
)
from ._validate import check_positive

if TYPE_CHECKING:
    from ._limits import UsageLimit


def _non_negative(instance: object, attribute: object, value: object) -> None:
    name = getattr(attribute, "name", "value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigurationError(f"{name!r} must be a number >= 0 (got {value!r})")


def _count(instance: object, attribute: object, value: object) -> None:
    name = getattr(attribute, "name", "value")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name!r} must be a whole number >= 0 (got {value!r})")


def _positive(instance: object, attribute: object, value: object) -> None:
    check_positive(getattr(attribute, "name", "value"), value)


def _boolean(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, bool):
        name = getattr(attribute, "name", "value")
        raise ConfigurationError(f"{name!r} must be true or false (got {value!r})")


@frozen(kw_only=True)
class PauseSettings:
    """How a run waits out a usage limit (see the module docstring).

    `max_pause`: the longest single wait in seconds (0: never pause, halt at once);
    `max_total_pause`: the most seconds a run waits in all its pauses; `max_pauses`: the most
    pauses in a run (0: never pause); `default_wait`: the wait when the reset time cannot be
    read; `jitter`: up to this many seconds added after the reset, so agents that share an
    account do not all return at the same instant; `counts_toward_wall_time`: whether time
    spent paused uses up ``max_wall_time``.
    """

    max_pause: float = field(default=DEFAULT_MAX_PAUSE, validator=_non_negative)
    max_total_pause: float = field(default=DEFAULT_MAX_TOTAL_PAUSE, validator=_non_negative)
    max_pauses: int = field(default=DEFAULT_MAX_PAUSES, validator=_count)
    default_wait: float = field(default=DEFAULT_WAIT, validator=_positive)
    jitter: float = field(default=30.0, validator=_non_negative)
    counts_toward_wall_time: bool = field(default=False, validator=_boolean)

    @classmethod
    def from_config(cls, table: Mapping[str, Any], *, where: str) -> PauseSettings:
        """Build from a spec's ``[pause]`` table; errors name `where` and the key."""
        from ._pause_table import PAUSE  # the table's schema is for specs, not every run

        options = PAUSE.validate(table, where)
        try:
            return cls(**options)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None

    def wait_for(self, limit: UsageLimit, seed: str, *, again: int = 0) -> float:
        """Seconds to wait for `limit`: its reset (or `default_wait`) plus jitter drawn from a
        generator seeded with `seed` (the same seed, the same wait).

        `again` counts the rejections in a row of the turn that woke from a pause: the reset it
        waited for was not yet the reset (printed to the minute, or a little late), so the
        wait is at least a short step, `RECHECK_STEP` doubled at each, up to `default_wait`
        (or the limit's own reset, when that is later).
        """
        base = self.default_wait if limit.retry_in is None else max(limit.retry_in, 0.0)
        if again > 0:
            step = min(RECHECK_STEP * 2 ** min(again - 1, 16), self.default_wait)
            base = max(base, step)
        if not self.jitter:
            return base
        import random  # only a run that meets a usage limit draws jitter

        return base + random.Random(seed).uniform(0.0, self.jitter)


__all__ = [
    "DEFAULT_MAX_PAUSE",
    "DEFAULT_MAX_PAUSES",
    "DEFAULT_MAX_TOTAL_PAUSE",
    "DEFAULT_WAIT",
    "PauseSettings",
]
