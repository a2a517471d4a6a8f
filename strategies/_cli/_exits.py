"""Exit codes for a signal, and keeping the signal handlers of a command: what `main` needs
around every command, without `_signals`' anyio and `harness` (`harness --help` and
`harness board status` import neither)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CANCEL_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_code_for(signum: int) -> int:
    """The exit code of a command that a signal stopped: 128 + its number."""
    return 128 + signum


@contextmanager
def signal_handlers_kept() -> Iterator[None]:
    """The handlers of `CANCEL_SIGNALS` as they were before the block, put back after it: a
    `SignalCancel` that received a signal leaves the next one its default action (it kills)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread handles signals; nothing here changes them
        return
    saved = {signum: signal.getsignal(signum) for signum in CANCEL_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            if handler is not None:  # None: a handler not set from Python, left as it is
                signal.signal(signum, handler)


def default_action(signums: tuple[signal.Signals, ...]) -> None:
    """Give `signums` their default action from now on (the process ends by the signal), in
    the main thread, the only one that may set handlers."""
    if threading.current_thread() is threading.main_thread():
        for signum in signums:
            signal.signal(signum, signal.SIG_DFL)


def kill_by(signum: signal.Signals) -> None:
    """End this process by `signum` now, as its default action does (no clean-up runs)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
