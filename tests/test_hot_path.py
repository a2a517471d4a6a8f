"""The turn loop's hot path: the shortcuts it takes for speed change nothing a caller can see."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
import weakref
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog
import structlog.testing
import trio
import trio.testing
from attrs import fields
from hypothesis import given
from hypothesis import strategies as st

from harness import (
    CheckFailed,
    Completed,
    Event,
    FakeClock,
    Harness,
    ListSink,
    ScriptedModelClient,
    SensorReading,
    SessionStateSnapshot,
    SessionStore,
    StructlogSink,
    SystemClock,
    ToolCalled,
    TurnStarted,
    Usage,
    tool,
)
from harness._clock import _LOOP_CLOCKS, LoopClock, for_this_loop, time_reader
from harness._run import Run
from harness._state import HistoryView
from harness._tools import render_result
from strategies import Ralph
from termination import Budget, TerminationPolicy


def _run(clock: FakeClock) -> Run:
    store = SessionStore()
    store.put("a note")
    return Run(
        run_id="run-1",
        task="the task",
        model=ScriptedModelClient([]),
        tools={},
        policy=TerminationPolicy(),
        clock=clock,
        sinks=[],
        workspace=Path("/work/space"),
        context_window=8_000,
        started_at=1.0,
        deadline=500.0,
        turns=11,
        tool_calls=12,
        usage=Usage(1, 2),
        check_reasons=["not yet"],
        store=store,
    )


def test_a_snapshot_puts_every_value_in_its_own_field() -> None:
    """The loop builds snapshots positionally; each field still holds the value it names."""
    clock = FakeClock(start=3.0)
    run = _run(clock)
    session = run.new_session(agent="builder")
    clock.advance(4.0)
    session.turns, session.tool_calls, session.usage = 5, 6, Usage(3, 4)
    snapshot = session.snapshot(claims_done=True, final_text="all done")
    expected: dict[str, Any] = {
        "run_id": "run-1",
        "task": "the task",
        "agent": "builder",
        "iteration": 1,
        "workspace": Path("/work/space"),
        "turns": 5,
        "tool_calls": 6,
        "usage": Usage(3, 4),
        "run_turns": 11,
        "run_tool_calls": 12,
        "run_usage": Usage(1, 2),
        "started_at": 1.0,
        "now": 7.0,
        "deadline": 500.0,
        "claims_done": True,
        "final_text": "all done",
        "store": {str: ("a note",)},
        "context_window": 8_000,
        "session_started_at": 3.0,
    }
    views = {"messages", "tool_outcomes", "check_reasons"}
    assert {f.name for f in fields(type(snapshot))} == set(expected) | views
    assert {name: getattr(snapshot, name) for name in expected} == expected
    assert list(snapshot.messages) == list(session.messages)
    assert list(snapshot.check_reasons) == ["not yet"]
    assert list(snapshot.tool_outcomes) == []


def test_a_snapshot_holds_views_of_the_history_not_copies() -> None:
    """Taking a snapshot copies nothing: its histories are windows on the session's lists."""
    run = _run(FakeClock())
    session = run.new_session()
    before = session.snapshot()
    session.inject("test", "more")
    after = session.snapshot()
    assert len(after.messages) == len(before.messages) + 1
    assert before.messages._items is after.messages._items  # type: ignore[attr-defined]


@given(st.lists(st.integers(), max_size=6), st.lists(st.integers(), max_size=6))
def test_a_view_iterates_its_own_length_either_way(first: list[int], later: list[int]) -> None:
    """Forwards and backwards, a view shows what the list held when it was taken, no more."""
    items = list(first)
    view = HistoryView(items)
    items.extend(later)
    assert list(view) == first
    assert list(reversed(view)) == first[::-1]
    assert tuple(view) == tuple(first)


