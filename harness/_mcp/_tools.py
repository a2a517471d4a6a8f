"""A run's MCP servers: started once before the first model call, their tools offered to every
session of the run, closed when the run ends, however it ends.

Each server's tools become `MCPTool`s: the server's name, description and input schema go to
the model unchanged (under the server's prefix), and the arguments the model sends go to the
server unchanged. The harness does not validate them first: its validator knows a subset of
JSON Schema, and the server is the authority on its own schema (an SDK server answers a bad
argument with an error result the model sees).

With a recorder (`RecordsToolServers`: a `RecordingModelClient`) every listing and every call
is written to the recording; with a script (`ReplaysToolServers`: a fixture holding such
lines) no server starts and the recording answers (see `harness._fixtures._mcp_replay`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from attrs import define, field, frozen

from .._events._base import Event
from .._events._run import ToolServerStarted
from .._fixtures._mcp_replay import RecordedTool, ToolServerScript, call_line, server_line
from .._halt import ToolServerFailed
from .._messages import ToolSpec
from .._model import ModelClient
from .._tools._base import Tool, ToolContext, ToolResult
from ._server import MCPServer

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64  # what the providers accept for a tool's name


@runtime_checkable
class RecordsToolServers(Protocol):
    """A model client that records a run (`RecordingModelClient`): it also takes the MCP
    lines, so the recording replays without the servers."""

    def record_tool_server(self, line: Mapping[str, Any]) -> None: ...


@runtime_checkable
class ReplaysToolServers(Protocol):
    """A model client replaying a fixture that holds MCP lines (None when it holds none)."""

    @property
    def tool_server_script(self) -> ToolServerScript | None: ...


def _as_is(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    return arguments


Invoke = Callable[["MCPTool", Mapping[str, Any], ToolContext], Awaitable[ToolResult]]


@frozen
class MCPTool(Tool):
    """A tool of an MCP server: its schema is the server's, shown and passed on as it is."""

    server: str = ""
    remote: str = ""
    """The tool's name on its server (`name` is what the model calls it)."""

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_check", _as_is)
        object.__setattr__(self, "_parse", _as_is)
        object.__setattr__(self, "_spec", ToolSpec(self.name, self.description, self.parameters))

    async def call(
        self, arguments: Mapping[str, Any], context: ToolContext, *, time_limit: float
    ) -> ToolResult:
        """The server's answer; the connection turns every fault into an error result (its
        own `timeout` bounds the call, on the event loop's clock)."""
        invoke: Invoke = self.fn
        return await invoke(self, arguments, context)


