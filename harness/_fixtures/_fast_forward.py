"""`FastForwardClock`: the event loop's clock with the sleeps skipped, for replays.

Its own module, apart from the test clocks (`_fake_clock`): a run whose model replays a script
fast-forwards by default (`Harness`), and should not load what only tests need.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import anyio
import anyio.lowlevel
from attrs import define, field

from .._clock import DeadlineScope


@define
class FastForwardClock:
    """The event loop's clock, except that a `sleep` takes no time: it moves this clock
    forward by what it skipped. Made for replays, where the only sleeps are a fixture's
    recorded delays.

    Real work keeps its real deadlines: a tool, a check or a command that hangs is cancelled
    when the clock (real time plus the time skipped) reaches its deadline, as on the system
    clock. A sleep that would pass a deadline stops the clock at that deadline and cancels its
    scope, so a wall-time budget halts a replay exactly where it halted the recorded run.
    Sleeps are skipped one after another: two taken at once add up, where a real clock (or
    `FakeClock`) would overlap them.
    """

    _skipped: float = field(init=False, default=0.0)
    _scopes: list[tuple[float, anyio.CancelScope]] = field(init=False, factory=list)

    def now(self) -> float:
        return anyio.current_time() + self._skipped

    @property
    def skipped(self) -> float:
        """The seconds of sleep this clock skipped so far."""
        return self._skipped

    async def sleep(self, seconds: float) -> None:
        target = self.now() + max(seconds, 0.0)
        while (now := self.now()) < target:
            # Skip to the target, or to the first deadline before it (whose scope then fires).
            stop = min((d for d, _ in self._scopes if now < d < target), default=target)
            self._skipped += stop - now
            for deadline, scope in self._scopes:
                scope.deadline = deadline - self._skipped
            await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()

    def postpone(self, scope: anyio.CancelScope, seconds: float) -> None:
        """Move the deadline of `scope`, one of this clock's deadline scopes, `seconds` later."""
        for index, (deadline, held) in enumerate(self._scopes):
            if held is scope:
                self._scopes[index] = (deadline + seconds, held)
                held.deadline = deadline + seconds - self._skipped
                return

    def deadline_scope(self, deadline: float) -> DeadlineScope:
        return cast("DeadlineScope", self._deadline_scope(deadline))

    @contextmanager
    def _deadline_scope(self, deadline: float) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope(deadline=deadline - self._skipped) as scope:
            entry = (deadline, scope)
            self._scopes.append(entry)
            try:
                yield scope
            finally:  # by identity: `postpone` may have replaced the entry
                self._scopes[:] = [held for held in self._scopes if held[1] is not scope]
