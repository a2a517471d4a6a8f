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


# On trio, the SDK's HTTP client leaves its SSE stream's async generators (httpx2's) to the
# garbage collector when the connection closes; trio finalizes them and warns that it had to.
# The connection works and closes; only that warning is let through, for those generators.
@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <async_generator object "
    r"(EventSource|Response|PoolByteStream)\.:pytest.PytestUnraisableExceptionWarning"
)
async def test_an_http_server_is_reached_over_streamable_http() -> None:
    """The same SDK server over streamable HTTP on loopback: listed, called, closed."""
    with http_server() as url:
        server = MCPServer.http("web", url, startup_timeout=STARTUP)
        rows = [
            _call("web__echo", {"text": "over http"}),
            {"text": "done", "expect": {"last_message_contains": "over http"}},
        ]
        harness, _, sink = _harness(rows, [server])
        result = await harness.run("echo it")
    assert result.halt_reason == Completed(), result.halt_reason
    (called,) = _results(sink)
    assert (called.content, called.is_error) == ("over http", False)
    started = [e for e in sink.events if isinstance(e, ToolServerStarted)]
    assert [(e.server, e.transport) for e in started] == [("web", "http")]


async def test_results_errors_images_and_size_reach_the_model_as_text() -> None:
    """A tool's error is an error result; an image is described, not dropped; a bad argument
    is the server's to refuse (passed through as sent); a long result is cut in the middle
    with a marker; escapes in a result are data for the model, kept as they are."""
    rows: list[dict[str, Any]] = [
        {
            "text": "",
            "tool_calls": [
                {"id": "c1", "name": "calc__fail", "arguments": {"message": "no"}},
                {"id": "c2", "name": "calc__picture", "arguments": {}},
                {"id": "c3", "name": "calc__add", "arguments": {"a": "x", "b": 1}},
                {"id": "c4", "name": "calc__big", "arguments": {"size": 5000}},
            ],
        },
        {"text": "done"},
    ]
    harness, _, sink = _harness(rows, [sdk_server(max_output=1000)])
    result = await harness.run("try them")
    assert result.halt_reason == Completed()
    failed, picture, refused, big = _results(sink)
    assert failed.is_error
    assert failed.content.startswith("error: ")
    assert not picture.is_error
    assert picture.content.startswith("a red dot\n[image content: image/png")
    assert refused.is_error
    assert "valid integer" in refused.content
    assert not big.is_error
    assert "4,000 characters cut here (5,000 in all)" in big.content
    assert len(big.content) < 1100


async def test_a_server_that_cannot_start_halts_before_the_first_model_call(
    tmp_path: Path,
) -> None:
    """A command that does not exist is a typed halt naming the server; the model is never
    called (its script's lines are not a fault) and the transcript still ends with the halt."""
    transcript = tmp_path / "run.jsonl"
    bad = MCPServer.stdio("ghost", str(tmp_path / "no-such-server"))
    harness, model, _ = _harness([{"text": "done"}], [bad], transcript=transcript)
    result = await harness.run("anything")
    reason = result.halt_reason
    assert isinstance(reason, ToolServerFailed)
    assert reason.server == "ghost"
    assert "could not be started" in reason.message
    assert "ghost" in reason.describe()
    assert model.requests == []
    assert '"run.halted"' in transcript.read_text().splitlines()[-1]


@pytest.mark.parametrize(
    ("mode", "options", "expected"),
    [
        ("exit", {}, "cannot open the database"),
        ("hang-init", {"startup_timeout": 1.0}, "did not start within 1s"),
        ("garbage", {}, "not JSON-RPC on stdout"),
    ],
)
async def test_a_server_that_dies_hangs_or_babbles_at_start_is_a_typed_halt(
    mode: str, options: dict[str, Any], expected: str
) -> None:
    """Exiting at once (its stderr is quoted), hanging at initialize (the startup timeout) and
    answering with garbage each end as `ToolServerFailed`, not a hang or a traceback."""
    harness, model, _ = _harness([], [hostile(mode, **options)])
    result = await harness.run("anything")
    reason = result.halt_reason
    assert isinstance(reason, ToolServerFailed), reason
    assert reason.server == "bad"
    assert expected in reason.message
    assert model.requests == []