class _Index:
    """An integer-like index (as numpy's are): it has `__index__` but is not an int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_a_view_takes_any_integer_like_index_within_its_own_length() -> None:
    """Plain ints, negative ints and `__index__` objects read the view; nothing past the length
    it had when taken is reachable, even after the list grew."""
    items = ["a", "b", "c"]
    view = HistoryView(items)
    items.append("d")
    by_index = (view[_Index(1)], view[_Index(-3)])  # type: ignore[call-overload]
    assert (view[0], view[-1], *by_index) == ("a", "c", "b", "a")
    with pytest.raises(IndexError):
        view[3]
    with pytest.raises(IndexError):
        view[_Index(3)]  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        view["0"]  # type: ignore[call-overload]


def test_snapshots_share_a_view_until_its_history_grows() -> None:
    """A snapshot reuses its predecessor's view of a history that has not grown since."""
    run = _run(FakeClock())
    session = run.new_session()
    first, second = session.snapshot(), session.snapshot()
    assert first.messages is second.messages
    assert first.check_reasons is second.check_reasons
    session.inject("test", "more")
    run.check_reasons.append("again")
    third = session.snapshot()
    assert third.messages is not second.messages
    assert len(third.messages) == len(second.messages) + 1
    assert list(third.check_reasons) == ["not yet", "again"]
    assert list(second.check_reasons) == ["not yet"]


@pytest.mark.anyio
async def test_the_run_reads_the_event_loop_clock_directly() -> None:
    """A run on the system clock reads the loop's own time; any other clock is read as is."""
    read = time_reader(SystemClock())
    first = anyio.current_time()
    assert first <= read() <= anyio.current_time()
    fake = FakeClock(start=9.0)
    assert time_reader(fake)() == 9.0
    fake.advance(1.0)
    assert time_reader(fake)() == 10.0


def test_outside_an_event_loop_the_system_clock_is_read_as_it_is() -> None:
    """Without a running loop there is no backend to resolve, so the clock's own method is used."""
    clock = SystemClock()
    assert time_reader(clock) == clock.now


@pytest.mark.anyio
async def test_an_inline_tool_that_overruns_its_timeout_still_returns_its_result() -> None:
    """An inline sync tool has no checkpoint a deadline could cut; its result is kept."""
    clock = FakeClock()

    @tool(inline=True, timeout=1.0)
    def slow() -> str:
        """Take longer than the timeout, without yielding."""
        clock.advance(5.0)
        return "finished"

    sink = ListSink()
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "slow", "arguments": {}}]}, {"text": "done"}]
    )
    harness = Harness(
        model=model, policy=TerminationPolicy(), tools=[slow], clock=clock, sinks=[sink]
    )
    result = await harness.run("overrun")
    assert result.verified
    (called,) = sink.of_type(ToolCalled)
    assert isinstance(called, ToolCalled)
    assert (called.content, called.is_error) == ("finished", False)


class _CountingSession:
    """A policy session that counts tool-call checks, with or without `gates_tool_calls`, and
    keeps the snapshots it is handed."""

    def __init__(self, inner: Any, gates: bool | None) -> None:
        self._inner = inner
        self.asked = 0
        self.before: list[Any] = []
        self.gated: list[tuple[Any, int]] = []
        if gates is not None:
            self.gates_tool_calls = gates

    def before_call(self, snapshot: Any) -> Any:
        self.before.append(snapshot)
        return self._inner.before_call(snapshot)

    def before_tool_call(self, snapshot: Any, *, pending: int = 0) -> Any:
        self.asked += 1
        self.gated.append((snapshot, pending))
        return self._inner.before_tool_call(snapshot, pending=pending)

    async def after_turn(self, snapshot: Any, *, run_check: bool) -> Any:
        return await self._inner.after_turn(snapshot, run_check=run_check)

    async def check(self, snapshot: Any) -> str | None:
        result: str | None = await self._inner.check(snapshot)
        return result


