"""Helpers for tests that prove no process is left running."""

from __future__ import annotations

import os
import select
from pathlib import Path

import anyio.to_thread


def running(pid: int) -> bool:
    """True while `pid` is a live process (a zombie waiting for init to reap it is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def gone(pid: int) -> bool:
    """True once `pid` has exited; allows the moment a SIGKILLed process spends in the kernel's
    exit path after its pipe closed (its pidfd turns readable when it is done)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready = await anyio.to_thread.run_sync(lambda: select.select([fd], [], [], 5.0)[0])
    finally:
        os.close(fd)
    return bool(ready) and not running(pid)
