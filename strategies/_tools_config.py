"""A spec's ``[tools]`` table: which workspace tools the agent gets, and its shell.

``tools`` in a spec is either a list of tool names (as before) or this table::

    [tools]
    names = ["read_file", "list_files", "search_files", "write_file", "edit_file"]
    shell = true                 # adds run_command
    sandbox = "bubblewrap"       # where its commands run, as a check's sandbox
    timeout = 60

The shell is off unless ``shell = true``; its settings are `run_command_tool`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checks import sandbox_by_name
from checks.extend import SANDBOXES
from harness import ConfigurationError, Tool, run_command_tool
from harness.extend import CommandSandbox, Key, Schema

WORKSPACE_TOOL_NAMES = ("read_file", "list_files", "search_files", "write_file", "edit_file")
_SHELL_KEYS = ("sandbox", "timeout", "max_timeout", "max_output", "pass_env")

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
            see=SANDBOXES,
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
    options = {k: table[k] for k in _SHELL_KEYS if k in table and k != "sandbox"}
    sandbox = _sandbox(table.get("sandbox", "local"), f"{where}.sandbox")
    return run_command_tool(sandbox, **options)


def _sandbox(value: object, where: str) -> CommandSandbox:
    if isinstance(value, str):
        return sandbox_by_name(value)
    assert isinstance(value, dict)  # the schema allows a string or a table
    table = {**value, "type": "bubblewrap"} if value.get("type") == "bwrap" else value
    name, options = SANDBOXES.validate(table, where)
    return sandbox_by_name(name, **options)
