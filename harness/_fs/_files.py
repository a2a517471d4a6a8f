"""Reading a file whose path someone else chose, with a bound.

A path in a spec, a hook payload, a task folder or on the command line may name a FIFO (whose
open waits for a writer for ever), a device such as ``/dev/zero`` or ``/dev/urandom`` (which
never ends), or a file far larger than anything the reader means to hold. `read_regular_file`
opens without blocking, refuses anything but a regular file, and refuses a file larger than
its `limit` before reading it, so such a path is an error naming it, never a hang or a memory
blow-up. `read_text_file` adds strict UTF-8, and (with ``follow_links=False``) refuses a link,
for the files the harness keeps itself (records, caches, state) where another process could
have put something else; `harness._fs._jsonl.read_json_file` adds JSON.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

TEXT_LIMIT = 1 << 20
"""The default bound of `read_text_file`: far above any record, cache entry or settings file
the harness reads, and a bound on memory for a path that names something else."""


class FileRefused(ValueError):
    """The file is not one to read: not a regular file, or larger than the limit. `reason`
    says which ("is not a regular file"), without the path, for a message that names the
    path its own way."""

    def __init__(self, what: str, path: str, reason: str) -> None:
        super().__init__(f"the {what} {path!r} {reason}")
        self.reason = reason


def read_regular_file(
    path: str | os.PathLike[str], *, limit: int, what: str = "file", follow_links: bool = True
) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them.

    Raises `OSError` when it cannot be opened or read, and `FileRefused` (a `ValueError`)
    for a FIFO, a device, a socket or a folder, or for a file larger than `limit` bytes (also
    one that grows past it while it is read); the message names the `what` and the path. With
    `follow_links` false, a symbolic link at `path` is refused too.
    """
    shown = str(Path(path))
    try:
        # Without O_NONBLOCK a FIFO with no writer blocks right here.
        fd = os.open(path, _FLAGS if follow_links else _FLAGS | _NOFOLLOW)
    except OSError as exc:
        if not follow_links and exc.errno == errno.ELOOP:
            raise FileRefused(what, shown, "is a symbolic link") from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            kind = "a folder" if stat.S_ISDIR(status.st_mode) else "not a regular file"
            raise FileRefused(what, shown, f"is {kind}")
        if status.st_size > limit:
            raise FileRefused(what, shown, _too_large(limit))
        chunks: list[bytes] = []
        size = 0
        while True:
            # What the file holds plus one byte (which shows that it grew), at least 64 KiB
            # (a file in /proc says it holds nothing) and at most 1 MiB: os.read allocates
            # what it is asked for, and most files read here are small.
            want = max(status.st_size + 1 - size, 1 << 16)
            chunk = os.read(fd, min(1 << 20, limit + 1 - size, want))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise FileRefused(what, shown, _too_large(limit))
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_file(
    path: str | os.PathLike[str],
    *,
    limit: int = TEXT_LIMIT,
    what: str = "file",
    follow_links: bool = True,
) -> str:
    """The text of the regular file at `path`, decoded as strict UTF-8.

    As `read_regular_file` (an `OSError` such as `FileNotFoundError` when it cannot be opened,
    `FileRefused` for a FIFO, a device, a folder, a file over `limit` bytes or, with
    `follow_links` false, a link), and `FileRefused` for bytes that are not UTF-8, naming the
    first one and its offset.
    """
    data = read_regular_file(path, limit=limit, what=what, follow_links=follow_links)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        raise FileRefused(what, str(Path(path)), reason) from None


def open_regular_file(path: str | os.PathLike[str], *, what: str = "file") -> BinaryIO:
    """The regular file at `path`, opened for reading in binary (to stream it); a FIFO, a
    device, a socket or a folder is refused with `FileRefused` without waiting on it, and
    `OSError` says why it cannot be opened."""
    fd = os.open(path, _FLAGS)
    refused = _refusal(fd, what, str(Path(path)))
    if refused is not None:
        os.close(fd)
        raise refused
    return os.fdopen(fd, "rb")


def _refusal(fd: int, what: str, shown: str) -> FileRefused | None:
    try:
        status = os.fstat(fd)
    except OSError as exc:
        return FileRefused(what, shown, f"cannot be read ({exc.strerror})")
    if stat.S_ISREG(status.st_mode):
        return None
    kind = "a folder" if stat.S_ISDIR(status.st_mode) else "not a regular file"
    return FileRefused(what, shown, f"is {kind}")


def _too_large(limit: int) -> str:
    return f"is larger than the {limit:,} bytes it may have"
