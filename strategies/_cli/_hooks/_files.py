"""The stop hooks' own files, read with a bound: the record (`VERDICTS`), the block counts, the
session's records, and the agents' settings files that `hook doctor` and `hook install` read.

Another process could have put anything at these paths: a FIFO (whose open or read waits for
ever), a link to ``/dev/zero`` (which never ends), a folder, bytes that are not UTF-8, JSON
nested deeper than the parser can take. Each is read here: regular files only, opened without
blocking, at most a bound of bytes, strict UTF-8, JSON with its nesting caught. What a bad file
means is the caller's to decide (a warning and the file ignored, or an error naming it); here
it is always `UnreadableRecord` naming the file and what is wrong, never a hang or a
traceback.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

# The record of every stop grows with use; far more than years of stops, and a bound on memory.
RECORD_LIMIT = 64 * 1024 * 1024
# A settings file, a block count, a session's record: far above any real one.
SMALL_LIMIT = 1024 * 1024

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class UnreadableRecord(ValueError):
    """A file of the hooks' (or an agent's settings) that cannot be read as what it should be.
    `str()` is ``"<path>: <reason>"``."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def read_text(path: Path, *, limit: int = SMALL_LIMIT) -> str | None:
    """The file's text; None when it does not exist; `UnreadableRecord` for anything else
    wrong (not a regular file, larger than `limit`, not UTF-8, cannot be opened)."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableRecord(path, exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableRecord(path, f"not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise UnreadableRecord(path, f"larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnreadableRecord(path, f"larger than {limit} bytes")
    except OSError as exc:
        raise UnreadableRecord(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableRecord(
            path, f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def read_json(path: Path, *, limit: int = SMALL_LIMIT) -> Any:
    """The file's JSON (a leading byte-order mark dropped); None when it does not exist."""
    text = read_text(path, limit=limit)
    if text is None:
        return None
    return parse_json(text.removeprefix("\ufeff"), path)


def parse_json(text: str, path: Path) -> Any:
    """JSON from text read from `path` (a whole file, or one line of a record)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise UnreadableRecord(path, "JSON nested too deeply") from None
    except ValueError as exc:
        raise UnreadableRecord(path, str(exc)) from None


def read_record_text(path: Path) -> str | None:
    """The record `path` (verdicts.jsonl) as text, with the record's larger bound."""
    return read_text(path, limit=RECORD_LIMIT)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"
