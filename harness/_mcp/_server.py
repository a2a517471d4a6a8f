"""`MCPServer`: a Model Context Protocol server whose tools the agent may call.

A server is a stdio command (`MCPServer.stdio`) or a streamable HTTP endpoint
(`MCPServer.http`). This module holds the configuration only and imports nothing of the SDK:
the connection lives in `harness._mcp._connection`, loaded when a run starts a server, so
``import harness`` stays as fast without the ``mcp`` extra as with it.

The model sees each tool as ``<prefix><tool>`` (the prefix is ``<name>__`` unless given), with
the description and input schema the server lists, unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import field, frozen

from .._errors import ConfigurationError
from .._validate import check_positive, got

DEFAULT_TIMEOUT = 60.0
DEFAULT_STARTUP_TIMEOUT = 30.0
MAX_OUTPUT = 16_000  # characters of a result the model sees at most, head and tail together

_SERVER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_-]{0,40}$")
_EXTRA_HINT = "pip install 'completion-harness[mcp]'"


def _strings(owner: str, key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigurationError(f"{owner}: {key!r} must be a list of strings (got {got(value)})")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigurationError(f"{owner}: {key}[{index}] must be a string (got {got(item)})")
    return tuple(value)


def _mapping(owner: str, key: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{owner}: {key!r} must map names to strings (got {got(value)})")
    for name, item in value.items():
        if not isinstance(name, str) or not isinstance(item, str):
            raise ConfigurationError(
                f"{owner}: {key!r} must map names to strings (got {name!r}: {item!r})"
            )
    return dict(value)


@frozen(kw_only=True)
class MCPServer:
    """One MCP server of a run: how to reach it and which of its tools the agent gets.

    Build it with `MCPServer.stdio` or `MCPServer.http`. A run starts each of its servers
    once, before the first model call, shares them between its sessions and closes them when
    it ends, however it ends; a stdio server's whole process tree is stopped then.
    """

    name: str
    command: tuple[str, ...] | None = None
    """The stdio server's argv (the command, then its arguments); None for an HTTP server."""
    url: str | None = None
    env: Mapping[str, str] = field(factory=dict)
    pass_env: tuple[str, ...] = ()
    cwd: Path | None = None
    headers: Mapping[str, str] = field(factory=dict, repr=False)
    tools: tuple[str, ...] | None = None
    prefix: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    max_output: int = MAX_OUTPUT

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not _SERVER_NAME.match(self.name):
            raise ConfigurationError(
                f"an MCP server's 'name' must match {_SERVER_NAME.pattern} (got {self.name!r})"
            )
        owner = f"MCP server {self.name!r}"
        if (self.command is None) == (self.url is None):
            raise ConfigurationError(f"{owner}: give either a command or a url, not both")
        if self.command is not None and (not self.command or not self.command[0]):
            raise ConfigurationError(f"{owner}: the command is empty")
        if self.url is not None and not re.match(r"^https?://[^\s/]+", self.url):
            raise ConfigurationError(
                f"{owner}: 'url' must be an http:// or https:// URL (got {self.url!r})"
            )
        if self.prefix is not None and (
            not isinstance(self.prefix, str) or not _PREFIX.match(self.prefix)
        ):
            raise ConfigurationError(
                f"{owner}: 'prefix' must match {_PREFIX.pattern} (got {self.prefix!r})"
            )
        check_positive("timeout", self.timeout, owner=owner)
        check_positive("startup_timeout", self.startup_timeout, owner=owner)
        check_positive("max_output", self.max_output, integer=True, owner=owner)

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str | Sequence[str],
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        cwd: str | Path | None = None,
        tools: Sequence[str] | None = None,
        prefix: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        max_output: int = MAX_OUTPUT,
    ) -> MCPServer:
        """A server the run starts as a child process and talks to over its stdin and stdout.

        `command` is the program (or an argv), `args` follow it. The server's environment is
        PATH, HOME and LANG, plus `env`, plus the variables `pass_env` names copied from this
        process: nothing else (no provider keys) unless listed. `cwd` defaults to the run's
        workspace (or this process's folder when the run has none). `tools` keeps only the
        tools named (as the server names them); `prefix` replaces ``<name>__`` in front of
        them. `timeout` bounds each call, `startup_timeout` the start and the listing.
        """
        owner = f"MCP server {name!r}"
        argv = [command] if isinstance(command, str) else list(_strings(owner, "command", command))
        argv += _strings(owner, "args", args)
        return cls(
            name=name,
            command=tuple(argv),
            env=_mapping(owner, "env", env or {}),
            pass_env=_strings(owner, "pass_env", pass_env),
            cwd=None if cwd is None else Path(cwd),
            tools=None if tools is None else _strings(owner, "tools", tools),
            prefix=prefix,
            timeout=timeout,
            startup_timeout=startup_timeout,
            max_output=max_output,
        )

    @classmethod
    def http(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        tools: Sequence[str] | None = None,
        prefix: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        max_output: int = MAX_OUTPUT,
    ) -> MCPServer:
        """A server reached over streamable HTTP at `url`, sending `headers` with every
        request (an ``Authorization`` header, say). The other settings are `stdio`'s."""
        owner = f"MCP server {name!r}"
        if not isinstance(url, str):
            raise ConfigurationError(f"{owner}: 'url' must be a string (got {got(url)})")
        return cls(
            name=name,
            url=url,
            headers=_mapping(owner, "headers", headers or {}),
            tools=None if tools is None else _strings(owner, "tools", tools),
            prefix=prefix,
            timeout=timeout,
            startup_timeout=startup_timeout,
            max_output=max_output,
        )

    @property
    def tool_prefix(self) -> str:
        """What goes in front of each of its tools' names: `prefix`, else ``<name>__``."""
        return f"{self.name}__" if self.prefix is None else self.prefix

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


def check_servers(servers: object) -> tuple[MCPServer, ...]:
    """`servers` as a tuple, each an `MCPServer` and no two named alike."""
    if isinstance(servers, MCPServer) or not isinstance(servers, Sequence):
        raise ConfigurationError(f"'mcp_servers' must be a list of MCPServer (got {got(servers)})")
    names: set[str] = set()
    for index, server in enumerate(servers):
        if not isinstance(server, MCPServer):
            raise ConfigurationError(
                f"mcp_servers[{index}] must be an MCPServer, from MCPServer.stdio(...) or "
                f"MCPServer.http(...) (got {got(server)})"
            )
        if server.name in names:
            raise ConfigurationError(f"two MCP servers are named {server.name!r}")
        names.add(server.name)
    return tuple(servers)


def require_sdk() -> None:
    """Raise `ConfigurationError` saying which extra to install when the MCP SDK is missing."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise ConfigurationError(f"MCP servers need the official MCP Python SDK: {_EXTRA_HINT}")
