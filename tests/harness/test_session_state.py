"""Sessions and their snapshots: what a sensor, a check and a sink see of a run in progress."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
import structlog.testing
from attrs import fields
from hypothesis import given
from hypothesis import strategies as st

from harness import (
    CheckFailed,
    Completed,
    Event,
    Harness,
    ScriptedModelClient,
    SessionStateSnapshot,
    StructlogSink,
    Tool,
    ToolCall,
    ToolCalled,
    ToolContext,
    ToolResult,
    TurnStarted,
    Usage,
    tool,
)
from harness._loop._run import Run
from harness._state import HistoryView
from harness._tools._base import render_result
from harness.checkpoints import Assessment
from harness.extend import RunConfig, SensorReading, SessionStore
from harness.testing import FakeClock, ListSink
from strategies import Ralph
from termination import Budget, TerminationPolicy


def _run(clock: FakeClock) -> Run:
    store = SessionStore()
    store.put("a note")
    return Run(
        run_id="run-1",
        task="the task",
        config=RunConfig(
            model=ScriptedModelClient([]),
            tools={},
            policy=TerminationPolicy(),
            clock=clock,
            workspace=Path("/work/space"),
            context_window=8_000,
        ),
        sinks=[],
        started_at=1.0,
        deadline=500.0,
        turns=11,
        tool_calls=12,
        usage=Usage(1, 2),
        check_reasons=["not yet"],
        store=store,
        tampered_claims=2,
    )


def test_a_snapshot_puts_every_value_in_its_own_field() -> None:
    """A session's snapshot holds the run's and the session's values, each in its own field."""
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
        "tampering": (),
        "tampered_claims": 2,
        "measure_whole": False,
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


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(_json)
def test_a_tool_result_renders_exactly_as_json_dumps_would(value: object) -> None:
    """A tool's return value reaches the model as its JSON text (a string as it is, None as ok)."""
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
        self.bound: dict[str, Any] = {}
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def bind(self, **values: Any) -> _Logger:
        self.bound.update(values)
        return self

    def is_enabled_for(self, level: int) -> bool:
        return level >= self.level

    def debug(self, name: str, **fields: Any) -> None:
        self.lines.append(("debug", name, {**self.bound, **fields}))

    def info(self, name: str, **fields: Any) -> None:
        self.lines.append(("info", name, {**self.bound, **fields}))


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
def test_a_structlog_filtering_logger_logs_debug_events_only_at_debug(
    level: int, logged: bool
) -> None:
    """With structlog's filtering loggers, debug events are logged exactly when the level
    allows them, info events always."""
    capture = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(
        capture, wrapper_class=structlog.make_filtering_bound_logger(level), processors=[]
    )
    sink = StructlogSink("run-1", logger)
    sink.emit(TurnStarted(0.5, "builder", 1, 2))
    sink.emit(CheckFailed(0.6, "builder", 2, "tests pass", "one fails"))
    names = [call.args[0] if call.args else call.kwargs["event"] for call in capture.calls]
    assert names == (["turn.started"] if logged else []) + ["check.failed"]


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
    """A snapshot's usage is its own session's; its run usage sums every session so far."""
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


class _AdmissionLog:
    """A policy session that writes down every tool-call admission it is asked for."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.admissions: list[tuple[int, int]] = []

    def before_call(self, snapshot: SessionStateSnapshot) -> Any:
        return self._inner.before_call(snapshot)

    def before_tool_call(self, snapshot: SessionStateSnapshot, *, pending: int = 0) -> Any:
        self.admissions.append((snapshot.tool_calls, pending))
        return self._inner.before_tool_call(snapshot, pending=pending)

    async def after_turn(self, snapshot: SessionStateSnapshot, *, run_check: bool) -> Any:
        return await self._inner.after_turn(snapshot, run_check=run_check)

    async def check(self, snapshot: SessionStateSnapshot) -> str | None:
        reason: str | None = await self._inner.check(snapshot)
        return reason

    async def assess(self, snapshot: SessionStateSnapshot) -> Assessment:
        assessed: Assessment = await self._inner.assess(snapshot)
        return assessed


@pytest.mark.anyio
async def test_every_tool_call_is_admitted_against_the_state_before_its_turn() -> None:
    """Each call of a turn is asked about once, with the turn's starting counts and the calls
    admitted before it as pending; the call the budget refuses and the rest are not run."""

    @tool(inline=True)
    def ping(n: int) -> int:
        """Echo."""
        return n

    calls = [{"name": "ping", "arguments": {"n": n}} for n in range(3)]
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": calls[:1]}, {"tool_calls": calls}, {"text": "done"}]
    )
    policy = TerminationPolicy(budget=Budget(max_tool_calls=3))
    run = Run(
        run_id="r",
        task="ping",
        config=RunConfig(model=model, tools={"ping": ping}, policy=policy, clock=FakeClock()),
        sinks=[],
    )
    log = _AdmissionLog(policy.start_session(clock=run.clock))
    end = await run.new_session(policy=log).run()
    assert end.reason is not None
    assert end.reason.to_dict()["limit"] == "max_tool_calls"
    assert log.admissions == [(0, 0), (1, 0), (1, 1), (1, 2)]
    outcomes = [(o.content, o.is_error) for o in end.snapshot.tool_outcomes]
    assert outcomes == [
        ("0", False),
        ("0", False),
        ("1", False),
        ("not run: the tool-call budget is exhausted", True),
    ]


@pytest.mark.anyio
async def test_a_tool_call_never_raises_for_the_tool_s_own_failures() -> None:
    """A bad argument, an exception and a timeout each come back as an error result, on every
    kind of tool (inline, threaded, async)."""
    clock = FakeClock()

    def boom(n: int) -> int:
        """Fail."""
        raise RuntimeError(f"broke on {n}")

    async def hang(n: int) -> int:
        """Never finish."""
        await clock.sleep(60)
        return n

    context = ToolContext(None, SessionStore(), clock, ToolCall("c", "t", {}), "builder")
    for kind in (Tool.from_function(boom, inline=True), Tool.from_function(boom)):
        bad = await kind.call({"n": "x"}, context, time_limit=5)
        assert bad.is_error
        assert "argument 'n' must be integer" in bad.content
        raised = await kind.call({"n": 1}, context, time_limit=5)
        assert raised == ToolResult("error: RuntimeError: broke on 1", is_error=True)
    late = await Tool.from_function(hang).call({"n": 1}, context, time_limit=5)
    assert late == ToolResult("error: tool 'hang' timed out after 5s", is_error=True)
    assert clock.now() == 5