async def test_a_server_that_crashes_mid_run_makes_its_calls_errors_and_the_run_goes_on() -> None:
    """The call that crashed it, and every later one, is an error result saying the server
    exited (with its code and stderr); the run itself goes on to its check."""
    rows = [
        _call("bad__poke", {}, "c1"),
        _call("bad__poke", {}, "c2"),
        {"text": "done", "expect": {"last_message_contains": "exited with code 7"}},
    ]
    harness, _, sink = _harness(rows, [hostile("crash-call")])
    result = await harness.run("poke it")
    assert result.halt_reason == Completed()
    first, second = _results(sink)
    for called in (first, second):
        assert called.is_error
        assert "MCP server 'bad'" in called.content
        assert "exited with code 7" in called.content
        assert "segmentation fault (pretend)" in called.content


async def test_garbage_in_answer_to_a_call_breaks_the_connection_for_good() -> None:
    """A line that is not JSON-RPC ends the waiting call at once with an error quoting it;
    later calls get the same error without reaching the server."""
    rows = [_call("bad__poke", {}, "c1"), _call("bad__poke", {}, "c2"), {"text": "done"}]
    harness, _, sink = _harness(rows, [hostile("garbage-call", timeout=120.0)])
    result = await harness.run("poke it")
    assert result.halt_reason == Completed()
    for called in _results(sink):
        assert called.is_error
        assert "not JSON-RPC" in called.content
        assert "502 Bad Gateway" in called.content


async def test_a_call_that_hangs_times_out_and_the_run_still_closes() -> None:
    """The per-call timeout ends a hung call with an error result; the server, still hung,
    is stopped when the run ends (a generous bound only catches a hang of minutes)."""
    rows = [_call("bad__poke", {}), {"text": "done", "expect": {"last_message_contains": "1s"}}]
    harness, _, sink = _harness(rows, [hostile("hang-call", timeout=1.0)])
    started = time.monotonic()
    result = await harness.run("poke it")
    assert result.halt_reason == Completed()
    (called,) = _results(sink)
    assert called.is_error
    assert "did not answer the call of 'poke' within 1s" in called.content
    assert time.monotonic() - started < 60


async def test_a_server_that_never_exits_is_killed_when_the_run_ends(tmp_path: Path) -> None:
    """A server that ignores its closed stdin and SIGTERM is killed."""
    pidfile = tmp_path / "pid"
    server = hostile("stubborn", env={"HOSTILE_PIDFILE": str(pidfile)})
    harness, _, _ = _harness([{"text": "done"}], [server])
    result = await harness.run("nothing")
    assert result.halt_reason == Completed()
    assert await gone(int(pidfile.read_text()))


async def test_a_process_the_server_detached_is_stopped_with_it(tmp_path: Path) -> None:
    """A grandchild in a session of its own (out of the server's process group) is stopped
    when the run ends: the server runs under the harness's supervisor."""
    pidfile = tmp_path / "grandchild"
    rows = [_call("calc__detach", {"pidfile": str(pidfile)}), {"text": "done"}]
    harness, _, _ = _harness(rows, [sdk_server()])
    result = await harness.run("detach")
    assert result.halt_reason == Completed()
    grandchild = int(pidfile.read_text())
    assert await gone(grandchild)
    assert not running(grandchild)


async def test_a_tool_the_allow_list_names_but_the_server_lacks_is_a_typed_halt() -> None:
    harness, model, _ = _harness([], [sdk_server(tools=["add", "multiply"])])
    result = await harness.run("anything")
    reason = result.halt_reason
    assert isinstance(reason, ToolServerFailed)
    assert "offers no tool 'multiply'" in reason.message
    assert model.requests == []


