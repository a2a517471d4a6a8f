"""Workspace tools an agent usually needs: read, list and write files inside the workspace.

Every file is opened through `open_in_workspace` (a descriptor walk that never follows a link
out of the workspace, see `harness._fs._workspace`), and what a tool returns is bounded: it reads
only what it returns.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from .._fs._workspace import open_in_workspace
from ._base import Tool, ToolContext, tool

if TYPE_CHECKING:
    pass

MAX_READ = 200_000  # bytes `read_file` returns at most in one call
MAX_LIST = 200_000  # characters of paths `list_files` returns at most
# Opening a FIFO does not wait for its other end: the file's type is then checked and refused.
_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)


def _root(ctx: ToolContext) -> Path:
    if ctx.workspace is None:
        raise RuntimeError("this run has no workspace")
    return ctx.workspace


def _read_file(path: str, ctx: ToolContext, offset: int = 0, limit: int = MAX_READ) -> str:
    """Read a text file in the workspace (at most 200,000 bytes a call; a longer file is cut
    at a line end, and the result says which offset to read on from).

    Args:
        path: the file's path, relative to the workspace
        offset: the byte to start at (0: the beginning)
        limit: how many bytes to read at most (at most 200,000)
    """
    if offset < 0:
        raise ValueError(f"'offset' must be >= 0 (got {offset})")
    if limit < 1:
        raise ValueError(f"'limit' must be >= 1 (got {limit})")
    fd, _ = open_in_workspace(_root(ctx), path, os.O_RDONLY | _NONBLOCK)
    try:
        size = _require_file(fd, path).st_size
        if offset > size:
            raise ValueError(f"'offset' {offset} is past the end of {path!r} ({size} bytes)")
        data = _read_at(fd, offset, min(limit, MAX_READ))
        if offset + len(data) < size:
            cut = _cut(data)
            # A limit shorter than one character returns that character whole.
            data = data[:cut] if cut else _read_at(fd, offset, _width(data[0]))
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    end = offset + len(data)
    if end >= size:
        return text
    return (
        f"{text}\n[... truncated: this is bytes {offset}-{end} of {size}; "
        f"call read_file with offset={end} to read on]"
    )


def _require_file(fd: int, path: str) -> os.stat_result:
    """The file's status; a folder, a FIFO or a device is refused (reading one could block or
    never end)."""
    status = os.fstat(fd)
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(f"{path!r} is a folder")
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"{path!r} is not a regular file")
    return status


def _read_at(fd: int, offset: int, count: int) -> bytes:
    """Up to `count` bytes from `offset` (fewer only at the end of the file)."""
    chunks: list[bytes] = []
    while count > 0:
        chunk = os.pread(fd, count, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def _cut(data: bytes) -> int:
    """Where to cut a chunk that does not reach the end of the file: after its last line end
    when that is in its second half, else before the character the end would split (0 when
    the chunk is less than one character)."""
    newline = data.rfind(b"\n")
    if newline >= len(data) // 2:
        return newline + 1
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead & 0xC0 != 0x80:  # the last character starts `back` bytes from the end
            return len(data) - back if _width(lead) > back else len(data)
    return len(data)  # not UTF-8 there: cut anywhere


def _width(lead: int) -> int:
    """The length of the UTF-8 character that starts with byte `lead`."""
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _list_files(ctx: ToolContext, path: str = ".") -> str:
    """List the files under a folder of the workspace, one relative path a line.

    Args:
        path: the folder, relative to the workspace
    """
    root = _root(ctx)
    fd, base = open_in_workspace(root, path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        prefix = base.relative_to(root.resolve())
        names: list[str] = []
        for folder, dirnames, filenames, _ in os.fwalk(dir_fd=fd, follow_symlinks=False):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in filenames:
                if name != ".git":
                    names.append(os.path.normpath(os.path.join(prefix, folder, name)))
    finally:
        os.close(fd)
    if not names:
        return "(no files)"
    names.sort()
    text = "\n".join(names)
    if len(text) <= MAX_LIST:
        return text
    cut = text.rfind("\n", 0, MAX_LIST)
    shown = text[:cut].count("\n") + 1
    return (
        text[:cut] + f"\n[... truncated: {len(names) - shown} more files; list a subfolder to "
        "see them]"
    )


def _write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Create or overwrite a text file in the workspace.

    Args:
        path: the file's path, relative to the workspace
        content: the whole new content of the file
    """
    data = content.encode("utf-8")
    refuse_protected(ctx, path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NONBLOCK
    fd, _ = open_in_workspace(_root(ctx), path, flags, make_parents=True)
    try:
        _require_file(fd, path)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return f"wrote {len(data)} bytes to {path}"


def refuse_protected(ctx: ToolContext, path: str) -> None:
    """Refuse a write to a protected path, by the name given or where its links lead.

    A first line of defence, for the agent's benefit: the record taken when the run started
    is what catches a change by any other route (a shell, a link made later)."""
    protected = ctx.protected
    if not protected:
        return
    root = _root(ctx)
    written = Path(os.path.normpath(path))
    lexical = written if not written.is_absolute() else _inside(root, written)
    real = _inside(root.resolve(), Path(os.path.realpath(root / path)))
    for relative in (lexical, real):
        rule = protected.rule_for(relative.as_posix()) if relative is not None else None
        if rule is not None:
            raise PermissionError(
                f"{path} is protected by the rule {rule!r}: it judges the work and may not be "
                "changed. Change the code, not the verifier."
            )


def _inside(root: Path, path: Path) -> Path | None:
    try:
        return path.relative_to(root)
    except ValueError:
        return None


read_file: Tool = tool(name="read_file", read_only=True)(_read_file)
list_files: Tool = tool(name="list_files", read_only=True)(_list_files)
write_file: Tool = tool(name="write_file")(_write_file)
