"""SIGTERM and SIGINT to a command: stop the work like a deadline, then exit 128 + the signal.

Only the command line installs this; a library caller decides for itself what a signal means
(and can do the same with a `CancelToken`). While a command runs, the first SIGTERM or SIGINT
cancels its `CancelToken`: the model call, tools and checks in flight are cancelled and their
process trees killed (SIGTERM, a grace, SIGKILL), and the run returns its result, halted
`Cancelled("SIGTERM")`. The exit code is 128 + the signal's number, as a shell reports a
command a signal ended: 143 for SIGTERM, 130 for SIGINT. The stop takes a few seconds at most.

A second signal means "now": it kills the command by that signal (return code -15 or -2, the
default action), while the work stops or after, while the outcome is printed. Whoever sends
it chose not to wait; a supervisor that must keep the outcome sends one signal and waits.
(`signal_handlers_kept` puts the handlers of before back when the command returns.)
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
from anyio.abc import TaskStatus
from attrs import define, field

from harness import CancelToken

from ._exits import (
    CANCEL_SIGNALS,
    default_action,
    exit_code_for,
    kill_by,
    signal_handlers_kept,
)

__all__ = [
    "CANCEL_SIGNALS",
    "SignalCancel",
    "exit_code_for",
    "signal_handlers_kept",
]

T = TypeVar("T")


@define
class SignalCancel:
    """Cancels `token` at the first of `CANCEL_SIGNALS` while `installed`; `received` is it."""

    token: CancelToken = field(factory=CancelToken)
    received: signal.Signals | None = None

    @property
    def exit_code(self) -> int | None:
        return None if self.received is None else exit_code_for(self.received)

    @asynccontextmanager
    async def installed(self) -> AsyncIterator[CancelToken]:
        """Receive the signals for the block's duration. After it the handling of before
        returns, unless a signal was received: then the next one kills the process (the
        default action), while the command finishes stopping and prints its outcome (wrap the
        command in `signal_handlers_kept` to have the handlers back when it returns)."""
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as group:
                await group.start(self._watch)
                try:
                    yield self.token
                except Exception as exc:  # raised below as it is, not in an ExceptionGroup
                    failure = exc
                finally:
                    group.cancel_scope.cancel()
        finally:
            if self.received is not None:
                default_action(CANCEL_SIGNALS)
        if failure is not None:
            raise failure

    async def cancellable(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """`work()` with the signals received: what it returns, or None if a signal stopped it
        (for work that has no typed result of its own to stop with, unlike a run)."""
        async with self.installed() as token:
            with token.scope():
                return await work()
        return None

    def report_stop(self, prefix: str, what: str) -> int:
        """Say on stderr that the signal stopped `what`; returns the exit code."""
        received = self.received
        assert received is not None, "no signal was received"
        print(f"{prefix}: cancelled by {received.name}: {what}", file=sys.stderr)
        return exit_code_for(received)

    async def _watch(self, *, task_status: TaskStatus[None]) -> None:
        # The first signal cancels; a second (while the work stops) kills the process by it,
        # and after the block `installed` leaves the default action to do the same.
        with anyio.open_signal_receiver(*CANCEL_SIGNALS) as signals:
            task_status.started()
            async for signum in signals:
                if self.received is None:
                    self.received = signal.Signals(signum)
                    self.token.cancel(self.received.name)
                else:
                    kill_by(signal.Signals(signum))
