"""`edit_file` and `search_files`: change a file by exact replacement, find text by pattern.

Both reach files only through the workspace's descriptor walk (`open_in_workspace`, and for the
search `os.fwalk` from a folder descriptor opened that way), so no path or link takes them
outside the workspace. What they read is bounded: `edit_file` refuses a file larger than
`MAX_EDIT`, `search_files` reads at most `MAX_SEARCH_READ` bytes of each file and returns at
most `MAX_MATCHES` lines.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from .._fs._not_work import NOT_WORK
from .._fs._workspace import open_in_workspace
from ._base import Tool, ToolContext, tool
from ._builtin import refuse_protected
from ._edit_hint import miss_hint

MAX_EDIT = 4_000_000  # bytes: a larger file is refused by edit_file
MAX_SEARCH_READ = 1_000_000  # bytes of each file search_files reads at most
MAX_MATCHES = 200  # lines search_files returns at most
MAX_LINE = 300  # characters of a matching line shown
MAX_SEARCH_OUTPUT = 40_000  # characters search_files returns at most
IGNORED_DIRS = NOT_WORK  # search_files does not search the folders that are not work
_BINARY_PROBE = 8192  # a NUL byte in a file's first bytes marks it binary
_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)


def _edit_file(path: str, old: str, new: str, ctx: ToolContext, replace_all: bool = False) -> str:
    """Replace an exact piece of text in a file of the workspace. `old` must occur exactly
    once (include enough surrounding lines to make it unique), or set replace_all to replace
    every occurrence. When `old` is not in the file, the error shows the closest lines.

    Args:
        path: the file's path, relative to the workspace
        old: the exact text to replace (whitespace and indentation included)
        new: the text to put in its place
        replace_all: replace every occurrence instead of requiring exactly one
    """
    if not old:
        raise ValueError("'old' must not be empty (to write a whole file, use write_file)")
    root = ctx.workspace
    if root is None:
        raise RuntimeError("this run has no workspace")
    refuse_protected(ctx, path)  # as write_file: the verifier's files are not the agent's
    fd, _ = open_in_workspace(root, path, os.O_RDWR | _NONBLOCK)
    try:
        size = _regular(fd, path).st_size
        if size > MAX_EDIT:
            raise ValueError(
                f"{path!r} is {size:,} bytes; edit_file edits files of at most {MAX_EDIT:,}"
            )
        data = _read_all(fd, MAX_EDIT + 1)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{path!r} is not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None
        count = text.count(old)
        if count == 0:
            raise ValueError(
                f"'old' was not found in {path!r} (0 occurrences); nothing changed\n"
                + miss_hint(path, text, old)
            )
        if count > 1 and not replace_all:
            raise ValueError(
                f"'old' occurs {count} times in {path!r}; nothing changed. Include more "
                "surrounding text to make it unique, or set replace_all to replace every one"
            )
        updated = text.replace(old, new).encode("utf-8")
        # Written over the old content, then cut to length: never an empty file on the way.
        view = memoryview(updated)
        offset = 0
        while offset < len(view):
            offset += os.pwrite(fd, view[offset:], offset)
        os.ftruncate(fd, len(updated))
    finally:
        os.close(fd)
    what = "1 occurrence" if count == 1 else f"{count} occurrences"
    return f"replaced {what} in {path} ({len(updated):,} bytes now)"


def _regular(fd: int, path: str) -> os.stat_result:
    status = os.fstat(fd)
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(f"{path!r} is a folder")
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"{path!r} is not a regular file")
    return status


def _read_all(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes from the start of the file."""
    chunks: list[bytes] = []
    offset = 0
    while offset < limit:
        chunk = os.pread(fd, limit - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _search_files(
    pattern: str, ctx: ToolContext, path: str = ".", ignore_case: bool = False
) -> str:
    """Search the text files under a folder of the workspace for a regular expression (Python
    syntax), one `file:line: text` result a matching line, at most 200 lines. Binary files and
    folders such as .git, .venv and node_modules are skipped; links are not followed.

    Args:
        pattern: the regular expression, e.g. "def \\w+_total"
        path: the folder (or a single file) to search, relative to the workspace
        ignore_case: match letters in either case
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"'pattern' is not a valid regular expression: {exc}") from None
    root = ctx.workspace
    if root is None:
        raise RuntimeError("this run has no workspace")
    fd, base = open_in_workspace(root, path, os.O_RDONLY | _NONBLOCK)
    found = _Found()
    try:
        prefix = os.path.relpath(base, root.resolve())
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            _search_tree(fd, prefix, regex, found)
        else:
            _search_file(fd, prefix, regex, found)
    finally:
        os.close(fd)
    return found.render(pattern)


class _Found:
    """The matching lines so far, within the caps; `full` once the caps are reached."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.chars = 0
        self.full = False
        self.files = 0
        self.skipped_binary = 0
        self.cut_files = 0

    def add(self, name: str, number: int, text: str) -> None:
        if len(text) > MAX_LINE:
            text = text[:MAX_LINE] + " [... line cut]"
        line = f"{name}:{number}: {text}"
        if len(self.lines) >= MAX_MATCHES or self.chars + len(line) > MAX_SEARCH_OUTPUT:
            self.full = True
            return
        self.lines.append(line)
        self.chars += len(line) + 1

    def render(self, pattern: str) -> str:
        notes: list[str] = []
        if self.full:
            notes.append(
                f"[... stopped after {len(self.lines)} matching lines; narrow the pattern or "
                "the path to see the rest]"
            )
        if self.cut_files:
            notes.append(
                f"[{self.cut_files} file(s) searched only in their first {MAX_SEARCH_READ:,} bytes]"
            )
        if self.skipped_binary:
            notes.append(f"[{self.skipped_binary} binary file(s) skipped]")
        if not self.lines:
            return "\n".join([f"no matches for {pattern!r} in {self.files} file(s)", *notes])
        return "\n".join([*self.lines, *notes])


def _search_tree(fd: int, prefix: str, regex: re.Pattern[str], found: _Found) -> None:
    for folder, dirnames, filenames, folder_fd in os.fwalk(dir_fd=fd, follow_symlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in sorted(filenames):
            if found.full:
                return
            try:
                file_fd = os.open(
                    name, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _CLOEXEC, dir_fd=folder_fd
                )
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK, errno.EACCES, errno.ENOENT):
                    continue  # a link (not followed), unreadable, or gone meanwhile
                raise
            try:
                shown = os.path.normpath(os.path.join(prefix, folder, name))
                _search_file(file_fd, shown, regex, found)
            finally:
                os.close(file_fd)


def _search_file(fd: int, name: str, regex: re.Pattern[str], found: _Found) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return
    data = _read_all(fd, MAX_SEARCH_READ + 1)
    found.files += 1
    if b"\0" in data[:_BINARY_PROBE]:
        found.skipped_binary += 1
        return
    if len(data) > MAX_SEARCH_READ:
        found.cut_files += 1
        data = data[:MAX_SEARCH_READ]
    # Lines end at "\n" only, as editors number them (str.splitlines also splits at \f, \x1c...).
    for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
        line = line.removesuffix("\r")
        if regex.search(line):
            found.add(name, number, line)
            if found.full:
                return


edit_file: Tool = tool(name="edit_file")(_edit_file)
search_files: Tool = tool(name="search_files", read_only=True)(_search_files)
