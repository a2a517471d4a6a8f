"""MCP servers as tools, against a real server written with the SDK (over stdio and over
streamable HTTP) and hostile hand-written ones, on asyncio and on trio: the schemas reach the
model as they are, results and faults become tool results, a server that cannot start halts
the run before the first model call, and a stdio server's whole process tree ends with the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from _mcp_support import STARTUP, Answered, hostile, http_server, sdk_server
from _processes import gone, running

from harness import (
    Completed,
    ConfigurationError,
    Harness,
    MCPServer,
    RunResult,
    ScriptedModelClient,
    ToolCalled,
    ToolServerFailed,
    ToolServerStarted,
)
from harness.testing import FakeClock, ListSink
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio


def _harness(
    rows: list[dict[str, Any]], servers: list[MCPServer], **options: Any
) -> tuple[Harness, ScriptedModelClient, ListSink]:
    model = ScriptedModelClient.from_responses(rows)
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=Answered(options.pop("needle", "done"))),
        mcp_servers=servers,
        clock=FakeClock(),
        sinks=[sink],
        **options,
    )
    return harness, model, sink


def _call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def _results(sink: ListSink) -> list[ToolCalled]:
    return [e for e in sink.events if isinstance(e, ToolCalled)]


async def test_a_scripted_agent_calls_an_sdk_server_and_the_result_reaches_the_model() -> None:
    """The server's tools are offered as ``<server>__<tool>`` with the server's own schema;
    a call's text reaches the next request, and the check verifies the answer."""
    rows = [
        {**_call("calc__add", {"a": 2, "b": 40}), "expect": {"tools": ["calc__add", "calc__echo"]}},
        {"text": "the sum is 42, done", "expect": {"last_message_contains": "42"}},
    ]
    harness, model, sink = _harness(rows, [sdk_server(tools=["add", "echo"])])
    result = await harness.run("add 2 and 40")
    assert result.halt_reason == Completed(), result.halt_reason
    request = model.requests[0]
    offered = {t.name: t for t in request.tools}
    assert sorted(offered) == ["calc__add", "calc__echo"]
    schema = offered["calc__add"].parameters
    assert schema["properties"]["a"] == {"title": "A", "type": "integer"}
    assert schema["required"] == ["a", "b"]
    assert offered["calc__add"].description == "Add two integers."
    (called,) = _results(sink)
    assert (called.content, called.is_error) == ("42", False)
    started = [e for e in sink.events if isinstance(e, ToolServerStarted)]
    assert [(e.server, e.transport) for e in started] == [("calc", "stdio")]
