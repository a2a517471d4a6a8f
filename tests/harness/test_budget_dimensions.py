"""Budgets come first, unconditionally: every dimension is checked with `>=` before the call that
would exceed it and accounted after, and exhaustion halts unverified without running the check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import (
    BudgetExceeded,
    ConfigurationError,
    FixtureUnconsumed,
    Harness,
    RunHalted,
    ScriptedModelClient,
    SessionStateSnapshot,
    ToolCall,
    Usage,
    tool,
)
from harness.extend import ModelRequest, ModelResponse
from harness.testing import FakeClock, ListSink
from termination import Budget, TerminationPolicy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "loop"


class RecordingCheck:
    """A completion check that passes and counts how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls += 1
        return None

    def description(self) -> str:
        return "Done when the agent says so (and this check is asked)."


def noop() -> str:
    """Does nothing."""
    return "ok"


def work_line(**usage: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "noop", "arguments": {}}], "usage": usage}


def done_line(**usage: Any) -> dict[str, Any]:
    return {"text": "done", "usage": usage}


async def run_with(
    budget: Budget, rows: Sequence[Mapping[str, Any]], clock: FakeClock | None = None
) -> tuple[BudgetExceeded, RecordingCheck, ScriptedModelClient, Any]:
    check = RecordingCheck()
    model = ScriptedModelClient.from_responses(rows)
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=budget, completion_check=check),
        tools=[noop],
        clock=clock or FakeClock(),
    )
    result = await harness.run("spend")
    assert isinstance(result.halt_reason, BudgetExceeded)
    assert not result.verified
    assert model.remaining == 0
    return result.halt_reason, check, model, result


@pytest.mark.anyio
async def test_max_turns_allows_exactly_that_many_model_calls() -> None:
    """max_turns=3 allows exactly 3 model calls; a claim on the last one is not checked."""
    rows = [work_line(), work_line(), done_line()]
    halt, check, model, result = await run_with(Budget(max_turns=3), rows)
    assert halt == BudgetExceeded("max_turns", 3, 3)
    assert halt.describe() == "budget exceeded: max_turns used 3 of 3"
    assert len(model.requests) == 3
    assert result.turns == 3
    assert check.calls == 0


