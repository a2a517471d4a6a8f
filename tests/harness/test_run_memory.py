"""A finished run leaves nothing for the cycle collector: its sessions, messages and events are
freed by reference counting as soon as the caller lets go of the result.

With thousands of concurrent sessions, garbage that only the cycle collector can free makes its
full passes (over every live object of every session) the largest cost of a turn; bench/run.py's
W4 shows it. These tests count what `gc.collect()` finds unreachable after runs of each
strategy, with the collector switched off while they run so nothing is freed behind the count.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Iterator

import pytest

from checks import AlwaysComplete
from harness import Harness, ScriptedModelClient, tool
from harness.testing import ListSink
from strategies import Loop, Ralph, SelfVerifying
from termination import Budget, TerminationPolicy


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def broken() -> str:
    """Fail, as a tool does."""
    raise RuntimeError("the tool broke")


def _calls(name: str, count: int) -> list[dict[str, object]]:
    arguments = {"a": 1, "b": 2} if name == "add" else {}
    return [{"tool_calls": [{"name": name, "arguments": arguments}]} for _ in range(count)]


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _garbage_after(run: Callable[[], Awaitable[object]]) -> int:
    """Objects left in unreachable cycles by `run`, after one warm-up run (first use fills
    caches, which are not garbage)."""
    await run()
    gc.collect()
    await run()
    return gc.collect()


def _policy(max_turns: int = 20) -> TerminationPolicy:
    return TerminationPolicy(budget=Budget(max_turns=max_turns), completion_check=AlwaysComplete())


@pytest.mark.anyio
@pytest.mark.usefixtures("collector_off")
async def test_a_plain_loop_leaves_no_cyclic_garbage() -> None:
    async def run() -> object:
        model = ScriptedModelClient.from_responses([*_calls("add", 5), {"text": "done"}])
        harness = Harness(model=model, tools=[add], policy=_policy(), strategy=Loop())
        return await harness.run("add", sinks=[ListSink()])

    assert await _garbage_after(run) == 0


@pytest.mark.anyio
@pytest.mark.usefixtures("collector_off")
async def test_failing_tools_and_a_budget_halt_leave_no_cyclic_garbage() -> None:
    async def run() -> object:
        model = ScriptedModelClient.from_responses(_calls("broken", 3))
        harness = Harness(model=model, tools=[broken], policy=_policy(max_turns=3))
        result = await harness.run("break things")
        assert not result.verified
        return result

    assert await _garbage_after(run) == 0


@pytest.mark.anyio
@pytest.mark.usefixtures("collector_off")
async def test_ralph_iterations_leave_no_cyclic_garbage() -> None:
    async def run() -> object:
        model = ScriptedModelClient.from_responses([*_calls("add", 2), {"text": "done"}])
        harness = Harness(model=model, tools=[add], policy=_policy(), strategy=Ralph())
        return await harness.run("add")

    assert await _garbage_after(run) == 0


@pytest.mark.anyio
@pytest.mark.usefixtures("collector_off")
async def test_build_then_evaluate_leaves_no_cyclic_garbage() -> None:
    async def run() -> object:
        builder = ScriptedModelClient.from_responses([*_calls("add", 2), {"text": "done"}])
        evaluator = ScriptedModelClient.from_responses([{"text": "VERDICT: PASS"}])
        strategy = SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False)
        harness = Harness(model=builder, tools=[add], policy=_policy(), strategy=strategy)
        return await harness.run("add")

    assert await _garbage_after(run) == 0
