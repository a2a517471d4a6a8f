"""Run a blocking function on a thread that a cancelled caller can abandon for good.

`run_sync_abandonable(fn)` is `anyio.to_thread.run_sync(fn, abandon_on_cancel=True)` with one
guarantee more: the thread is a daemon. anyio's worker threads are daemons on trio but not on
asyncio, where the interpreter waits at exit for every worker still running, so one sync tool
blocked for ever (abandoned at its timeout or at the run's deadline) kept ``harness run`` (or
any application) from exiting after the run had returned. A daemon thread never holds the
process open: an abandoned call is given up on, not waited for.

Where anyio's workers are daemons already (asked once per backend, in a worker), they are used
as they are. Elsewhere calls go to a pool of daemon workers of this module's own: an idle one
is reused (a thread per call costs five times the hop), a busy or abandoned one is not, and
one idle for `IDLE_SECONDS` ends. In them `anyio.from_thread` reaches the caller's event loop
as it does in anyio's workers and the caller's context variables are visible; anyio's default
thread limiter bounds how many run for callers at once (an abandoned call no longer counts),
as it bounds anyio's workers.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.lowlevel import EventLoopToken
from attrs import frozen

T = TypeVar("T")


async def run_sync_abandonable(fn: Callable[[], T]) -> T:
    """Call `fn` on a daemon thread and return what it returns (or raise what it raises).

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

    async with anyio.to_thread.current_default_thread_limiter():
        _POOL.submit(_Job(work, done, token))
        await done.wait()
    if error:
        raise error[0]
    return outcome[0]


IDLE_SECONDS = 10.0


@frozen
class _Job:
    """A call to run in a worker, and where to say that it is done."""

    work: Callable[[], None]
    done: anyio.Event
    token: EventLoopToken


class _Pool:
    """Daemon worker threads; each runs one job at a time and waits idle for the next."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def submit(self, job: _Job) -> None:
        """Run `job` on an idle worker, or on a new one."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self)
            worker.start()
        worker.jobs.put(job)

    def back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def retire(self, worker: _Worker) -> bool:
        """True if `worker` left the pool idle; False if a job was just handed to it."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


class _Worker(threading.Thread):
    def __init__(self, pool: _Pool) -> None:
        super().__init__(name="harness sync tool", daemon=True)
        self.pool = pool
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self.pool.retire(self):
                    return
                continue  # taken from the idle list a moment ago: its job is on the way
            job.work()
            self._report(job)

    def _report(self, job: _Job) -> None:
        """Wake the caller and rejoin the idle workers, both on the caller's loop, so the
        caller's next call finds this worker idle. A worker whose report waits (the loop
        is not running) is never handed another job meanwhile."""

        def finish() -> None:
            job.done.set()
            self.pool.back(self)

        try:
            anyio.from_thread.run_sync(finish, token=job.token)
        except anyio.RunFinishedError:  # nobody waits for this result any more
            self.pool.back(self)


_POOL = _Pool()


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
