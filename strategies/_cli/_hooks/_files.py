"""The stop hooks' own files, read with a bound: the record (`VERDICTS`), the block counts, the
session's records, and the agents' settings files that `hook doctor` and `hook install` read.

Another process could have put anything at these paths: a FIFO (whose open or read waits for
ever), a link to ``/dev/zero`` (which never ends), a folder, bytes that are not UTF-8, JSON
nested deeper than the parser can take. Each is read here: regular files only, opened without
blocking, at most a bound of bytes, strict UTF-8, JSON with its nesting bounded (the harness's
one bounded reader, `harness.extend.read_text_file`). What a bad file
means is the caller's to decide (a warning and the file ignored, or an error naming it); here
it is always `UnreadableRecord` naming the file and what is wrong, never a hang or a
traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.extend import FileRefused, read_text_file
from harness.extend import parse_json as _parse_json

# The record of every stop grows with use; far more than years of stops, and a bound on memory.
RECORD_LIMIT = 64 * 1024 * 1024
# A settings file, a block count, a session's record: far above any real one.
SMALL_LIMIT = 1024 * 1024


class UnreadableRecord(ValueError):
    """A file of the hooks' (or an agent's settings) that cannot be read as what it should be.
    `str()` is ``"<path>: <reason>"``."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def read_text(path: Path, *, limit: int = SMALL_LIMIT, own: bool = False) -> str | None:
    """The file's text (`harness.extend.read_text_file`); None when it does not exist;
    `UnreadableRecord` for anything else wrong (not a regular file, larger than `limit`, not
    UTF-8, cannot be opened). An `own` file (one the hooks write) is never read through a
    link."""
    try:
        return read_text_file(path, limit=limit, follow_links=not own)
    except FileNotFoundError:
        return None
    except FileRefused as exc:
        raise UnreadableRecord(path, exc.reason) from None
    except OSError as exc:
        raise UnreadableRecord(path, exc.strerror or str(exc)) from None


def read_json(path: Path, *, limit: int = SMALL_LIMIT, own: bool = False) -> Any:
    """The file's JSON (a leading byte-order mark dropped); None when it does not exist."""
    text = read_text(path, limit=limit, own=own)
    if text is None:
        return None
    return parse_json(text.removeprefix("\ufeff"), path)


def parse_json(text: str, path: Path) -> Any:
    """JSON from text read from `path` (a whole file, or one line of a record), its nesting
    bounded."""
    try:
        return _parse_json(text)
    except ValueError as exc:
        raise UnreadableRecord(path, str(exc)) from None


def read_record_text(path: Path) -> str | None:
    """The record `path` (verdicts.jsonl) as text, with the record's larger bound."""
    return read_text(path, limit=RECORD_LIMIT, own=True)
