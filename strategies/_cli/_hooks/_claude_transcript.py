"""The agent's last answer, read from a Claude Code session transcript (JSONL), bounded.

The path comes from a hook payload, so the reader trusts nothing about it: ``~`` is
expanded; the file is opened without blocking and must be a regular file (a FIFO or a device
such as ``/dev/zero`` is refused instead of hanging or filling memory); only the last
`TAIL_BYTES` are read. A transcript that cannot be read is a `TranscriptError`, never taken
for an empty answer.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

TAIL_BYTES = 8 * 1024 * 1024


class TranscriptError(ValueError):
    """The transcript named by the payload cannot be read."""


def last_answer(path: Path, *, limit: int = TAIL_BYTES) -> str | None:
    """The text of the last assistant message in the transcript, or None if it has none."""
    data, whole = _read_tail(path, limit)
    lines = data.split(b"\n")
    if not whole:
        lines = lines[1:]  # the first line was cut by the tail's start
    for raw in reversed(lines):
        text = _answer(raw)
        if text is not None:
            return text
    if not whole:
        raise TranscriptError(
            f"the transcript {str(path)!r} has no assistant answer in its last {limit} bytes"
        )
    return None


def _read_tail(path: Path, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes from the end of a regular file, and whether that is all of it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise TranscriptError(
            f"cannot read the transcript {str(path)!r}: {exc.strerror or exc}"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TranscriptError(f"the transcript {str(path)!r} is not a regular file")
        start = max(info.st_size - limit, 0)
        data = b""
        while len(data) < limit:  # pread may return less than asked before the end
            more = os.pread(fd, limit - len(data), start + len(data))
            if not more:
                break
            data += more
    except OSError as exc:
        raise TranscriptError(
            f"cannot read the transcript {str(path)!r}: {exc.strerror or exc}"
        ) from None
    finally:
        os.close(fd)
    return data, start == 0


def _answer(raw: bytes) -> str | None:
    """The text of one transcript line if it is an assistant message with text."""
    try:
        entry = json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8: not an answer
        return None
    message = entry.get("message") if isinstance(entry, dict) else None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if texts:
            return "\n".join(texts)
    return None