@pytest.mark.anyio
@pytest.mark.parametrize(("gates", "asked"), [(None, 1), (True, 1), (False, 0)])
async def test_the_loop_skips_tool_call_checks_only_when_told_they_never_halt(
    gates: bool | None, asked: int
) -> None:
    """Without `gates_tool_calls = False` the policy is asked before every tool call but the
    first of a batch, which `before_call` admitted on the same snapshot."""

    @tool(inline=True)
    def ping() -> str:
        """Answer."""
        return "pong"

    clock = FakeClock()
    run = _run(clock)
    run.tools = {"ping": ping}
    run.model = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}]},
            {"text": "done"},
        ]
    )
    inner = TerminationPolicy().start_session(clock=clock)
    counting = _CountingSession(inner, gates)
    end = await run.new_session(policy=counting).run()
    assert end.reason is not None
    assert end.reason.verified
    assert counting.asked == asked
    assert end.snapshot.tool_calls == 2
    # Each further call of the batch is judged on the snapshot the turn started from, with the
    # calls admitted before it as `pending`: no snapshot is taken between response and tools.
    first_turn = counting.before[0]
    assert counting.gated == [(first_turn, 1)][:asked]


@pytest.mark.anyio
async def test_a_turn_that_ends_with_nothing_to_apply_hands_its_snapshot_to_the_next() -> None:
    """The snapshot judged after a quiet turn is the one the next turn's budget check gets."""

    @tool(inline=True)
    def ping(n: int) -> str:
        """Answer."""
        return "pong"

    clock = FakeClock()
    run = _run(clock)
    run.tools = {"ping": ping}
    run.model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "ping", "arguments": {"n": i}}]} for i in range(3)]
        + [{"text": "done"}]
    )
    counting = _CountingSession(TerminationPolicy().start_session(clock=clock), None)
    after: list[Any] = []
    inner_after = counting.after_turn

    async def recording(snapshot: Any, *, run_check: bool) -> Any:
        after.append(snapshot)
        return await inner_after(snapshot, run_check=run_check)

    counting.after_turn = recording  # type: ignore[method-assign]
    end = await run.new_session(policy=counting).run()
    assert end.reason is not None
    assert end.reason.verified
    assert len(counting.before) == 4
    assert counting.before[1:] == after[:3]
    assert all(b is a for b, a in zip(counting.before[1:], after, strict=False))


def test_a_fake_or_custom_clock_is_read_as_it_is() -> None:
    """Only the system clock is resolved for the running loop; any other clock is kept."""
    fake = FakeClock()
    assert for_this_loop(fake) is fake
    system = SystemClock()
    assert for_this_loop(system) is system  # no event loop runs here


@pytest.mark.anyio
async def test_the_loop_clock_reads_and_cancels_as_the_system_clock_does() -> None:
    """Resolved once for the running loop, it reads the loop's time and its deadline scopes
    cancel exactly as `anyio.CancelScope(deadline=...)` would."""
    clock = for_this_loop(SystemClock())
    assert isinstance(clock, LoopClock)
    assert repr(clock) == "LoopClock()"
    assert time_reader(clock) == clock.now
    first = anyio.current_time()
    assert first <= clock.now() <= anyio.current_time()
    with clock.deadline_scope(clock.now() - 1.0) as scope:
        await clock.sleep(60)
    assert scope.cancelled_caught
    with clock.deadline_scope(clock.now() + 60) as scope:
        await anyio.lowlevel.checkpoint()
    assert not scope.cancelled_caught


@pytest.mark.parametrize(
    ("budget", "limit", "gates"),
    [
        (Budget(max_turns=3, max_total_tokens=100), None, False),
        (Budget(max_tool_calls=3), None, True),
        (Budget(max_wall_time=3.0), None, False),
        (Budget(), Budget(max_turns=2), False),
        (Budget(), Budget(max_tool_calls=2), True),
    ],
)
def test_a_policy_session_gates_tool_calls_only_with_a_limit_that_can(
    budget: Budget, limit: Budget | None, gates: bool
) -> None:
    """Tool calls are gated by a tool-call limit, the run's or the session's, and only by one:
    wall time is a deadline scope and the check after the turn."""
    session = TerminationPolicy(budget=budget).start_session(clock=FakeClock(), limit=limit)
    assert session.gates_tool_calls is gates


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(_json)
def test_a_tool_result_renders_exactly_as_json_dumps_would(value: object) -> None:
    """The cached encoder and the int shortcut write what `json.dumps` with these options did."""
    if isinstance(value, str):
        expected = value
    elif value is None:
        expected = "ok"
    else:
        expected = json.dumps(value, ensure_ascii=False, default=str)
    assert render_result(value) == expected


