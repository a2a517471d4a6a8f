"""The harness side of the bench: the bare loop's work through `Harness`, policy switched on.

A scripted model client returns pre-built responses (one `add` call per turn, arguments
varying so the repeat sensor stays quiet, then a final answer that claims done); the policy
has a budget, both standard sensors and a completion check; events go to an in-memory sink
and to structlog, configured with a filtering logger at INFO so per-turn debug events are
no-ops while the run-level lines are rendered (as JSON, to /dev/null).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import structlog
from _backends import Sleep

from checks import AlwaysComplete
from harness import Harness, Tool, ToolCall, Usage, tool
from harness.extend import ModelRequest, ModelResponse
from harness.testing import ListSink
from termination import Budget, ConsecutiveToolErrorsSensor, RepeatedToolCallSensor
from termination import TerminationPolicy as Policy

TASK = "Add the numbers."


def configure_logging() -> None:
    """structlog as a service would set it: INFO and up, rendered as JSON lines."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.WriteLoggerFactory(file=open(os.devnull, "w")),  # noqa: SIM115
        cache_logger_on_first_use=True,
    )


@tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add")
async def async_add(a: int, b: int) -> int:
    """Add two integers (as a coroutine, which runs under a per-call deadline scope)."""
    return a + b


def harness_script(turns: int) -> tuple[ModelResponse, ...]:
    """`turns - 1` responses with one `add` call each, then a final answer (`turns` calls)."""
    usage = Usage(input_tokens=100, output_tokens=20)
    calls = [ToolCall(f"c{i}", "add", {"a": i, "b": 1}) for i in range(turns - 1)]
    return (
        *(ModelResponse(tool_calls=(c,), usage=usage) for c in calls),
        ModelResponse(text="done", usage=usage),
    )


class BenchModel:
    """A model client that answers turn k with the script's k-th response, after the backend's
    own sleep; it keeps no state, so one client (and one `Harness`) serves every session."""

    __slots__ = ("_delay", "_responses", "_sleep")

    def __init__(self, responses: Sequence[ModelResponse], sleep: Sleep, delay: float) -> None:
        self._responses = responses
        self._sleep = sleep
        self._delay = delay

    async def complete(self, request: ModelRequest) -> ModelResponse:
        await self._sleep(self._delay)
        return self._responses[request.turn - 1]


def default_policy(turns: int) -> Policy:
    """A budget, the two standard sensors and a completion check."""
    return Policy(
        budget=Budget(
            max_turns=turns + 5,
            max_tool_calls=turns + 5,
            max_total_tokens=1_000 * (turns + 5),
            max_wall_time=3_600.0,
        ),
        sensors=[RepeatedToolCallSensor(), ConsecutiveToolErrorsSensor()],
        completion_check=AlwaysComplete(),
    )


def bench_harness(turns: int, sleep: Sleep, delay: float, tool: Tool = add) -> Harness:
    """The harness every session of `turns` turns runs through, built once like an agent."""
    model = BenchModel(harness_script(turns), sleep, delay)
    return Harness(model=model, policy=default_policy(turns), tools=[tool])


async def harness_session(harness: Harness) -> int:
    """Run one session through `harness`; return the number of turns it took."""
    sink = ListSink()
    result = await harness.run(TASK, sinks=[sink])
    if not result.verified or not sink.events:
        raise AssertionError(f"the bench session did not complete: {result!r}")
    return result.turns
