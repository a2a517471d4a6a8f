"""The injectable clock that budgets, cooldowns, deadlines and triggers read.

`SystemClock` reads the event loop's clock, so trio's `MockClock` drives it in tests.
The clocks for tests and replays (`FakeClock`, `FastForwardClock`) are in `_fake_clock`,
which only test code and replays load.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol, runtime_checkable

import anyio
import anyio.lowlevel


class DeadlineScope(Protocol):
    """A context manager whose cancel scope fires at a deadline (and may swallow that cancel)."""

    def __enter__(self) -> anyio.CancelScope: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...


@runtime_checkable
class Clock(Protocol):
    """A source of time the harness reads and waits on."""

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences matter)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` on this clock."""
        ...

    def deadline_scope(self, deadline: float) -> DeadlineScope:
        """A context manager yielding a cancel scope that is cancelled at `deadline`."""
        ...


class SystemClock:
    """The event loop's own clock (`anyio.current_time`); honours trio's `MockClock`."""

    __slots__ = ()

    def now(self) -> float:
        return anyio.current_time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    def deadline_scope(self, deadline: float) -> anyio.CancelScope:
        return anyio.CancelScope(deadline=deadline)

    def __repr__(self) -> str:
        return "SystemClock()"


def clock_reader(clock: Clock) -> Callable[[], float]:
    """A function that reads `clock` as its `now` does, for code that stays in the event loop
    it is called from (a run never leaves the loop it started in).

    For the `SystemClock` it is the loop's own time function, found here once:
    `anyio.current_time` finds which library runs the loop again at every call, which costs
    about 1 µs, and a turn reads the clock several times. On asyncio that is the running
    loop's `time` (what anyio's `current_time` calls after finding the loop again, a system
    call on Python 3.11; anyio's token for an asyncio loop is the loop itself); on trio,
    anyio's `current_time`. Any other clock, or the system clock outside an event loop, is
    read through its `now`.
    """
    if type(clock) is not SystemClock:
        return clock.now
    try:
        token = anyio.lowlevel.current_token()
    except RuntimeError:  # no event loop runs in this thread
        return clock.now
    loop_time = getattr(token.native_token, "time", None)  # a trio token has none
    return loop_time if callable(loop_time) else token.backend_class.current_time


def postpone(clock: Clock, scope: anyio.CancelScope, seconds: float) -> None:
    """Move the deadline of `scope` (made by `clock.deadline_scope`) `seconds` later.

    A pause that does not count toward wall time moves the run's deadlines with it. A clock
    that keeps its own deadlines (`FakeClock`) offers ``postpone(scope, seconds)``; for any
    other, the scope is an anyio cancel scope with the deadline set on it.
    """
    mover = getattr(clock, "postpone", None)
    if callable(mover):
        mover(scope, seconds)
    else:
        scope.deadline += seconds
