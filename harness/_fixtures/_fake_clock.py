"""The clocks for tests and replays, which `harness.testing` exports.

`FakeClock` is a manual clock for any backend: `sleep` advances it instantly and cancels every
deadline scope it passes, so a "hung" call that waits on the clock is cut off at its deadline
exactly, with no real waiting. `FastForwardClock` is the event loop's clock with the sleeps
skipped, for replays.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import anyio
import anyio.lowlevel
from attrs import define, field

from .._clock import DeadlineScope

_UNWIND_ROUNDS = 32


@define
class FakeClock:
    """A manual clock: time moves only when something sleeps on it or calls `advance`.

    Sleeping past a deadline registered with `deadline_scope` stops the clock at that deadline
    and cancels the scope, which is what a real clock would do to a call that hung.
    """

    start: float = 0.0
    _now: float = field(init=False)
    _scopes: list[tuple[float, anyio.CancelScope]] = field(init=False, factory=list)
    _sleepers: list[float] = field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        self._now = self.start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, cancelling every scope whose deadline is passed."""
        if seconds < 0:
            raise ValueError(f"'seconds' must be >= 0 (got {seconds})")
        self._now += seconds
        for deadline, scope in self._scopes:
            if deadline <= self._now:
                scope.cancel()

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of fake time; concurrent sleeps overlap as on a real clock.

        Each sleeper yields once so that tasks started together can register their own
        sleeps; then the earliest sleeper moves time to its wake-up (or to the first deadline
        before it, cancelling that scope), and later sleepers wait their turn. Three tools
        sleeping 10, 20 and 30 seconds at once finish at 30, not 60.
        """
        target = self._now + max(seconds, 0.0)
        self._sleepers.append(target)
        unwinding = 0
        try:
            while True:
                await anyio.lowlevel.checkpoint()
                if self._now >= target:
                    return
                if target > min(self._sleepers):
                    continue
                # Let tasks whose deadline has passed leave their scopes first, so they see
                # the time they were cancelled at (bounded, in case one ignores the cancel).
                if unwinding < _UNWIND_ROUNDS and any(d <= self._now for d, _ in self._scopes):
                    unwinding += 1
                    continue
                unwinding = 0
                pending = [d for d, _ in self._scopes if self._now < d < target]
                self.advance((min(pending) if pending else target) - self._now)
        finally:
            self._sleepers.remove(target)

    def postpone(self, scope: anyio.CancelScope, seconds: float) -> None:
        """Move the deadline of `scope`, one of this clock's deadline scopes, `seconds` later."""
        for index, (deadline, held) in enumerate(self._scopes):
            if held is scope:
                self._scopes[index] = (deadline + seconds, held)
                return

    def deadline_scope(self, deadline: float) -> DeadlineScope:
        # A generator context manager's __exit__ returns a bool at run time; typeshed widens it
        # to `bool | None`, which would make a FakeClock not a `Clock` to mypy.
        return cast("DeadlineScope", self._deadline_scope(deadline))

    @contextmanager
    def _deadline_scope(self, deadline: float) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            if deadline <= self._now:
                scope.cancel()
            self._scopes.append((deadline, scope))
            try:
                yield scope
            finally:  # by identity: `postpone` may have replaced the entry
                self._scopes[:] = [entry for entry in self._scopes if entry[1] is not scope]


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
