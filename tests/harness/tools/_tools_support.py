"""Run tool calls through the real loop and collect what the model saw."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import Harness, ScriptedModelClient, Tool, ToolCalled
from harness.testing import FakeClock, ListSink
from termination import TerminationPolicy


async def tool_results(
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    tools: Sequence[Tool | Callable[..., Any]],
    workspace: Path | None = None,
) -> list[tuple[str, bool]]:
    """One turn per call (name, arguments), then a final answer: each call's result text and
    whether it was an error, as the model saw them."""
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": n, "arguments": dict(a)}]} for n, a in calls] + [{"text": "done"}]
    )
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(),
        tools=tools,
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
    )
    await harness.run("call the tools")
    return [(e.content, e.is_error) for e in sink.events if isinstance(e, ToolCalled)]