class _Logger:
    """A structlog-like logger whose level can change while a run goes on."""

    def __init__(self) -> None:
        self.level = logging.INFO
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def bind(self, **_: Any) -> _Logger:
        return self

    def is_enabled_for(self, level: int) -> bool:
        return level >= self.level

    def debug(self, name: str, **fields: Any) -> None:
        self.lines.append(("debug", name, fields))

    def info(self, name: str, **fields: Any) -> None:
        self.lines.append(("info", name, fields))


def test_the_structlog_sink_asks_the_logger_for_every_debug_event() -> None:
    """Debug events below the logger's level are dropped, and a level lowered mid-run is
    honoured from the next event on."""
    logger = _Logger()
    sink = StructlogSink("run-1", logger)
    event: Event = TurnStarted(0.5, "builder", 1, 2)
    sink.emit(event)
    assert logger.lines == []
    logger.level = logging.DEBUG
    sink.emit(event)
    assert logger.lines == [
        (
            "debug",
            "turn.started",
            {"run_id": "run-1", "at": 0.5, "agent": "builder", "iteration": 1, "turn": 2},
        )
    ]


@pytest.mark.parametrize(("level", "logged"), [(logging.INFO, False), (logging.DEBUG, True)])
def test_a_structlog_filtering_logger_is_asked_its_level_once(level: int, logged: bool) -> None:
    """structlog's filtering loggers fix their level in their class, so the sink asks once;
    debug events are logged exactly when that level allows them, info events always."""
    capture = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(
        capture, wrapper_class=structlog.make_filtering_bound_logger(level), processors=[]
    )
    sink = StructlogSink("run-1", logger)
    sink.emit(TurnStarted(0.5, "builder", 1, 2))
    sink.emit(CheckFailed(0.6, "builder", 2, "tests pass", "one fails"))
    names = [call.args[0] if call.args else call.kwargs["event"] for call in capture.calls]
    assert names == (["turn.started"] if logged else []) + ["check.failed"]


class _InfoOnly:
    """A sink that says it never takes debug events."""

    takes_debug = False

    def __init__(self) -> None:
        self.names: list[str] = []

    def emit(self, event: Event) -> None:
        self.names.append(event.name)


@pytest.mark.anyio
async def test_a_sink_that_takes_no_debug_events_is_handed_none() -> None:
    """Debug events skip a sink that says it drops them; every other sink gets all events,
    and the events that sink does take arrive in order."""
    quiet, everything = _InfoOnly(), ListSink()
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "ping", "arguments": {}}]}, {"text": "done"}]
    )

    @tool(inline=True)
    def ping() -> str:
        """Answer."""
        return "pong"

    harness = Harness(model=model, policy=TerminationPolicy(), tools=[ping], sinks=[quiet])
    await harness.run("ping once", sinks=[everything])
    debug = {e.name for e in everything.events if e.level == "debug"}
    assert {"turn.started", "turn.finished", "tool.called"} <= debug
    assert quiet.names == [e.name for e in everything.events if e.level != "debug"]
    assert quiet.names[-1] == "run.halted"


def test_resolving_the_clock_for_a_loop_keeps_no_loop_alive() -> None:
    """The runs on one stock asyncio loop share its LoopClock, which holds nothing of the loop:
    a program that calls asyncio.run again and again leaks no loops through it."""
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        clock = for_this_loop(SystemClock())
        assert isinstance(clock, LoopClock)
        assert for_this_loop(SystemClock()) is clock  # every run on this loop shares it

    for _ in range(3):
        asyncio.run(main())
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]


