"""`RayEngine`: each task attempt is a Ray task (a streaming generator) on a Ray cluster.

The board, its database and its transcripts stay in the board's process. A worker runs
`execute_attempt` (in its own event loop, on a thread of the Ray task) and yields the events
as they happen (those already waiting together, one Ray object each time) and then the
outcome; the board writes them as it does for local attempts. Ray
is an optional extra (``pip install -e '.[ray]'``), imported only when this engine opens.

Where it runs: ``address`` (or ``[ray] address`` in ``board.toml``, or ``RAY_ADDRESS``) names a
running cluster, e.g. ``"auto"`` on one of its nodes or ``"ray://head:10001"`` from outside;
with none, a local Ray instance starts for the run and stops after it. Workers read the task
and fixture files and work in the workspaces at the paths the board gives them, so on a real
cluster those folders must be on a file system every node mounts at the same path (the board's
own state folder need not be: only the board writes it). The package must be installed on
the workers (or shipped with a ``runtime_env`` in `init_options`).

A worker that dies (its node lost, its process killed) ends the attempt as a transient failure,
retried up to ``max_attempts``. When the board itself dies, Ray stops the tasks of its job; the
next board waits for the attempts' leases to run out before it gives their tasks to anyone else.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from attrs import evolve

from .._ray_instance import RayTasks, import_ray
from ._attempt import AttemptOutcome, AttemptSpec, Emit, execute_attempt

_END = "__end__"


def _import_ray() -> Any:
    return import_ray("the ray engine")


class RayEngine(RayTasks):
    """Attempts run as Ray tasks; see the module docstring for where and how."""

    name = "ray"
    user = "the ray engine"

    def open(self) -> AbstractAsyncContextManager[object]:
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[object]:
        # Threads that wait on workers' streams: as many as attempts run, not anyio's 40.
        self._limiter = anyio.CapacityLimiter(10_000)
        async with self._remote_open(_attempt_on_worker, num_returns="streaming"):
            yield self

    async def run_attempt(self, spec: AttemptSpec, emit: Emit) -> AttemptOutcome:
        if self._remote is None:
            raise RuntimeError("the Ray engine is not open (use it through Board.run)")
        ray = _import_ray()
        # The worker builds the run from the task's table itself: the built spec holds tools
        # and checks that need not survive pickling; sinks live in the board's process only.
        generator = self._remote.remote(evolve(spec, spec=None, sinks=()))
        settled = False
        try:
            while True:
                try:
                    item = await anyio.to_thread.run_sync(
                        _next, generator, limiter=self._limiter, abandon_on_cancel=True
                    )
                except ray.exceptions.RayError as exc:
                    settled = True
                    return AttemptOutcome("retry", f"the Ray worker failed: {_describe(exc)}")
                if item is None:
                    settled = True
                    return AttemptOutcome("retry", "the Ray worker ended without an outcome")
                kind, payload = item
                if kind == "outcome":
                    settled = True
                    outcome: AttemptOutcome = payload
                    return outcome
                for event in payload:
                    emit(event)
        finally:
            if not settled:  # cancelled from outside: stop the worker too
                ray.cancel(generator, force=True)


def _describe(exc: BaseException) -> str:
    """One line of plain text for what failed on a worker. For an exception the attempt
    raised, Ray's own text is the worker's name in terminal colours and its pid: the
    exception itself (`cause`) says what happened."""
    cause = getattr(exc, "cause", None)
    error = cause if isinstance(cause, BaseException) else exc
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return "".join(c if c.isprintable() else "?" for c in text)


def _next(generator: Any) -> Any:
    ray = _import_ray()
    try:
        ref = next(generator)
    except StopIteration:
        return None
    return ray.get(ref)


def _attempt_on_worker(spec: AttemptSpec) -> Iterator[tuple[str, Any]]:
    """On a Ray worker: run the attempt in an event loop of its own, on a thread, and yield
    each event as it comes, then the outcome."""
    events: queue.Queue[Any] = queue.Queue()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["outcome"] = anyio.run(execute_attempt, spec, events.put)  # on asyncio
        except BaseException as exc:
            box["error"] = exc
        finally:
            events.put(_END)

    thread = threading.Thread(target=work, name=f"attempt-{spec.info.task}", daemon=True)
    thread.start()
    ended = False
    while not ended:
        # Each yield is a Ray object, which costs far more than an event: the events that
        # are already waiting go together, and a lone event still goes at once.
        batch = [events.get()]
        while True:
            try:
                batch.append(events.get_nowait())
            except queue.Empty:
                break
        if batch[-1] == _END:  # put last, after every event
            batch.pop()
            ended = True
        if batch:
            yield ("events", batch)
    thread.join()
    if "error" in box:
        raise box["error"]
    yield ("outcome", box["outcome"])
