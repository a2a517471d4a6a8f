"""Time is injected: budgets, cooldowns and deadlines read the clock the caller passes, so a
fixture run is exact to the second on asyncio and on trio (FakeClock, or the real clock under
trio's MockClock)."""

from __future__ import annotations

import anyio
import pytest
from _clocks import CLOCK_BACKENDS, clock_backend, clock_for
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import (
    BudgetExceeded,
    Harness,
    IterationStarted,
    ScriptedModelClient,
    SessionStateSnapshot,
    ToolContext,
)
from harness.extend import Clock, SystemClock
from harness.testing import FakeClock, ListSink
from strategies import Ralph
from termination import Budget, TerminationPolicy

anyio_backend = pytest.fixture(params=CLOCK_BACKENDS)(clock_backend)
clock = pytest.fixture(clock_for)

# --- FakeClock ----------------------------------------------------------------------------------


def test_fake_clock_starts_where_told_and_only_moves_when_advanced() -> None:
    """A FakeClock reads its start until something advances it; going back is refused."""
    clock = FakeClock(start=100.0)
    assert clock.now() == 100.0
    clock.advance(2.5)
    assert clock.now() == 102.5
    with pytest.raises(ValueError, match=r"'seconds' must be >= 0 \(got -1\)"):
        clock.advance(-1)
    assert isinstance(clock, Clock)
    assert repr(SystemClock()) == "SystemClock()"


@pytest.mark.anyio
async def test_fake_sleep_advances_exactly_and_never_backwards() -> None:
    """Sleeping moves the clock by exactly that much; a negative sleep does not move it."""
    clock = FakeClock()
    await clock.sleep(1.25)
    await clock.sleep(-5)
    await clock.sleep(0)
    assert clock.now() == 1.25


@pytest.mark.anyio
async def test_a_fake_deadline_stops_a_sleep_at_the_deadline() -> None:
    """A sleep that would pass a deadline stops the clock at the deadline and cancels the scope;
    the code after the sleep never runs."""
    clock = FakeClock()
    reached = []
    with clock.deadline_scope(10) as scope:
        await clock.sleep(3)
        await clock.sleep(1000)
        reached.append("after")
    assert scope.cancelled_caught
    assert reached == []
    assert clock.now() == 10


@pytest.mark.anyio
async def test_nested_fake_deadlines_fire_in_order() -> None:
    """With nested deadline scopes the earlier deadline fires first, and only its scope."""
    clock = FakeClock()
    with clock.deadline_scope(50) as outer:
        with clock.deadline_scope(20) as inner:
            await clock.sleep(100)
        assert clock.now() == 20
        assert inner.cancelled_caught
        await clock.sleep(100)
    assert outer.cancelled_caught
    assert clock.now() == 50


@pytest.mark.anyio
async def test_a_fake_deadline_already_passed_cancels_at_once() -> None:
    """Entering a scope whose deadline has passed cancels it at the first checkpoint."""
    clock = FakeClock(start=5)
    with clock.deadline_scope(5) as scope:
        await anyio.lowlevel.checkpoint()
    assert scope.cancelled_caught
    assert clock.now() == 5


@pytest.mark.anyio
async def test_a_finished_fake_deadline_no_longer_stops_sleeps() -> None:
    """Once its scope is left, a deadline does not stop later sleeps."""
    clock = FakeClock()
    with clock.deadline_scope(10) as scope:
        await clock.sleep(1)
    assert not scope.cancelled_caught
    await clock.sleep(100)
    assert clock.now() == 101


@settings(max_examples=60, deadline=None)
@given(
    deadline=st.integers(min_value=1, max_value=100),
    sleeps=st.lists(st.integers(min_value=0, max_value=40), max_size=8),
)
def test_a_fake_deadline_fires_exactly_when_the_sleeps_reach_it(
    deadline: int, sleeps: list[int]
) -> None:
    """For any sleeps inside a deadline scope: cancelled exactly when they add up to the deadline
    or more, and then the clock stands at the deadline, on both backends."""

    async def main() -> None:
        clock = FakeClock()
        with clock.deadline_scope(deadline) as scope:
            for seconds in sleeps:
                await clock.sleep(seconds)
        total = sum(sleeps)
        assert scope.cancelled_caught == (total >= deadline)
        assert clock.now() == min(total, deadline)

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)


# --- whole runs on the injected clock -----------------------------------------------------------


class SlowCheck:
    """A check that takes 4 seconds on the run's clock and then passes on the second claim."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.answers: list[str | None] = ["not yet", None]

    async def check(self, state: SessionStateSnapshot) -> str | None:
        await self.clock.sleep(4)
        return self.answers.pop(0)

    def description(self) -> str:
        return "Slow."


@pytest.mark.anyio
async def test_every_event_of_a_run_is_stamped_exactly(clock: Clock) -> None:
    """Model latency, a tool sleeping on the clock and a slow check add up to exact event times."""

    async def wait(seconds: float, ctx: ToolContext) -> str:
        """Wait on the run's clock."""
        await ctx.clock.sleep(seconds)
        return "waited"

    model = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "wait", "arguments": {"seconds": 2.5}}], "delay": 1},
            {"text": "done", "delay": 0.5},
            {"text": "done again", "delay": 3},
        ]
    )
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=SlowCheck(clock)),
        tools=[wait],
        clock=clock,
        sinks=[sink],
    )
    result = await harness.run("wait")
    assert result.verified
    assert [(e.name, e.at) for e in sink.events] == [
        ("run.started", 0.0),
        ("iteration.started", 0.0),
        ("turn.started", 0.0),
        ("turn.finished", 1.0),
        ("tool.called", 3.5),
        ("turn.started", 3.5),
        ("turn.finished", 4.0),
        ("check.failed", 8.0),
        ("feedback.injected", 8.0),
        ("turn.started", 8.0),
        ("turn.finished", 11.0),
        ("check.passed", 15.0),
        ("run.halted", 15.0),
    ]
    assert result.elapsed == 15.0


