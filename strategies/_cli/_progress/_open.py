"""`open_progress`: the display that fits a stream, live on a terminal, plain lines elsewhere."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from ._display import PlainProgress, ProgressDisplay
from ._live import LiveProgress


def is_live_terminal(stream: TextIO) -> bool:
    """True when `stream` is a terminal that can redraw in place (not TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
    return tty and os.environ.get("TERM", "") not in ("dumb", "")


def open_progress(
    stream: TextIO | None = None, *, live: bool | None = None, verbose: bool = False
) -> ProgressDisplay:
    """The display for `stream` (stderr by default): live on a terminal, plain lines otherwise
    (`live` forces one or the other). `verbose` (``-v``, which prints a raising check's
    traceback): its line does not point to ``-v``."""
    out = stream if stream is not None else sys.stderr
    if live is None:
        live = is_live_terminal(out)
    if live:
        return LiveProgress(out, verbose=verbose)
    return PlainProgress(out, verbose=verbose)
