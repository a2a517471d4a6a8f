"""A run whose policy sets no budget is bounded only by the agent, the check and the
strategy: the harness logs one `run.unbounded` warning, the first time it runs."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from harness import Harness, ModelRequest, ModelResponse
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio


class _Done:
    """A model that claims done at once, as often as it is asked."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="done")


def _model() -> _Done:
    return _Done()


async def test_an_unbounded_harness_warns_once() -> None:
    """Two runs of one harness without a budget: one warning, naming what to set."""
    harness = Harness(model=_model(), policy=TerminationPolicy())
    with capture_logs() as logs:
        await harness.run("a")
        await harness.run("b")
    warnings = [log for log in logs if log["event"] == "run.unbounded"]
    assert len(warnings) == 1
    assert warnings[0]["log_level"] == "warning"
    assert "max_turns" in warnings[0]["message"]


async def test_a_budget_of_any_kind_silences_it() -> None:
    harness = Harness(model=_model(), policy=TerminationPolicy(budget=Budget(max_wall_time=60)))
    with capture_logs() as logs:
        await harness.run("a")
        await harness.run("b")
    assert not [log for log in logs if log["event"] == "run.unbounded"]


def test_budget_bounded_reads_every_dimension() -> None:
    assert not Budget().bounded
    assert not TerminationPolicy().bounded
    for name in (
        "max_turns",
        "max_tool_calls",
        "max_input_tokens",
        "max_output_tokens",
        "max_total_tokens",
        "max_wall_time",
    ):
        assert Budget(**{name: 5}).bounded, name
