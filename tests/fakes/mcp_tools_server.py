"""A small MCP server written with the official SDK, for tests: ``python mcp_tools_server.py``
serves over stdio; ``python mcp_tools_server.py http`` serves streamable HTTP on 127.0.0.1 at a
port the system picks, and prints ``PORT <n>`` on stdout once it listens.

Its tools cover what the harness must render: text, structured results, an image, a tool error,
a slow call, a crash, a grandchild that leaves the process group, and terminal escapes.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ImageContent, TextContent

server = MCPServer("test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(message: str) -> str:
    """Always fail with `message`."""
    raise ValueError(message)


@server.tool(structured_output=False)
def picture() -> list[TextContent | ImageContent]:
    """A caption and a tiny PNG."""
    return [
        TextContent(type="text", text="a red dot"),
        ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
    ]


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Exit the whole server at once."""
    os._exit(3)


@server.tool()
def detach(pidfile: str) -> str:
    """Start a process in a session of its own (outside this server's process group) that
    sleeps for an hour, and write its pid to `pidfile`."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(3600)"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with open(pidfile, "w") as handle:
        handle.write(str(child.pid))
    return f"started {child.pid}"


@server.tool()
def shout() -> str:
    """Text with terminal escape sequences in it."""
    return "\x1b[31mred\x1b[0m \x1b]0;title\x07done"


@server.tool()
def big(size: int) -> str:
    """`size` characters of text."""
    return "x" * size


@server.tool()
def clock() -> float:
    """This process's monotonic clock (a server that answers differently every time)."""
    return time.monotonic()


def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn_server = uvicorn.Server(config)

    async def run() -> None:
        serving = asyncio.ensure_future(uvicorn_server.serve(sockets=[sock]))
        while not uvicorn_server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.01)
        print(f"PORT {port}", flush=True)
        await serving

    asyncio.run(run())


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run()
