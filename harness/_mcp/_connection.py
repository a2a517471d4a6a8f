"""A live MCP server: start it, list its tools, call them, stop it (the only module that
imports the MCP SDK, and only when a run starts a server).

The SDK's `ClientSession` speaks the protocol. For a stdio server the transport is the
harness's own, not the SDK's `stdio_client`, for what a run unattended needs:

- the server runs under `harness._process._reaper` (as `run_process`'s commands do), so a process it
  starts in a session of its own is stopped with it, not only its process group;
- its stderr is kept as a bounded tail (for the error that says why it died), never printed;
- a line on stdout that is not JSON-RPC, or one longer than `MAX_LINE`, breaks the connection
  at once: every call waiting on it, and every later one, is an error result saying what the
  server wrote (fail closed, where the SDK would log a traceback and wait on);
- closing sends EOF, waits `CLOSE_GRACE`, then SIGTERM and SIGKILL to the whole tree.

Every wait is a deadline on the event loop's clock (a server's I/O does not move a fake clock);
each fault becomes a `ToolResult` error or a `ServerStartError`, on asyncio and on trio.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as mcp_types
from anyio.abc import Process, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from attrs import define, field
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from .._process._child import KILL_GRACE, _contained, _signal_group, _Tail, minimal_env
from .._tools._base import ToolResult
from ._http_streams import closing_transport
from ._server import MCPServer

MAX_LINE = 16 * 1024 * 1024  # bytes of one JSON-RPC message from a stdio server
CLOSE_GRACE = 2.0  # seconds a stdio server has to exit after its stdin closes
STDERR_TAIL = 4_000  # bytes of a server's stderr kept for error messages
_SHOWN = 200  # characters of a garbage line an error shows
_EXIT_WAIT = 1.0  # seconds to wait for the exit status of a server whose stdout closed
_HTTP_TIMEOUT = 30.0


class ServerStartError(Exception):
    """A server could not be started, initialised or listed; the message says why."""


def _clip(text: str, limit: int = _SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@define(eq=False)
class _Wire:
    """What the stdio transport learned about the server: why the connection broke, if it
    did, and the tail of its stderr."""

    stderr: _Tail = field(factory=lambda: _Tail(STDERR_TAIL))
    broken: str | None = None
    process: Process | None = None


@define(eq=False)
class Connection:
    """One started server: its session, and what is known about its health."""

    server: MCPServer
    session: ClientSession
    wire: _Wire
    tools: list[mcp_types.Tool]
    transport_errors: list[str] = field(factory=list)
    """What the transport reported (an HTTP request that failed, say), newest last."""

    @property
    def label(self) -> str:
        return f"MCP server {self.server.name!r}"

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call `tool`; every fault (an error answer, a crash, a hang past the server's
        `timeout`, a result that cannot be read) is an error result, never an exception."""
        if self.wire.broken is not None:
            return _error(self.wire.broken)
        timeout = self.server.timeout
        with anyio.move_on_after(timeout) as scope:
            try:
                result = await self.session.call_tool(tool, dict(arguments))
            except MCPError as exc:
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    return _error(await self._why_closed())
                return _error(f"{self.label} answered the call of {tool!r} with an error: {exc}")
            except Exception as exc:  # a result the SDK cannot parse or validate
                broken = self._broken()  # the await above may have broken the connection
                if broken is not None:
                    return _error(broken)
                return _error(
                    f"{self.label} sent a result for {tool!r} that cannot be read: "
                    f"{type(exc).__name__}: {_clip(str(exc), 500)}"
                )
            return render_result(result, self.server.max_output)
        assert scope.cancelled_caught
        return _error(
            f"{self.label} did not answer the call of {tool!r} within {timeout:g}s "
            "(its timeout); the call was abandoned"
        )

    def _broken(self) -> str | None:
        return self.wire.broken

    async def _why_closed(self) -> str:
        """Why the connection closed: what broke it, else the server's exit and stderr."""
        if self.wire.broken is None:
            process = self.wire.process
            if process is None:
                errors = self.transport_errors
                detail = f": {errors[-1]}" if errors else ""
                self.wire.broken = f"{self.label}: the connection closed{detail}"
            else:
                with anyio.move_on_after(_EXIT_WAIT):
                    await process.wait()
                code = process.returncode
                status = "is still running" if code is None else f"exited with code {code}"
                self.wire.broken = f"{self.label} closed its output and {status}" + _stderr(
                    self.wire
                )
        return self.wire.broken


def _error(message: str) -> ToolResult:
    return ToolResult(f"error: {message}", is_error=True)


