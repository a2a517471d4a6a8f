"""Helpers for the MCP tests: the SDK server script, hostile servers, and a completion check."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import MCPServer, SessionStateSnapshot

FAKES = Path(__file__).resolve().parents[2] / "fakes"
SDK_SERVER = FAKES / "mcp_tools_server.py"
HOSTILE = FAKES / "mcp_hostile.py"
# The SDK server imports the SDK, about a second and a half on a quiet machine: generous for
# a loaded one. Hang tests set short timeouts of their own.
STARTUP = 60.0


def sdk_server(name: str = "calc", **options: Any) -> MCPServer:
    """The SDK's stdio server of `fakes/mcp_tools_server.py`."""
    options.setdefault("startup_timeout", STARTUP)
    return MCPServer.stdio(name, sys.executable, args=[str(SDK_SERVER)], **options)


def hostile(mode: str, name: str = "bad", **options: Any) -> MCPServer:
    """A hand-written stdio server that misbehaves as `mode` says (see `fakes/mcp_hostile.py`)."""
    options.setdefault("startup_timeout", STARTUP)
    return MCPServer.stdio(name, sys.executable, args=[str(HOSTILE), mode], **options)


@contextmanager
def http_server() -> Iterator[str]:
    """The SDK server over streamable HTTP on loopback; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, str(SDK_SERVER), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), f"the HTTP server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


class Answered:
    """Complete when the agent's final answer contains `needle`."""

    def __init__(self, needle: str) -> None:
        self.needle = needle

    def description(self) -> str:
        return f"the final answer says {self.needle!r}"

    async def check(self, state: SessionStateSnapshot) -> str | None:
        if state.final_text is not None and self.needle in state.final_text:
            return None
        return f"the final answer does not say {self.needle!r}"
