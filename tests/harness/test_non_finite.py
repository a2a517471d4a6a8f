"""Numbers from outside that are not finite (issue 41 item 9): a model's NaN cost halts the run
typed, JSON output never carries ``NaN`` or ``Infinity``, and a structured line nested deeper
than the JSON parser goes is no usage limit rather than a `RecursionError`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import Harness, ModelFailed, Usage
from harness.extend import ModelRequest, ModelResponse, dump_json, find_usage_limit
from harness.testing import FakeClock
from termination import Budget, TerminationPolicy


class Costs:
    """A model whose every answer reports the next of `costs` (a provider's own figure)."""

    def __init__(self, *costs: float) -> None:
        self._costs = list(costs)
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        cost = self._costs[min(self.calls, len(self._costs) - 1)]
        self.calls += 1
        return ModelResponse(text="working", usage=Usage(10, 5, 0, cost), model="m")


class Never:
    async def check(self, state: Any) -> str | None:
        return "not yet"

    def description(self) -> str:
        return "never"


@pytest.mark.anyio
@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -0.5])
@pytest.mark.parametrize("budget", [Budget(max_turns=5, max_cost_usd=1.0), Budget(max_turns=5)])
async def test_a_cost_that_is_not_a_finite_amount_halts_the_run_typed(
    cost: float, budget: Budget
) -> None:
    """NaN never tripped ``max_cost_usd`` (``nan >= 1.0`` is false): all five turns ran. A
    cost that is not a finite number >= 0 is refused at the call that reported it."""
    model = Costs(0.01, cost, 0.01)
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=budget, completion_check=Never()),
        clock=FakeClock(),
    )
    result = await harness.run("x")
    halt = result.halt_reason
    assert isinstance(halt, ModelFailed), halt
    assert halt.kind == "malformed"
    assert "not a finite number >= 0" in halt.message
    assert model.calls == 2
    assert result.usage.cost_usd == pytest.approx(0.01)


def test_json_output_writes_a_non_finite_float_as_null() -> None:
    """``json.dumps`` writes ``NaN``, which no JSON reader but Python's takes."""
    text = dump_json({"a": float("nan"), "b": [1.5, float("inf")], "c": (float("-inf"),)})
    assert json.loads(text) == {"a": None, "b": [1.5, None], "c": [None]}


@pytest.mark.parametrize("marker", ["rate_limit_event", "usage_limit_reached"])
def test_a_structured_line_nested_too_deeply_is_no_limit_and_no_crash(marker: str) -> None:
    """An agent's own output can hold such a line; the docstring says "Never raises"."""
    deep = '{"type": "' + marker + '", "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    assert find_usage_limit(f"some answer\n{deep}\nmore", words=False) is None
    if marker == "rate_limit_event":  # Codex's marker in words is its limit, read as such
        assert find_usage_limit(f"some answer\n{deep}\nmore") is None