@pytest.mark.anyio
async def test_max_turns_refuses_a_fourth_call_in_a_jsonl_fixture() -> None:
    """A fourth scripted line is never asked for: the run ends with it unconsumed."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "four_turns.jsonl")
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_turns=3)),
        tools=[noop],
        clock=FakeClock(),
    )
    with pytest.raises(FixtureUnconsumed) as caught:
        await harness.run("spend")
    assert caught.value.line == 6
    assert caught.value.result is not None
    assert caught.value.result.halt_reason == BudgetExceeded("max_turns", 3, 3)


@pytest.mark.anyio
async def test_a_claim_within_the_turn_budget_is_checked() -> None:
    """Below the limit, a claim of done runs the check, which completes the run."""
    check = RecordingCheck()
    model = ScriptedModelClient.from_responses([work_line(), done_line()])
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_turns=3), completion_check=check),
        tools=[noop],
        clock=FakeClock(),
    )
    result = await harness.run("spend")
    assert result.verified
    assert check.calls == 1


@pytest.mark.anyio
async def test_max_tool_calls_gates_each_tool_call() -> None:
    """With two tool calls allowed, a third in the batch is refused as a result; the run halts."""
    ran: list[int] = []

    def tick(n: int) -> str:
        """Count."""
        ran.append(n)
        return str(n)

    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "tick", "arguments": {"n": i}} for i in range(3)]}]
    )
    sink = ListSink()
    check = RecordingCheck()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_tool_calls=2), completion_check=check),
        tools=[tick],
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("tick")
    assert result.halt_reason == BudgetExceeded("max_tool_calls", 2, 2)
    assert sorted(ran) == [0, 1]
    assert result.tool_calls == 2
    refused = [m for m in result.transcript if m.role == "tool"][-1]
    assert refused.content == "not run: the tool-call budget is exhausted"
    assert refused.is_error
    assert check.calls == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("budget", "usages", "expected"),
    [
        pytest.param(
            Budget(max_input_tokens=100),
            [{"input_tokens": 60}, {"input_tokens": 50}],
            BudgetExceeded("max_input_tokens", 110, 100),
            id="input-tokens",
        ),
        pytest.param(
            Budget(max_input_tokens=100),
            [{"input_tokens": 60}, {"input_tokens": 40}],
            BudgetExceeded("max_input_tokens", 100, 100),
            id="input-tokens-boundary",
        ),
        pytest.param(
            Budget(max_output_tokens=30),
            [{"output_tokens": 10}, {"output_tokens": 20}],
            BudgetExceeded("max_output_tokens", 30, 30),
            id="output-tokens",
        ),
        pytest.param(
            Budget(max_total_tokens=100),
            [{"input_tokens": 40, "output_tokens": 10}, {"input_tokens": 45, "output_tokens": 5}],
            BudgetExceeded("max_total_tokens", 100, 100),
            id="total-tokens",
        ),
        pytest.param(
            Budget(max_cost_usd=0.5),
            [{"cost_usd": 0.25}, {"cost_usd": 0.25}],
            BudgetExceeded("max_cost_usd", 0.5, 0.5),
            id="cost",
        ),
    ],
)
async def test_usage_dimensions_halt_after_the_call_that_used_them_up(
    budget: Budget, usages: list[dict[str, Any]], expected: BudgetExceeded
) -> None:
    """The call that reaches a token or cost limit is accounted, then the run halts at once with
    the limit, its value and the amount used; the claim on that turn is not checked."""
    usages = [{"cost_usd": 0.0, **u} for u in usages]
    rows = [work_line(**usages[0]), done_line(**usages[1])]
    halt, check, model, _ = await run_with(budget, rows)
    assert halt == expected
    assert len(model.requests) == 2
    assert check.calls == 0


@pytest.mark.anyio
async def test_a_token_budget_used_up_before_a_call_refuses_that_call() -> None:
    """Usage reaching the limit on a tool turn stops the run before the next model call."""
    rows = [work_line(output_tokens=30)]
    halt, _, model, _ = await run_with(Budget(max_output_tokens=30), rows)
    assert halt == BudgetExceeded("max_output_tokens", 30, 30)
    assert len(model.requests) == 1


@pytest.mark.anyio
async def test_max_wall_time_halts_with_the_time_used() -> None:
    """Model calls that take 25s each on the clock: the third is cut off at 60s exactly."""
    clock = FakeClock()
    rows = [
        {**work_line(), "delay": 25},
        {**work_line(), "delay": 25},
        {**done_line(), "delay": 25},
    ]
    halt, check, model, result = await run_with(Budget(max_wall_time=60), rows, clock)
    assert halt == BudgetExceeded("max_wall_time", 60, 60)
    assert len(model.requests) == 3
    assert result.elapsed == 60
    assert clock.now() == 60
    assert check.calls == 0


@pytest.mark.anyio
async def test_max_wall_time_is_checked_before_the_next_call() -> None:
    """Time used up by a tool (without a checkpoint in between) stops the run before the call."""
    clock = FakeClock()

    def burn() -> str:
        """Uses all the time there is."""
        clock.advance(60)
        return "burnt"

    burner = tool(inline=True)(burn)
    model = ScriptedModelClient.from_responses([{"tool_calls": [{"name": "burn"}]}])
    check = RecordingCheck()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_wall_time=60), completion_check=check),
        tools=[burner],
        clock=clock,
    )
    result = await harness.run("burn")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 60, 60)
    assert len(model.requests) == 1
    assert check.calls == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_turns": 0}, "'max_turns' must be a positive int (got 0)"),
        ({"max_turns": 2.5}, "'max_turns' must be a positive int (got 2.5)"),
        ({"max_tool_calls": True}, "'max_tool_calls' must be a positive int (got True)"),
        ({"max_input_tokens": -1}, "'max_input_tokens' must be a positive int (got -1)"),
        ({"max_total_tokens": "9"}, "'max_total_tokens' must be a positive int (got '9')"),
        ({"max_cost_usd": 0}, "'max_cost_usd' must be a positive number (got 0)"),
        ({"max_wall_time": -5.0}, "'max_wall_time' must be a positive number (got -5.0)"),
    ],
)
def test_bad_budget_values_are_configuration_errors(kwargs: dict[str, Any], message: str) -> None:
    """A budget value that is not positive (or not a number of the right kind) is refused."""
    with pytest.raises(ConfigurationError) as caught:
        Budget(**kwargs)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_a_cost_budget_with_unknown_prices_is_refused_up_front() -> None:
    """A fixture line with no cost makes the model's prices unknown; a cost budget refuses it."""
    model = ScriptedModelClient.from_responses([{"text": "x", "usage": {"input_tokens": 1}}])
    with pytest.raises(ConfigurationError, match="max_cost_usd but the model's prices are unknown"):
        Harness(model=model, policy=TerminationPolicy(budget=Budget(max_cost_usd=1.0)))


