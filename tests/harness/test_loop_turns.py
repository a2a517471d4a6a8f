"""The turn loop: model turns with usage, tools derived from plain functions, run concurrently,
each under its own timeout, with every failure turned into a result the model sees."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
import pytest

from harness import (
    Harness,
    ScriptedModelClient,
    Tool,
    ToolCalled,
    ToolContext,
    TurnFinished,
    Usage,
    tool,
)
from harness.testing import FakeClock, ListSink
from termination import TerminationPolicy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "loop"

pytestmark = pytest.mark.anyio


def scripted(rows: Sequence[Mapping[str, Any]]) -> ScriptedModelClient:
    return ScriptedModelClient.from_responses(rows)


def build(
    model: ScriptedModelClient,
    tools: Sequence[Tool | Any] = (),
    *,
    clock: FakeClock | None = None,
    sink: ListSink | None = None,
    **kwargs: Any,
) -> Harness:
    return Harness(
        model=model,
        policy=TerminationPolicy(),
        tools=tools,
        clock=clock or FakeClock(),
        sinks=[sink] if sink is not None else [],
        **kwargs,
    )


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id is not None:
        row["id"] = call_id
    return row


def tool_results(sink: ListSink) -> list[tuple[str, str, bool]]:
    return [(e.call.name, e.content, e.is_error) for e in sink.events if isinstance(e, ToolCalled)]


async def test_text_turn_with_usage_completes_and_accounts_usage() -> None:
    """A final answer with no tool calls is a claim of done; its usage is the run's usage."""
    model = scripted([{"text": "hello", "usage": {"input_tokens": 7, "output_tokens": 3}}])
    sink = ListSink()
    result = await build(model, sink=sink).run("say hello")
    assert result.verified
    assert result.turns == 1
    assert result.usage == Usage(7, 3, 0, None)
    assert result.final_text == "hello"
    finished = [e for e in sink.events if isinstance(e, TurnFinished)]
    assert [e.response.usage.input_tokens for e in finished] == [7]


async def test_sync_and_async_plain_functions_both_run() -> None:
    """Plain functions become tools: a sync one runs in a worker thread, async on its loop."""
    threads: dict[str, int] = {}

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        threads["add"] = threading.get_ident()
        return a + b

    async def shout(text: str) -> str:
        """Upper-case some text."""
        threads["shout"] = threading.get_ident()
        await anyio.lowlevel.checkpoint()
        return text.upper()

    model = scripted(
        [
            {"tool_calls": [call("add", a=2, b=3)]},
            {"tool_calls": [call("shout", text="hi")], "expect": {"last_message_contains": "5"}},
            {"text": "5 and HI", "expect": {"last_message_contains": "HI"}},
        ]
    )
    sink = ListSink()
    result = await build(model, [add, shout], sink=sink).run("compute")
    assert result.verified
    assert tool_results(sink) == [("add", "5", False), ("shout", "HI", False)]
    assert threads["add"] != threading.get_ident()
    assert threads["shout"] == threading.get_ident()


async def test_inline_sync_tool_runs_on_the_event_loop_thread() -> None:
    """`inline=True` keeps a sync tool on the event loop's thread."""
    seen: list[int] = []

    @tool(inline=True)
    def where() -> str:
        """Say where you ran."""
        seen.append(threading.get_ident())
        return "here"

    model = scripted([{"tool_calls": [call("where")]}, {"text": "done"}])
    await build(model, [where]).run("where?")
    assert seen == [threading.get_ident()]


async def test_a_lone_inline_call_that_fails_becomes_an_error_the_model_sees() -> None:
    """The usual turn (one call to an inline tool) is run by the loop itself: an exception or
    arguments that break the schema are error results in the next request, each call is
    counted, and the run goes on."""

    @tool(inline=True)
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    model = scripted(
        [
            {"tool_calls": [call("divide", a=1, b=0)]},
            {"tool_calls": [call("divide", a="one", b=2)]},
            {"tool_calls": [call("divide", a=6, b=3)]},
            {"text": "done"},
        ]
    )
    sink = ListSink()
    result = await build(model, [divide], sink=sink).run("divide")
    assert result.verified
    assert (result.turns, result.tool_calls) == (4, 3)
    assert tool_results(sink) == [
        ("divide", "error: ZeroDivisionError: division by zero", True),
        ("divide", "error: ToolArgumentError: argument 'a' must be integer (got str 'one')", True),
        ("divide", "2.0", False),
    ]
    tool_messages = [m for m in result.transcript if m.role == "tool"]
    assert [(m.is_error, m.content) for m in tool_messages] == [
        (e.is_error, e.content) for e in sink.events if isinstance(e, ToolCalled)
    ]