def _stderr(wire: _Wire) -> str:
    tail = wire.stderr.text().strip()
    return f"; the end of its stderr:\n{tail}" if tail else ""


@asynccontextmanager
async def connect(server: MCPServer, workspace: Path | None) -> AsyncIterator[Connection]:
    """Start `server`, initialise it and list its tools within its `startup_timeout`;
    `ServerStartError` says what went wrong. Leaving the block stops the server."""
    wire = _Wire()
    transport_errors: list[str] = []

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):
            transport_errors.append(f"{type(message).__name__}: {_clip(str(message), 500)}")

    failure: str | None = None
    async with AsyncExitStack() as stack:
        try:
            if server.command is not None:
                streams = await stack.enter_async_context(_stdio(server, workspace, wire))
            else:
                streams = await stack.enter_async_context(_http(server))
            session = await stack.enter_async_context(
                ClientSession(
                    streams[0],
                    streams[1],
                    message_handler=on_message,
                    client_info=mcp_types.Implementation(
                        name="completion-harness", version="0.1.0"
                    ),
                )
            )
            # The deadline covers the exchange only: a scope around the entered contexts
            # (each holds a task group) could not be left before they are.
            with anyio.fail_after(server.startup_timeout):
                await session.initialize()
                tools = await _list_tools(session)
        except TimeoutError:
            failure = f"did not start within {server.startup_timeout:g}s (startup_timeout)" + (
                f": {wire.broken}" if wire.broken else ""
            )
        except ServerStartError as exc:
            failure = str(exc)
        except Exception as exc:
            leaf = _leaf(exc)
            why = wire.broken or f"{type(leaf).__name__}: {_clip(str(leaf), 500)}"
            failure = f"could not be started: {why}"
        if failure is None:
            yield Connection(server, session, wire, tools, transport_errors)
            return
    # Read after the stack closed: the server has exited and its stderr is complete.
    raise ServerStartError(failure + _last(transport_errors) + _stderr(wire))


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _last(errors: list[str]) -> str:
    return f" (the transport reported {errors[-1]})" if errors else ""


async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        params = None if cursor is None else mcp_types.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def _http(server: MCPServer) -> AsyncIterator[Any]:
    assert server.url is not None
    timeout = httpx2.Timeout(_HTTP_TIMEOUT, read=max(server.timeout, _HTTP_TIMEOUT))
    # Mounted for every URL, below any proxy the environment names (those still apply): see
    # `_http_streams` for what it closes that httpx2 leaves open.
    mounts = {"all://": closing_transport()}
    async with (
        httpx2.AsyncClient(headers=dict(server.headers), timeout=timeout, mounts=mounts) as client,
        streamable_http_client(server.url, http_client=client) as streams,
    ):
        yield streams


@asynccontextmanager
async def _stdio(server: MCPServer, workspace: Path | None, wire: _Wire) -> AsyncIterator[Streams]:
    assert server.command is not None
    env = minimal_env(
        {**{n: os.environ[n] for n in server.pass_env if n in os.environ}, **server.env}
    )
    cwd = server.cwd if server.cwd is not None else workspace
    argv = _contained(list(server.command))
    try:
        # Shielded: a cancel landing after the fork but before the handle exists would leak it.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
    except OSError as exc:
        raise ServerStartError(
            f"could not be started: {server.command[0]}: {exc.strerror or exc}"
        ) from None
    wire.process = process
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_read_stdout, process, read_send, wire, server.name)
        tg.start_soon(_write_stdin, process, write_receive, read_send)
        tg.start_soon(_read_stderr, process, wire)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            tg.cancel_scope.cancel()
            for stream in (read_send, read_receive, write_send, write_receive):
                stream.close()


async def _read_stdout(
    process: Process,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    wire: _Wire,
    name: str,
) -> None:
    """Each line a JSON-RPC message to the session; anything else breaks the connection (the
    stream closes, so every waiting call ends at once)."""
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    async with send:
        while True:
            try:
                line = await lines.receive_until(b"\n", MAX_LINE)
            except anyio.DelimiterNotFound:
                wire.broken = (
                    f"MCP server {name!r} wrote a line longer than {MAX_LINE:,} bytes on stdout"
                )
                return
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                return
            except anyio.BrokenResourceError:
                return
            if not line.strip():
                continue
            try:
                message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError:
                shown = _clip(line.decode("utf-8", errors="replace"))
                wire.broken = (
                    f"MCP server {name!r} wrote something that is not JSON-RPC on stdout "
                    f"(the connection is closed): {shown!r}"
                )
                return
            try:
                await send.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


