"""Waiting out a usage limit: the pause a session asks for when its model says "not now".

The session's turn loop calls `wait_out` with the limit its model raised; the rest (how long,
whether the run waits at all, moving the deadlines so the wait is not counted, the two events)
is here. Loaded only by a run that meets a limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._events._pause import RunPaused, RunResumed
from .._halt import HaltReason, UsageLimitReached
from .._limits import UsageLimit

if TYPE_CHECKING:
    from ._run_state import RunState


async def wait_out(
    run: RunState,
    limit: UsageLimit,
    *,
    again: int,
    agent: str,
    iteration: int,
    turn: int,
    read_clock: Callable[[], float],
    postpone: Callable[[float], None],
) -> HaltReason | None:
    """Wait out `limit` on the run's clock (see `PauseSettings`) before `turn` runs again:
    None once it is over, or `UsageLimitReached` when the run will not wait: a terminal
    limit, or a wait past `max_pause`, `max_total_pause` or `max_pauses`.

    `again` counts the limits the session met since its model last answered (> 0: the turn
    that woke from a pause met one again). `read_clock` reads the clock after the wait (the
    session's reading for what follows); `postpone` moves the run's and the session's
    wall-time deadlines, for a pause that does not count toward wall time.
    """
    settings = run.config.pause
    seed = f"{run.task}|{agent}|{iteration}|{turn}|{limit.retry_in}"
    wait = 0.0 if limit.terminal else settings.wait_for(limit, seed, again=again)
    bound: tuple[str, float] | None = None
    if limit.terminal:
        bound = ("terminal", 0.0)
    elif wait > settings.max_pause:
        bound = ("max_pause", settings.max_pause)
    elif run.pauses >= settings.max_pauses:
        bound = ("max_pauses", settings.max_pauses)
    elif run.paused_total + wait > settings.max_total_pause:
        bound = ("max_total_pause", settings.max_total_pause)
    if bound is not None:
        return UsageLimitReached(
            limit.source, limit.message, limit.retry_in, wait, bound[1], bound[0]
        )
    run.pauses += 1
    counted = settings.counts_toward_wall_time
    paused_at = run.now()
    run.emit(
        RunPaused(
            paused_at - run.started_at,
            agent,
            iteration,
            turn,
            limit.source,
            limit.message,
            limit.retry_in,
            limit.resets_at,
            wait,
            counted,
        )
    )
    if not counted:  # move the deadlines first, so that none fires during the wait
        postpone(wait)
    await run.clock.sleep(wait)
    reading = read_clock()
    paused_for = reading - paused_at
    run.paused_total += paused_for
    if not counted and paused_for != wait:
        postpone(paused_for - wait)
    at = reading - run.started_at
    run.emit(RunResumed(at, agent, iteration, turn, paused_for, counted))
    return None