def test_schema_is_derived_from_signature_and_docstring() -> None:
    """Types, defaults, docstring argument text and required names become the JSON schema; a
    `ToolContext` parameter is hidden from the model."""

    def search(
        query: str,
        ctx: ToolContext,
        limit: int = 10,
        tags: list[str] | None = None,
        mode: Literal["fast", "exact"] = "fast",
        weight: float | None = None,
    ) -> str:
        """Search the notes.

        More text that is not the summary.

        Args:
            query: what to look for
            limit: how many hits at most
        """
        return query

    spec = Tool.from_function(search).spec
    assert spec.name == "search"
    assert spec.description == "Search the notes."
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "limit": {"type": "integer", "description": "how many hits at most", "default": 10},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["fast", "exact"], "default": "fast"},
            "weight": {"type": ["number", "null"]},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert Tool.from_function(search).context_param == "ctx"


async def test_the_model_is_offered_the_derived_specs() -> None:
    """The request carries every tool's spec; `expect.tools` pins the names offered."""

    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    model = scripted([{"text": "ok", "expect": {"tools": ["lookup"]}}])
    await build(model, [lookup]).run("look")
    (spec,) = model.requests[0].tools
    assert spec.parameters["required"] == ["key"]


async def test_bad_arguments_and_unknown_tools_become_error_results_the_model_sees() -> None:
    """A missing argument, a wrong type, an unknown argument and an unknown tool are each an error
    result in the next request, and the run goes on."""

    def greet(name: str, times: int = 1) -> str:
        """Greet someone."""
        return " ".join([f"hi {name}"] * times)

    model = ScriptedModelClient.from_jsonl(FIXTURES / "bad_arguments.jsonl")
    sink = ListSink()
    result = await build(model, [greet], sink=sink).run("greet")
    assert result.verified
    assert tool_results(sink) == [
        ("greet", "error: ToolArgumentError: missing required argument 'name'", True),
        ("greet", "error: ToolArgumentError: argument 'times' must be integer (got str 'x')", True),
        (
            "greet",
            "error: ToolArgumentError: unknown argument 'mood' (expected one of ['name', 'times'])",
            True,
        ),
        ("fly", "error: unknown tool 'fly' (available: greet)", True),
        ("greet", "hi ada hi ada", False),
    ]


async def test_a_tool_that_raises_becomes_an_error_result_not_a_crash() -> None:
    """An exception in a tool is reported to the model as an error result; the run completes."""

    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    model = scripted(
        [
            {"tool_calls": [call("explode")]},
            {
                "text": "it failed, done anyway",
                "expect": {"last_role": "tool", "last_message_contains": "RuntimeError: kaput"},
            },
        ]
    )
    sink = ListSink()
    result = await build(model, [explode], sink=sink).run("explode")
    assert result.verified
    assert tool_results(sink) == [("explode", "error: RuntimeError: kaput", True)]
    (tool_message,) = [m for m in result.transcript if m.role == "tool"]
    assert tool_message.is_error


async def test_several_tool_calls_run_concurrently() -> None:
    """Two tools that each wait for the other to start finish only because they run at once
    (run one after the other they would deadlock)."""
    ping_started = anyio.Event()
    pong_started = anyio.Event()

    async def ping() -> str:
        """Ping."""
        ping_started.set()
        await pong_started.wait()
        return "ping saw pong"

    async def pong() -> str:
        """Pong."""
        pong_started.set()
        await ping_started.wait()
        return "pong saw ping"

    model = scripted(
        [
            {"tool_calls": [call("ping", "p1"), call("pong", "p2")]},
            {"text": "both", "expect": {"message_count": 5}},
        ]
    )
    sink = ListSink()
    with anyio.fail_after(10):  # a guard only: a sequential loop would deadlock here
        result = await build(model, [ping, pong], sink=sink).run("ping pong")
    assert result.verified
    # Results come back in the order the model asked, whatever order the tools finish in.
    assert tool_results(sink) == [
        ("ping", "ping saw pong", False),
        ("pong", "pong saw ping", False),
    ]
    assert [m.tool_call_id for m in result.transcript if m.role == "tool"] == ["p1", "p2"]