class UnpricedModel:
    """Claims nothing about its prices, then reports a call without a cost."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse("hi", usage=Usage(5, 5, 0, None))


@pytest.mark.anyio
async def test_an_unpriced_call_under_a_cost_budget_is_a_configuration_error() -> None:
    """A call that reports no price while a cost budget is set is never counted as free."""
    harness = Harness(
        model=UnpricedModel(),
        policy=TerminationPolicy(budget=Budget(max_cost_usd=1.0)),
        clock=FakeClock(),
    )
    with pytest.raises(ConfigurationError, match="reported no price"):
        await harness.run("hi")


# --- properties -------------------------------------------------------------------------------


def snapshot(turns: int, calls: int, usage: Usage, elapsed: float) -> SessionStateSnapshot:
    return SessionStateSnapshot.standalone(
        now=elapsed,
        started_at=0.0,
        session_started_at=0.0,
        turns=turns,
        tool_calls=calls,
        usage=usage,
        run_turns=turns,
        run_tool_calls=calls,
        run_usage=usage,
    )


small = st.integers(min_value=0, max_value=50)
limit = st.none() | st.integers(min_value=1, max_value=50)
budgets = st.builds(
    Budget,
    max_turns=limit,
    max_tool_calls=limit,
    max_input_tokens=limit,
    max_output_tokens=limit,
    max_total_tokens=limit,
    max_cost_usd=st.none() | st.integers(min_value=1, max_value=50).map(float),
    max_wall_time=st.none() | st.integers(min_value=1, max_value=50).map(float),
)
usage_points = st.tuples(small, small, small, small, small, small)


def point(values: tuple[int, int, int, int, int, int]) -> SessionStateSnapshot:
    turns, calls, tokens_in, tokens_out, cost, elapsed = values
    return snapshot(turns, calls, Usage(tokens_in, tokens_out, 0, float(cost)), float(elapsed))


@given(budgets, usage_points, usage_points)
def test_exceeded_is_monotone_in_usage(
    budget: Budget, low: tuple[int, ...], extra: tuple[int, ...]
) -> None:
    """Using more of every dimension never un-exhausts a budget."""
    higher = tuple(a + b for a, b in zip(low, extra, strict=True))
    before = point(low)  # type: ignore[arg-type]
    after = point(higher)  # type: ignore[arg-type]
    if budget.exceeded(before) is not None:
        assert budget.exceeded(after) is not None


@given(budgets, usage_points)
def test_exceeded_is_exactly_used_at_or_over_a_limit(
    budget: Budget, values: tuple[int, ...]
) -> None:
    """A budget is exhausted exactly when some dimension's use is >= its limit; the halt names
    that dimension with the amount used and the limit."""
    state = point(values)  # type: ignore[arg-type]
    used = {
        "max_turns": state.run_turns,
        "max_tool_calls": state.run_tool_calls,
        "max_input_tokens": state.run_usage.input_tokens,
        "max_output_tokens": state.run_usage.output_tokens,
        "max_total_tokens": state.run_usage.total_tokens,
        "max_cost_usd": state.run_usage.cost_usd,
        "max_wall_time": state.elapsed,
    }
    over = {
        name
        for name, amount in used.items()
        if getattr(budget, name) is not None
        and amount is not None
        and amount >= getattr(budget, name)
    }
    halt = budget.exceeded(state)
    if not over:
        assert halt is None
    else:
        assert halt is not None
        assert halt.limit in over
        assert halt.used == used[halt.limit]
        assert halt.limit_value == getattr(budget, halt.limit)


class LoopingModel:
    """Answers every call with the next response of a cycle (never runs out)."""

    def __init__(self, responses: Sequence[ModelResponse]) -> None:
        self._responses = list(responses)
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = self._responses[self.calls % len(self._responses)]
        self.calls += 1
        return response


class NeverDone:
    async def check(self, state: SessionStateSnapshot) -> str | None:
        return "not yet"

    def description(self) -> str:
        return "Never done."


@settings(max_examples=40, deadline=None)
@given(
    max_turns=st.integers(min_value=1, max_value=8),
    pattern=st.lists(st.booleans(), min_size=1, max_size=4),
    tokens=st.integers(min_value=0, max_value=20),
)
def test_once_halted_a_run_stays_halted(max_turns: int, pattern: list[bool], tokens: int) -> None:
    """Whatever the agent does, a run under a turn budget makes exactly max_turns calls, emits
    `run.halted` once as its last event, and its budget stays exhausted from then on."""
    responses = [
        ModelResponse(
            "" if uses_tool else "claim",
            (ToolCall("c", "noop", {}),) if uses_tool else (),
            Usage(tokens, tokens, 0, 0.0),
        )
        for uses_tool in pattern
    ]
    budget = Budget(max_turns=max_turns)

    async def main() -> None:
        model = LoopingModel(responses)
        sink = ListSink()
        harness = Harness(
            model=model,
            policy=TerminationPolicy(
                budget=budget, completion_check=NeverDone(), max_rejections=None
            ),
            tools=[noop],
            clock=FakeClock(),
            sinks=[sink],
        )
        result = await harness.run("loop")
        assert result.halt_reason == BudgetExceeded("max_turns", max_turns, max_turns)
        assert model.calls == max_turns
        assert [e.name for e in sink.events].count("run.halted") == 1
        assert isinstance(sink.events[-1], RunHalted)
        final = snapshot(result.turns, result.tool_calls, result.usage, result.elapsed)
        for more in range(3):
            later = snapshot(result.turns + more, result.tool_calls, result.usage, result.elapsed)
            assert budget.exceeded(later) == BudgetExceeded(
                "max_turns", max_turns + more, max_turns
            )
        assert budget.exceeded(final) is not None

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)