@pytest.mark.anyio
async def test_ralph_cooldowns_and_a_session_deadline_on_the_injected_clock(clock: Clock) -> None:
    """Cooldowns and an iteration's wall-time deadline happen on the run's clock, exactly."""
    model = ScriptedModelClient.from_responses(
        [
            {"text": "thinking", "delay": 10**6},  # cut off by the iteration's 100s
            {"text": "done", "delay": 7},
        ]
    )

    class SecondClaimPasses:
        def __init__(self) -> None:
            self.calls = 0

        async def check(self, state: SessionStateSnapshot) -> str | None:
            self.calls += 1
            return "not yet" if self.calls == 1 else None

        def description(self) -> str:
            return "The second look passes."

    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=SecondClaimPasses()),
        strategy=Ralph(max_iterations=2, cooldown=30, iteration_budget=Budget(max_wall_time=100)),
        clock=clock,
        sinks=[sink],
    )
    result = await harness.run("think")
    assert result.verified
    assert [e.at for e in sink.events if isinstance(e, IterationStarted)] == [0.0, 130.0]
    assert result.elapsed == 137.0


@pytest.mark.anyio
async def test_the_wall_time_budget_counts_from_the_run_start_not_clock_zero() -> None:
    """A clock that starts far from zero changes nothing: elapsed time is measured from the
    run's start on that clock."""
    clock = FakeClock(start=1_000_000.0)
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "noop"}], "delay": 30}] * 2 + [{"text": "late", "delay": 30}]
    )

    def noop() -> str:
        """Nothing."""
        return "ok"

    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_wall_time=75)),
        tools=[noop],
        clock=clock,
    )
    result = await harness.run("wait")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 75, 75)
    assert clock.now() == 1_000_075.0


@pytest.mark.anyio
async def test_concurrent_fake_sleeps_overlap_like_real_time() -> None:
    """Three tasks sleeping 10, 20 and 30 s at once wake at 10, 20 and 30, not one after another."""
    clock = FakeClock()
    woke: dict[float, float] = {}

    async def nap(seconds: float) -> None:
        await clock.sleep(seconds)
        woke[seconds] = clock.now()

    async with anyio.create_task_group() as group:
        for seconds in (30.0, 10.0, 20.0):
            group.start_soon(nap, seconds)
    assert woke == {10.0: 10.0, 20.0: 20.0, 30.0: 30.0}
    assert clock.now() == 30.0


@pytest.mark.anyio
async def test_a_deadline_cuts_only_the_sleeper_it_scopes() -> None:
    """A deadline between two concurrent sleeps cancels the scoped one; the other wakes on time."""
    clock = FakeClock()
    cut: list[float] = []
    woke: list[float] = []

    async def scoped() -> None:
        with clock.deadline_scope(15.0):
            await clock.sleep(100.0)
        cut.append(clock.now())

    async def plain() -> None:
        await clock.sleep(20.0)
        woke.append(clock.now())

    async with anyio.create_task_group() as group:
        group.start_soon(scoped)
        group.start_soon(plain)
    assert cut == [15.0]
    assert woke == [20.0]


# --- Reading the clock in a run -----------------------------------------------------------------


@pytest.mark.anyio
async def test_a_run_reads_the_system_clock_through_the_loop_it_runs_in() -> None:
    """A run finds the event loop's time function once; it reads what `anyio.current_time`
    reads (trio's MockClock included, which the exact-stamping tests above drive)."""
    from harness._clock import clock_reader

    read = clock_reader(SystemClock())
    before = anyio.current_time()
    reading = read()
    assert before <= reading <= anyio.current_time()


@pytest.mark.anyio
async def test_on_asyncio_a_run_reads_the_loops_own_time(anyio_backend: str) -> None:
    """On asyncio the reader is the running loop's `time`, which does not look the loop up
    again at every read as anyio's `current_time` does; on trio it is anyio's."""
    from harness._clock import clock_reader

    read = clock_reader(SystemClock())
    token = anyio.lowlevel.current_token()
    if anyio_backend == "asyncio":
        assert read == token.native_token.time  # type: ignore[attr-defined]
    else:
        assert read == token.backend_class.current_time


def test_outside_an_event_loop_the_system_clock_is_read_through_its_now() -> None:
    from harness._clock import clock_reader

    clock = SystemClock()
    assert clock_reader(clock) == clock.now


def test_any_other_clock_is_read_through_its_own_now() -> None:
    from harness._clock import clock_reader

    clock = FakeClock(start=7.0)
    read = clock_reader(clock)
    clock.advance(1.5)
    assert read() == 8.5
