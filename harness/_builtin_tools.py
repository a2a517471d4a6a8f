"""Workspace tools an agent usually needs: read, list and write files inside the workspace."""

from __future__ import annotations

from pathlib import Path

from ._tools import Tool, ToolContext, tool
from ._workspace import resolve_in_workspace

_MAX_READ = 200_000


def _root(ctx: ToolContext) -> Path:
    if ctx.workspace is None:
        raise RuntimeError("this run has no workspace")
    return ctx.workspace


def _read_file(path: str, ctx: ToolContext) -> str:
    """Read a text file in the workspace.

    Args:
        path: the file's path, relative to the workspace
    """
    target = resolve_in_workspace(_root(ctx), path)
    data = target.read_text(encoding="utf-8", errors="replace")
    if len(data) > _MAX_READ:
        return data[:_MAX_READ] + f"\n[... truncated: {len(data) - _MAX_READ} more characters]"
    return data


def _list_files(ctx: ToolContext, path: str = ".") -> str:
    """List the files under a folder of the workspace, one relative path a line.

    Args:
        path: the folder, relative to the workspace
    """
    root = _root(ctx).resolve()
    base = resolve_in_workspace(root, path)
    names = sorted(
        str(p.relative_to(root)) for p in base.rglob("*") if p.is_file() and ".git" not in p.parts
    )
    return "\n".join(names) if names else "(no files)"


def _write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Create or overwrite a text file in the workspace.

    Args:
        path: the file's path, relative to the workspace
        content: the whole new content of the file
    """
    target = resolve_in_workspace(_root(ctx), path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return f"wrote {len(content.encode())} bytes to {path}"


read_file: Tool = tool(name="read_file", read_only=True)(_read_file)
list_files: Tool = tool(name="list_files", read_only=True)(_list_files)
write_file: Tool = tool(name="write_file")(_write_file)


def workspace_tools() -> list[Tool]:
    """The standard file tools: `read_file`, `list_files` (read-only) and `write_file`."""
    return [read_file, list_files, write_file]