async def _write_stdin(
    process: Process,
    receive: MemoryObjectReceiveStream[SessionMessage],
    read_send: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdin is not None
    try:
        async with receive:
            async for message in receive:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(data.encode() + b"\n")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: end the session's input too, or a call would wait on.
        read_send.close()


async def _read_stderr(process: Process, wire: _Wire) -> None:
    assert process.stderr is not None
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in process.stderr:
            wire.stderr.feed(chunk)


async def _stop(process: Process) -> None:
    """EOF on stdin, `CLOSE_GRACE` to exit, then SIGTERM to the group (the supervisor stops
    the whole tree within its grace), then SIGKILL to whatever is left."""
    assert process.stdin is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    with anyio.move_on_after(CLOSE_GRACE):
        await process.wait()
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE + 1.0):
            await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    with anyio.move_on_after(KILL_GRACE):
        await process.wait()
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.aclose()


def render_result(result: mcp_types.CallToolResult, max_output: int) -> ToolResult:
    """What the model sees of a tool's result: its text blocks joined, every other block as a
    short description (never dropped), the structured content as JSON when there is no text,
    cut in the middle to `max_output` characters; ``isError`` makes it an error result."""
    parts: list[str] = []
    has_text = False
    for block in result.content:
        kind = getattr(block, "type", "?")
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
            has_text = True
        elif kind in ("image", "audio"):
            data = getattr(block, "data", "")
            size = math.floor(len(data) * 3 / 4)
            mime = getattr(block, "mime_type", "?")
            parts.append(f"[{kind} content: {mime}, about {size:,} bytes, not shown]")
        elif kind == "resource_link":
            uri, name = getattr(block, "uri", "?"), getattr(block, "name", "")
            parts.append(f"[resource link: {uri}" + (f" ({name})]" if name else "]"))
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            uri = getattr(resource, "uri", "?")
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(f"[resource {uri}]\n{text}")
                has_text = True
            else:
                mime = getattr(resource, "mime_type", None) or "binary"
                parts.append(f"[resource {uri}: {mime}, not shown]")
        else:
            parts.append(f"[{kind} content, not shown]")
    if not has_text and result.structured_content is not None:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = cut_middle("\n".join(parts), max_output)
    if result.is_error:
        return ToolResult(f"error: {text or 'the tool failed and said nothing'}", is_error=True)
    return ToolResult(text or "(no content)")


def cut_middle(text: str, limit: int) -> str:
    """`text`, or its first and last `limit` / 2 characters with a marker saying how many
    characters were cut between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - limit
    return (
        f"{text[:half]}\n[... {cut:,} characters cut here ({len(text):,} in all) ...]\n"
        f"{text[len(text) - (limit - half) :]}"
    )


CLOSE_LIMIT = 10.0  # seconds closing one server may take before it is abandoned


@asynccontextmanager
async def hosted(server: MCPServer, workspace: Path | None) -> AsyncIterator[Connection]:
    """`connect`, held by a task of its own for as long as the block runs.

    The SDK runs a transport's requests in the transport's task group, so a network error on
    one (an HTTP server gone mid-run) fails that group, and the task that entered it would be
    cancelled with it: the run's own task, were it that one. Held here, such a failure breaks
    the connection (every call is then an error result) and the run goes on. The close is
    shielded from the run's cancellation and bounded by `CLOSE_LIMIT`.
    """
    closing = anyio.Event()
    holder: list[Connection] = []

    async def own(*, task_status: TaskStatus[Connection]) -> None:
        # Entered before the connection and left after it, so that it can shield and bound
        # the close (a scope around the close alone would not nest with its task groups).
        with anyio.CancelScope() as scope:
            try:
                async with connect(server, workspace) as connection:
                    holder.append(connection)
                    task_status.started(connection)
                    try:
                        await closing.wait()
                    finally:
                        scope.shield = True
                        scope.deadline = anyio.current_time() + CLOSE_LIMIT
            except ServerStartError:
                raise
            except Exception as exc:
                leaf = _leaf(exc)
                why = f"{type(leaf).__name__}: {_clip(str(leaf), 500)}"
                if not holder:  # before the start was reported: the start failed
                    raise ServerStartError(f"could not be started: {why}") from None
                wire = holder[0].wire
                if wire.broken is None:
                    wire.broken = f"MCP server {server.name!r}: the connection failed: {why}"

    try:
        async with anyio.create_task_group() as group:
            connection = await group.start(own)
            try:
                yield connection
            finally:
                closing.set()
    except* ServerStartError as failed:
        # The task group reports the failed start as a group of one.
        raise failed.exceptions[0] from None
