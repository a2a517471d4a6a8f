"""The injectable clock that budgets, cooldowns, deadlines and triggers read.

`SystemClock` reads the event loop's clock, so trio's `MockClock` drives it in tests.
`FakeClock` is a manual clock for any backend: `sleep` advances it instantly and cancels every
deadline scope it passes, so a "hung" call that waits on the clock is cut off at its deadline
exactly, with no real waiting.
"""

from __future__ import annotations

import math
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Protocol, cast, runtime_checkable

import anyio
import anyio.lowlevel
from attrs import define, field


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

    def deadline_scope(self, deadline: float) -> DeadlineScope:
        # A generator context manager's __exit__ returns a bool at run time; typeshed widens it
        # to `bool | None`, which would make a FakeClock not a `Clock` to mypy.
        return cast("DeadlineScope", self._deadline_scope(deadline))

    @contextmanager
    def _deadline_scope(self, deadline: float) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            if deadline <= self._now:
                scope.cancel()
            entry = (deadline, scope)
            self._scopes.append(entry)
            try:
                yield scope
            finally:
                self._scopes.remove(entry)


def time_reader(clock: Clock) -> Callable[[], float]:
    """A function that reads `clock` as a run on the running event loop should: a
    `SystemClock` is resolved for that loop first (see `for_this_loop`); any other clock is
    read as it is."""
    return for_this_loop(clock).now


class LoopClock(SystemClock):
    """A `SystemClock` resolved once for the event loop running now.

    `anyio.current_time()` and `anyio.CancelScope()` find the running backend on every call;
    a run reads the time several times a turn and opens a deadline scope for every awaited
    tool and check, on one event loop from start to end. This clock reads the loop's time and
    builds the backend's cancel scopes directly (`AsyncBackend.create_cancel_scope`); it
    behaves exactly as the `SystemClock` it stands for, `MockClock` included. Build one with
    `for_this_loop`.
    """

    __slots__ = ("_create_scope", "now")

    def __init__(
        self, now: Callable[[], float], create_scope: Callable[..., anyio.CancelScope]
    ) -> None:
        self.now = now  # type: ignore[method-assign]
        self._create_scope = create_scope

    def deadline_scope(self, deadline: float) -> anyio.CancelScope:
        return self._create_scope(deadline=deadline)

    def __repr__(self) -> str:
        return "LoopClock()"


# The LoopClock of each stock asyncio loop, found by the loop itself (cheaper than asking anyio
# which backend runs), so the runs on one loop share it. It holds `time.monotonic` and the
# backend's scope factory, which belongs to the backend class: nothing in it refers to the loop,
# so an entry never keeps its loop alive. A loop with a time() of its own gets a clock per run,
# as that clock must hold the loop.
_LOOP_CLOCKS: weakref.WeakKeyDictionary[object, LoopClock] = weakref.WeakKeyDictionary()


def for_this_loop(clock: Clock) -> Clock:
    """`clock` as a run on the running event loop should read it: a `SystemClock` becomes a
    `LoopClock`; any other clock (a `FakeClock`, a caller's own) is returned as it is."""
    if type(clock) is not SystemClock:
        return clock
    asyncio = sys.modules.get("asyncio")  # not imported: no asyncio loop can be running
    if asyncio is not None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            try:
                shared = _LOOP_CLOCKS.get(loop)
            except TypeError:  # a loop that cannot be weakly referenced: resolve it each run
                shared = None
            if shared is not None:
                return shared
            create = anyio.lowlevel.current_token().backend_class.create_cancel_scope
            if type(loop).time is not asyncio.BaseEventLoop.time:
                return LoopClock(loop.time, create)
            # The stock loop's time() is documented as time.monotonic(): read that directly.
            shared = LoopClock(time.monotonic, create)
            with suppress(TypeError):
                _LOOP_CLOCKS[loop] = shared
            return shared
    try:
        backend = anyio.lowlevel.current_token().backend_class
    except anyio.NoEventLoopError:
        return clock
    return LoopClock(_trio_time() or backend.current_time, backend.create_cancel_scope)


def _trio_time() -> Callable[[], float] | None:
    """When trio runs the loop, its run's clock (a `MockClock` in tests), read directly: the
    same reading `trio.current_time()` returns, without two layers of calls in between."""
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        now: Callable[[], float] = trio.lowlevel.current_clock().current_time
    except RuntimeError:  # not inside trio.run
        return None
    return now


def remaining(clock: Clock, deadline: float | None) -> float:
    """Seconds left until `deadline` on `clock` (infinity when there is none)."""
    return math.inf if deadline is None else deadline - clock.now()
