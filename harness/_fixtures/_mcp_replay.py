"""MCP servers in a fixture: what a recording keeps of them, and how a replay serves it.

A fixture replays model responses; a run's tools run again. An MCP server's tools cannot (the
server may be gone, or answer differently), so a recording keeps two more kinds of line, and a
replay serves them instead of starting the server:

- ``{"mcp_server": NAME, "tools": [...]}``: the server's tools as the model was shown them,
  written when the server started (before the first model call);
- ``{"mcp_call": {"server", "tool", "agent", "id", "name", "arguments"}, "result": {"content",
  "is_error"}}``: one call and the result the model saw, written when the call returned.

A replayed call is matched by its agent and call id to the first unused recorded call, fail
closed: no such call, or one whose server, tool or arguments differ, is a
`FixtureAssertionError` naming the file and the recorded line; a recorded call left unused
when the run ends is a `FixtureUnconsumed`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import define, field, frozen

from .._errors import FixtureAssertionError, FixtureError, FixtureUnconsumed
from .._messages import ToolCall
from .._tools._base import ToolResult
from ._mcp_keys import CALL_KEY, SERVER_KEY

_SERVER_KEYS = frozenset({SERVER_KEY, "tools", "comment"})
_TOOL_KEYS = frozenset({"name", "tool", "description", "input_schema", "read_only"})
_CALL_LINE_KEYS = frozenset({CALL_KEY, "result", "comment"})
_CALL_KEYS = frozenset({"server", "tool", "agent", "id", "name", "arguments"})
_RESULT_KEYS = frozenset({"content", "is_error"})


@frozen
class RecordedTool:
    """A tool as the model was shown it: `name` (prefixed) and `tool`, its server's name."""

    name: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "tool": self.tool,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }
        if self.read_only:
            data["read_only"] = True
        return data


@frozen
class RecordedCall:
    path: str
    line: int
    server: str
    tool: str
    agent: str
    call_id: str
    name: str
    arguments: Mapping[str, Any]
    result: ToolResult


def server_line(server: str, tools: Sequence[RecordedTool]) -> dict[str, Any]:
    return {SERVER_KEY: server, "tools": [t.to_dict() for t in tools]}


def call_line(
    server: str, tool: str, agent: str, call: ToolCall, result: ToolResult
) -> dict[str, Any]:
    return {
        CALL_KEY: {
            "server": server,
            "tool": tool,
            "agent": agent,
            "id": call.id,
            "name": call.name,
            "arguments": dict(call.arguments),
        },
        "result": {"content": result.content, "is_error": result.is_error},
    }


