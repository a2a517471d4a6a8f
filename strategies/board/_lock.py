"""One board process per state folder: an exclusive `flock` on ``board.lock``.

The kernel drops the lock when its process dies, however it dies (SIGKILL included), so a
board that finds the lock free knows that every attempt left open in the database belongs to
a board that is gone. The file also says who holds it, for the message a second board gets.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO

LOCK_FILE = "board.lock"


class BoardLock:
    """Held from `acquire` to `release` (or the process's death)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_FILE
        self._file: IO[str] | None = None

    def acquire(self, owner: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            from ._errors import BoardBusy  # here: `holder` (board status) needs no harness

            raise BoardBusy(
                f"a board is already running on {self.path.parent} ({holder}); two boards on "
                "one state folder could run a task twice, so this one does not start"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "owner": owner,
                    "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                }
            )
        )
        handle.flush()
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            self._file.close()  # closing the descriptor drops the lock
            self._file = None


def holder(folder: Path) -> dict[str, object] | None:
    """Who runs a board on `folder` now, as its lock file says, or None when nobody does.

    Only reads: a reader that took the lock, even shared and briefly, could make a board
    that starts at that moment believe another one runs. A holder on this host is believed
    while its pid is alive; one on another host is believed.
    """
    try:
        data = json.loads((folder / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(data, dict) or not data:
        return None
    pid = data.get("pid")
    if data.get("host") == socket.gethostname() and isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
    return data
