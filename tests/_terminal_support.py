"""A command's stderr on a real pseudo-terminal, and what the status line drew there: for the
tests of `harness run`'s and the board's live progress."""

from __future__ import annotations

import fcntl
import io
import os
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

from strategies._cli._progress._live import SPINNER

ROOT = Path(__file__).resolve().parent.parent
SGR = re.compile(r"\x1b\[[0-9;]*m")


def terminal_env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["PYTHONPATH"] = str(ROOT)
    for key, value in changes.items():
        if value is not None:
            env[key] = value
    return env


def run_on_terminal(command: list[str], env: dict[str, str], columns: int) -> tuple[str, str, int]:
    """Run `command` with its stderr on a pseudo-terminal `columns` wide; what the terminal
    received, what stdout received, and the exit code."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    received = bytearray()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(master)
    assert child.stdout is not None
    out = child.stdout.read().decode()
    child.stdout.close()
    code = child.wait(timeout=30)
    return received.decode(), out, code


def panel_frames(screen: str) -> list[str]:
    """Every state of the status line: the last line drawn after each clear."""
    frames = []
    for piece in SGR.sub("", screen).split("\x1b[J")[1:]:
        last = piece.split("\n")[-1].split("\r")[0]
        if last[:1] in SPINNER:
            frames.append(last)
    return frames


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True