@define(eq=False)
class ToolServerScript:
    """The MCP lines of one fixture file: the servers' listings and the recorded calls."""

    path: str
    listings: dict[str, tuple[int, tuple[RecordedTool, ...]]] = field(factory=dict)
    calls: list[RecordedCall] = field(factory=list)
    _used: list[bool] = field(factory=list)

    def add(self, row: Mapping[str, Any], lineno: int) -> None:
        """Parse one MCP line (one with a `mcp_server` or `mcp_call` key); a malformed one is a
        `FixtureError` naming the file, the line and the field."""

        def fail(key: str, message: str) -> FixtureError:
            return FixtureError(message, path=self.path, line=lineno, field=key)

        if SERVER_KEY in row:
            _no_unknown(row, _SERVER_KEYS, "", fail)
            server = _text(row, SERVER_KEY, "", fail)
            if server in self.listings:
                raise fail(SERVER_KEY, f"server {server!r} is listed twice")
            tools = row.get("tools")
            if not isinstance(tools, list):
                raise fail("tools", "must be a list of tools")
            parsed = tuple(_tool(t, f"tools[{i}]", fail) for i, t in enumerate(tools))
            self.listings[server] = (lineno, parsed)
            return
        _no_unknown(row, _CALL_LINE_KEYS, "", fail)
        call = row.get(CALL_KEY)
        result = row.get("result")
        if not isinstance(call, dict):
            raise fail(CALL_KEY, "must be an object")
        if not isinstance(result, dict):
            raise fail("result", "must be an object with 'content' and 'is_error'")
        _no_unknown(call, _CALL_KEYS, f"{CALL_KEY}.", fail)
        _no_unknown(result, _RESULT_KEYS, "result.", fail)
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise fail(f"{CALL_KEY}.arguments", "must be an object")
        is_error = result.get("is_error", False)
        if not isinstance(is_error, bool):
            raise fail("result.is_error", f"must be true or false (got {is_error!r})")
        texts = {
            key: _text(call, key, f"{CALL_KEY}.", fail)
            for key in ("server", "tool", "agent", "id", "name")
        }
        content = _text(result, "content", "result.", fail)
        self.calls.append(
            RecordedCall(
                self.path,
                lineno,
                texts["server"],
                texts["tool"],
                texts["agent"],
                texts["id"],
                texts["name"],
                arguments,
                ToolResult(content, is_error),
            )
        )
        self._used.append(False)

    def check_servers(self, names: Sequence[str]) -> None:
        """Fail unless the recording lists exactly the servers `names` (the run's)."""
        for name in names:
            if name not in self.listings:
                recorded = sorted(self.listings) or "none"
                raise FixtureAssertionError(
                    f"the run has MCP server {name!r} but the recording lists no such server "
                    f"(it lists: {recorded}); record the run again with this server",
                    path=self.path,
                )
        for name, (lineno, _) in self.listings.items():
            if name not in names:
                raise FixtureAssertionError(
                    f"the recording lists MCP server {name!r} but the run has no such server",
                    path=self.path,
                    line=lineno,
                )

    def listing(self, server: str) -> tuple[RecordedTool, ...]:
        return self.listings[server][1]

    def take(self, server: str, tool: str, agent: str, call: ToolCall) -> ToolResult:
        """The recorded result of `call`, matched by agent and call id (see the module)."""
        for index, recorded in enumerate(self.calls):
            if self._used[index] or recorded.agent != agent or recorded.call_id != call.id:
                continue
            self._used[index] = True
            for key, want, got in (
                ("server", recorded.server, server),
                ("tool", recorded.tool, tool),
            ):
                if want != got:
                    raise FixtureAssertionError(
                        f"call {call.id!r} of agent {agent!r} went to MCP {key} {got!r}; the "
                        f"recording has {want!r}",
                        path=self.path,
                        line=recorded.line,
                        field=f"{CALL_KEY}.{key}",
                    )
            if _canonical(recorded.arguments) != _canonical(call.arguments):
                raise FixtureAssertionError(
                    f"call {call.id!r} of agent {agent!r} to {server}/{tool} has arguments "
                    f"{_canonical(call.arguments)}; the recording has "
                    f"{_canonical(recorded.arguments)}",
                    path=self.path,
                    line=recorded.line,
                    field=f"{CALL_KEY}.arguments",
                )
            return recorded.result
        pending = next((c for i, c in enumerate(self.calls) if not self._used[i]), None)
        raise FixtureAssertionError(
            f"agent {agent!r} called {server}/{tool} (call id {call.id!r}) and the recording "
            "has no such call left"
            + (f"; the next recorded one is {pending.call_id!r}" if pending else ""),
            path=self.path,
            line=pending.line if pending else None,
        )

    def verify_consumed(self) -> None:
        for index, recorded in enumerate(self.calls):
            if not self._used[index]:
                raise FixtureUnconsumed(
                    f"the run ended with the recorded MCP call {recorded.call_id!r} of agent "
                    f"{recorded.agent!r} to {recorded.server}/{recorded.tool} unused",
                    path=self.path,
                    line=recorded.line,
                )


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def _no_unknown(row: Mapping[str, Any], known: frozenset[str], prefix: str, fail: Any) -> None:
    unknown = sorted(set(row) - known)
    if unknown:
        raise fail(f"{prefix}{unknown[0]}", f"unknown key (expected some of {sorted(known)})")


def _text(row: Mapping[str, Any], key: str, prefix: str, fail: Any) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        raise fail(f"{prefix}{key}", f"must be a string (got {value!r})")
    return value


def _tool(value: object, where: str, fail: Any) -> RecordedTool:
    if not isinstance(value, dict):
        raise fail(where, "must be an object")
    _no_unknown(value, _TOOL_KEYS, f"{where}.", fail)
    schema = value.get("input_schema")
    if not isinstance(schema, dict):
        raise fail(f"{where}.input_schema", "must be an object")
    read_only = value.get("read_only", False)
    if not isinstance(read_only, bool):
        raise fail(f"{where}.read_only", f"must be true or false (got {read_only!r})")
    return RecordedTool(
        _text(value, "name", f"{where}.", fail),
        _text(value, "tool", f"{where}.", fail),
        _text(value, "description", f"{where}.", fail),
        schema,
        read_only,
    )
