"""Run a blocking function on a thread that a cancelled caller can abandon for good.

`run_sync_abandonable(fn)` is `anyio.to_thread.run_sync(fn, abandon_on_cancel=True)` with one
guarantee more: the thread is a daemon. anyio's worker threads are daemons on trio but not on
asyncio, where the interpreter waits at exit for every worker still running, so one sync tool
blocked for ever (abandoned at its timeout or at the run's deadline) kept ``harness run`` (or
any application) from exiting after the run had returned. A daemon thread never holds the
process open: an abandoned call is given up on, not waited for.

Where anyio's workers are daemons already (asked once per backend, in a worker), they are used
as they are. Elsewhere each call gets a daemon thread of its own, in which `anyio.from_thread`
reaches the caller's event loop as it does in anyio's workers and the caller's context
variables are visible; anyio's default thread limiter bounds how many run for callers at once
(an abandoned thread no longer counts), as it bounds anyio's workers.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.lowlevel import EventLoopToken

T = TypeVar("T")


async def run_sync_abandonable(fn: Callable[[], T]) -> T:
    """Call `fn` on a new daemon thread and return what it returns (or raise what it raises).

    Cancelling the caller stops the wait at once; the thread runs on unobserved and does not
    keep the process alive.
    """
    token = anyio.lowlevel.current_token()
    daemons = _WORKERS_ARE_DAEMONS.get(token.backend_class)
    if daemons is None:
        daemons = await anyio.to_thread.run_sync(_is_daemon)
        _WORKERS_ARE_DAEMONS[token.backend_class] = daemons
    if daemons:
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    return await _on_daemon_thread(fn, token)


_WORKERS_ARE_DAEMONS: dict[type, bool] = {}


def _is_daemon() -> bool:
    return threading.current_thread().daemon


async def _on_daemon_thread(fn: Callable[[], T], token: EventLoopToken) -> T:
    context = contextvars.copy_context()
    done = anyio.Event()
    outcome: list[T] = []
    error: list[BaseException] = []

    def work() -> None:
        with _in_worker_thread(token):
            try:
                outcome.append(context.run(fn))
            except BaseException as exc:  # handed to the caller, as anyio does
                error.append(exc)
        # Once the loop is gone, nobody waits for this result any more.
        with contextlib.suppress(anyio.RunFinishedError):
            anyio.from_thread.run_sync(done.set, token=token)

    async with anyio.to_thread.current_default_thread_limiter():
        threading.Thread(target=work, name="harness sync tool", daemon=True).start()
        await done.wait()
    if error:
        raise error[0]
    return outcome[0]


@contextlib.contextmanager
def _in_worker_thread(token: EventLoopToken) -> Iterator[None]:
    """Let `anyio.from_thread` calls in this thread find the loop without a token, as in
    anyio's own workers (anyio keeps that registration private, so it is used only where it
    exists; the token is handed over explicitly either way)."""
    try:
        from anyio._core._eventloop import claim_worker_thread
    except ImportError:  # pragma: no cover - an anyio without it
        yield
        return
    with claim_worker_thread(token.backend_class, token.native_token):
        yield