class _NoWeakrefs:
    """A cache that refuses its keys, as a WeakKeyDictionary does a loop without weakrefs."""

    def get(self, key: object) -> None:
        raise TypeError(f"cannot create weak reference to {type(key).__name__!r} object")

    def __setitem__(self, key: object, value: object) -> None:
        raise TypeError(f"cannot create weak reference to {type(key).__name__!r} object")


def test_a_loop_that_cannot_be_weakly_referenced_still_gets_a_loop_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loop the per-loop cache cannot hold (uvloop's, say) is resolved on every run instead."""
    monkeypatch.setattr("harness._clock._LOOP_CLOCKS", _NoWeakrefs())

    async def main() -> bool:
        clock = for_this_loop(SystemClock())
        assert isinstance(clock, LoopClock)
        with clock.deadline_scope(clock.now() - 1.0) as scope:
            await clock.sleep(60)
        return scope.cancelled_caught

    assert asyncio.run(main())


def test_a_loop_with_its_own_time_is_read_through_it() -> None:
    """The stock asyncio loop's time is time.monotonic(), read directly; a loop that keeps its
    own time (a test loop, say) is read through its time()."""

    class Shifted(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return super().time() + 1000.0

    async def offset() -> float:
        return for_this_loop(SystemClock()).now() - time.monotonic()

    async def per_run() -> bool:
        return for_this_loop(SystemClock()) is not for_this_loop(SystemClock())

    assert abs(asyncio.run(offset())) < 1.0
    loop = Shifted()
    try:
        assert loop.run_until_complete(offset()) > 999.0
        # Its clock holds the loop, so it is not kept in the per-loop cache: one per run.
        assert loop.run_until_complete(per_run())
        assert loop not in _LOOP_CLOCKS
    finally:
        loop.close()


def test_on_trio_the_loop_clock_reads_the_runs_own_clock() -> None:
    """Under trio the run's clock (here a frozen MockClock) is what a LoopClock reads."""
    mock = trio.testing.MockClock()
    mock.jump(500.0)

    async def read() -> tuple[float, float]:
        return for_this_loop(SystemClock()).now(), trio.current_time()

    now, reference = trio.run(read, clock=mock)
    assert now == reference == 500.0


class _UsageRecorder:
    """A sensor that writes down each snapshot's session and run usage."""

    name = "usage_recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[int, Usage, Usage]] = []

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        self.seen.append((snapshot.iteration, snapshot.usage, snapshot.run_usage))
        return SensorReading.ok()


class _PassesOnSecondLook:
    """A completion check that rejects the first claim and accepts the next."""

    def __init__(self) -> None:
        self.looks = 0

    def description(self) -> str:
        return "the second claim passes"

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.looks += 1
        return "not yet" if self.looks == 1 else None


@pytest.mark.anyio
async def test_session_and_run_usage_stay_apart_across_iterations() -> None:
    """The run's total is shared with its only session while there is one, and is summed
    separately once a second session starts (Ralph's next iteration)."""
    recorder = _UsageRecorder()
    model = ScriptedModelClient.from_responses(
        [
            {"text": "done?", "usage": {"input_tokens": 10, "output_tokens": 1, "cost_usd": 0.5}},
            {"text": "done!", "usage": {"input_tokens": 20, "output_tokens": 2, "cost_usd": 0.25}},
        ]
    )
    policy = TerminationPolicy(sensors=[recorder], completion_check=_PassesOnSecondLook())
    harness = Harness(model=model, policy=policy, strategy=Ralph(max_iterations=3))
    result = await harness.run("work")
    assert result.halt_reason == Completed()
    assert recorder.seen == [
        (1, Usage(10, 1, 0, 0.5), Usage(10, 1, 0, 0.5)),
        (2, Usage(20, 2, 0, 0.25), Usage(30, 3, 0, 0.75)),
    ]
    assert result.usage == Usage(30, 3, 0, 0.75)
