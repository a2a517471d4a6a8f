"""Exit codes for a signal, and keeping the signal handlers of a command: what `main` needs
around every command, without `_signals`' anyio and `harness` (`harness --help` and
`harness board status` import neither)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CANCEL_SIGNALS = (signal.SIGTERM, signal.SIGINT)
EXIT_CONFIGURATION = 2
_PACKAGES = ("harness", "checks", "termination", "strategies")
_ROOT = Path(__file__).resolve().parents[2]


def shadowed(error: ImportError) -> str | None:
    """What to say when `error` comes from a module of the user's found under the name of one
    of the library's packages (a ``checks.py`` in the current folder, say), None when it does
    not: the command then says so in one line and exits 2, a configuration error, instead of
    a traceback (Python's own "cannot import name" becomes the file and the fix)."""
    name, path = error.name, error.path
    if name not in _PACKAGES or path is None:
        return None
    if Path(path).resolve() == _ROOT / name / "__init__.py":
        return None
    if "shadows completion-harness" in str(error):  # harness._shadowing said it already
        return str(error)
    return (
        f"{path} shadows completion-harness's {name!r} package: Python finds it first on "
        f"sys.path (the current folder or PYTHONPATH). Rename it (for example to "
        f"my{Path(path).stem}.py), or run from a folder that does not hold it."
    )


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
