"""The one registry of built-in tools: their names, and the tools themselves on demand.

A spec names tools by these names; `workspace_tools` is the standard set. The tools' modules
load with the first call that asks for one, not with the names (a spec is read at every stop
of a coding agent, for its checks alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import ConfigurationError

if TYPE_CHECKING:
    from .._process._sandbox import CommandSandbox
    from ._base import Tool

BUILTIN_TOOL_NAMES = (
    "read_file",
    "list_files",
    "search_files",
    "write_file",
    "edit_file",
    "update_plan",
)
"""The built-in tools a spec may name, in the order the reference lists them."""


def builtin_tools() -> dict[str, Tool]:
    """The built-in tools by name (see `BUILTIN_TOOL_NAMES`)."""
    from ._builtin import list_files, read_file, write_file
    from ._edit import edit_file, search_files
    from ._plan import update_plan

    tools = (read_file, list_files, search_files, write_file, edit_file, update_plan)
    return {t.name: t for t in tools}


def workspace_tools(
    *, shell: bool = False, sandbox: CommandSandbox | None = None, **shell_options: Any
) -> list[Tool]:
    """The standard workspace tools: `read_file`, `list_files`, `search_files` (read-only),
    `write_file` and `edit_file`; with `shell`, `run_command` too, run under `sandbox` (local
    without one) with `shell_options` (see `run_command_tool`)."""

    from ._builtin import list_files, read_file, write_file
    from ._edit import edit_file, search_files

    tools = [read_file, list_files, search_files, write_file, edit_file]
    if shell:
        from ._shell import run_command_tool

        tools.append(run_command_tool(sandbox, **shell_options))
    elif sandbox is not None or shell_options:
        raise ConfigurationError("a sandbox or shell options were given but shell=False")
    return tools
