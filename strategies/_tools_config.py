"""A spec's ``[tools]`` table: which workspace tools the agent gets, and its shell.

``tools`` in a spec is either a list of tool names (as before) or this table::

    [tools]
    names = ["read_file", "list_files", "search_files", "write_file", "edit_file"]
    shell = true                 # adds run_command
    sandbox = "bubblewrap"       # where its commands run, as a check's sandbox
    timeout = 60

The shell is off unless ``shell = true``; its settings are `run_command_tool`'s.

MCP servers are an array of tables beside it, ``[[mcp]]``, each an `MCPServer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import ConfigurationError
from harness.extend import REQUIRED, Key, Schema, Variants

if TYPE_CHECKING:
    from harness import MCPServer, Tool
    from harness.extend import CommandSandbox

WORKSPACE_TOOL_NAMES = ("read_file", "list_files", "search_files", "write_file", "edit_file")
_SHELL_KEYS = ("sandbox", "timeout", "max_timeout", "max_output", "pass_env")


def _sandboxes() -> Variants:
    """The sandbox tables' schema, loaded for a shell's table or the reference."""
    from checks.extend import SANDBOXES

    return SANDBOXES


TOOLS = Schema(
    "the tools table",
    [
        Key(
            "names",
            "array",
            "Tool names, as the top-level list form takes them (built in, or `module:function`).",
            default=WORKSPACE_TOOL_NAMES,
        ),
        Key(
            "shell",
            "boolean",
            "Offer `run_command`: a shell command in the workspace, under `sandbox`, with a "
            "timeout, its process tree killed at the end, its output cut in the middle and no "
            "provider keys in its environment.",
            default=False,
        ),
        Key(
            "sandbox",
            ("string", "table"),
            "Where `run_command`'s commands run, as a check's `sandbox`: `\"local\"`, "
            '`"bubblewrap"`, or a table with `type` and its settings.',
            default_text='`"local"`',
            see=_sandboxes,
        ),
        Key(
            "timeout",
            "number",
            "Seconds a command may run unless the agent asks for another time.",
            default=60.0,
        ),
        Key(
            "max_timeout",
            "number",
            "The most seconds the agent may ask a command to run.",
            default=600.0,
        ),
        Key(
            "max_output",
            "integer",
            "Characters of a command's output the agent sees (half from its start, half from "
            "its end).",
            default=16000,
        ),
        Key(
            "pass_env",
            "array of strings",
            "Variables copied from the harness's environment into the commands' (names that "
            "look like credentials, with KEY, TOKEN, SECRET, PASSWORD..., are refused).",
            default=(),
        ),
    ],
    heading="[tools]",
    help="`tools` is a list of tool names, or this table. The shell (`run_command`) is off "
    "unless `shell = true`; the other settings here are the shell's.",
)


def tool_names(table: Mapping[str, Any]) -> object:
    """The names a validated ``[tools]`` table lists (the five workspace tools by default)."""
    return table.get("names", list(WORKSPACE_TOOL_NAMES))


def shell_tool(table: Mapping[str, Any], where: str) -> Tool | None:
    """The `run_command` tool a validated ``[tools]`` table asks for, or None without
    ``shell = true``. Shell settings without the shell are an error (they would do nothing)."""
    given = [k for k in _SHELL_KEYS if k in table]
    if not table.get("shell", False):
        if given:
            raise ConfigurationError(
                f"{where}.{given[0]} is set but the shell is off (set shell = true)"
            )
        return None
    from harness import run_command_tool  # the shell's module loads only for a spec that has one

    options = {k: table[k] for k in _SHELL_KEYS if k in table and k != "sandbox"}
    sandbox = _sandbox(table.get("sandbox", "local"), f"{where}.sandbox")
    return run_command_tool(sandbox, **options)


def _sandbox(value: object, where: str) -> CommandSandbox:
    from checks import sandbox_by_name  # the sandboxes load only for a spec with a shell

    if isinstance(value, str):
        return sandbox_by_name(value)
    assert isinstance(value, dict)  # the schema allows a string or a table
    table = {**value, "type": "bubblewrap"} if value.get("type") == "bwrap" else value
    name, options = _sandboxes().validate(table, where)
    return sandbox_by_name(name, **options)


MCP = Schema(
    "an MCP server",
    [
        Key(
            "name",
            "string",
            "The server's name; its tools are offered as `<name>__<tool>` (letters, digits, "
            "`_` and `-`).",
            default=REQUIRED,
        ),
        Key(
            "command",
            ("string", "array of strings"),
            "A stdio server: the program (or its argv) the run starts. Give `command` or `url`.",
        ),
        Key("args", "array of strings", "Arguments after `command`.", default=()),
        Key(
            "env",
            "table",
            "Variables set for a stdio server, on top of PATH, HOME and LANG (nothing else of "
            "the harness's environment reaches it unless listed here or in `pass_env`).",
            default_text="none",
        ),
        Key(
            "pass_env",
            "array of strings",
            "Variables copied from the harness's environment into a stdio server's (a token "
            "the server needs, say).",
            default=(),
        ),
        Key(
            "cwd",
            "string",
            "A stdio server's working folder (relative to the spec file).",
            default_text="the workspace",
        ),
        Key("url", "string", "A streamable HTTP server's endpoint. Give `command` or `url`."),
        Key("headers", "table", "HTTP headers sent to an HTTP server.", default_text="none"),
        Key(
            "tools",
            "array of strings",
            "Only these of the server's tools (as the server names them) are offered.",
            default_text="all",
        ),
        Key(
            "prefix",
            "string",
            "Put in front of the server's tool names instead of `<name>__`.",
            default_text="`<name>__`",
        ),
        Key("timeout", "number", "Seconds one call may take.", default=60.0),
        Key(
            "startup_timeout",
            "number",
            "Seconds the server has to start and list its tools.",
            default=30.0,
        ),
        Key(
            "max_output",
            "integer",
            "Characters of a result the agent sees (half from its start, half from its end).",
            default=16000,
        ),
    ],
    heading="[[mcp]]",
    help="An MCP server whose tools the agent gets (needs the `mcp` extra). The run starts it "
    "before the first model call and stops it when the run ends; see docs/mcp.md.",
)
_STDIO_ONLY = ("args", "env", "pass_env", "cwd")


def mcp_servers(tables: object, base: Path, where: str) -> tuple[MCPServer, ...]:
    """The servers of a spec's ``[[mcp]]`` array; an error names `where`, the table's index
    and the key (``spec.toml: mcp[1].url``)."""
    if not isinstance(tables, list):
        raise ConfigurationError(f"{where} must be an array of tables ([[mcp]])")

    servers = tuple(_mcp_server(t, base, f"{where}[{i}]") for i, t in enumerate(tables))
    for index, server in enumerate(servers):
        if any(other.name == server.name for other in servers[:index]):
            raise ConfigurationError(
                f"{where}[{index}].name: two MCP servers are named {server.name!r}"
            )
    return servers


def _mcp_server(table: object, base: Path, where: str) -> MCPServer:
    from harness import MCPServer  # MCP's modules load only for a spec that has servers

    if not isinstance(table, dict):
        raise ConfigurationError(f"{where} must be a table (got {table!r})")
    settings = MCP.validate(table, where)
    if ("command" in settings) == ("url" in settings):
        raise ConfigurationError(f"{where}: give exactly one of 'command' and 'url'")
    for key in ("env", "headers"):
        bad = [k for k, v in settings.get(key, {}).items() if not isinstance(v, str)]
        if bad:
            raise ConfigurationError(f"{where}.{key}.{bad[0]} must be a string")
    if "url" in settings:
        given = [k for k in _STDIO_ONLY if k in settings]
        if given:
            raise ConfigurationError(f"{where}.{given[0]}: only a stdio server (command) takes it")
    elif "headers" in settings:
        raise ConfigurationError(f"{where}.headers: only an HTTP server (url) takes headers")
    common = {
        k: settings[k]
        for k in ("tools", "prefix", "timeout", "startup_timeout", "max_output")
        if k in settings
    }
    try:
        if "url" in settings:
            return MCPServer.http(
                settings["name"], settings["url"], headers=settings.get("headers"), **common
            )
        cwd = settings.get("cwd")
        return MCPServer.stdio(
            settings["name"],
            settings["command"],
            args=settings.get("args", ()),
            env=settings.get("env"),
            pass_env=settings.get("pass_env", ()),
            cwd=None if cwd is None else (base / cwd).resolve(),
            **common,
        )
    except ConfigurationError as exc:
        # MCPServer names itself ("MCP server 'x': ..."); the spec names the table too.
        raise ConfigurationError(f"{where}: {exc}") from None