async def test_a_tool_name_taken_by_another_tool_is_a_typed_halt() -> None:
    def calc__add(a: int, b: int) -> int:
        """Local."""
        return a + b

    harness, _, _ = _harness([], [sdk_server(tools=["add"])], tools=[calc__add])
    result = await harness.run("anything")
    assert isinstance(result.halt_reason, ToolServerFailed)
    assert "another tool has" in result.halt_reason.message


def test_an_mcp_server_is_configured_with_clear_errors() -> None:
    """Names, transports, timeouts and maps are checked where the server is built."""
    with pytest.raises(ConfigurationError, match="'name' must match"):
        MCPServer.stdio("bad name", "x")
    with pytest.raises(ConfigurationError, match="either a command or a url"):
        MCPServer(name="both", command=("x",), url="http://127.0.0.1/")
    with pytest.raises(ConfigurationError, match="'url' must be an http"):
        MCPServer.http("web", "ftp://example")
    with pytest.raises(ConfigurationError, match="'timeout' must be a positive number"):
        MCPServer.stdio("s", "x", timeout=0)
    with pytest.raises(ConfigurationError, match=r"'env' must map names to strings"):
        MCPServer.stdio("s", "x", env={"A": 1})  # type: ignore[dict-item]
    with pytest.raises(ConfigurationError, match="two MCP servers are named 's'"):
        Harness(
            model=ScriptedModelClient.from_responses([]),
            policy=TerminationPolicy(),
            mcp_servers=[MCPServer.stdio("s", "x"), MCPServer.stdio("s", "y")],
        )
    with pytest.raises(ConfigurationError, match=r"mcp_servers\[0\] must be an MCPServer"):
        Harness(
            model=ScriptedModelClient.from_responses([]),
            policy=TerminationPolicy(),
            mcp_servers=["s"],  # type: ignore[list-item]
        )


def test_without_the_sdk_a_configured_server_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user without the ``mcp`` extra gets a ConfigurationError saying what to install."""
    monkeypatch.setitem(__import__("sys").modules, "mcp", None)
    with pytest.raises(ConfigurationError, match=r"completion-harness\[mcp\]"):
        Harness(
            model=ScriptedModelClient.from_responses([]),
            policy=TerminationPolicy(),
            mcp_servers=[MCPServer.stdio("s", "x")],
        )


def test_importing_the_packages_does_not_import_the_sdk() -> None:
    """Start-up time: the SDK loads only when a run starts a server."""
    import subprocess
    import sys

    code = "import sys, harness, checks, termination, strategies; print('mcp' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "False"


async def test_an_http_server_that_is_not_there_is_a_typed_halt() -> None:
    """Nothing listening at the URL: `ToolServerFailed` before the first model call."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = MCPServer.http("web", f"http://127.0.0.1:{port}/mcp", startup_timeout=20.0)
    harness, model, _ = _harness([], [server])
    result = await harness.run("anything")
    reason = result.halt_reason
    assert isinstance(reason, ToolServerFailed), reason
    assert reason.server == "web"
    assert model.requests == []


@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <async_generator object "
    r"(EventSource|Response|PoolByteStream)\.:pytest.PytestUnraisableExceptionWarning"
)
async def test_an_http_server_that_dies_mid_run_breaks_only_its_calls() -> None:
    """The SDK fails its HTTP transport's task group when a request cannot be sent; the
    harness holds the connection in a task of its own, so the call (and the next) is an error
    result and the run goes on to its check."""
    with http_server() as url:
        server = MCPServer.http("web", url, startup_timeout=STARTUP, timeout=30.0)
        rows = [_call("web__crash", {}, "c1"), _call("web__echo", {"text": "x"}, "c2")]
        harness, _, sink = _harness([*rows, {"text": "done"}], [server])
        result = await harness.run("crash it")
    assert result.halt_reason == Completed(), result.halt_reason
    crashed, after = _results(sink)
    assert crashed.is_error
    assert after.is_error
    assert "MCP server 'web'" in after.content