@define(eq=False)
class ToolServers:
    """The run's started servers (or their recordings) and the tools they offer."""

    recorder: RecordsToolServers | None
    script: ToolServerScript | None
    tools: dict[str, MCPTool] = field(factory=dict)
    connections: dict[str, Any] = field(factory=dict)

    async def invoke(
        self, tool: MCPTool, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        if self.script is not None:
            # A mismatch is a FixtureAssertionError: it stops the run, as a model's does.
            result = self.script.take(tool.server, tool.remote, context.agent, context.call)
        else:
            result = await self.connections[tool.server].call(tool.remote, arguments)
        if self.recorder is not None:
            self.recorder.record_tool_server(
                call_line(tool.server, tool.remote, context.agent, context.call, result)
            )
        return result

    def offer(
        self, server: MCPServer, listed: Sequence[RecordedTool], taken: Mapping[str, object]
    ) -> str | None:
        """Add `server`'s tools, or say why they cannot be offered."""
        for recorded in listed:
            if recorded.name in taken or recorded.name in self.tools:
                return (
                    f"its tool {recorded.tool!r} would be offered as {recorded.name!r}, a name "
                    "another tool has; give the server another prefix"
                )
            self.tools[recorded.name] = MCPTool(
                name=recorded.name,
                description=recorded.description,
                parameters=recorded.input_schema,
                fn=self.invoke,
                is_async=True,
                read_only=recorded.read_only,
                server=server.name,
                remote=recorded.tool,
            )
        return None


def _listed(server: MCPServer, tools: Sequence[Any]) -> tuple[RecordedTool, ...] | str:
    """The live server's tools as offered (the allow-list applied, names prefixed), or why
    they cannot be."""
    by_name = {t.name: t for t in tools}
    wanted = server.tools if server.tools is not None else tuple(by_name)
    missing = [name for name in wanted if name not in by_name]
    if missing:
        return f"it offers no tool {missing[0]!r} (it offers: {sorted(by_name) or 'none'})"
    listed = []
    for name in wanted:
        tool = by_name[name]
        shown = server.tool_prefix + _UNSAFE.sub("_", name)
        if len(shown) > _NAME_LIMIT:
            return f"its tool {name!r} would be offered as {shown!r}, longer than 64 characters"
        hints = tool.annotations
        listed.append(
            RecordedTool(
                shown,
                name,
                tool.description or tool.title or "",
                tool.input_schema,
                bool(hints is not None and hints.read_only_hint),
            )
        )
    return tuple(listed)


def _from_recording(server: MCPServer, script: ToolServerScript) -> tuple[RecordedTool, ...] | str:
    listed = script.listing(server.name)
    if server.tools is not None:
        recorded = {t.tool for t in listed}
        missing = [name for name in server.tools if name not in recorded]
        if missing:
            return f"the recording has no tool {missing[0]!r} for it"
        listed = tuple(t for t in listed if t.tool in server.tools)
    return listed


@asynccontextmanager
async def open_tool_servers(
    servers: Sequence[MCPServer],
    *,
    model: ModelClient,
    workspace: Path | None,
    taken: Mapping[str, Tool],
    emit: Callable[[Event], None],
    elapsed: Callable[[], float],
) -> AsyncIterator[ToolServers | ToolServerFailed]:
    """Start `servers` (or load their recording, when `model` replays one) and yield their
    tools, or the `ToolServerFailed` of the first that could not start; tool names in `taken`
    are the run's own. Each server started is an event sent to `emit`, stamped `elapsed()`.
    Leaving the block closes every started server, each within `CLOSE_LIMIT`, even when
    cancelled."""
    script = model.tool_server_script if isinstance(model, ReplaysToolServers) else None
    recorder = model if isinstance(model, RecordsToolServers) else None
    started = ToolServers(recorder, script)
    if script is not None:
        script.check_servers([s.name for s in servers])
    elif servers:
        from ._server import require_sdk

        require_sdk()
    async with AsyncExitStack() as stack:
        failure: ToolServerFailed | None = None
        for server in servers:
            if script is not None:
                listed = _from_recording(server, script)
            else:
                from ._connection import ServerStartError, hosted

                try:
                    connection = await stack.enter_async_context(hosted(server, workspace))
                except ServerStartError as exc:
                    failure = ToolServerFailed(server.name, str(exc))
                    break
                started.connections[server.name] = connection
                listed = _listed(server, connection.tools)
            why = listed if isinstance(listed, str) else started.offer(server, listed, taken)
            if why is not None:
                failure = ToolServerFailed(server.name, why)
                break
            assert not isinstance(listed, str)
            tools = tuple(t.to_dict() for t in listed)
            emit(ToolServerStarted(elapsed(), server.name, server.transport, tools))
            if recorder is not None:
                recorder.record_tool_server(server_line(server.name, listed))
        yield failure if failure is not None else started


def check_sdk_or_replay(servers: Sequence[MCPServer], model: object) -> None:
    """At construction: MCP servers need the SDK, unless the model replays their recording."""
    if not servers:
        return
    if isinstance(model, ReplaysToolServers) and model.tool_server_script is not None:
        return
    from ._server import require_sdk

    require_sdk()
