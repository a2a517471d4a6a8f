"""What goes wrong with a board, as `harness` errors::

    HarnessError
    ├── BoardBusy                  another board runs on the state folder
    ├── BoardStateError            the state folder cannot be used (damaged, read-only, full)
    └── ConfigurationError
        └── BoardConfigError       a task file or board.toml is malformed

The modules that only read a board's database (`_records`, `_schema`, `_state`, `_lock`)
import this module where they raise, not at the top: `harness board status` on a sound
board then never imports `harness`.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from harness import ConfigurationError, HarnessError


class BoardBusy(HarnessError):
    """Another board process is running on this state folder."""


class BoardConfigError(ConfigurationError):
    """A task file or the board's configuration is malformed; the message names the file and
    key (one line per problem when there are several)."""


class BoardStateError(HarnessError):
    """The board's state folder cannot be used: its database is damaged (corrupt, truncated),
    it is read-only, or its disk is full. The message names the file and what to do; `path`
    is the file. Nothing was half-written: each change is one transaction."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


_FULL = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
# Errors of the state folder itself (not of a task): they stop the board.
STATE_ERRNOS = frozenset((*_FULL, errno.EROFS))


def state_error(exc: BaseException, path: Path) -> BoardStateError:
    """`exc` (an `OSError` or a `sqlite3.Error` on `path`) as a `BoardStateError` that says
    what to do."""
    detail = str(exc) if isinstance(exc, sqlite3.Error) else (exc.strerror or str(exc))  # type: ignore[attr-defined]
    code = getattr(exc, "errno", None)
    name = getattr(exc, "sqlite_errorname", "")
    lowered = detail.lower()
    if code in _FULL or name == "SQLITE_FULL" or "disk is full" in lowered:
        advice = (
            "the disk is full: free some space and run again (what was recorded before is kept)"
        )
    elif code in _READ_ONLY or name.startswith("SQLITE_READONLY") or "readonly" in lowered:
        advice = (
            "the board's state is read-only: make the state folder writable, or run the board "
            "with --state on a writable folder (`harness board status` reads it as it is)"
        )
    elif isinstance(exc, sqlite3.DatabaseError) and (
        name in ("SQLITE_CORRUPT", "SQLITE_NOTADB")
        or "malformed" in lowered
        or "not a database" in lowered
    ):
        advice = (
            "the board's database is damaged (corrupt or truncated): move it aside (with its "
            "-wal and -shm files) and run the board again to start its record afresh; the "
            "transcripts and the workspace in the state folder are kept"
        )
    else:
        advice = "the board's state cannot be used"
    return BoardStateError(f"{path}: {advice} ({detail})", path)
