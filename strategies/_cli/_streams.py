"""The command's stdout and stderr, safe to write to after the reader has gone.

``harness run spec.toml 2>&1 | head -1`` closes the pipe after one line. Python ignores
SIGPIPE, so every later write raises `BrokenPipeError`, and Python's own flush of stdout at
exit fails again (exit code 120). The run must not die of its audience leaving: while the
command runs, `sys.stdout` and `sys.stderr` are `SafeStream`s. The first write that fails
marks the stream gone, points its file descriptor at ``/dev/null`` (so whatever is still
buffered, and the interpreter's last flush, go nowhere quietly) and every later write is
dropped; the run goes on and the command exits with the run's code. A lone surrogate (a
non-UTF-8 file name in a halt reason) is written as a ``\\udcxx`` escape instead of failing.

A command started with a standard stream closed (``2>&-``, ``>&-``, ``<&-``, as a daemon or a
careless supervisor may) has no ``sys.stderr`` (or stdout, or stdin) at all, and its
descriptor number is free for the next file opened: a transcript could become "stderr" and a
child process would write into it. So the closed descriptors are first pointed at
``/dev/null``, and a missing stream reads or writes there: ``--json`` still prints its
object with stderr closed, and with stdout closed the command ends without a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, TextIO, cast


class SafeStream:
    """A text stream that never raises for a reader that has gone (see the module)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if self.gone:
            return len(text)
        try:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:
                encoding = getattr(self._stream, "encoding", None) or "utf-8"
                plain = text.encode(encoding, "backslashreplace").decode(encoding)
                return self._stream.write(plain)
        except (OSError, ValueError):  # a closed pipe or terminal; a closed file object
            self._leave()
            return len(text)

    def flush(self) -> None:
        if self.gone:
            return
        try:
            self._stream.flush()
        except (OSError, ValueError):
            self._leave()

    def _leave(self) -> None:
        self.gone = True
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError, AttributeError):  # a stand-in without a descriptor
            return
        try:
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        try:
            with suppress(OSError):
                os.dup2(null, fd)
        finally:
            os.close(null)
        with suppress(OSError, ValueError):  # what is still buffered now goes to /dev/null
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __repr__(self) -> str:
        return f"SafeStream({self._stream!r}, gone={self.gone})"


def reopen_closed_std_descriptors() -> None:
    """Point each of the descriptors 0, 1 and 2 that is closed at ``/dev/null``, so that no
    file opened later takes its number (see the module)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: `fd` itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


@contextmanager
def safe_std_streams() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` as `SafeStream`s for the block, flushed at its end (so a
    reader gone by then is noticed here, not by the interpreter's exit); a stream the process
    started without (closed) is ``/dev/null`` for the block, `sys.stdin` included."""
    reopen_closed_std_descriptors()
    saved = sys.stdin, sys.stdout, sys.stderr
    with ExitStack() as nulls:

        def null(mode: str) -> TextIO:
            return cast(TextIO, nulls.enter_context(open(os.devnull, mode, encoding="utf-8")))

        out = SafeStream(saved[1] if saved[1] is not None else null("w"))
        err = SafeStream(saved[2] if saved[2] is not None else null("w"))
        sys.stdin = saved[0] if saved[0] is not None else null("r")
        sys.stdout, sys.stderr = cast(TextIO, out), cast(TextIO, err)
        try:
            yield
        finally:
            out.flush()
            err.flush()
            sys.stdin, sys.stdout, sys.stderr = saved