async def test_an_async_tool_past_its_timeout_is_cut_off_exactly() -> None:
    """An async tool sleeping on the clock past its own timeout becomes a timeout error at that
    timeout, to the second."""
    clock = FakeClock()

    @tool(timeout=5)
    async def slow(ctx: ToolContext) -> str:
        """Takes forever."""
        await ctx.clock.sleep(3600)
        return "late"

    model = scripted(
        [
            {"tool_calls": [call("slow")]},
            {"text": "gave up", "expect": {"last_message_contains": "timed out after 5s"}},
        ]
    )
    sink = ListSink()
    await build(model, [slow], clock=clock, sink=sink).run("wait")
    assert tool_results(sink) == [("slow", "error: tool 'slow' timed out after 5s", True)]
    assert clock.now() == 5


async def test_the_harness_tool_timeout_applies_to_tools_without_their_own() -> None:
    """`Harness(tool_timeout=...)` bounds every tool that sets no timeout of its own."""
    clock = FakeClock()

    async def slow(ctx: ToolContext) -> str:
        """Takes forever."""
        await ctx.clock.sleep(3600)
        return "late"

    model = scripted([{"tool_calls": [call("slow")]}, {"text": "gave up"}])
    sink = ListSink()
    await build(model, [slow], clock=clock, sink=sink, tool_timeout=7).run("wait")
    assert tool_results(sink) == [("slow", "error: tool 'slow' timed out after 7s", True)]
    assert clock.now() == 7


async def test_a_blocked_sync_tool_in_a_thread_is_timed_out() -> None:
    """A sync tool stuck in its worker thread is abandoned at its timeout; the loop goes on."""
    clock = FakeClock()
    release = threading.Event()

    @tool(timeout=10)
    def stuck() -> str:
        """Blocks its thread."""
        # Time passes on the run's clock while this thread is blocked.
        anyio.from_thread.run_sync(clock.advance, 30)
        release.wait(10)
        return "too late"

    model = scripted(
        [
            {"tool_calls": [call("stuck")]},
            {"text": "moved on", "expect": {"last_message_contains": "timed out after 10s"}},
        ]
    )
    sink = ListSink()
    try:
        result = await build(model, [stuck], clock=clock, sink=sink).run("block")
    finally:
        release.set()
    assert result.verified
    assert tool_results(sink) == [("stuck", "error: tool 'stuck' timed out after 10s", True)]


_CALLER = contextvars.ContextVar("caller", default="unset")


async def test_a_sync_tool_runs_on_a_daemon_thread_in_the_callers_context() -> None:
    """A sync tool's thread never keeps the process alive (an abandoned one would otherwise
    hold an asyncio program open at exit) and sees the caller's context variables."""

    @tool
    def where() -> str:
        """Reports its thread."""
        return f"daemon={threading.current_thread().daemon} caller={_CALLER.get()}"

    model = scripted([{"tool_calls": [call("where")]}, {"text": "seen"}])
    sink = ListSink()
    _CALLER.set("the run's")
    await build(model, [where], sink=sink).run("look")
    assert tool_results(sink) == [("where", "daemon=True caller=the run's", False)]


async def test_one_failing_tool_does_not_disturb_its_concurrent_siblings() -> None:
    """When one of several concurrent calls raises, the others still return their results."""

    async def fine() -> str:
        """Works."""
        return "fine"

    async def broken() -> str:
        """Fails."""
        raise ValueError("nope")

    model = scripted(
        [
            {"tool_calls": [call("fine"), call("broken"), call("fine")]},
            {"text": "mixed"},
        ]
    )
    sink = ListSink()
    result = await build(model, [fine, broken], sink=sink).run("mix")
    assert result.verified
    assert tool_results(sink) == [
        ("fine", "fine", False),
        ("broken", "error: ValueError: nope", True),
        ("fine", "fine", False),
    ]


async def test_tool_results_are_rendered_as_text() -> None:
    """Strings pass through, None is "ok", and other values are JSON."""

    def nothing() -> None:
        """Returns nothing."""

    def data() -> dict[str, Any]:
        """Returns data."""
        return {"a": [1, 2]}

    model = scripted([{"tool_calls": [call("nothing"), call("data")]}, {"text": "seen"}])
    sink = ListSink()
    await build(model, [nothing, data], sink=sink).run("render")
    assert [content for _, content, _ in tool_results(sink)] == ["ok", '{"a": [1, 2]}']
